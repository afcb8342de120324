"""Bounded conjunction state: how many events a queue may hold, and for how long.

Unbounded queues are the papers' model, and under infix disposal or with partners that never
come they grow without end. A bound caps each queue of a conjunction; what happens at the cap is
declared, never silent: ``drop-oldest`` removes the oldest event of the full queue and counts it
in the metrics, ``error`` stops the engine with :class:`~faidecs.errors.QueueOverflowError`
(restore a snapshot to go on). Age is counted on the conjunction's own logical clock, which ticks
once per arrival of an event of one of its types (admitted or not): every process subscribed to
the conjunction sees that same sequence, whatever other types it receives, so every replica drops
exactly the same events. A wall clock, or the engine's count of all arrivals, would break
agreement between processes.

What a bound gives up is documented in ``docs/semantics.md`` ("Bounded state"): a dropped event
can no longer be delivered, so Event Validity (and Conjunction Validity for relations that need
it) is lost; the safety, agreement and order properties are kept.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Overflow = Literal["drop-oldest", "error"]


class Bounds(BaseModel):
    """Per-conjunction limits. ``max_queue``: events per type queue; ``max_age``: an event is
    dropped once ``max_age`` more events of the conjunction's types have arrived after it (it is
    dropped before the arrival that makes it that old is enqueued and matched)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_queue: int | None = Field(default=None, ge=1, le=2**62)
    max_age: int | None = Field(default=None, ge=1, le=2**62)
    overflow: Overflow = "drop-oldest"

    @property
    def unbounded(self) -> bool:
        return self.max_queue is None and self.max_age is None


UNBOUNDED = Bounds()
