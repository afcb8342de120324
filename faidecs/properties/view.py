"""The run as the property checks see it: streams of deliveries per process and conjunction."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from faidecs.grammar.model import Conjunction, EventType, Predicate, Slot, Subscription
from faidecs.matching.evaluate import compile_predicate
from faidecs.matching.events import Event, EventValidator
from faidecs.runs.runlog import Published, RunLog, RunLogError

StreamKey = tuple[str, int]  # (process, conjunction index as written)


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

    @property
    def key(self) -> StreamKey:
        return (self.process, self.index)

    @property
    def options(self) -> tuple[str, str]:
        return (self.subscription.matching.value, self.subscription.disposal.value)

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
        for p in log.published:
            if p.id in self.published:
                raise RunLogError(f"event id {p.id!r} published twice")
            self.published[p.id] = p
            self.events[p.id] = validator.validate(p.event)
        self.streams: dict[StreamKey, Stream] = {}
        for name, sub in self.subscriptions.items():
            for k, conj in enumerate(sub.conjunctions):
                self.streams[(name, k)] = Stream(name, k, conj, sub)
        for d in log.delivered:
            stream = self.streams.get((d.process, d.conjunction))
            if stream is None:
                raise RunLogError(f"delivery at time {d.time}: process {d.process} has no conjunction {d.conjunction}")
            stream.deliveries.append((d.time, d.relation))

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


def binary_free_slots(conj: Conjunction) -> list[Slot]:
    """Positions that no predicate links to another position (Event Validity applies there)."""
    linked = {s for p in conj.predicates if len(p.slots) > 1 for s in p.slots}
    return [s for s in conj.signature if s not in linked]
