"""A publisher's publications that no root leader has acknowledged yet (issue 22), as the
runtime's outbox (:mod:`faidecs.overlay.runtime.outbox`, which also keeps them on disk) and the
simulator's publishers both hold them: sent, acknowledged (:class:`Ordered`), due to be sent
again, and the last one sent to each root (what the next one names as ``Publish.prev``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from faidecs.merging.roles import Role
from faidecs.overlay.core.messages import Publish


@dataclass(slots=True)
class Unacked:
    publish: Publish
    role: Role
    sent_at: int  # ms; 0: resend at the first chance (recovered from disk)


class Unacknowledged:
    """One publisher's publications sent and not acknowledged, by seq."""

    def __init__(self) -> None:
        self.unacked: dict[int, Unacked] = {}
        self.last_to: dict[Role, int] = {}  # root role -> the last seq sent to it
        self.resent = 0

    def prev(self, role: Role) -> int:
        """What a publication to ``role`` names as its previous one (-1: none)."""
        return self.last_to.get(role, -1)

    def sent(self, publish: Publish, role: Role, now: int) -> None:
        self.unacked[publish.seq] = Unacked(publish, role, now)
        self.last_to[role] = max(self.last_to.get(role, -1), publish.seq)

    def ordered(self, seqs: Iterable[int]) -> list[int]:
        """Let the acknowledged ones go; those that were still held."""
        return [s for s in seqs if self.unacked.pop(s, None) is not None]

    def due(self, now: int, after: int, role: Role | None = None) -> list[Unacked]:
        """Publications sent ``after`` ms ago or more without an acknowledgement (of ``role``
        only, when given), marked as sent again now."""
        out = [u for u in self.unacked.values() if now - u.sent_at >= after and (role is None or u.role == role)]
        for u in out:
            u.sent_at = now
        self.resent += len(out)
        return out


__all__ = ["Unacked", "Unacknowledged"]
