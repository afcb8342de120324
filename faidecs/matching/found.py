"""What an extended conjunction's arrival step finds: relations with their delivered shape."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from faidecs.grammar.model import Slot
from faidecs.matching.events import Event


@dataclass(frozen=True, slots=True)
class Found:
    """One relation of an extended conjunction, ready to be delivered."""

    relation: tuple[Event, ...]
    signature: tuple[Slot, ...]  # a group contributes one slot per member: T[0], T[1], ...
    timeout: bool = False
    aggregates: Mapping[str, Any] = field(default_factory=dict)
    arrivals: tuple[int, ...] = ()  # the engine's arrival number of each event of ``relation``


class Matches(tuple[Found, ...]):
    """What an extended state's ``offer`` returns when it found relations (ALL may find several);
    a plain state returns the one relation as a tuple of events."""

    __slots__ = ()


#: What a conjunction state's ``offer`` returns.
Offered = tuple[Event, ...] | Matches | None
