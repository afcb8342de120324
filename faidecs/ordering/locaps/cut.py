"""The multi-prefix starting cut (Sec. V-B): where a new subscriber starts when partial markers,
one per partial pivot, mark the publisher's stream on each set of paths.

One buffer per partial pivot. An event that crosses pivot b before b's partial marker reached the
subscriber's broker is discarded; after it, it is buffered. When every buffer holds an event, the
most recent buffered event (the highest sequence number of the publisher) is the starting-cut
event: it is delivered, the buffered events before it are dropped, the buffered events after it
are delivered in order, and from then on every event after the last delivered one is delivered
(duplicates from redundant paths are dropped). Starting at the latest of the buffers' *first*
events would be as safe and deliver more; the paper's rule is kept. Nothing is delivered before every partial marker
has arrived. The causal substrate below (LoCaMu) hands the subscriber's broker each path's events
in order, which is what the rule needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class MultiPrefixCut:
    """The subscriber-side rule for one (subscription, publisher): ``pivots`` is PPSet."""

    pivots: frozenset[str]
    marked: set[str] = field(default_factory=set)
    buffers: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # pivot -> (seq, id)
    start: int | None = None  # seq of the starting-cut event once chosen
    last: int = -1

    def marker(self, pivot: str) -> None:
        """The partial marker of ``pivot`` arrived. O(1)."""
        if pivot in self.pivots:
            self.marked.add(pivot)
            self.buffers.setdefault(pivot, [])

    def event(self, pivot: str, seq: int, event_id: str) -> list[str]:
        """An event crossed ``pivot`` and arrived: the ids delivered now, in order. O(buffered) once, then O(1)."""
        if self.start is not None:
            if seq <= self.last:
                return []  # a duplicate from another path, or behind the cut
            self.last = seq
            return [event_id]
        if pivot not in self.marked:
            return []  # before this pivot's partial marker: discarded
        self.buffers[pivot].append((seq, event_id))
        if len(self.marked) < len(self.pivots) or not all(self.buffers.values()):
            return []
        buffered = sorted({item for items in self.buffers.values() for item in items})
        start = buffered[-1][0]  # the paper's choice: the most recent over all buffers
        self.start = start
        self.last = buffered[-1][0]
        self.buffers.clear()
        return [e for s, e in buffered if s >= start]
