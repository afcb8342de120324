"""The compiled extended matcher against the extended reference matcher, under every option.

Why: the extended kernels (faidecs/matching/extended_kernel_source.py) search windows, ALL,
NONE and negations between instances incrementally (one slot bound to the arriving event), read
the queues and the negations' logs as encoded rows mirrored from the Python state, and take the
matching option and the window's duration at run time; none of that may change a relation, its
order, its delivered shape, a queue, a log or a snapshot. Each shape runs under all 21 option
combinations on seeded streams (late events and equal times included), comparing everything
observable after every event; snapshots restore across the two matchers, and a kernel that
arrives in the middle of a stream (background compilation) takes over without a difference.
One kernel serves every option combination of a shape, so the test compiles once per shape.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from faidecs import Engine
from faidecs.matching.compiled_extended_state import CompiledExtendedState
from faidecs.matching.kernel_broker import KernelHandle
from tests.unit.extended_oracle import run as oracle_run
from tests.unit.test_extended_oracle import SHAPES as ORACLE_SHAPES
from tests.unit.test_extended_oracle import TYPES as ORACLE_TYPES
from tests.unit.test_extended_oracle import _stream as oracle_stream

TYPES = "type A(k: int, v: int, t: int)\ntype B(k: int, v: int, t: int)\ntype N(k: int, v: int, t: int)\n"
FLOAT_TYPES = TYPES.replace("t: int", "t: float")
COMBINATIONS = [(m, d) for m in ("FR", "FRC", "MR", "MRC") for d in ("I", "PI", "IP", "FP", "NONE")] + [("ALL", "NONE")]
SEEDS = 3

# (types, conjunction, window options or "", the types the stream draws from)
SHAPES: dict[str, tuple[str, str, str, str]] = {
    "window": (TYPES, "A and B and A.k = B.k", "within 3 on t", "AB"),
    "window, lateness, two instances": (
        TYPES,
        "A[0] and A[1] and B and A[0].v <= B.v",
        "within 4 on t, lateness 1",
        "AB",
    ),
    "float times, int duration": (FLOAT_TYPES, "A and B and A.v < B.v + 1", "within 2 on t", "AB"),
    "float times, float duration": (FLOAT_TYPES, "A and B", "within 1.5 on t, lateness 0.5", "AB"),
    "negation between": (
        TYPES,
        "A[1] and A[0].k = A[1].k and no N(N.k = A[0].k) between A[0] and A[1]",
        "",
        "AN",
    ),
    "absence": (TYPES, "A and no N(N.k = A.k) after A", "within 3 on t", "AN"),
    "absence with a float duration and lateness, two instances": (
        TYPES,
        "A[0] and A[1] and A[0].k = A[1].k and no N(N.v > A[1].v + 1) after A[1]",
        "within 2.5 on t, lateness 1",
        "AN",
    ),
    "absence on float times, and a negation between": (
        FLOAT_TYPES,
        "A and B and no N(N.k = A.k) after B and no N(N.v = B.v) between A and B",
        "within 3 on t",
        "ABN",
    ),
    "group with prev and count": (
        TYPES,
        "A+ and B and A.k = B.k and prev(A).v <= A.v and count(A) >= 2",
        "",
        "AB",
    ),
    "group filter and sum": (TYPES, "A+ and A.v > 0 and sum(A.v) >= 4", "", "A"),
    "group in a window: avg, min, max": (
        TYPES,
        "A+ and B and avg(A.v) > B.v - 2 and min(A.v) >= 1 and max(A.t) < B.t + 1",
        "within 4 on t",
        "AB",
    ),
    "group beside a negation": (
        TYPES,
        "A+ and B[1] and prev(A).v + 1 >= A.v and sum(A.v) > B[0].v and no N(N.k = B[0].k) between B[0] and B[1]",
        "within 6 on t",
        "ABN",
    ),
    "group beside an absence": (
        TYPES,
        "A+ and B and A.k = B.k and no N(N.k = B.k) after B",
        "within 4 on t, lateness 1",
        "ABN",
    ),
    "negation with arithmetic, in a window": (
        TYPES,
        "A and B and A.k = B.k and no N(N.v > A.v - 1 and N.k = 1) between B and A",
        "within 5 on t",
        "ABN",
    ),
}


def _stream(seed: int, types: str, floats: bool) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    t = 0
    out = []
    for i in range(rng.randint(20, 40)):
        t += rng.choice((0, 1, 1, 2))
        time: float = t - rng.randint(1, 3) if rng.random() < 0.15 else t  # late, or within lateness
        if floats:
            time += rng.choice((0.0, 0.25, 0.5))
        attrs = {"k": rng.randint(0, 1), "v": rng.randint(0, 3), "t": time}
        out.append({"id": f"e{i}", "type": rng.choice(types), "attrs": attrs})
        if rng.random() < 0.1:
            out.append({"advance": t + rng.choice((0, 1, 3))})  # a heartbeat: absences may fire
    return out


def _program(name: str, matching: str, disposal: str) -> str:
    types, conjunction, window, _ = SHAPES[name]
    options = f"matching {matching}, disposal {disposal}" + (f", {window}" if window else "")
    return types + f"subscription S ({options}): {conjunction}\n"


def _observe(engine: Engine, events: list[dict[str, Any]]) -> list[Any]:
    """After each event: its deliveries (with timeout and aggregates), the queues and the
    snapshot; ``check`` after every step."""
    seen = []
    for event in events:
        if "advance" in event:
            delivered = [d.to_json() for d in engine.advance(event["advance"])]
        else:
            delivered = [d.to_json() for d in engine.publish(event)]
        engine.check()
        seen.append((delivered, engine.state_json(), engine.snapshot()["queues"]))
    return seen


def _compiled_states(engine: Engine) -> list[CompiledExtendedState]:
    return [c for s in engine._subscriptions.values() for c in s.conjunctions if isinstance(c, CompiledExtendedState)]


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_compiled_extended_matcher_equals_the_reference(name: str) -> None:
    floats = SHAPES[name][0] is FLOAT_TYPES
    delivered = 0
    for seed in range(SEEDS):
        stream = _stream(seed, SHAPES[name][3], floats)
        for matching, disposal in COMBINATIONS:
            text = _program(name, matching, disposal)
            compiled = Engine.from_source(text, matcher="compiled", kernels="eager")
            assert compiled.matchers() == {"S": ["compiled"]}
            expected = _observe(Engine.from_source(text, matcher="reference"), stream)
            got = _observe(compiled, stream)
            assert got == expected, f"{name} {matching}+{disposal} seed {seed}"
            delivered += sum(len(step[0]) for step in got)
    assert delivered > len(COMBINATIONS)  # the streams exercise the shape


@pytest.mark.parametrize(
    "name", ["group beside an absence", "absence with a float duration and lateness, two instances"]
)
def test_snapshots_restore_across_the_matchers(name: str) -> None:
    """A snapshot of either matcher restores into the other, and both go on alike."""
    for seed, (matching, disposal) in enumerate(COMBINATIONS):
        stream = _stream(100 + seed, SHAPES[name][3], floats=False)
        cut = len(stream) // 2
        text = _program(name, matching, disposal)
        for first, second in (("compiled", "reference"), ("reference", "compiled")):
            engine = Engine.from_source(text, matcher=first, kernels="eager")
            _observe(engine, stream[:cut])
            restored = Engine.restore(engine.snapshot(), matcher=second, kernels="eager")
            restored.check()
            assert restored.snapshot() == engine.snapshot()
            assert _observe(restored, stream[cut:]) == _observe(engine, stream[cut:]), (matching, disposal, first)


def test_a_kernel_arriving_mid_stream_takes_over_exactly() -> None:
    """Background compilation: the state searches with the reference matcher until its kernel is
    loaded, then with the kernel, carrying queues, logs, watermark and counters over."""
    name = "group beside an absence"
    for seed, (matching, disposal) in enumerate(COMBINATIONS):
        stream = _stream(200 + seed, SHAPES[name][3], floats=False)
        text = _program(name, matching, disposal)
        expected = _observe(Engine.from_source(text, matcher="reference"), stream)
        engine = Engine.from_source(text, matcher="compiled", kernels="eager")
        (state,) = _compiled_states(engine)
        kernel = state.kernel
        assert kernel is not None
        state.kernel, state.handle = None, KernelHandle(kernel.source)  # as if still compiling
        engine._pending.append(state)
        cut = len(stream) // 2
        before = _observe(engine, stream[:cut])
        assert engine.matchers() == {"S": ["reference"]}
        state.handle._finish(kernel)
        assert engine.wait_for_kernels(0)
        assert engine.matchers() == {"S": ["compiled"]}
        assert before + _observe(engine, stream[cut:]) == expected, (matching, disposal)


def test_what_stays_on_the_reference_matcher() -> None:
    """A predicate over the members of two groups, and ordering of strings, are not compiled:
    those conjunctions run on the reference matcher (everything else of the extended language is)."""
    program = TYPES.replace("t: int)", "t: int, s: str)") + (
        "subscription G (within 4 on t): A+ and B+ and A.v < B.v\n"
        "subscription H (within 4 on t): A and B and A.s < B.s\n"
        "subscription C (within 4 on t): A+ and B+ and count(A) < count(B)\n"
        "subscription X (within 3 on t): A and no N(N.k = A.k) after A\n"
        "subscription W (matching ALL, disposal NONE, within 3 on t): A and B\n"
    )
    engine = Engine.from_source(program, matcher="compiled", kernels="eager")
    assert engine.matchers() == {
        "G": ["reference"],
        "H": ["reference"],
        "C": ["compiled"],
        "X": ["compiled"],
        "W": ["compiled"],
    }


def test_a_match_left_in_the_queues_is_found_at_the_next_arrival() -> None:
    """After a match, the queues may hold another one without the next arriving event (here:
    disposal FP keeps the later instances of A); the kernel must then search them all, as the
    reference does, instead of only relations with the arriving event."""
    text = TYPES + (
        "subscription S (matching FR, disposal FP, within 100 on t): A[0] and A[1] and A[2] and B and A[0].k = A[2].k\n"
    )
    ks = {"b1": 0, "b2": 0, "a1": 0, "a2": 0, "a3": 1, "a4": 0, "a5": 1}
    stream = [{"id": i, "type": i[0].upper(), "attrs": {"k": k, "v": 0, "t": 1}} for i, k in ks.items()]
    expected = _observe(Engine.from_source(text, matcher="reference"), stream)
    assert [step[0] for step in expected][-2:] == [
        [{"subscription": "S", "conjunction": 0, "relation": ["a1", "a2", "a4", "b1"]}],
        [{"subscription": "S", "conjunction": 0, "relation": ["a2", "a3", "a4", "b2"]}],
    ]
    assert _observe(Engine.from_source(text, matcher="compiled", kernels="eager"), stream) == expected


def test_times_at_the_ends_of_int64() -> None:
    """Spans, sums and deadlines beyond 64 bits: the kernel's checked arithmetic decides them as
    Python does (a sum that overflows fails its predicates), or hands the search to the reference
    matcher (an absence's deadline overflowing)."""
    big, small, half = 2**63 - 1, -(2**63), 2**62
    ends = [("A", small), ("B", small + 1), ("N", 0), ("A", big - 2), ("B", big - 1), ("advance", big), ("N", big)]
    sums = [("A", half), ("A", half), ("B", half)]  # the sum of the run of two A overflows
    cases = [
        ("A and B", ends),
        ("A and no N(N.k = A.k) after A", ends),
        ("A+ and B and sum(A.t) <= B.t and avg(A.t) <= B.t", sums),
    ]
    for conjunction, events in cases:
        stream = [
            {"advance": t} if name == "advance" else {"id": f"e{i}", "type": name, "attrs": {"k": 0, "v": 0, "t": t}}
            for i, (name, t) in enumerate(events)
        ]
        delivered = 0
        for matching, disposal in COMBINATIONS:
            options = f"matching {matching}, disposal {disposal}, within 3 on t"
            text = TYPES + f"subscription S ({options}): {conjunction}\n"
            expected = _observe(Engine.from_source(text, matcher="reference"), stream)
            assert _observe(Engine.from_source(text, matcher="compiled", kernels="eager"), stream) == expected
            delivered += sum(len(step[0]) for step in expected)
        assert delivered, conjunction


@pytest.mark.parametrize(
    "conjunction",
    ["A+ and B and count(A) >= 2 and prev(A).k = A.k", "A[0] and A[1] and B and A[0].k = A[1].k"],
)
def test_neighbours_joined_by_purging_are_found_at_the_next_arrival(conjunction: str) -> None:
    """A group's runs are contiguous in the queue, and so are instances under FRC: purging a2
    (older than the window) from between a1 and a3 makes a1 a3 valid without any arriving event,
    so the next arrival must search everything, as the reference does, not only relations that
    contain it."""
    text = TYPES + f"subscription S (matching FRC, disposal PI, within 5 on t, lateness 2): {conjunction}\n"
    events = [("b1", 0, 10), ("a1", 0, 10), ("a2", 1, 8), ("a3", 0, 10), ("b2", 0, 16), ("a4", 1, 16)]
    stream = [{"id": i, "type": i[0].upper(), "attrs": {"k": k, "v": 0, "t": t}} for i, k, t in events]
    expected = _observe(Engine.from_source(text, matcher="reference"), stream)
    assert [[d["relation"] for d in step[0]] for step in expected] == [[], [], [], [], [], [["a1", "a3", "b1"]]]
    assert _observe(Engine.from_source(text, matcher="compiled", kernels="eager"), stream) == expected


@pytest.mark.parametrize("name", sorted(ORACLE_SHAPES))
def test_compiled_extended_matcher_equals_the_brute_force_oracle(name: str) -> None:
    """The shapes of test_extended_oracle.py, on the compiled matcher, against the oracle that
    shares no code with either matcher."""
    shape, admit = ORACLE_SHAPES[name]
    types = (
        "".join(dict.fromkeys(t for t, _ in shape.slots)) + "".join(shape.negated) + ("B" if name == "negation" else "")
    )
    options = "" if shape.window is None else f", within {shape.window[0]} on {shape.window[1]}"
    for seed in range(10):
        stream = oracle_stream(seed, types, jitter=shape.window is not None)
        for matching, disposal in COMBINATIONS:
            text = ORACLE_TYPES + f"subscription S (matching {matching}, disposal {disposal}{options}): {shape.source}"
            engine = Engine.from_source(text, matcher="compiled", kernels="eager")
            assert engine.matchers() == {"S": ["compiled"]}
            got = []
            for e in stream:
                attrs = {"k": e["k"], "v": e["v"], "t": e["t"]}
                got += [(d.ids, d.timeout) for d in engine.publish({"id": e["id"], "type": e["type"], "attrs": attrs})]
            assert got == oracle_run(shape, matching, disposal, stream, admit), (name, matching, disposal, seed)


@pytest.mark.parametrize("kernels", ["eager", "background"])
def test_partitioned_extended_subscriptions(kernels: str) -> None:
    """Each partition of an extended subscription is a compiled extended state (in the
    background mode, on the reference matcher until the kernel requested at subscription is in)."""
    text = TYPES + (
        "subscription S (matching ALL, disposal NONE, within 4 on t, partition by k):"
        " A+ and B and count(A) >= 2 and A.v <= B.v + 1\n"
    )
    stream = _stream(7, "ABN", floats=False) + _stream(8, "ABN", floats=False)
    stream = [e if "advance" in e else {**e, "id": f"{e['id']}-{i}"} for i, e in enumerate(stream)]
    engine = Engine.from_source(text, matcher="compiled", kernels=kernels)
    engine.wait_for_kernels()
    got = _observe(engine, stream)
    assert engine.matchers() == {"S": ["compiled"]}
    assert got == _observe(Engine.from_source(text, matcher="reference"), stream)
    assert sum(len(step[0]) for step in got)
