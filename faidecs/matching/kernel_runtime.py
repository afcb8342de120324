"""The queue operations every kernel shares, compiled once per machine.

Only what depends on a conjunction's structure (admission, search) is generated per
conjunction; queue bookkeeping is the same for all of them and lives here, so a new conjunction
costs numba only its own code. Queues and ``meta`` follow :mod:`faidecs.matching.kernel_layout`.
"""

from __future__ import annotations

from numba import njit

from faidecs.matching.kernel_layout import STATUS_DONE, STATUS_GROW, STATUS_OVERFLOW


@njit(cache=True)
def expire(q, meta, t, limit, drops_at):  # type: ignore[no-untyped-def]
    """Drop the events of queue ``t`` whose tick is at or before ``limit`` (oldest first)."""
    s, e = meta[2 * t], meta[2 * t + 1]
    k = s
    while k < e and q[k, 1] <= limit:
        k += 1
    meta[drops_at] += k - s
    meta[2 * t] = k


@njit(cache=True)
def make_room(q, meta, t, max_queue, policy, drops_at):  # type: ignore[no-untyped-def]
    """Make space for one more event in queue ``t``: apply the bound, then compact. Returns
    STATUS_DONE, STATUS_GROW (the array is full of live events) or STATUS_OVERFLOW."""
    s, e = meta[2 * t], meta[2 * t + 1]
    if max_queue > 0 and e - s >= max_queue:
        if policy == 1:
            return STATUS_OVERFLOW
        s += 1
        meta[drops_at] += 1
        meta[2 * t] = s
    if e == q.shape[0]:
        # Compact only when at most half the rows are live: compacting a nearly full array would
        # copy every live row again after a few arrivals (a sliding window of constant size).
        if 2 * (e - s) > q.shape[0]:
            return STATUS_GROW
        width = q.shape[1]
        for x in range(e - s):
            for c in range(width):
                q[x, c] = q[s + x, c]
        meta[2 * t] = 0
        meta[2 * t + 1] = e - s
    return STATUS_DONE


@njit(cache=True)
def append(q, meta, t, seq, tick, rows, r):  # type: ignore[no-untyped-def]
    """Append input row ``r`` as the newest event of queue ``t`` (room was made)."""
    e = meta[2 * t + 1]
    q[e, 0] = seq
    q[e, 1] = tick
    for c in range(rows.shape[1]):
        q[e, 2 + c] = rows[r, c]
    meta[2 * t + 1] = e + 1


@njit(cache=True)
def dispose(q, meta, t, pos, slots, disposal):  # type: ignore[no-untyped-def]
    """DEQUEUE for queue ``t`` after a match at ``pos[k]`` for the slots ``k`` of this type."""
    first = pos[slots[0]]
    last = first
    for k in slots:
        first = min(first, pos[k])
        last = max(last, pos[k])
    if disposal == 0:  # I: remove the matched events only
        e = meta[2 * t + 1]
        width = q.shape[1]
        w = first
        for x in range(first, e):
            used = False
            for k in slots:
                if pos[k] == x:
                    used = True
            if not used:
                if w != x:
                    for c in range(width):
                        q[w, c] = q[x, c]
                w += 1
        meta[2 * t + 1] = w
    elif disposal == 1:  # PI: and everything before the last matched one
        meta[2 * t] = last + 1
    elif disposal == 2:  # IP: and everything after the first matched one
        meta[2 * t + 1] = first
    else:  # FP: everything up to and including the first matched one
        meta[2 * t] = first + 1


__all__ = ["STATUS_DONE", "STATUS_GROW", "STATUS_OVERFLOW", "append", "dispose", "expire", "make_room"]
