"""The runtime state of one conjunction: one FIFO queue per type of its signature."""

from __future__ import annotations

from typing import Any

from faidecs.grammar.model import Conjunction, Disposal
from faidecs.matching.events import Event
from faidecs.matching.reference import Queues, ReferenceMatcher, dispose


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

    def state_json(self) -> dict[str, list[str]]:
        return {t: [e.id for e in q] for t, q in self.queues.items()}

    def check(self) -> None:
        """Assert the invariants: one queue per signature type, each holding only its type."""
        assert list(self.queues) == list(self.conjunction.types)
        for type_name, queue in self.queues.items():
            assert all(e.type == type_name for e in queue), type_name

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return {t: [e.to_json() for e in q] for t, q in self.queues.items()}
