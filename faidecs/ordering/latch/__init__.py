"""Latch-time FIFO (seed 002, Malekpour, Carzaniga, Toffetti Carughi, Pedone, USI TR 2011-2).

Per-publisher FIFO order restored at a receiver of a best-effort, reordering path: a message that
arrives after a hole in the sequence numbers is held for a latch time computed from the measured
delay differences so that the missing one overtakes it with probability ≥ 1 − P_t. Probabilistic
FIFO only, no reliability (see docs/ordering.md, "Latch-time FIFO").
"""

from faidecs.ordering.latch.estimator import DelayEstimator
from faidecs.ordering.latch.model import cdf, latch_time, pdf, quantile, violation_probability
from faidecs.ordering.latch.receiver import Hole, LatchConfig, LatchReceiver, LatchStats, LatePolicy
from faidecs.ordering.latch.scheduler import HeadOfLineScheduler, Release
from faidecs.ordering.latch.stamp import RECORD_ENTRY_BYTES, RecordEntry, Stamp, Stamper, record_overhead

__all__ = [
    "RECORD_ENTRY_BYTES",
    "DelayEstimator",
    "HeadOfLineScheduler",
    "Hole",
    "LatchConfig",
    "LatchReceiver",
    "LatchStats",
    "LatePolicy",
    "RecordEntry",
    "Release",
    "Stamp",
    "Stamper",
    "cdf",
    "latch_time",
    "pdf",
    "quantile",
    "record_overhead",
    "violation_probability",
]
