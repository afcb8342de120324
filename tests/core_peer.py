"""Differential tests against a peer: CORE (the complex event recognition engine, through its Python
bindings ``pycer``) and faidecs on the queries both express, on seeded streams.

Each :class:`Case` is one query written twice: in CEQL for CORE, and as a faidecs subscription with
``matching ALL, disposal NONE`` and a window. docs/peers-core.md gives the correspondence and where
the two languages differ. CORE runs in its own interpreter (``tests/core_peer_pycer.py``, JSON in
and out; pycer's wheels need Python 3.13), faidecs through its public API (``Engine.from_source``,
``Engine.publish``). A complex event is compared as the set of its events, together with the event
whose arrival completed it (CORE: its last event; faidecs: the event being published), as
multisets: CEQL's ALL defines no order among the complex events of one arrival.

Every event has the attributes ``pos`` (its position in the whole stream: the event's number),
``kpos`` (its position among the events of its partition, every type counted), ``ts`` (event time:
non-decreasing, with ties), ``k`` (the partition key, 0 or 1) and ``v`` (0..9). A sequence ``X ; Y``
is ``X.pos < Y.pos`` in faidecs, contiguity ``X : Y`` is ``X.pos + 1 = Y.pos`` (``kpos`` under
``partition by``): faidecs conjunctions are unordered sets, so the order is an attribute.

One stream per case is many seeded *segments*, each separated from the next by more than the
window (in events and in time), so that no complex event spans two segments and each segment is an
independent test; one CORE server per case keeps the run short (starting one costs ~0.1 s). When
the engines disagree, :func:`shrink` removes events from the first segment that shows it while
they still disagree, and the failure shows that minimal stream."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from faidecs import Engine, Matcher

RUNNER = Path(__file__).with_name("core_peer_pycer.py")
PYCER_PYTHON = os.environ.get("FAIDECS_PYCER_PYTHON", "/tmp/pycer-venv/bin/python")
# The reference matcher; FAIDECS_CORE_MATCHER=compiled for the compiled one (the differential tests
# of the matchers compare the two; a cold compilation per query would cost seconds here).
MATCHER: Matcher = "compiled" if os.environ.get("FAIDECS_CORE_MATCHER") == "compiled" else "reference"
NO_PYCER = 3  # core_peer_pycer.py's exit status when it cannot import pycer
TYPES = ("A", "B", "C", "N")  # N occurs in no query: noise, which breaks contiguity
ATTRS = ("pos", "kpos", "ts", "k", "v")
DECLARATIONS = "".join(f"type {t}({', '.join(f'{a}: int' for a in ATTRS)})\n" for t in TYPES)

Attrs = dict[str, int]
# A complex event: (the position of the event that completed it, the sorted positions of its events)
Complex = tuple[int, tuple[int, ...]]


@dataclass(frozen=True)
class Skeleton:
    """An event before numbering: positions and time follow from its place in a stream."""

    type: str
    k: int
    v: int
    dt: int  # time since the event before


@dataclass(frozen=True)
class Case:
    """One query in both languages.

    ``kleene``: for CEQL's non-contiguous iteration ``T+``, which binds any non-empty subsequence
    of the qualifying T events (skip-till-any-match), where a faidecs group binds a run of them
    contiguous in the queue: CORE's complex events are kept only when their events of type
    ``kleene`` are consecutive among the events of that type that pass ``qualifies`` (in the same
    partition under ``partition by``), and that subset must equal faidecs's deliveries."""

    name: str
    ceql: str
    options: str
    condition: str
    span: int  # the window in events (pos) and in time (ts) is at most this
    weights: tuple[int, int, int, int] = (3, 3, 3, 1)  # of A, B, C, N in the streams
    kleene: str | None = None
    qualifies: Callable[[Attrs], bool] = lambda attrs: True
    partitioned: bool = False

    def program(self) -> str:
        return f"{DECLARATIONS}subscription Q ({self.options}):\n    {self.condition}\n"


def number(skeletons: Sequence[Skeleton]) -> list[tuple[str, Attrs]]:
    """The events of a stream with ``pos``, ``kpos`` and ``ts`` filled in."""
    per_key: Counter[int] = Counter()
    ts = 0
    events: list[tuple[str, Attrs]] = []
    for pos, s in enumerate(skeletons):
        ts += s.dt
        events.append((s.type, {"pos": pos, "kpos": per_key[s.k], "ts": ts, "k": s.k, "v": s.v}))
        per_key[s.k] += 1
    return events


def segment(case: Case, rng: random.Random, length: int) -> list[Skeleton]:
    types = rng.choices(TYPES, weights=case.weights, k=length)
    keys = 2 if case.partitioned else 1
    return [Skeleton(t, rng.randrange(keys), rng.randrange(10), rng.choice((0, 1, 1, 1, 2, 3))) for t in types]


def join(case: Case, segments: Sequence[Sequence[Skeleton]]) -> tuple[list[Skeleton], list[int]]:
    """One stream of the segments, apart by more than the window in events and in time (noise
    events with a long time step, in every partition), and the segment number of each position."""
    stream: list[Skeleton] = []
    owner: list[int] = []
    gap = [Skeleton("N", i % 2, 0, case.span + 1) for i in range(2 * case.span + 2)]
    for i, seg in enumerate(segments):
        if i:
            stream += gap
            owner += [-1] * len(gap)
        stream += seg
        owner += [i] * len(seg)
    return stream, owner


# --- the two engines -------------------------------------------------------------------------


class PeerMissing(RuntimeError):
    pass


def run_core(queries: Sequence[str], streams: Sequence[list[tuple[str, Attrs]]]) -> tuple[str, list[list[Complex]]]:
    """Each query on its stream, on CORE: pycer's version and the complex events of each."""
    how = (
        "make it with scripts/pycer, which ./scripts/test runs (python3.13 -m venv /tmp/pycer-venv && "
        "/tmp/pycer-venv/bin/pip install pycer)"
    )
    if not Path(PYCER_PYTHON).exists():
        raise PeerMissing(f"no Python at {PYCER_PYTHON} (FAIDECS_PYCER_PYTHON overrides it) to run pycer: {how}")
    request = {
        "types": {t: list(ATTRS) for t in TYPES},
        "jobs": [
            {"query": q, "events": [[t, [a[x] for x in ATTRS]] for t, a in events]}
            for q, events in zip(queries, streams, strict=True)
        ],
    }
    done = subprocess.run(
        [PYCER_PYTHON, str(RUNNER)], input=json.dumps(request), capture_output=True, text=True, timeout=300
    )
    if done.returncode == NO_PYCER:
        raise PeerMissing(f"{PYCER_PYTHON} has no pycer: {how}\n{done.stderr[-1000:]}")
    if done.returncode != 0:
        raise RuntimeError(f"CORE failed (exit status {done.returncode}):\n{done.stderr[-3000:]}")
    reply = json.loads(done.stdout)
    results = [[(max(ce), tuple(sorted(ce))) for ce in job] for job in reply["results"]]
    return str(reply["pycer"]), results


def run_faidecs(case: Case, events: list[tuple[str, Attrs]]) -> list[Complex]:
    engine = Engine.from_source(case.program(), matcher=MATCHER)
    out: list[Complex] = []
    for t, attrs in events:
        for d in engine.publish({"id": str(attrs["pos"]), "type": t, "attrs": attrs}):
            out.append((attrs["pos"], tuple(sorted(int(i) for i in d.ids))))
    return out


def comparable(case: Case, events: list[tuple[str, Attrs]], found: list[Complex]) -> list[Complex]:
    """CORE's complex events of the class faidecs expresses (all of them, unless ``case.kleene``)."""
    if case.kleene is None:
        return found
    runs: dict[int, list[int]] = {}  # partition -> the positions of the qualifying events of the Kleene type
    for t, attrs in events:
        if t == case.kleene and case.qualifies(attrs):
            runs.setdefault(attrs["k"] if case.partitioned else 0, []).append(attrs["pos"])
    index = {pos: i for queue in runs.values() for i, pos in enumerate(queue)}
    kept = []
    for ce in found:
        members = [index[p] for p in ce[1] if events[p][0] == case.kleene]
        if all(b == a + 1 for a, b in zip(members, members[1:])):
            kept.append(ce)
    return kept


@dataclass
class Mismatch:
    case: Case
    events: list[tuple[str, Attrs]]
    core_only: list[Complex]
    faidecs_only: list[Complex]

    def __str__(self) -> str:
        rows = "\n".join(f"  {t} {a}" for t, a in self.events)
        return (
            f"{self.case.name}: CORE and faidecs disagree\n"
            f"CEQL:    {self.case.ceql}\nfaidecs: subscription Q ({self.case.options}): {self.case.condition}\n"
            f"stream ({len(self.events)} events):\n{rows}\n"
            f"only CORE (completing event, events): {self.core_only}\n"
            f"only faidecs (completing event, events): {self.faidecs_only}"
        )


def differences(
    case: Case, events: list[tuple[str, Attrs]], core: list[Complex]
) -> tuple[list[Complex], list[Complex]]:
    ours = Counter(run_faidecs(case, events))
    theirs = Counter(comparable(case, events, core))
    return sorted((theirs - ours).elements()), sorted((ours - theirs).elements())


def disagreeing(case: Case, streams: Sequence[list[Skeleton]]) -> list[bool]:
    """Whether the engines disagree on each stream, judged with one CORE run: the streams are
    joined as segments, as in :func:`compare_all`."""
    stream, owner = join(case, streams)
    events = number(stream)
    _, (core,) = run_core([case.ceql], [events])
    differ = [False] * len(streams)
    only_core, only_ours = differences(case, events, core)
    for ce in only_core + only_ours:
        differ[owner[ce[0]]] = True  # a complex event across segments would be a failure of join
    return differ


def shrink(case: Case, skeletons: list[Skeleton]) -> Mismatch:
    """A smallest stream (no one event can be dropped) on which the engines still disagree, from
    one on which they do: each round tries every stream without one stretch of events, stretches
    of half the events down to single events, and keeps the shortest that still disagrees."""
    current = list(skeletons)
    while True:
        candidates = []
        size = len(current) // 2
        while size >= 1:
            candidates += [current[:i] + current[i + size :] for i in range(0, len(current) - size + 1)]
            size //= 2
        failing = [c for c, bad in zip(candidates, disagreeing(case, candidates)) if bad and c]
        if not failing:
            events = number(current)
            _, (core,) = run_core([case.ceql], [events])
            only_core, only_ours = differences(case, events, core)
            return Mismatch(case, events, only_core, only_ours)
        current = min(failing, key=len)


@dataclass(frozen=True)
class Prepared:
    """A case's seeded segments, joined into one stream."""

    case: Case
    segments: list[list[Skeleton]]
    owner: list[int]  # the segment of each position (-1: between segments)
    events: list[tuple[str, Attrs]]


@dataclass(frozen=True)
class Outcome:
    segments: int
    events: int
    complex_events: int  # compared: CORE's of the comparable class, equal to faidecs's when they agree
    core_complex_events: int  # all CORE reported, before keeping the comparable class
    mismatch: Mismatch | None


def prepare(case: Case, seed: int, segments: int, length: int) -> Prepared:
    """``segments`` seeded streams of ``length`` events for ``case``."""
    rng = random.Random(f"{case.name}/{seed}")
    parts = [segment(case, rng, length) for _ in range(segments)]
    stream, owner = join(case, parts)
    return Prepared(case, parts, owner, number(stream))


def check(prepared: Prepared, core: list[Complex]) -> Outcome:
    """faidecs on the prepared stream against CORE's complex events ``core`` on it; on a
    disagreement, a smallest stream that shows it (see :func:`shrink`)."""
    case, events = prepared.case, prepared.events
    ours = run_faidecs(case, events)
    kept = comparable(case, events, core)
    mismatch = None
    if Counter(kept) != Counter(ours):
        by_segment: dict[int, Counter[Complex]] = {}
        for sign, found in ((1, kept), (-1, ours)):
            for ce in found:
                by_segment.setdefault(prepared.owner[ce[0]], Counter())[ce] += sign
        first = min(i for i, c in by_segment.items() if any(c.values()))
        if first < 0:  # completed by an event between segments: show the whole stream
            only_core, only_ours = differences(case, events, core)
            mismatch = Mismatch(case, events, only_core, only_ours)
        else:
            mismatch = shrink(case, prepared.segments[first])
    return Outcome(len(prepared.segments), len(events), len(kept), len(core), mismatch)


def compare_all(cases: Sequence[Case], seed: int, segments: int, length: int) -> tuple[str, list[Outcome]]:
    """Every case on its own seeded stream, with one CORE process for all: pycer's version and
    each case's outcome."""
    prepared = [prepare(c, seed, segments, length) for c in cases]
    version, core = run_core([c.ceql for c in cases], [p.events for p in prepared])
    return version, [check(p, found) for p, found in zip(prepared, core)]


# --- the cases: each query in both languages -----------------------------------------------------


def events_window(d: int) -> tuple[str, str]:
    """CEQL's count window (last position - first position <= d, every event of the stream counted)
    and faidecs's window on the position attribute."""
    return f"WITHIN {d} EVENTS", f"within {d} on pos"


def time_window(d: int) -> tuple[str, str]:
    """CEQL's window on an attribute is strict (last - first < d, checked on pycer 0.1.6);
    faidecs's is not (max - min <= D): on integer times, D = d - 1."""
    return f"WITHIN {d} [ts]", f"within {d - 1} on ts"


def case(
    name: str,
    where: str,
    condition: str,
    window: tuple[str, str],
    span: int,
    *,
    partitioned: bool = False,
    weights: tuple[int, int, int, int] = (3, 3, 3, 1),
    kleene: str | None = None,
    qualifies: Callable[[Attrs], bool] = lambda attrs: True,
) -> Case:
    ceql_window, faidecs_window = window
    partition_ceql = " PARTITION BY [k]" if partitioned else ""
    options = f"matching ALL, disposal NONE, {faidecs_window}" + (", partition by k" if partitioned else "")
    return Case(
        name=name,
        ceql=f"SELECT * FROM S WHERE {where}{partition_ceql} {ceql_window}",
        options=options,
        condition=condition,
        span=span,
        weights=weights,
        kleene=kleene,
        qualifies=qualifies,
        partitioned=partitioned,
    )


KLEENE_RUNS = (2, 6, 2, 1)  # many B events, so that runs of them form

CASES: tuple[Case, ...] = (
    case("sequence", "A ; B", "A and B and A.pos < B.pos", events_window(6), 6),
    case(
        "sequence of three, filters, time window",
        "A ; B ; C FILTER A[v > 3] AND C[v < 6]",
        "A and B and C and A.pos < B.pos and B.pos < C.pos and A.v > 3 and C.v < 6",
        time_window(8),
        8,
    ),
    case(
        "a type twice",
        "A ; B ; A",
        "A[0].pos < B.pos and B.pos < A[1].pos",
        events_window(7),
        7,
    ),
    case("one type, two events", "A ; A", "A[0].pos < A[1].pos", time_window(5), 5, weights=(4, 1, 1, 1)),
    case(
        "contiguous then any",
        "A : B ; C",
        "A and B and C and A.pos + 1 = B.pos and B.pos < C.pos",
        events_window(6),
        6,
    ),
    case(
        "contiguous iteration between contiguous events",
        "A : B:+ : C",
        "A and B+ and C and prev(B).pos + 1 = B.pos and min(B.pos) = A.pos + 1 and max(B.pos) + 1 = C.pos",
        events_window(8),
        8,
        weights=KLEENE_RUNS,
    ),
    case(
        "contiguous iteration with a filter",
        "A : B:+ : C FILTER B[v > 1]",
        "A and B+ and C and B.v > 1 and prev(B).pos + 1 = B.pos and min(B.pos) = A.pos + 1 and max(B.pos) + 1 = C.pos",
        events_window(8),
        8,
        weights=KLEENE_RUNS,
    ),
    case(
        "contiguous iteration last",
        "A : B:+",
        "A and B+ and prev(B).pos + 1 = B.pos and min(B.pos) = A.pos + 1",
        events_window(6),
        6,
        weights=KLEENE_RUNS,
    ),
    case(
        "contiguous iteration alone", "B:+", "B+ and prev(B).pos + 1 = B.pos", events_window(4), 4, weights=KLEENE_RUNS
    ),
    case(
        "iteration between events",
        "A ; B+ ; C",
        "A and B+ and C and A.pos < B.pos and B.pos < C.pos",
        events_window(7),
        7,
        weights=KLEENE_RUNS,
        kleene="B",
    ),
    case(
        "iteration with a filter, time window",
        "A ; B+ ; C FILTER B[v > 4]",
        "A and B+ and C and B.v > 4 and A.pos < B.pos and B.pos < C.pos",
        time_window(8),
        8,
        weights=KLEENE_RUNS,
        kleene="B",
        qualifies=lambda attrs: attrs["v"] > 4,
    ),
    case(
        "iteration last",
        "A ; B+",
        "A and B+ and A.pos < B.pos",
        events_window(5),
        5,
        weights=KLEENE_RUNS,
        kleene="B",
    ),
    case(
        "iteration first",
        "B+ ; C",
        "B+ and C and B.pos < C.pos",
        events_window(5),
        5,
        weights=KLEENE_RUNS,
        kleene="B",
    ),
    case(
        "partitioned sequence",
        "A ; B ; C",
        "A and B and C and A.pos < B.pos and B.pos < C.pos",
        events_window(8),
        8,
        partitioned=True,
    ),
    case(
        "partitioned contiguity",
        "A : B",
        "A and B and A.kpos + 1 = B.kpos",
        events_window(8),
        8,
        partitioned=True,
    ),
    case(
        "partitioned contiguous iteration",
        "A : B:+ : C",
        "A and B+ and C and prev(B).kpos + 1 = B.kpos and min(B.kpos) = A.kpos + 1 and max(B.kpos) + 1 = C.kpos",
        events_window(10),
        10,
        partitioned=True,
        weights=KLEENE_RUNS,
    ),
    case(
        "partitioned iteration, time window",
        "A ; B+ ; C",
        "A and B+ and C and A.pos < B.pos and B.pos < C.pos",
        time_window(8),
        8,
        partitioned=True,
        weights=KLEENE_RUNS,
        kleene="B",
    ),
    case(
        "alternatives",
        "A ; (B OR C)",
        "A and B and A.pos < B.pos or A and C and A.pos < C.pos",
        events_window(5),
        5,
    ),
)


def main(argv: Sequence[str]) -> int:
    """``python tests/core_peer.py [SEGMENTS] [LENGTH] [SEED]``: every case, with a summary."""
    segments = int(argv[0]) if argv else 20
    length = int(argv[1]) if len(argv) > 1 else 30
    seed = int(argv[2]) if len(argv) > 2 else 0
    version, outcomes = compare_all(CASES, seed, segments, length)
    print(f"pycer {version}")
    status = 0
    for case, outcome in zip(CASES, outcomes):
        print(
            f"{case.name}: {outcome.segments} streams, {outcome.events} events, {outcome.complex_events} "
            f"complex events compared (CORE reported {outcome.core_complex_events})"
        )
        if outcome.mismatch is not None:
            print(outcome.mismatch)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
