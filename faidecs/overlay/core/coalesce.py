"""Which messages a later one makes redundant: what a process leaves out of a frame (the
runtime's node) and what the simulator's cost model leaves out of the frames it charges."""

from __future__ import annotations

from typing import Any

from faidecs.overlay.core.messages import Ack, Commit, Holds, Message


def supersede_key(msg: Message) -> tuple[Any, ...] | None:
    """Messages with equal keys carry a position that only grows (a follower's log length in an
    epoch, a commit point in an epoch, an acknowledged position): the last one sent says all that
    the earlier ones said, so only it needs to go."""
    if isinstance(msg, Holds):
        return ("holds", msg.role, msg.epoch, msg.replica)
    if isinstance(msg, Commit):
        return ("commit", msg.role, msg.epoch)
    if isinstance(msg, Ack):
        return ("ack", msg.role, msg.consumer, msg.process)
    return None


def coalesce(msgs: list[Message]) -> list[Message]:
    """``msgs`` in order without those a later message supersedes."""
    last: dict[tuple[Any, ...], int] = {}
    for k, msg in enumerate(msgs):
        key = supersede_key(msg)
        if key is not None:
            last[key] = k
    if not last:
        return msgs
    return [m for k, m in enumerate(msgs) if (key := supersede_key(m)) is None or last[key] == k]


__all__ = ["coalesce", "supersede_key"]
