"""Notification properties of the ordering layers (seeds 000 and 004), judged on ``notify`` records.

An ordering layer hands single events to processes; each process's engine correlates what it is
handed. The layers promise pairwise Total Notification Order (TNO, seed 000's Property 1, seed
004's Theorem 1): two processes notified of the same two events are notified of them in the same
order. They promise no agreement on *which* events a process sees beyond their own liveness, which
Notification Validity judges for processes present for the whole of a finished run. Logs without
``notify`` records (the embedded engine, the overlay) hold all three vacuously.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations

from faidecs.properties.order import _inversion
from faidecs.properties.view import RunView, Violation


def _sequences(view: RunView) -> dict[str, list[tuple[int, str]]]:
    out: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for n in view.log.notified:
        out[n.process].append((n.time, n.event))
    return out


def _topics(view: RunView, process: str) -> frozenset[str]:
    return view.subscriptions[process].types


def total_notification_order(view: RunView) -> list[Violation]:
    """No two processes are notified of two events in opposite orders."""
    firsts = {p: {e: t for t, e in reversed(seq)} for p, seq in _sequences(view).items()}
    for a, b in combinations(sorted(firsts), 2):
        fa, fb = firsts[a], firsts[b]
        pair = _inversion([(e, fa[e], fb[e]) for e in fa.keys() & fb.keys()])
        if pair is not None:
            e1, e2 = str(pair[0]), str(pair[1])
            return [
                Violation(
                    f"{a} was notified of {e1} before {e2}, {b} of {e2} before {e1}",
                    (e1, e2),
                    (a, b),
                    (fa[e1], fa[e2], fb[e2], fb[e1]),
                )
            ]
    return []


def notification_integrity(view: RunView) -> list[Violation]:
    """A process is notified only of published events of its types, after their publication, once."""
    for process, seq in _sequences(view).items():
        topics = _topics(view, process)
        seen: dict[str, int] = {}
        for time, event_id in seq:
            published = view.published.get(event_id)
            if event_id in seen:
                why = f"{process} was notified of {event_id} twice"
            elif published is None or published.time > time:
                why = f"{process} was notified of {event_id} before it was published"
            elif published.type not in topics:
                why = f"{process} was notified of {event_id} of type {published.type}, which it does not subscribe to"
            elif process in view.log.left and time > view.log.left[process]:
                why = f"{process} was notified of {event_id} after it left"
            else:
                seen[event_id] = time
                continue
            return [Violation(why, (event_id,), (process,), (time,))]
    return []


def notification_validity(view: RunView) -> list[Violation]:
    """In a finished run (``final`` records present), a process present from start to end was
    notified of every published event of every type its subscription names."""
    if not view.log.notified or not view.log.final:
        return []
    notified: dict[str, set[str]] = defaultdict(set)
    for n in view.log.notified:
        notified[n.process].add(n.event)
    for process in sorted(view.subscriptions):
        if process in view.log.joined or process in view.log.left:
            continue
        topics = _topics(view, process)
        for p in view.log.published:
            if p.type in topics and p.id not in notified[process]:
                return [Violation(f"{process} was never notified of {p.id} ({p.type})", (p.id,), (process,))]
    return []
