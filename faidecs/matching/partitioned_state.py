"""A conjunction partitioned by an attribute (``partition by symbol``): one independent set of
queues per value of that attribute.

An event goes to the queues of its own value only; matching, disposal and bounds run inside that
partition exactly as they would for a subscriber that saw only the events with that value, in the
same order. Every type of the conjunction has the attribute, with one kind (the checker makes sure),
so a relation always holds events of one value. Partitions are created on the first event of their
value and never merged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from faidecs.errors import EngineStateError, SnapshotError
from faidecs.grammar.model import Conjunction, EventType
from faidecs.matching.conjunction_state import AnyConjunctionState, Validate
from faidecs.matching.events import Event
from faidecs.matching.found import Matches
from faidecs.matching.reference import Queues
from faidecs.matching.snapshot_schema import Partitioned, convert


class PartitionedConjunctionState:
    __slots__ = ("conjunction", "attribute", "positions", "make", "parts", "last_arrivals", "_delivered")

    def __init__(
        self,
        conjunction: Conjunction,
        attribute: str,
        types: Mapping[str, EventType],
        make: Callable[[], AnyConjunctionState],
    ):
        self.conjunction = conjunction
        self.attribute = attribute
        self.positions = {t: types[t].position(attribute) for t in conjunction.watched_types}
        self.make = make
        self.parts: dict[Any, AnyConjunctionState] = {}
        self.last_arrivals: tuple[int, ...] = ()
        self._delivered = 0

    def key(self, event: Event) -> Any:
        return event.values[self.positions[event.type]]

    def part(self, key: Any) -> AnyConjunctionState:
        part = self.parts.get(key)
        if part is None:
            part = self.parts[key] = self.make()
        return part

    def offer(self, event: Event, arrival: int) -> tuple[Event, ...] | Matches | None:
        part = self.part(self.key(event))
        relation = part.offer(event, arrival)
        if relation is not None:
            self._delivered += len(relation) if isinstance(relation, Matches) else 1
            self.last_arrivals = part.last_arrivals
        return relation

    @property
    def deliveries(self) -> int:
        return self._delivered

    @property
    def drops(self) -> int:
        return sum(p.drops for p in self.parts.values())

    def queue_lengths(self) -> dict[str, int]:
        out = {t: 0 for t in self.conjunction.types}
        for p in self.parts.values():
            for t, n in p.queue_lengths().items():
                out[t] += n
        return out

    @property
    def queues(self) -> Queues:
        """Every partition's queues, one after the other in the order the partitions appeared."""
        out: Queues = {t: [] for t in self.conjunction.types}
        for p in self.parts.values():
            for t, q in p.queues.items():
                out[t].extend(q)
        return out

    def state_json(self) -> dict[str, Any]:
        """``{"partitions": {value as JSON text: that partition's queues}}``, values in the order
        the partitions appeared."""
        return {"partitions": {json.dumps(k): p.state_json() for k, p in self.parts.items()}}

    def check(self) -> None:
        for key, part in self.parts.items():
            part.check()
            for t, q in part.queues.items():
                stranger = next((e for e in q if self.key(e) != key), None)
                if stranger is not None:
                    raise EngineStateError(
                        f"partition {key!r}: queue {t} holds event {stranger.id!r} of partition {self.key(stranger)!r}"
                    )

    def snapshot(self) -> dict[str, Any]:
        return {"partitions": [[k, p.snapshot()] for k, p in self.parts.items()]}

    def restore(self, saved: Any, validate: Validate, published: int) -> None:
        partitions: Partitioned = convert(saved, Partitioned)
        self.parts = {}
        for key, part_saved in partitions.partitions:
            if key in self.parts:
                raise SnapshotError(f"partition value {json.dumps(key)} appears twice")
            part = self.part(key)
            try:
                part.restore(part_saved, validate, published)
            except SnapshotError as exc:
                raise SnapshotError(f"partition {json.dumps(key)}: {exc}") from None
            for t, q in part.queues.items():
                if any(self.key(e) != key for e in q):
                    raise SnapshotError(f"partition {json.dumps(key)}: queue {t} holds an event of another value")


__all__ = ["PartitionedConjunctionState"]
