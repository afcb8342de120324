"""Gapless FIFO and Gapless Causal Delivery (LoCaPS, seed 003, Definitions 1 and 2), judged on
``notify`` records.

A process's *history* is the sequence of events it was notified of. Its *starting cut* holds, per
publisher, the first event of that publisher in the history, its *ending cut* the last one. An
event *matches* the process when its type is one the subscription names (faidecs subscriptions
are sets of types here; attribute filters play no part in which events a layer hands out).

- **Gapless FIFO Delivery (GFD, Def. 1):** per publisher, the history holds every matching event
  of that publisher from its starting-cut event to its ending-cut event (bounds inclusive), in
  publication order, and nothing is handed before the process subscribed (its ``joined``
  time). Def. 1 puts no constraint on the cuts: an event published shortly before the
  subscription may be handed (a pivot's proxy marker comes after events still in flight
  towards it).
- **Gapless Causal Delivery (GCD, Def. 2):** GFD, and for publishers j ≠ k, a matching event of k
  that causally follows an event of j in the history and precedes (or is) k's ending-cut event is
  in the history; and the history is in causal order.

Causality is Lamport's, read off the log: successive publications of one publisher are ordered, and
a process that was notified of e1 before it published e2 makes e1 → e2 (the run log's convention:
a process that publishes in reaction to what it was handed appears as the publisher). Logs without
``notify`` records (the embedded engine, the overlay) hold both vacuously.
"""

from __future__ import annotations

from collections import defaultdict

from faidecs.properties.view import RunView, Violation

Clock = dict[str, int]  # publisher -> the highest seq of theirs in the causal past (inclusive)


def _clocks(view: RunView) -> dict[str, Clock]:
    """Each published event's vector clock, from publish and notify records in log order."""
    seen: dict[str, Clock] = defaultdict(dict)
    records = [(p.time, 0, p.id, p.publisher) for p in view.log.published]
    records += [(n.time, 1, n.event, n.process) for n in view.log.notified]
    clocks: dict[str, Clock] = {}
    for _, kind, event_id, process in sorted(records):
        if kind == 0:
            published = view.published[event_id]
            clock = dict(seen[process])
            clock[process] = max(clock.get(process, -1), published.seq)
            clocks[event_id] = clock
            seen[process] = dict(clock)
        elif event_id in clocks:
            mine = seen[process]
            for publisher, seq in clocks[event_id].items():
                if seq > mine.get(publisher, -1):
                    mine[publisher] = seq
    return clocks


def _histories(view: RunView) -> dict[str, list[tuple[int, str]]]:
    out: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for n in view.log.notified:
        if n.event in view.published:
            out[n.process].append((n.time, n.event))
    return out


def _topics(view: RunView, process: str) -> frozenset[str]:
    return view.subscriptions[process].types


def gapless_fifo_delivery(view: RunView) -> list[Violation]:
    """Per process and publisher: no gap between the starting- and ending-cut events, FIFO order,
    nothing handed before the subscription."""
    if not view.log.notified:
        return []
    by_publisher: dict[str, list[tuple[int, str]]] = defaultdict(list)  # publisher -> (seq, id)
    for p in view.log.published:
        by_publisher[p.publisher].append((p.seq, p.id))
    for process, history in sorted(_histories(view).items()):
        topics = _topics(view, process)
        since = view.joined_at(process)
        mine: dict[str, list[tuple[int, int, str]]] = defaultdict(list)  # publisher -> (seq, time, id)
        for time, event_id in history:
            published = view.published[event_id]
            if process in view.log.joined and time <= since:
                why = f"{process} was handed {event_id} before it subscribed"
                return [Violation(why, (event_id,), (process,), (time,))]
            mine[published.publisher].append((published.seq, time, event_id))
        for publisher, got in sorted(mine.items()):
            for (s1, t1, e1), (s2, t2, e2) in zip(got, got[1:]):
                if s2 <= s1:
                    why = f"{process} was handed {publisher}'s {e1} before {e2}, out of publication order"
                    return [Violation(why, (e2, e1), (process,), (t1, t2))]
            first, last = got[0], got[-1]
            ids = {e for _, _, e in got}
            for seq, event_id in sorted(by_publisher[publisher]):
                if first[0] < seq < last[0] and event_id not in ids and view.published[event_id].type in topics:
                    why = (
                        f"{process} has a gap: {publisher}'s {event_id} lies between its starting-cut event "
                        f"{first[2]} and its ending-cut event {last[2]} and was never handed to it"
                    )
                    return [Violation(why, (first[2], event_id, last[2]), (process,), (first[1], last[1]))]
    return []


def gapless_causal_delivery(view: RunView) -> list[Violation]:
    """GFD, plus: the causal future of a delivered event, up to the ending cut, is delivered,
    and in causal order."""
    found = gapless_fifo_delivery(view)
    if found or not view.log.notified:
        return found
    clocks = _clocks(view)
    for process, history in sorted(_histories(view).items()):
        topics = _topics(view, process)
        ids = {e for _, e in history}
        firsts: dict[str, tuple[int, str]] = {}  # publisher -> (seq, id) of its starting-cut event
        lasts: dict[str, int] = {}  # publisher -> seq of its ending-cut event
        for _, event_id in history:
            p = view.published[event_id]
            if p.publisher not in firsts or p.seq < firsts[p.publisher][0]:
                firsts[p.publisher] = (p.seq, event_id)
            lasts[p.publisher] = max(lasts.get(p.publisher, -1), p.seq)
        # closure: a matching effect of k, up to k's ending cut, caused by a delivered event of j != k
        for p in view.log.published:
            if p.id in ids or p.type not in topics or p.publisher not in lasts or p.seq > lasts[p.publisher]:
                continue
            for j, (first_seq, cause) in sorted(firsts.items()):
                if j != p.publisher and clocks[p.id].get(j, -1) >= first_seq:
                    why = (
                        f"{process} was handed {cause} but not {p.id}, which follows it causally and precedes "
                        f"{p.publisher}'s ending-cut event"
                    )
                    return [Violation(why, (cause, p.id), (process,))]
        # order: nothing is handed before an event of the history in its causal past
        remaining: dict[str, list[int]] = defaultdict(list)
        for _, event_id in history:
            p = view.published[event_id]
            remaining[p.publisher].append(p.seq)
        for seqs in remaining.values():
            seqs.sort(reverse=True)
        position = {e: t for t, e in history}
        for time, event_id in history:
            p = view.published[event_id]
            remaining[p.publisher].remove(p.seq)
            for j, seqs in remaining.items():
                if seqs and clocks[event_id].get(j, -1) >= seqs[-1]:
                    earlier = next(
                        e for e in ids if view.published[e].publisher == j and view.published[e].seq == seqs[-1]
                    )
                    why = f"{process} was handed {event_id} before {earlier}, which precedes it causally"
                    return [Violation(why, (earlier, event_id), (process,), (time, position[earlier]))]
    return []
