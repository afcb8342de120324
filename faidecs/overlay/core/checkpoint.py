"""What a subscriber restarts from: its checkpoint (docs/overlay.md, "Subscriber checkpoints and
delivery ids").

A checkpoint is the state a peer hands a joiner (:class:`~faidecs.overlay.core.messages.JoinState`:
each stream's engine snapshot and the last position it reflects) plus what the client needs to
go on as the same process: how each stream is read, its consumer keys (a checkpoint of another
subscription is refused) and how many relations it had delivered. Entries a disjunction held back
are not in it: they lie after the positions, and the restarted client reads them again from its
mergers, which keep them (it never acknowledges past its last checkpoint). Its JSON form is decoded
strictly: a field missing, unknown or of the wrong type is an error, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from faidecs.merging.roles import Role, role_name
from faidecs.overlay.core.messages import JoinState

FORMAT = "faidecs.subscriber-checkpoint/1"


@dataclass(frozen=True, slots=True)
class CheckpointPolicy:
    """Checkpoint every ``every`` deliveries, or ``ms`` milliseconds after the first delivery
    not yet in a checkpoint, whichever comes first (``[durability]`` of a deployment)."""

    every: int = 1000
    ms: int = 1000


@dataclass(frozen=True, slots=True)
class SubscriberCheckpoint:
    process: str
    keys: tuple[str, ...]  # the streams' consumer keys, in stream order
    state: JoinState  # engines and, per stream, the last position they reflect
    how: dict[Role, str] = field(hash=False)  # per stream: "mark" or "marker" (how it reconnects)
    delivered: int = 0  # relations delivered up to it
    #: what the process keeps with it for its delivery sinks (e.g. where its run log stood)
    sinks: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def positions(self) -> dict[Role, int]:
        return self.state.positions

    def with_sinks(self, sinks: Mapping[str, Any]) -> SubscriberCheckpoint:
        return SubscriberCheckpoint(self.process, self.keys, self.state, self.how, self.delivered, dict(sinks))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "process": self.process,
            "keys": list(self.keys),
            "delivered": self.delivered,
            "streams": [
                {
                    "role": list(role),
                    "position": position,
                    "how": self.how[role],
                    "snapshot": dict(self.state.snapshots[role]),
                }
                for role, position in self.state.positions.items()
            ],
            "sinks": dict(self.sinks),
        }

    @classmethod
    def from_json(cls, data: Any) -> SubscriberCheckpoint:
        """The checkpoint of its JSON form; ``ValueError`` saying what is wrong otherwise."""
        try:
            c = msgspec.convert(data, _Checkpoint)
        except msgspec.ValidationError as exc:
            raise ValueError(f"not a subscriber checkpoint of format {FORMAT!r}: {exc}") from None
        roles = [tuple(s.role) for s in c.streams]
        if len(set(roles)) != len(roles):
            raise ValueError("a stream appears twice")
        for s in c.streams:
            if s.position < -1:
                raise ValueError(f"stream {role_name(tuple(s.role))}: position {s.position}")
        state = JoinState(
            c.process,
            {tuple(s.role): s.snapshot for s in c.streams},
            {tuple(s.role): s.position for s in c.streams},
        )
        return cls(c.process, tuple(c.keys), state, {tuple(s.role): s.how for s in c.streams}, c.delivered, c.sinks)


class _Stream(msgspec.Struct, forbid_unknown_fields=True):
    role: list[str]
    position: int
    how: Literal["mark", "marker"]
    snapshot: dict[str, Any]


class _Checkpoint(msgspec.Struct, forbid_unknown_fields=True):
    format: Literal["faidecs.subscriber-checkpoint/1"]
    process: str
    keys: list[str]
    delivered: int
    streams: list[_Stream]
    sinks: dict[str, Any]


__all__ = ["FORMAT", "CheckpointPolicy", "SubscriberCheckpoint"]
