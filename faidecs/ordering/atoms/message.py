"""What travels: sequenced messages, and the configuration switch a receiver gets per epoch."""

from __future__ import annotations

from dataclasses import dataclass, field

from faidecs.ordering.atoms.overlap import AtomId


@dataclass(slots=True)
class Sequenced:
    """An event on its way through the atoms of its epoch's graph; the atoms fill in the numbers.

    The same object is handed from atom to atom (one holder at a time) and then to every receiver,
    which only read it.
    """

    event_id: str
    group: str
    epoch: int
    local: int = 0  # group-local number, given by the group's ingress
    stamps: dict[AtomId, int] = field(default_factory=dict)

    def entries(self) -> int:
        return 1 + len(self.stamps)


@dataclass(frozen=True, slots=True)
class EpochView:
    """What one receiver must know of one epoch: its groups and the atoms whose overlap contains it."""

    groups: frozenset[str]
    atoms: frozenset[AtomId]


@dataclass(frozen=True, slots=True)
class Switch:
    """From the configuration service to one receiver, on a FIFO link, at a membership change.

    ``closed``: the epoch that ended, with how many messages each of the receiver's groups got in
    it (so the receiver knows when it has all of them); ``opened``: the new epoch and the
    receiver's view of it. Either is None where the receiver takes no part.
    """

    closed: int | None
    counts: dict[str, int]
    opened: int | None
    view: EpochView | None
