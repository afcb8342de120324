"""``faidecs compare``: every requested variant over the same events, then their differences.

The caller reads and validates the events once (:mod:`faidecs.comparing.stream`); the variants
then run in worker processes forked from it, so each worker reads the validated events from
the caller's memory rather than a copy of them. A fresh worker per variant keeps one variant's
memory figures free of the one before it. Where ``fork`` is not available (or with one worker)
the variants run one after the other in the calling process.
"""

from __future__ import annotations

import multiprocessing
import os
import time
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from faidecs.comparing.differences import difference
from faidecs.comparing.measure import Compact, Measured, delivery_writer, measure
from faidecs.comparing.result import (
    Comparison,
    Difference,
    Latency,
    QueueSeries,
    SubscriptionFigures,
    VariantResult,
)
from faidecs.comparing.stream import Reject, Stream, read_stream
from faidecs.comparing.variants import (
    CoveringChoice,
    OptionsError,
    Variant,
    own_variant,
    parse_options,
    rewrite,
    variants,
)
from faidecs.comparing.verdicts import verdicts
from faidecs.errors import FaidecsError
from faidecs.grammar import compile_program
from faidecs.grammar.model import Covering, Program
from faidecs.matching.bounds import Bounds
from faidecs.matching.events import Event
from faidecs.matching.guarantees import Combination
from faidecs.matching.records import Matcher
from faidecs.properties import check
from faidecs.runs.replay import OnError
from faidecs.runs.runlog import RunLog, RunRecorder
from faidecs.runs.runlog_records import Delivered, Published

#: Queue samples over a stream, by default (``every`` = events // SAMPLES).
SAMPLES = 1000


@dataclass(frozen=True, slots=True)
class _Job:
    """What every variant shares; a forked worker finds it in :data:`_JOB` (nothing is pickled)."""

    program: Program
    filename: str
    stream: Stream
    positions: dict[str, int]
    of_type: dict[str, int]  # events per type
    matcher: Matcher
    bounds: Bounds | None
    every: int
    verify: bool
    out: Path | None
    logs: bool
    #: each event as the run log records it, and each by id (verification only): made once here,
    #: not once per variant
    stamped: list[dict[str, Any]]
    by_id: dict[str, Event]


_JOB: _Job | None = None


def _types_source(program: Program) -> str:
    return "\n".join(t.source or t.declaration() for t in program.types.values()) + "\n"


def stamped_events(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Each event as ``faidecs run --log`` records it (publisher and seq filled in)."""
    recorder = RunRecorder("", {})
    stamp = recorder.stamp
    if any(e.publisher is not None or e.seq is not None for e in events):
        return [stamp(e.to_json()) for e in events]
    # Events without publisher and seq, the usual stream: what stamp() makes of them, three
    # times faster (a million events in one second).
    return [
        {"id": e.id, "type": e.event_type.name, "attrs": e.attrs, "publisher": "publisher", "seq": k}
        for k, e in enumerate(events)
    ]


def run_log(program: Program, events: Sequence[Event], stamped: Sequence[dict[str, Any]], measured: Measured) -> RunLog:
    """The run log ``faidecs run --log`` records for this run (one clock for publications and
    deliveries, each delivery after the publication that made it), built from its deliveries;
    ``stamped``: :func:`stamped_events` of ``events``. Built here rather than through
    :class:`RunRecorder`, whose per-call cost doubles the time for a million events."""
    log = RunLog(_types_source(program), {s.name: s.source for s in program.subscriptions})
    cursor = dict.fromkeys(measured.deliveries, 0)
    flat: list[tuple[str, Compact]] = []
    for name in measured.order:
        flat.append((name, measured.deliveries[name][cursor[name]]))
        cursor[name] += 1
    publish, deliver = log.published.append, log.delivered.append
    time, j, count = 0, 0, len(flat)
    for k in range(measured.events):
        time += 1
        publish(Published(time, stamped[k]))
        while j < count and flat[j][1].arrival == k:
            name, d = flat[j]
            time += 1
            deliver(Delivered(time, name, d.conjunction, tuple(events[p].id for p in d.positions)))
            j += 1
    log.final = dict(measured.final_state)
    return log


#: a variant's result, and its deliveries by position (for the differences)
Outcome = tuple[VariantResult, dict[str, list[Compact]]]


def _run(variant: Variant) -> Outcome:
    job = _JOB
    assert job is not None, "a variant runs only inside compare()"
    start = time.perf_counter()
    try:
        program, text = rewrite(job.program, variant, job.filename)
    except FaidecsError as err:
        return VariantResult(variant.name, "", skipped=str(err).strip().splitlines()[0]), {}
    events = job.stream.events
    folder = None if job.out is None else job.out / variant.slug
    emit, close = None, None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "program.fdc").write_text(text, encoding="utf-8")
        emit, close = delivery_writer(folder / "deliveries.jsonl")
    try:
        measured = measure(
            program, events, job.positions, matcher=job.matcher, bounds=job.bounds, every=job.every, emit=emit
        )
    finally:
        if close is not None:
            close()
    subs = {s.name: s for s in program.subscriptions}
    verify_start = time.perf_counter()
    report = None
    if job.verify:
        log = run_log(program, events, job.stamped, measured)
        log.validated = job.by_id
        report = check(log)
        if folder is not None and job.logs:
            with open(folder / "runlog.jsonl", "w", encoding="utf-8") as f:
                log.write(f)
    verify_seconds = time.perf_counter() - verify_start
    figures = []
    for name, sub in subs.items():
        used = {p for d in measured.deliveries[name] for p in d.positions}
        of_types = sum(job.of_type.get(t, 0) for t in sub.types)
        combination = Combination(sub.matching, sub.disposal).name
        samples = measured.sample_queued[name]
        figures.append(
            SubscriptionFigures(
                name=name,
                options=combination + (", covering staged" if sub.covering is Covering.STAGED else ""),
                relations=len(measured.deliveries[name]),
                timeouts=sum(d.timeout for d in measured.deliveries[name]),
                events_of_types=of_types,
                never_used=of_types - len(used),
                peak_queue=max(samples, default=0),
                final_queue=measured.final_queued[name],
                drops=measured.drops[name],
                verdicts=() if report is None else verdicts(report, subs, name),
            )
        )
    p50, p90, p99, p999, top = measured.latency_us
    memory = measured.sample_memory
    result = VariantResult(
        name=variant.name,
        program=text,
        stopped=measured.stopped,
        events=measured.events,
        engine_seconds=measured.engine_seconds,
        wall_seconds=time.perf_counter() - start,
        verify_seconds=verify_seconds if report is not None else 0.0,
        throughput=measured.events / measured.engine_seconds if measured.engine_seconds > 0 else 0.0,
        latency=Latency(p50, p90, p99, p999, top),
        memory_peak=max(memory) if memory else None,
        memory_final=memory[-1] if memory else None,
        matchers=measured.matchers,
        subscriptions=tuple(figures),
        verdicts=() if report is None else verdicts(report, subs),
        queues=QueueSeries(
            measured.every,
            tuple(measured.sample_arrivals),
            {name: tuple(v) for name, v in measured.sample_queued.items()},
            tuple(memory),
        ),
    )
    return result, measured.deliveries


def _child(variant: Variant, send: Connection) -> None:
    try:
        send.send(("ok", _run(variant)))
    except BaseException:  # the parent reports it, with the variant's name
        send.send(("error", traceback.format_exc()))
    finally:
        send.close()


def _in_workers(ran: Sequence[Variant], count: int) -> list[Outcome]:
    """Each variant in a fresh forked process, at most ``count`` at once. Plain processes rather
    than a pool: a pool forks its later workers from its own threads, and forking a process
    with threads can deadlock (Python 3.12 warns of it)."""
    context = multiprocessing.get_context("fork")
    outcomes: list[Outcome | None] = [None] * len(ran)
    waiting = list(enumerate(ran))
    running: dict[Connection, tuple[int, BaseProcess]] = {}
    try:
        while waiting or running:
            while waiting and len(running) < count:
                index, variant = waiting.pop(0)
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_child, args=(variant, send), name=f"faidecs compare {variant.name}")
                process.start()
                send.close()
                running[receive] = (index, process)
            for ready in wait(list(running)):
                assert isinstance(ready, Connection)
                index, done = running.pop(ready)
                try:
                    status, value = ready.recv()
                except EOFError:
                    done.join()
                    raise FaidecsError(
                        f"variant {ran[index].name}: its worker process died (exit code {done.exitcode}; "
                        "out of memory? try fewer --workers or a bound such as --max-age)"
                    ) from None
                done.join()
                if status != "ok":
                    raise FaidecsError(f"variant {ran[index].name} failed in its worker:\n{value}")
                outcomes[index] = value
    finally:
        for _, left in running.values():
            left.kill()
            left.join()
    return [o for o in outcomes if o is not None]


def _cores() -> int:
    """The cores this process may run on (its affinity where the platform tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _pairs(
    pairs: Sequence[tuple[str, str]] | None, ran: Sequence[Variant], program: Program
) -> list[tuple[str, str, str]]:
    """(subscription, a, b) for each difference to report."""
    names = [v.name for v in ran]
    if pairs is not None:
        for a, b in pairs:
            for name in (a, b):
                if name not in names:
                    raise OptionsError(f"--pairs: {name!r} is not a variant here; they are: {', '.join(names)}")
        return [(s.name, a, b) for a, b in pairs for s in program.subscriptions]
    out = []
    for s in program.subscriptions:
        own = own_variant(s, ran)
        assert own is not None  # compare() adds "as written" where a subscription's own is missing
        out += [(s.name, v.name, own.name) for v in ran if v is not own]
    return out


def compare(
    program: str | Path | Program,
    events: str | Path | Iterable[Mapping[str, Any] | Event],
    *,
    options: str | Sequence[Combination | None] = "all",
    covering: CoveringChoice = "as-written",
    pairs: Sequence[tuple[str, str]] | None = None,
    bounds: Bounds | None = None,
    matcher: Matcher = "compiled",
    workers: int | None = None,
    every: int | None = None,
    verify: bool = True,
    out: str | Path | None = None,
    logs: bool = False,
    on_error: OnError = "stop",
    reject: Reject | None = None,
    filename: str | None = None,
) -> Comparison:
    """Run ``program`` over ``events`` once per option combination and compare the runs.

    ``program``: program text, a :class:`Path` to a program file, or a compiled
    :class:`~faidecs.Program`. ``events``: a JSON-lines file (``str`` path or :class:`Path`), or an
    iterable of events in the input shape (or validated :class:`~faidecs.Event` objects); they
    are read and validated once. ``options``: ``"all"`` (the 16 combinations of the papers),
    ``"every"`` (also the 5 of disposal NONE), ``"as-written"``, a comma-separated list
    (``"FR+PI,MR+I"``), or a sequence of :class:`Combination` (None: as written); each replaces
    every subscription's matching and disposal in turn. ``covering``: ``"as-written"``,
    ``"plain"``, ``"staged"`` or ``"both"`` (each combination under both). ``pairs``: the
    variants to diff, by name (default: each variant against each subscription's own options,
    run "as written" when no requested variant is its own). ``every``: sample queue lengths
    and memory after every ``every``-th event (default: a thousand samples over the stream;
    1 gives the exact peak). ``out``: write each variant's program and deliveries (as
    ``faidecs run`` prints them) under ``out/<variant>/``; ``logs`` also its run log, which
    ``faidecs verify`` reads. ``workers``: processes for the variants (default: one per core).
    ``filename``: the program's name in diagnostics and the report."""
    global _JOB
    start = time.perf_counter()
    if isinstance(program, Path):
        filename = filename or str(program)
        program = program.read_text(encoding="utf-8")
    filename = filename or "<program>"
    if isinstance(program, str):
        program = compile_program(program, filename)
    chosen = parse_options(options) if isinstance(options, str) else list(options)
    if not chosen:
        raise OptionsError("no option combination to compare")
    ran = variants(chosen, covering)
    if pairs is None and any(own_variant(s, ran) is None for s in program.subscriptions):
        ran.append(Variant(None, None))
    stream = read_stream(program.types, events, on_error=on_error, reject=reject)
    of_type: dict[str, int] = {}
    for e in stream.events:
        of_type[e.type] = of_type.get(e.type, 0) + 1
    folder = None if out is None else Path(out)
    _JOB = _Job(
        program,
        filename,
        stream,
        {e.id: k for k, e in enumerate(stream.events)},
        of_type,
        matcher,
        bounds,
        every if every is not None else max(1, len(stream.events) // SAMPLES),
        verify,
        folder,
        logs,
        stamped_events(stream.events) if verify else [],
        {e.id: e for e in stream.events} if verify else {},
    )
    count = workers if workers is not None else _cores()
    count = max(1, min(count, len(ran)))
    try:
        if count > 1 and "fork" in multiprocessing.get_all_start_methods():
            outcomes = _in_workers(ran, count)
        else:
            count = 1
            outcomes = [_run(v) for v in ran]
    finally:
        _JOB = None
    by_name = {result.name: deliveries for result, deliveries in outcomes}
    results = tuple(result for result, _ in outcomes)
    skipped = {r.name for r in results if r.skipped}
    found: list[Difference] = []
    for sub, a, b in _pairs(pairs, ran, program):
        if a in skipped or b in skipped:
            continue
        found.append(difference(sub, a, b, by_name[a][sub], by_name[b][sub], stream.events))
    return Comparison(
        program=filename,
        source=stream.source,
        events=len(stream.events),
        rejected=stream.rejected,
        read_seconds=stream.seconds,
        seconds=time.perf_counter() - start,
        workers=count,
        matcher=matcher,
        variants=results,
        differences=tuple(found),
    )


__all__ = ["SAMPLES", "compare", "run_log"]
