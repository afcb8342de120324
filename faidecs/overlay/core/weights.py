"""How many stream positions a message carries: the unit its cost grows with.

A ``Decide`` carries a batch of decisions, a ``ForwardBatch`` a batch of entries, a recovering
leader's ``EpochState``/``NewLog`` a log; every other message carries one position's worth (an
event, an acknowledgement, a commit point). The runtime's per-kind CPU accounting
(:mod:`faidecs.overlay.runtime.profile`) and the simulator's cost model
(:mod:`faidecs.overlay.sim.costmodel`) count with the same function, so that a cost measured per
position in one is charged per position in the other.
"""

from __future__ import annotations

from faidecs.overlay.core.messages import Decide, EpochState, ForwardBatch, Message, NewLog


def positions(msg: Message) -> int:
    """The stream positions ``msg`` carries (at least 1)."""
    if isinstance(msg, (Decide, EpochState, NewLog)):
        return max(1, len(msg.decisions))
    if isinstance(msg, ForwardBatch):
        return max(1, len(msg.entries))
    return 1


__all__ = ["positions"]
