"""Run an ordering layer with an embedded engine per process and record the run log.

Each process subscribes to the types its subscription names (the layer's topics); whatever the
layer hands it goes, in that order, to the process's own :class:`~faidecs.matching.engine.Engine`.
The run log has the publications (when the publisher called the layer), the layer's notifications
and the engines' deliveries, all in virtual-time order, so ``faidecs verify`` judges the layer's
promise (Total Notification Order) and the engines' properties on top of it. Joiners start with
empty queues (``joined`` with no peer); leavers stop at their ``unsubscribe``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from faidecs.grammar import compile_program
from faidecs.matching.engine import Engine
from faidecs.matching.guarantees import Property
from faidecs.matching.records import Matcher
from faidecs.ordering.layer import OrderingLayer
from faidecs.ordering.network import Network
from faidecs.runs.runlog import RunLog, RunRecorder

#: What every run of an ordering layer keeps, whatever the processes' semantic options: the
#: layer's own promise and what it hands out, and what any deterministic engine keeps on a stream of
#: distinct published events. Conjunction Agreement holds because two processes with one
#: conjunction are handed its types' events in one order (TNO) and, when both are present
#: throughout, all of them (Validity).
KEPT_ON_EVERY_LAYER: tuple[Property, ...] = (
    Property.TOTAL_NOTIFICATION_ORDER,
    Property.NOTIFICATION_INTEGRITY,
    Property.NOTIFICATION_VALIDITY,
    Property.NO_CREATION,
    Property.ADMISSION,
    Property.CONJUNCTION_AGREEMENT,
)


@dataclass(frozen=True, slots=True)
class Publication:
    time: float
    publisher: str
    event: dict[str, Any]  # the input JSON shape: id, type, attrs


@dataclass(frozen=True, slots=True)
class Workload:
    """What happens in a run. ``subscriptions`` holds every process (one declaration each),
    joiners included; ``initial`` names those subscribed at system start."""

    types_source: str
    subscriptions: dict[str, str]
    initial: frozenset[str]
    publications: tuple[Publication, ...]
    joins: tuple[tuple[float, str], ...] = ()
    leaves: tuple[tuple[float, str], ...] = ()


@dataclass(slots=True)
class LayerRun:
    layer: OrderingLayer
    log: RunLog
    network: Network
    #: per process, events the layer still holds after the network went idle: a stall
    stalled: dict[str, list[str]]
    #: (process, event id) the layer owes a process still subscribed but never handed it
    missing: list[tuple[str, str]] = field(default_factory=list)

    @property
    def notifications(self) -> int:
        return len(self.log.notified)


def run_layer(
    layer: OrderingLayer,
    workload: Workload,
    *,
    seed: int,
    mean_delay: float = 1.0,
    ens_mean_delay: float = 1.0,
    matcher: Matcher = "reference",
) -> LayerRun:
    """Run ``workload`` through ``layer`` on a network seeded with ``seed`` until it is idle."""
    types = compile_program(workload.types_source, "<types>").types
    programs = {
        name: compile_program(source, f"<subscription of {name}>", known_types=types)
        for name, source in workload.subscriptions.items()
    }
    topics = {name: frozenset(t for s in p.subscriptions for t in s.types) for name, p in programs.items()}
    recorder = RunRecorder(workload.types_source, workload.subscriptions, ordering=layer.name)
    engines: dict[str, Engine] = {}
    events: dict[str, dict[str, Any]] = {}
    gone: set[str] = set()

    def notify(process: str, event_id: str, topic: str) -> None:
        recorder.notify(process, event_id)
        engine = engines.get(process)
        if engine is None or process in gone:
            return  # Notification Integrity reports it; an engine that is not there cannot take it
        for delivery in engine.publish(events[event_id]):
            recorder.deliver(process, delivery.conjunction, delivery.ids)

    network = Network(random.Random(seed), mean_delay=mean_delay, ens_mean_delay=ens_mean_delay)
    for name in sorted(workload.initial):
        engines[name] = Engine(programs[name], matcher=matcher)
    layer.start(network, {name: topics[name] for name in sorted(workload.initial)}, notify)

    def publish(p: Publication) -> None:
        stamped = recorder.publish({**p.event, "publisher": p.publisher})
        events[p.event["id"]] = stamped
        layer.publish(p.publisher, p.event["id"], p.event["type"])

    def join(process: str) -> None:
        engines[process] = Engine(programs[process], matcher=matcher)
        recorder.joined(process, None)
        layer.subscribe(process, topics[process])

    def leave(process: str) -> None:
        gone.add(process)
        recorder.left(process)
        layer.unsubscribe(process, topics[process])

    for p in workload.publications:
        network.at(p.time, partial(publish, p))
    for time, process in workload.joins:
        network.at(time, partial(join, process))
    for time, process in workload.leaves:
        network.at(time, partial(leave, process))
    network.run()

    final = {name: next(iter(e.state_json().values())) for name, e in engines.items() if name not in gone}
    log = recorder.finish(final)
    notified = {(n.process, n.event) for n in log.notified}
    missing = [
        (name, p.id)
        for name in sorted(engines)
        if name not in gone
        for p in log.published
        if p.type in topics[name] and (name, p.id) not in notified and layer.owes(name, p.id)
    ]
    return LayerRun(layer, log, network, layer.pending(), missing)
