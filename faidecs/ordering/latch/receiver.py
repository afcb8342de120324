"""Algorithm 1 of seed 002 for one (publisher, receiver) pair, rebuilt from the listing and the prose.

On every message after the first the receiver measures one delay difference against ``base`` (the
message with the highest seq received so far) and updates β. An in-order message (seq(base) + 1) is
scheduled at once; a message after a hole is latched for τ = F⁻¹(1 − P_t) − δ, where δ is the
departure gap to the latest missing message that matters: seq − 1 in basic mode (its departure is
``prev_departure``), or the latest missing one the record shows to be relevant in enhanced mode.
Only the latest missing message matters (Sec. 3.5): the gaps to earlier ones are larger, so their
latch times are shorter.

Resolved errata (docs/ordering.md, "Latch-time FIFO"): the corrected quantile (E1); β over |Q| unless
``literal_beta`` (E5); ``n ← seq`` always runs and ``base`` moves after in-order and hole messages
but not after late ones (E6); a first message with seq ≠ 0 is delivered at once (E7); in enhanced
mode a hole that lies wholly inside the record with nothing relevant in it is not latched, while a
hole reaching beyond the record latches against the earliest entry (E8).

A late message (seq below base's) that arrives while later messages are still held fills the hole
and goes first. One that arrives after a later message was released is handled by ``late``:
``drop`` (the default: counted as a loss, the output stays FIFO) or ``deliver`` (counted as a FIFO
violation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, TypeVar

from faidecs.ordering.latch import model
from faidecs.ordering.latch.estimator import DelayEstimator
from faidecs.ordering.latch.scheduler import HeadOfLineScheduler, Release
from faidecs.ordering.latch.stamp import Stamp

T = TypeVar("T")


class LatePolicy(str, Enum):
    """What happens to a message that arrives after a later one was released."""

    DROP = "drop"  # counted as a loss: what the stage hands on is always in FIFO order
    DELIVER = "deliver"  # counted as a FIFO violation: nothing the path carried is lost here


@dataclass(frozen=True, slots=True)
class LatchConfig:
    #: the FIFO violation coefficient: the bound on Pr[violation] per pair the latch aims at
    p_t: float = 0.05
    #: samples in the ring buffer (the paper's experiments: 25)
    q: int = 25
    #: β divides by q even while the buffer fills, as line 34 prints (E5)
    literal_beta: bool = False
    late: LatePolicy = LatePolicy.DROP
    #: a late message that fills a hole in front of held messages waits for the latch of the next
    #: held one instead of going at once (timer 0, the listing's rule), which would leave a message
    #: still missing before it unprotected
    late_joins_latch: bool = True

    def __post_init__(self) -> None:
        if not 0.0 < self.p_t <= 0.5:
            raise ValueError(f"P_t must lie in (0, 0.5], not {self.p_t}")


@dataclass(frozen=True, slots=True)
class Hole:
    """A latch decision, for monitoring (Fig. 7) and for the model-relative checks."""

    seq: int
    arrival: float
    beta: float
    delta: float | None  # None: enhanced mode found nothing relevant missing (no latch)
    tau: float
    violation_probability: float  # 1 − F(δ): the chance of a violation without the latch


@dataclass(slots=True)
class LatchStats:
    received: int = 0
    released: int = 0
    late_delivered: int = 0  # FIFO violations the stage let through
    late_dropped: int = 0  # losses the stage caused
    duplicates: int = 0
    holes: list[Hole] = field(default_factory=list)
    assigned_delay: float = 0.0  # Σ τ over holes: the paper's "extra delay" numerator
    held_delay: float = 0.0  # Σ (release − arrival): what the latch actually cost

    def expected_violations(self, p_t: float) -> float:
        """Σ over holes of Pr[D > δ + τ | D > δ] under the model: min(P_t, 1 − F(δ)) / (1 − F(δ))."""
        out = 0.0
        for h in self.holes:
            if h.delta is not None and h.violation_probability > 0:
                out += min(p_t, h.violation_probability) / h.violation_probability
        return out


class LatchReceiver(Generic[T]):
    """One publisher's stream at one receiver. ``relevant`` (enhanced mode) says whether a record
    entry's summary matches the receiver's subscription; records are ignored without it."""

    def __init__(self, config: LatchConfig = LatchConfig(), relevant: Callable[[str], bool] | None = None) -> None:
        self.config = config
        self.relevant = relevant
        self.estimator = DelayEstimator(config.q, literal=config.literal_beta)
        self.scheduler: HeadOfLineScheduler[T] = HeadOfLineScheduler()
        self.stats = LatchStats()
        self._unit_quantile = model.quantile(1.0 - config.p_t, 1.0)  # F⁻¹ scales with b
        self._base: tuple[int, float, float] | None = None  # (seq, departure, arrival)

    def latch_time(self, beta: float, delta: float) -> float:
        return max(0.0, beta * self._unit_quantile - delta)

    def receive(self, stamp: Stamp, item: T, arrival: float) -> list[Release[T]]:
        """``stamp``/``item`` arrived at ``arrival`` (the receiver's clock); returns what goes now."""
        self.stats.received += 1
        n = stamp.seq
        base = self._base
        if base is not None:
            x = (arrival - base[2]) - (stamp.departure - base[1])  # lines 6-8: every message, late ones too
            self.estimator.update(x)
            if n <= base[0]:
                return self._late(n, item, arrival)
        if base is None or n == base[0] + 1:
            release_at = arrival  # in order (or E7: the first message, whatever its seq)
        else:
            release_at = arrival + self._hole(stamp, base, arrival)
        self.scheduler.add(n, item, arrival, release_at)
        self._base = (n, stamp.departure, arrival)
        return self._released(self.scheduler.release(arrival))

    def poll(self, now: float) -> list[Release[T]]:
        """Release what the timers allow at ``now`` (call it at :meth:`deadline`)."""
        return self._released(self.scheduler.release(now))

    def deadline(self) -> float | None:
        return self.scheduler.deadline()

    def _hole(self, stamp: Stamp, base: tuple[int, float, float], arrival: float) -> float:
        beta = self.estimator.beta
        delta = self.gap(stamp, base[0])
        if delta is None:
            tau = 0.0
            self.stats.holes.append(Hole(stamp.seq, arrival, beta, None, 0.0, 0.0))
        else:
            tau = self.latch_time(beta, delta)
            probability = model.violation_probability(delta, beta)
            self.stats.holes.append(Hole(stamp.seq, arrival, beta, delta, tau, probability))
        self.stats.assigned_delay += tau
        return tau

    def gap(self, stamp: Stamp, base_seq: int) -> float | None:
        """The departure gap to the latest missing message that matters (None: none matters)."""
        if stamp.record is None or self.relevant is None:
            # basic mode (lines 23-25); a stamp without prev_departure is a first message
            return stamp.departure - stamp.prev_departure if stamp.prev_departure is not None else None
        missing = [e for e in stamp.record if base_seq < e.seq < stamp.seq]
        for e in missing:
            if not self.relevant(e.summary):
                self.scheduler.absent.add(e.seq)
        matching = [e for e in missing if self.relevant(e.summary)]
        if matching:
            return stamp.departure - matching[-1].departure  # line 18: the latest relevant missing one
        covered = bool(stamp.record) and stamp.record[0].seq <= base_seq + 1
        if covered:
            return None  # E8: the whole hole is in the record and none of it matters
        if not stamp.record:
            return stamp.departure - stamp.prev_departure if stamp.prev_departure is not None else None
        return stamp.departure - stamp.record[0].departure  # lines 19-20: the earliest entry, conservatively

    def _late(self, n: int, item: T, arrival: float) -> list[Release[T]]:
        last = self.scheduler.last
        if n in self.scheduler or n == (self._base[0] if self._base else None):
            self.stats.duplicates += 1
            return []
        if last is not None and n <= last:
            if self.config.late is LatePolicy.DROP:
                self.stats.late_dropped += 1
                return []
            self.stats.late_delivered += 1
            self.stats.released += 1
            return [Release(n, item, arrival, 0.0, late=True)]
        # it fills a hole in front of held messages
        joined = self.scheduler.release_time_above(n) if self.config.late_joins_latch else None
        self.scheduler.add(n, item, arrival, arrival if joined is None else max(arrival, joined))
        return self._released(self.scheduler.release(arrival))

    def _released(self, out: list[Release[T]]) -> list[Release[T]]:
        self.stats.released += len(out)
        self.stats.held_delay += sum(r.held for r in out)
        return out
