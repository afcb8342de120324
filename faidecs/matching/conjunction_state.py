"""The runtime state of one conjunction: one FIFO queue per type of its signature."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from faidecs.errors import SnapshotError
from faidecs.grammar.model import Conjunction, Disposal, Slot
from faidecs.matching.events import Event
from faidecs.matching.reference import Queues, ReferenceMatcher, dispose

Validate = Callable[[Any], Event]


class ConjunctionState:
    """Queues of one conjunction, and the arrival step ENQUEUE → MATCH → DEQUEUE."""

    __slots__ = ("conjunction", "matcher", "disposal", "queues")

    def __init__(self, matcher: ReferenceMatcher, disposal: Disposal):
        self.conjunction: Conjunction = matcher.conjunction
        self.matcher = matcher
        self.disposal = disposal
        self.queues: Queues = {t: [] for t in self.conjunction.types}

    def offer(self, event: Event) -> tuple[Event, ...] | None:
        """Process one arriving event; return the relation it completes, if any.

        At most one relation per arrival. The relation need not contain ``event``: an older
        assignment may still match (e.g. after infix-only disposal)."""
        queue = self.queues.get(event.type)
        if queue is None or not self.matcher.admits(event):
            return None
        queue.append(event)
        chosen = self.matcher.match(self.queues)
        if chosen is None:
            return None
        signature = self.conjunction.signature
        relation = tuple(self.queues[slot.type_name][pos] for slot, pos in zip(signature, chosen))
        for type_name in self.conjunction.types:
            matched = [pos for slot, pos in zip(signature, chosen) if slot.type_name == type_name]
            self.queues[type_name] = dispose(self.queues[type_name], matched, self.disposal)
        return relation

    def state_json(self) -> dict[str, Any]:
        return {t: [e.id for e in q] for t, q in self.queues.items()}

    def check(self) -> None:
        """Assert the invariants: one queue per signature type, each holding only its type."""
        assert list(self.queues) == list(self.conjunction.types)
        for type_name, queue in self.queues.items():
            assert all(e.type == type_name for e in queue), type_name

    def snapshot(self) -> dict[str, Any]:
        return {t: [e.to_json() for e in q] for t, q in self.queues.items()}

    def restore(self, saved: Any, validate: Validate) -> None:
        """Take the queues of a :meth:`snapshot`; raises :class:`SnapshotError` if they do not fit."""
        if not isinstance(saved, Mapping) or list(saved) != list(self.queues):
            raise SnapshotError(f"expected queues {list(self.queues)}")
        for type_name, events in saved.items():
            restored = [validate(e) for e in events]
            if any(e.type != type_name for e in restored):
                raise SnapshotError(f"queue {type_name} holds another type")
            self.queues[type_name] = restored


class StagedConjunctionState:
    """A conjunction matched component by component (``covering staged``).

    Each component (types linked by predicates) is a conjunction of its own with its own queues,
    matched under the subscription's options exactly as a subscriber to that component alone
    would. Its relations wait in a FIFO; when every component has one waiting, the oldest of each
    are joined into one relation (first received, prefix disposal). An arrival reaches the one
    component of its type, which yields at most one relation, so at most one relation is
    delivered per arrival."""

    __slots__ = ("conjunction", "parts", "pending", "_owner")

    def __init__(self, conjunction: Conjunction, make: Callable[[Conjunction], ConjunctionState]):
        self.conjunction = conjunction
        self.parts = [make(conjunction.project(c)) for c in conjunction.components()]
        self.pending: list[list[tuple[Event, ...]]] = [[] for _ in self.parts]
        self._owner = {t: k for k, part in enumerate(self.parts) for t in part.conjunction.types}

    def offer(self, event: Event) -> tuple[Event, ...] | None:
        k = self._owner.get(event.type)
        if k is None:
            return None
        relation = self.parts[k].offer(event)
        if relation is None:
            return None
        self.pending[k].append(relation)
        if not all(self.pending):
            return None
        by_slot: dict[Slot, Event] = {}
        for part, waiting in zip(self.parts, self.pending):
            by_slot.update(zip(part.conjunction.signature, waiting.pop(0)))
        return tuple(by_slot[s] for s in self.conjunction.signature)

    @property
    def queues(self) -> Queues:
        merged = {t: q for part in self.parts for t, q in part.queues.items()}
        return {t: merged[t] for t in self.conjunction.types}

    def state_json(self) -> dict[str, Any]:
        """The queues per type, and under ``"staged"`` the component relations waiting to be joined
        (one list per component, components in canonical order)."""
        out: dict[str, Any] = {t: [e.id for e in q] for t, q in self.queues.items()}
        out["staged"] = [[[e.id for e in rel] for rel in waiting] for waiting in self.pending]
        return out

    def check(self) -> None:
        for part in self.parts:
            part.check()
        assert not all(self.pending), "joinable relations left waiting"

    def snapshot(self) -> dict[str, Any]:
        return {
            "parts": [part.snapshot() for part in self.parts],
            "pending": [[[e.to_json() for e in rel] for rel in waiting] for waiting in self.pending],
        }

    def restore(self, saved: Any, validate: Validate) -> None:
        if not isinstance(saved, Mapping) or set(saved) != {"parts", "pending"}:
            raise SnapshotError("expected the parts and pending relations of a staged conjunction")
        if len(saved["parts"]) != len(self.parts) or len(saved["pending"]) != len(self.parts):
            raise SnapshotError(f"expected {len(self.parts)} components")
        for part, part_saved in zip(self.parts, saved["parts"]):
            part.restore(part_saved, validate)
        self.pending = [[tuple(validate(e) for e in rel) for rel in waiting] for waiting in saved["pending"]]


AnyConjunctionState = ConjunctionState | StagedConjunctionState
