"""One variant over the whole stream: the engine's figures, its deliveries, its run's verdicts.

This runs in a worker process (or in the caller's, with one worker). The events were read and
validated once by the caller; the engine gets them as validated :class:`Event` objects, so a
variant's time is matching only. The run log the property checker reads is built after the last
event from the deliveries and their arrivals (it is the log ``faidecs run --log`` records, record
for record), so recording costs nothing while the engine is timed and measured.
"""

from __future__ import annotations

import json
import os
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from faidecs.errors import QueueOverflowError
from faidecs.grammar.model import Program
from faidecs.matching.bounds import Bounds
from faidecs.matching.delivery import Delivery
from faidecs.matching.engine import Engine
from faidecs.matching.events import Event
from faidecs.matching.records import Matcher, Metrics

#: The percentiles of per-event latency reported (as fractions).
PERCENTILES = (0.5, 0.9, 0.99, 0.999, 1.0)


@dataclass(slots=True)
class Compact:
    """One delivery, by positions in the stream: what differences and "never used" need."""

    arrival: int  # the position of the event whose publish() delivered it
    conjunction: int
    positions: tuple[int, ...]
    timeout: bool


@dataclass(slots=True)
class Measured:
    """What a worker hands back for one variant (picklable; the deliveries by position)."""

    events: int
    engine_seconds: float
    latency_us: tuple[float, ...]  # at :data:`PERCENTILES`
    stopped: str | None
    every: int
    sample_arrivals: list[int]
    sample_queued: dict[str, list[int]]
    sample_memory: list[int]
    final_queued: dict[str, int]
    drops: dict[str, int]
    matchers: dict[str, str]
    deliveries: dict[str, list[Compact]]  # subscription -> its deliveries, in order
    order: list[str]  # the subscription of each delivery, in delivery order (all subscriptions)
    final_state: dict[str, list[dict[str, list[str]]]] = field(default_factory=dict)


def _rss() -> int | None:
    """The process's resident memory in bytes (Linux: /proc), or None elsewhere."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _queued(metrics: Metrics) -> dict[str, int]:
    return {
        name: sum(sum(c["queues"].values()) for c in conjunctions)
        for name, conjunctions in metrics["subscriptions"].items()
    }


def measure(
    program: Program,
    events: Sequence[Event],
    positions: Mapping[str, int],
    *,
    matcher: Matcher = "compiled",
    bounds: Bounds | None = None,
    every: int = 1,
    emit: Callable[[Delivery], None] | None = None,
) -> Measured:
    """Publish ``events`` to a fresh engine of ``program`` (kernels loaded before the first
    event: the compiled matcher runs warm), timing each ``publish()``. ``positions`` maps each
    event id to its position. Queue lengths and memory are sampled after every ``every``-th
    event and after the last; ``every=1`` gives the exact peak."""
    engine = Engine(program, matcher=matcher, bounds=bounds, kernels="eager")
    n = len(events)
    latencies = array("q", bytes(8 * n))
    deliveries: dict[str, list[Compact]] = {s.name: [] for s in program.subscriptions}
    arrivals: list[int] = []
    memory: list[int] = []
    names = [s.name for s in program.subscriptions]
    queued: dict[str, list[int]] = {name: [] for name in names}
    order: list[str] = []
    stopped: str | None = None
    clock = time.perf_counter_ns
    publish = engine.publish
    # Touch every event once before the baseline: a forked worker's first reference to a
    # shared event copies its page, which is the caller's memory, not this variant's.
    for event in events:
        _ = event.values
    base = _rss()
    published = 0
    try:
        for k, event in enumerate(events):
            start = clock()
            found = publish(event)
            latencies[k] = clock() - start
            published = k + 1
            for d in found:
                order.append(d.subscription)
                deliveries[d.subscription].append(
                    Compact(k, d.conjunction, tuple(positions[e.id] for e in d.relation), d.timeout)
                )
                if emit is not None:
                    emit(d)
            if published % every == 0 and published != n:
                _sample(engine, published, arrivals, queued, memory, base)
    except QueueOverflowError as exc:
        # The event that overflowed is the one after the last published (numbered from 1).
        stopped = f"stopped at event #{published + 1} ({events[published].id}): {exc}"
    _sample(engine, published, arrivals, queued, memory, base)
    metrics = engine.metrics()
    done = np.frombuffer(latencies, dtype=np.int64)[:published]
    percentiles = tuple(float(x) / 1000.0 for x in np.quantile(done, PERCENTILES)) if published else (0.0,) * 5
    return Measured(
        events=published,
        engine_seconds=float(done.sum()) / 1e9,
        latency_us=percentiles,
        stopped=stopped,
        every=every,
        sample_arrivals=arrivals,
        sample_queued=queued,
        sample_memory=memory,
        final_queued=_queued(metrics),
        drops={name: sum(c["drops"] for c in cs) for name, cs in metrics["subscriptions"].items()},
        matchers={name: ", ".join(kinds) for name, kinds in engine.matchers().items()},
        deliveries=deliveries,
        order=order,
        final_state={name: queues for name, queues in engine.state_json().items()},
    )


def _sample(
    engine: Engine,
    published: int,
    arrivals: list[int],
    queued: dict[str, list[int]],
    memory: list[int],
    base: int | None,
) -> None:
    arrivals.append(published)
    for name, value in _queued(engine.metrics()).items():
        queued[name].append(value)
    now = _rss()
    if base is not None and now is not None:
        memory.append(max(0, now - base))


def delivery_writer(path: Path) -> tuple[Callable[[Delivery], None], Callable[[], None]]:
    """An ``emit`` that writes each delivery as ``faidecs run`` prints it (one JSON object a
    line), and the function that closes the file."""
    f = open(path, "w", encoding="utf-8")
    dumps = json.dumps

    def emit(d: Delivery) -> None:
        f.write(dumps(d.to_json(), ensure_ascii=False) + "\n")

    return emit, f.close


__all__ = ["PERCENTILES", "Compact", "Measured", "delivery_writer", "measure"]
