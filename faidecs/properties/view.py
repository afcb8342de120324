"""The run as the property checks see it: streams of deliveries per process and conjunction.

A partitioned subscription (``partition by A``) is, by definition, one unpartitioned subscription
per value v of ``A``, fed only the events whose ``A`` is v (docs/semantics.md, "Partitioned
subscriptions"). So the view splits each of its conjunctions into one stream per value: every
check then judges each partition as the subscription it is, and never asks a partition about the
events of another (a1 of k=1 and b2 of k=2 do not make a relation of `A and B`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from faidecs.grammar.model import Conjunction, EventType, Predicate, Slot, Subscription
from faidecs.matching.evaluate import compile_predicate
from faidecs.matching.events import Event, EventValidator
from faidecs.properties.extended import Timeline, slots_of
from faidecs.runs.runlog import Published, RunLog, RunLogError

#: the verdict printed for a property with unproven findings and no violation
UNPROVEN_VERDICT = "unproven (not a violation)"

StreamKey = tuple[str, int, Any]  # (process, conjunction index as written, partition value or None)


@dataclass(frozen=True, slots=True)
class Violation:
    """Minimal evidence that a property failed."""

    explanation: str
    events: tuple[str, ...] = ()
    processes: tuple[str, ...] = ()
    deliveries: tuple[int, ...] = ()  # delivery times

    def to_json(self) -> dict[str, Any]:
        return {
            "explanation": self.explanation,
            "events": list(self.events),
            "processes": list(self.processes),
            "deliveries": list(self.deliveries),
        }


@dataclass(slots=True)
class Stream:
    process: str
    index: int
    conjunction: Conjunction
    subscription: Subscription
    deliveries: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)  # (time, ids)
    #: for a partitioned subscription, the value of the partition attribute this stream is about
    value: Any = None

    @property
    def key(self) -> StreamKey:
        return (self.process, self.index, self.value)

    @property
    def options(self) -> tuple[str, str, str]:
        """What makes two streams' deliveries comparable besides the conjunction: a partitioned
        subscription delivers other relations than an unpartitioned one with the same options."""
        return (
            self.subscription.matching.value,
            self.subscription.disposal.value,
            self.subscription.partition_by or "",
        )

    @property
    def name(self) -> str:
        """The process, and the partition when there is one (for explanations)."""
        partition = self.subscription.partition_by
        return self.process if partition is None else f"{self.process} (partition {partition}={self.value!r})"

    def sees(self, event: Event) -> bool:
        """Whether ``event`` reaches this stream's queues: every event of an unpartitioned one,
        only the events of its value in a partitioned one."""
        return bool(partition_value(self.subscription, event) == self.value)

    def first_times(self) -> dict[str, int]:
        """The time each event was first delivered in this stream."""
        out: dict[str, int] = {}
        for time, ids in self.deliveries:
            for event_id in ids:
                out.setdefault(event_id, time)
        return out


class RunView:
    def __init__(self, log: RunLog):
        self.log = log
        self.types: dict[str, EventType] = log.types()
        self.subscriptions = log.subscriptions()
        validator = EventValidator(self.types)
        self.published: dict[str, Published] = {}
        self.events: dict[str, Event] = {}
        #: each event's publication time (what the order and liveness checks compare)
        self.times: dict[str, int] = {}
        published, events, times, validated = self.published, self.events, self.times, log.validated
        for p in log.published:  # a million publications in a big log: kept lean
            event_id = p.id
            if event_id in published:
                raise RunLogError(f"event id {event_id!r} published twice")
            published[event_id] = p
            times[event_id] = p.time
            known = validated.get(event_id)  # validated by the reader already
            events[event_id] = known if known is not None else validator.validate(p.event)
        self._by_publisher: dict[str, list[Published]] | None = None
        self.streams: dict[StreamKey, Stream] = {}
        self._timelines: dict[StreamKey, Timeline] = {}
        for name, sub in self.subscriptions.items():
            for k, conj in enumerate(sub.conjunctions):
                for value in self._values(sub, conj):
                    self.streams[(name, k, value)] = Stream(name, k, conj, sub, value=value)
        for d in log.delivered:
            owner = self.subscriptions.get(d.process)
            if owner is None or not 0 <= d.conjunction < len(owner.conjunctions):
                raise RunLogError(f"delivery at time {d.time}: process {d.process} has no conjunction {d.conjunction}")
            # A relation belongs to the partition of its first published event (Admission
            # reports one that mixes partitions; No Creation one made of unknown events).
            value = None
            if owner.partition_by is not None:
                first = next((self.events[i] for i in d.relation if i in self.events), None)
                value = None if first is None else partition_value(owner, first)
            key = (d.process, d.conjunction, value)
            stream = self.streams.get(key)
            if stream is None:
                stream = self.streams[key] = Stream(
                    d.process, d.conjunction, owner.conjunctions[d.conjunction], owner, value=value
                )
            stream.deliveries.append((d.time, d.relation))

    def _values(self, sub: Subscription, conj: Conjunction) -> list[Any]:
        """The partitions of ``conj`` in ``sub``: [None] when unpartitioned, else every value of
        the partition attribute among the published events of its types, in order of appearance."""
        if sub.partition_by is None:
            return [None]
        types = set(conj.types)
        values = {partition_value(sub, e): None for e in self.events.values() if e.type in types}
        return list(values)

    def publications_by(self) -> dict[str, list[Published]]:
        """Each publisher's publications, in publication order (made once per view)."""
        if self._by_publisher is None:
            by: dict[str, list[Published]] = {}
            for p in self.log.published:
                publisher = p.publisher
                found = by.get(publisher)
                if found is None:
                    by[publisher] = [p]
                else:
                    found.append(p)
            self._by_publisher = by
        return self._by_publisher

    def joined_at(self, process: str) -> int:
        """When ``process`` joined (0 for processes present from the start)."""
        joined = self.log.joined.get(process)
        return joined[0] if joined is not None else 0

    def fresh_joiner(self, process: str) -> bool:
        """``process`` joined with empty queues: its deliveries come from another state than
        everyone else's, so it is compared with no one (agreement and the total orders)."""
        joined = self.log.joined.get(process)
        return joined is not None and joined[1] is None

    def comparable_pairs(self) -> Iterator[tuple[Stream, Stream]]:
        for a, b in self.stream_pairs():
            if not (self.fresh_joiner(a.process) or self.fresh_joiner(b.process)):
                yield a, b

    def stream_pairs(self) -> Iterator[tuple[Stream, Stream]]:
        yield from combinations(self.streams.values(), 2)

    def order(self, event_id: str) -> int:
        return self.published[event_id].time

    def seen(self, stream: Stream) -> list[Event]:
        """The published events ``stream`` sees (its partition's), in publication order."""
        return [self.events[p.id] for p in self.log.published if stream.sees(self.events[p.id])]

    def timeline(self, stream: Stream) -> Timeline:
        """What an extended stream's state saw (:mod:`faidecs.properties.extended`)."""
        found = self._timelines.get(stream.key)
        if found is None:
            times = self.times
            found = self._timelines[stream.key] = Timeline(
                stream.subscription, stream.conjunction, self.seen(stream), times
            )
        return found

    def slots(self, stream: Stream, ids: tuple[str, ...]) -> list[Slot] | None:
        """The signature slot of each event of a delivered relation: position by position, and
        a group's members (``T[0]``, ``T[1]``, ...) all at the group's one slot; None when the
        relation does not fit the signature (Admission's business) or names unknown events."""
        conj = stream.conjunction
        if not conj.groups:
            return list(conj.signature) if len(ids) == len(conj.signature) else None
        if any(i not in self.events for i in ids):
            return None
        return slots_of(conj, [self.events[i] for i in ids])

    def project(self, stream: Stream, ids: tuple[str, ...], types: frozenset[str]) -> tuple[str, ...]:
        """The part of a delivered relation on the slots of ``types``."""
        slots = self.slots(stream, ids)
        if slots is None:
            return tuple(ids[k] for k in slot_positions(stream.conjunction, types) if k < len(ids))
        return tuple(i for i, s in zip(ids, slots) if s.type_name in types)


# --- conjunction structure ---------------------------------------------------------------------


def common_parts(a: Conjunction, b: Conjunction) -> list[frozenset[str]]:
    """Type sets S, unions of components of both, on which ``a`` and ``b`` project to the same
    conjunction: the shared Φ of `Φ ∧ Φ'` and `Φ ∧ Φ''` (Φ', Φ'' type-disjoint from Φ)."""
    shared = [c for c in a.components() if c in b.components() and a.project(c).text == b.project(c).text]
    out: list[frozenset[str]] = []
    for r in range(1, len(shared) + 1):
        for combo in combinations(shared, r):
            out.append(frozenset().union(*combo))
    return out


def slot_positions(conj: Conjunction, types: frozenset[str]) -> list[int]:
    return [k for k, s in enumerate(conj.signature) if s.type_name in types]


def evaluator(conj: Conjunction) -> list[tuple[Predicate, Any]]:
    positions = {slot: k for k, slot in enumerate(conj.signature)}
    return [(p, compile_predicate(p, positions)) for p in conj.predicates]


def partition_value(sub: Subscription, event: Event) -> Any:
    """The value of ``sub``'s partition attribute in ``event`` (None: unpartitioned). Every type
    of a partitioned subscription has the attribute (the program checker makes sure)."""
    if sub.partition_by is None:
        return None
    for attribute, value in zip(event.event_type.attributes, event.values):
        if attribute.name == sub.partition_by:
            return value
    return None


def binary_free_slots(conj: Conjunction) -> list[Slot]:
    """Positions that no predicate links to another position (Event Validity applies there)."""
    linked = {s for p in conj.predicates if len(p.slots) > 1 for s in p.slots}
    return [s for s in conj.signature if s not in linked]
