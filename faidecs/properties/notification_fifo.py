"""Notification FIFO Order: each process is handed one publisher's events in the order published.

The latch layer (seed 002, ``faidecs.ordering.latch``) promises this only probabilistically, so the
check reports *every* out-of-order notification rather than the first: the count is the layer's
measure (the paper's "out-of-order receptions"). A notification is out of order when the process
was already handed a later event (higher ``seq``) of the same publisher. Logs without ``notify``
records hold it vacuously; the sequencer layers of seeds 000 and 004 do not promise it.
"""

from __future__ import annotations

from faidecs.properties.view import RunView, Violation


def notification_fifo_order(view: RunView) -> list[Violation]:
    """One violation per notification that comes after a later one of the same publisher."""
    out: list[Violation] = []
    highest: dict[tuple[str, str], tuple[int, str, int]] = {}  # (process, publisher) -> (seq, id, time)
    for n in view.log.notified:
        p = view.published.get(n.event)
        if p is None:
            continue  # Notification Integrity reports it
        key = (n.process, p.publisher)
        top = highest.get(key)
        if top is None or p.seq > top[0]:
            highest[key] = (p.seq, n.event, n.time)
        elif p.seq < top[0]:
            out.append(
                Violation(
                    f"{n.process} was handed {n.event} (seq {p.seq} of {p.publisher}) after {top[1]} (seq {top[0]})",
                    (n.event, top[1]),
                    (n.process,),
                    (top[2], n.time),
                )
            )
    return out


def fifo_violations_by_pair(view: RunView) -> dict[tuple[str, str], int]:
    """Out-of-order notifications per (process, publisher)."""
    counts: dict[tuple[str, str], int] = {}
    for v in notification_fifo_order(view):
        publisher = view.published[v.events[0]].publisher
        counts[(v.processes[0], publisher)] = counts.get((v.processes[0], publisher), 0) + 1
    return counts
