"""The memory layout shared by the generated kernels and the Python code that drives them.

A conjunction over ``m`` distinct types keeps, per type ``t``, a queue ``Q[t]``: an int64 array
of shape ``(capacity, 2 + width)`` whose live rows are ``start[t] .. end[t]-1``, oldest first.
Column 0 is the event's arrival number in the engine, column 1 its tick on the conjunction's
own clock (arrivals of the conjunction's types, counted from 1), the others its attribute values
in declaration order, encoded as int64 (see :mod:`faidecs.matching.columns`). One small int64
``meta`` array carries everything else, so a kernel call passes few arguments.
"""

from __future__ import annotations

from faidecs.grammar.model import Disposal, Matching

ARRIVAL, TICK, VALUES = 0, 1, 2  # queue columns

MATCHING_CODES = {Matching.FR: 0, Matching.MR: 1, Matching.FRC: 2, Matching.MRC: 3}
DISPOSAL_CODES = {Disposal.I: 0, Disposal.PI: 1, Disposal.IP: 2, Disposal.FP: 3}

# Fields after the 2*m start/end pairs, in this order.
FIELDS = (
    "dirty",  # 1 when the queues may hold a match (after a match, or after a restore)
    "matching",
    "disposal",
    "max_queue",  # 0: unbounded
    "max_age",  # 0: unbounded; else events this many ticks old are dropped
    "clock",  # ticks so far: arrivals of the conjunction's types
    "search",  # searches so far: stamps the failure memo
    "policy",  # 0: drop-oldest, 1: error
    "drops",
    "out",  # relations written to the output array so far in this call
    "status",  # 0 done, 1 a queue needs more capacity, 2 a bounded queue overflowed (policy error)
    "grow",  # the type whose queue needs more capacity (status 1) or overflowed (status 2)
)

STATUS_DONE, STATUS_GROW, STATUS_OVERFLOW = 0, 1, 2


def field(m: int, name: str) -> int:
    """Index of ``name`` in the meta array of a conjunction over ``m`` types."""
    return 2 * m + FIELDS.index(name)


def meta_size(m: int) -> int:
    return 2 * m + len(FIELDS)
