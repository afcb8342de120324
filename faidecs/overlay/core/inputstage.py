"""The latch-time FIFO stage (seed 002) on a root merger's inputs, for publishers that send over an
unordered, lossy path (docs/ordering-latch-stage.md).

The publisher side (:class:`InputStamper`) stamps each ``Publish`` for one root merger: a channel
sequence number per (publisher, root role), its departure time and the previous one's. Each
server runs one :class:`InputStage`, which keeps a
:class:`~faidecs.ordering.latch.receiver.LatchReceiver` per (root role, publisher) and hands the
replica core what the receiver releases, in channel order. Without a latch configuration the stage
passes every arrival straight on (the raw reordered stream).

Why a channel per root rather than the publisher's own seq: a root merger receives only its type's
events, so the publisher's seq has a hole at every event of another type, and basic-mode latching
would hold every message after such a hole for nothing. The channel seq numbers exactly what the
root receives (the paper's enhanced mode with a complete record, at no cost); the event keeps its
publisher seq, which the overlay and the property checker use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from faidecs.merging.roles import Role
from faidecs.ordering.latch.receiver import LatchConfig, LatchReceiver, LatchStats, LatePolicy
from faidecs.ordering.latch.stamp import Stamp, Stamper
from faidecs.overlay.core.messages import Publish


@dataclass(frozen=True, slots=True)
class Latched:
    """A publication on the lossy path: the stamp the latch stage reads, and the message."""

    role: Role
    stamp: Stamp
    publish: Publish


class InputStamper:
    """A publisher's stampers, one channel per root role."""

    def __init__(self, publisher: str) -> None:
        self.publisher = publisher
        self._channels: dict[Role, Stamper] = {}

    def stamp(self, role: Role, departure: float) -> Stamp:
        stamper = self._channels.get(role)
        if stamper is None:
            stamper = self._channels[role] = Stamper(self.publisher)
        return stamper.stamp(departure)


def latch_config(p_t: float, late: str) -> LatchConfig:
    return LatchConfig(p_t=p_t, late=LatePolicy(late))


class InputStage:
    """One server's latch receivers. ``receive`` and ``poll`` cost what the receiver's do
    (O(q) per message plus O(log n) scheduling); ``deadline`` is O(receivers)."""

    def __init__(self, config: LatchConfig | None) -> None:
        self.config = config
        self.receivers: dict[tuple[Role, str], LatchReceiver[Publish]] = {}
        self.passed = 0  # arrivals handed on without a latch

    def receive(self, latched: Latched, arrival: float) -> list[Publish]:
        """What goes to the replica now that ``latched`` arrived at ``arrival`` (this server's clock)."""
        if self.config is None:
            self.passed += 1
            return [latched.publish]
        key = (latched.role, latched.publish.publisher)
        receiver = self.receivers.get(key)
        if receiver is None:
            receiver = self.receivers[key] = LatchReceiver(self.config)
        return [r.item for r in receiver.receive(latched.stamp, latched.publish, arrival)]

    def poll(self, now: float) -> list[Publish]:
        out: list[Publish] = []
        for receiver in self.receivers.values():
            if (d := receiver.deadline()) is not None and d <= now:
                out += [r.item for r in receiver.poll(now)]
        return out

    def deadline(self) -> float | None:
        """The earliest latch expiry among the receivers (None: nothing held)."""
        found = [d for r in self.receivers.values() if (d := r.deadline()) is not None]
        return min(found) if found else None

    def next_poll_ms(self) -> int | None:
        d = self.deadline()
        return None if d is None else math.ceil(d)

    def stats(self) -> dict[tuple[Role, str], LatchStats]:
        return {k: r.stats for k, r in self.receivers.items()}


__all__ = ["InputStage", "InputStamper", "Latched", "latch_config"]
