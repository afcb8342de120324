"""What the engine hands to its user: one relation for one conjunction of one subscription."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from faidecs.grammar.model import Slot
from faidecs.matching.events import Event


@dataclass(frozen=True, slots=True)
class Delivery:
    """A relation delivered for ``subscription``'s conjunction number ``conjunction`` (as written).

    ``relation`` holds one event per slot of ``signature``: types by name, then instance index;
    a group (``T+``) has one slot per member, ``T[0]``, ``T[1]``, ... in queue order. ``timeout``
    marks the delivery of an absence (its deadline passed with no negated event); ``aggregates``
    maps each aggregate the conjunction uses (``"avg(Quote.price)"``) to its value.
    """

    subscription: str
    conjunction: int
    relation: tuple[Event, ...]
    signature: tuple[Slot, ...]
    timeout: bool = False
    aggregates: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ids(self) -> list[str]:
        return [e.id for e in self.relation]

    def __getitem__(self, slot: str) -> Event:
        """The event bound to a slot, e.g. ``delivery["StockQuote[1]"]``."""
        for s, event in zip(self.signature, self.relation):
            if str(s) == slot:
                return event
        raise KeyError(slot)

    def to_json(self, *, with_events: bool = False) -> dict[str, Any]:
        """``{"subscription", "conjunction", "relation": [ids]}``; with ``with_events`` also the
        events themselves (``"events"``, in relation order)."""
        out: dict[str, Any] = {"subscription": self.subscription, "conjunction": self.conjunction, "relation": self.ids}
        if self.timeout:
            out["timeout"] = True
        if self.aggregates:
            out["aggregates"] = dict(self.aggregates)
        if with_events:
            out["events"] = [e.to_json() for e in self.relation]
        return out
