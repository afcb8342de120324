"""Head-of-line release of latched messages ("analogous to sliding-window protocols", Sec. 4).

Messages wait in sequence order. The head (the lowest pending seq) is released when it directly
follows the last released seq (its hole filled) or when its timer expired; nothing overtakes the
head, not even a later message whose own timer is 0 or has expired. Without this rule a message
that arrives in order behind a latched one would go first and the latch would protect little (the
digest measured 25% of violations removed with a "flush up to an expired timer" scheduler against
62% with head-of-line, at 1200 msg/s over 3 hops).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Release(Generic[T]):
    """A message handed to the application: when, and how long the latch layer held it."""

    seq: int
    item: T
    time: float
    held: float  # time - arrival
    late: bool = False  # delivered after a later seq: a FIFO violation


@dataclass(slots=True)
class _Pending(Generic[T]):
    item: T
    arrival: float
    release_at: float


class HeadOfLineScheduler(Generic[T]):
    """Pending messages of one publisher. ``add`` is O(log n); ``release`` O(log n) per message."""

    __slots__ = ("_heap", "_pending", "absent", "last")

    def __init__(self) -> None:
        self._pending: dict[int, _Pending[T]] = {}
        self._heap: list[int] = []
        #: the last seq released (None before the first)
        self.last: int | None = None
        #: seqs known never to come (the record says they do not match): treated as released
        self.absent: set[int] = set()

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, seq: int) -> bool:
        return seq in self._pending

    def add(self, seq: int, item: T, arrival: float, release_at: float) -> None:
        if seq in self._pending:
            raise ValueError(f"seq {seq} is already pending")
        self._pending[seq] = _Pending(item, arrival, release_at)
        heapq.heappush(self._heap, seq)

    def _follows(self, seq: int) -> bool:
        if self.last is None or seq == self.last + 1:
            return True
        if not self.absent:
            return False
        return all(s in self.absent for s in range(self.last + 1, seq))

    def release(self, now: float) -> list[Release[T]]:
        """Release every message that may go at ``now``, in seq order."""
        out: list[Release[T]] = []
        while self._heap:
            seq = self._heap[0]
            p = self._pending[seq]
            if p.release_at > now and not self._follows(seq):
                break
            heapq.heappop(self._heap)
            del self._pending[seq]
            out.append(Release(seq, p.item, now, now - p.arrival))
            self.last = seq
            self.absent = {s for s in self.absent if s > seq}
        return out

    def deadline(self) -> float | None:
        """When the head's timer expires (the next time ``release`` can free something without a
        new arrival), or None when nothing is pending."""
        return self._pending[self._heap[0]].release_at if self._heap else None

    def release_time_above(self, seq: int) -> float | None:
        """The release time of the lowest pending seq above ``seq``: the latch a late message joins."""
        above = [s for s in self._heap if s > seq]
        return self._pending[min(above)].release_at if above else None

    def check(self) -> None:
        """Invariants, for tests: heap and table agree, everything pending is after ``last``."""
        assert sorted(self._heap) == sorted(self._pending)
        assert self.last is None or all(s > self.last for s in self._pending)
