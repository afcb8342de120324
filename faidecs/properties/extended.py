"""The extended language's conditions judged on a run log (groups, negations, absences, windows).

A stream of a subscription that needs the extended matcher (``Subscription.extended``) is judged
on what its conjunction's state saw, rebuilt from the log: every published event of its watched
types (negated ones included) that the stream sees, in publication order. From them come, per
arrival, the window's watermark before and after it and whether the event was late (late events
are counted by the engine and neither queued nor logged), exactly as ``docs/semantics.md`` ("The
extended language") defines them. A run log records no heartbeat (``Engine.advance``): what an
absence delivers on a heartbeat is judged at the last arrival before the delivery.

A delivered relation lists a group's members as consecutive events of the group's type
(``T[0]``, ``T[1]``, ...): :func:`bind` maps the ids back onto the conjunction's signature, one
binding per slot (an event, or a group's list of members).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from faidecs.grammar.model import Conjunction, Disposal, Matching, NegationKind, Slot, Subscription
from faidecs.matching.events import Event
from faidecs.matching.extended_values import GroupPredicate, Runs, View

NEVER = -math.inf

#: one slot's binding: an event, or a group's members in arrival order
Bound = Event | list[Event]


def members(b: Bound) -> list[Event]:
    return b if isinstance(b, list) else [b]


def bind(conj: Conjunction, events: Sequence[Event]) -> list[Bound] | None:
    """``events`` (a delivered relation) as one binding per signature slot; None when the shape
    does not fit (a wrong length or type somewhere)."""
    out: list[Bound] = []
    k = 0
    for slot in conj.signature:
        if slot.type_name in conj.groups:
            run: list[Event] = []
            while k < len(events) and events[k].type == slot.type_name:
                run.append(events[k])
                k += 1
            if not run:
                return None
            out.append(run)
        else:
            if k >= len(events) or events[k].type != slot.type_name:
                return None
            out.append(events[k])
            k += 1
    return out if k == len(events) else None


def slots_of(conj: Conjunction, events: Sequence[Event]) -> list[Slot] | None:
    """The signature slot of each event of a relation (a group's members all have the group's)."""
    bound = bind(conj, events)
    if bound is None:
        return None
    return [slot for slot, b in zip(conj.signature, bound) for _ in members(b)]


@dataclass(frozen=True, slots=True)
class _Compiled:
    predicates: tuple[GroupPredicate, ...]
    unary: tuple[tuple[GroupPredicate, ...], ...]  # per slot
    negations: tuple[tuple[GroupPredicate, ...], ...]  # per negation, every predicate
    size: int


@lru_cache(maxsize=256)
def _compiled(conj: Conjunction) -> _Compiled:
    n = len(conj.signature)
    positions = {s: k for k, s in enumerate(conj.signature)}
    predicates = tuple(GroupPredicate(p, positions, conj.groups) for p in conj.predicates)
    unary = tuple(
        tuple(GroupPredicate(p, positions, conj.groups) for p in conj.predicates if p.unary and p.slots == {s})
        for s in conj.signature
    )
    negations = []
    for j, neg in enumerate(conj.negations):
        own = dict(positions)
        own[neg.slot] = n + j
        negations.append(tuple(GroupPredicate(p, own, conj.groups) for p in neg.predicates))
    return _Compiled(predicates, unary, tuple(negations), n + len(conj.negations))


class Timeline:
    """What one stream's extended state saw: its arrivals, lateness and the watermark."""

    def __init__(self, subscription: Subscription, conj: Conjunction, seen: Sequence[Event], times: dict[str, int]):
        self.subscription = subscription
        self.conj = conj
        self.window = subscription.window
        self.times = times  # event id -> publication time in the log
        watched = set(conj.watched_types)
        self.arrivals = [e for e in seen if e.type in watched]
        self.index = {e.id: k for k, e in enumerate(self.arrivals)}
        self.before: list[float] = []
        self.after: list[float] = []
        self.late: set[str] = set()
        top: float | None = None
        for e in self.arrivals:
            mark = NEVER if top is None or self.window is None else top - self.window.lateness
            self.before.append(mark)
            if self.window is not None:
                t = self.time_of(e)
                if t < mark:
                    self.late.add(e.id)
                else:
                    top = t if top is None else max(top, t)
            self.after.append(NEVER if top is None or self.window is None else top - self.window.lateness)
        self.compiled = _compiled(conj)

    def time_of(self, e: Event) -> float:
        assert self.window is not None
        return float(e.values[e.event_type.position(self.window.attribute)])

    def final_watermark(self) -> float:
        return self.after[-1] if self.after else NEVER

    def trigger(self, delivered_at: int) -> int | None:
        """The arrival at which a delivery recorded at ``delivered_at`` was made: the last one
        published before it."""
        found = None
        for k, e in enumerate(self.arrivals):
            if self.times[e.id] < delivered_at:
                found = k
            else:
                break
        return found

    def unary_ok(self, k: int, e: Event) -> bool:
        view: View = [None] * self.compiled.size
        view[k] = e
        runs: Runs = [None] * self.compiled.size
        runs[k] = [e]
        return all(p.test(view, view, runs) for p in self.compiled.unary[k])

    def admitted(self, e: Event) -> bool:
        """ENQUEUE's filter: queued, not late, and some slot of its type takes it."""
        if e.id in self.late or e.type not in self.conj.types:
            return False
        return any(s.type_name == e.type and self.unary_ok(k, e) for k, s in enumerate(self.conj.signature))

    def matches_at(self, k: int) -> bool:
        """Whether MATCH runs at arrival ``k``: an enqueued event, or any arrival with an absence."""
        if self.arrivals[k].id in self.late:
            return False
        absences = any(n.kind is NegationKind.AFTER for n in self.conj.negations)
        return absences or self.admitted(self.arrivals[k])

    # --- validity of one assignment ---------------------------------------------------------

    def _views(self, bound: Sequence[Bound]) -> tuple[View, View, Runs]:
        size = self.compiled.size
        view: View = [None] * size
        prev: View = [None] * size
        runs: Runs = [None] * size
        for k, b in enumerate(bound):
            group = members(b)
            view[k], runs[k] = group[0], group
        return view, prev, runs

    def failure(self, bound: Sequence[Bound], at: int) -> str | None:
        """Why ``bound`` is not a valid relation at arrival ``at`` (None: it is)."""
        every = [e for b in bound for e in members(b)]
        late = [e.id for e in every if e.id in self.late]
        if late:
            return f"holds {late[0]}, which arrived late (below the watermark): never queued"
        unknown = [e.id for e in every if e.id not in self.index or self.index[e.id] > at]
        if unknown:
            return f"holds {unknown[0]}, which had not arrived"
        for b in bound:
            group = members(b)
            order = [self.index[e.id] for e in group]
            if order != sorted(set(order)):
                return f"lists the members of a group out of arrival order ({', '.join(e.id for e in group)})"
        view, prev, runs = self._views(bound)
        for pred in self.compiled.predicates:
            if not pred.holds(view, prev, runs):
                return f"does not satisfy {pred.text}"
        if self.window is not None:
            stamps = [self.time_of(e) for e in every]
            low, high = min(stamps), max(stamps)
            if high - low > self.window.duration:
                return (
                    f"spans {high - low:g} of {self.window.attribute}, more than the window's {self.window.duration!r}"
                )
            if low < self.before[at] - self.window.duration:
                return f"holds an event older than the window allows at its delivery ({self.window.attribute}={low:g})"
        return self._negation_failure(bound, view, prev, runs, at)

    def _negation_failure(self, bound: Sequence[Bound], view: View, prev: View, runs: Runs, at: int) -> str | None:
        n = len(self.conj.signature)
        positions = {s: k for k, s in enumerate(self.conj.signature)}
        for j, neg in enumerate(self.conj.negations):
            first = self.index[members(bound[positions[neg.first]])[0].id]
            if neg.kind is NegationKind.BETWEEN:
                assert neg.second is not None
                second = self.index[members(bound[positions[neg.second]])[0].id]
                low, high = min(first, second), max(first, second)
                span = range(low + 1, high)
                deadline = None
            else:
                assert self.window is not None
                anchor = members(bound[positions[neg.first]])[0]
                deadline = self.time_of(anchor) + self.window.duration
                if not self.after[at] > deadline:
                    return f"is an absence delivered before the watermark passed its deadline ({deadline:g})"
                span = range(first + 1, at + 1)
            for k in span:
                x = self.arrivals[k]
                if x.type != neg.type_name or x.id in self.late:
                    continue
                if deadline is not None and self.time_of(x) > deadline:
                    continue
                view[n + j] = x
                runs[n + j] = [x]
                try:
                    if all(p.holds(view, prev, runs) for p in self.compiled.negations[j]):
                        where = "after" if deadline is not None else "between"
                        return f"has {x.id} {where} its events, which `{neg.text}` excludes"
                finally:
                    view[n + j] = None
                    runs[n + j] = None
        return None

    def valid_from(self, bound: Sequence[Bound], new_only: bool) -> int | None:
        """The first arrival at which MATCH would find ``bound`` valid (and, under disposal
        NONE, new there: it holds the arriving event, or an absence's deadline passed then);
        None if no arrival of the run does."""
        every = [e for b in bound for e in members(b)]
        if any(e.id not in self.index for e in every):
            return None
        start = max(self.index[e.id] for e in every)
        for at in range(start, len(self.arrivals)):
            if not self.matches_at(at) or self.failure(bound, at) is not None:
                continue
            if new_only and not self._new_at(bound, at, every):
                continue
            return at
        return None

    def _new_at(self, bound: Sequence[Bound], at: int, every: list[Event]) -> bool:
        if any(e.id == self.arrivals[at].id for e in every):
            return True
        positions = {s: k for k, s in enumerate(self.conj.signature)}
        for neg in self.conj.negations:
            if neg.kind is NegationKind.AFTER:
                assert self.window is not None
                deadline = self.time_of(members(bound[positions[neg.first]])[0]) + self.window.duration
                if deadline >= self.before[at]:
                    return True
        return False


def assignments(
    conj: Conjunction, candidates: Sequence[Sequence[Event]], order: dict[str, int], newest_first: bool
) -> Iterator[list[Bound]]:
    """Every assignment of ``candidates[k]`` to slot k (a group: a non-empty run of consecutive
    candidates), instances of one type in publication order (reversed for MR, MRC)."""
    n = len(conj.signature)
    chosen: list[Bound | None] = [None] * n

    def walk(k: int) -> Iterator[list[Bound]]:
        if k == n:
            yield [b for b in chosen if b is not None]
            return
        slot = conj.signature[k]
        pool = candidates[k]
        if slot.type_name in conj.groups:
            for s in range(len(pool)):
                for e in range(s, len(pool)):
                    chosen[k] = list(pool[s : e + 1])
                    yield from walk(k + 1)
        else:
            for event in pool:
                if slot.index > 0:
                    previous = chosen[k - 1]
                    assert isinstance(previous, Event)
                    if event.id == previous.id or (order[event.id] < order[previous.id]) != newest_first:
                        continue
                chosen[k] = event
                yield from walk(k + 1)
        chosen[k] = None

    yield from walk(0)


def free_slots(conj: Conjunction) -> list[Slot]:
    """Slots constrained by unary predicates only: no predicate links them to another slot, no
    condition on a group as a whole (``prev``, aggregates) names them, and no negation names them
    (an anchor, or a slot in its conditions). A window links every slot to the others by its
    span, but a slot under a window is still free: Event Validity then asks for partners within
    the window (docs/properties.md)."""
    linked = {s for p in conj.predicates if len(p.slots) > 1 or p.structural for s in p.slots}
    for neg in conj.negations:
        linked.add(neg.first)
        if neg.second is not None:
            linked.add(neg.second)
        for p in neg.predicates:
            linked.update(p.slots - {neg.slot})
    return [s for s in conj.signature if s not in linked]


def dominated(timeline: Timeline, slot: Slot, e: Event, seen: Sequence[Event]) -> Event | None:
    """Under disposal NONE (not ALL): an event that takes ``slot`` before ``e`` in every relation
    that could take ``e``, for ever, or None.

    Nothing leaves a NONE queue (without a window), so such an event ``o`` stays. ``slot`` is free
    and the only slot of its type: swapping ``e`` for ``o`` there keeps every predicate (``o``
    passes the slot's unary ones), keeps the relation new (the arriving event is neither), and
    the search tries ``o`` first at that slot (FR, FRC: the older; MR, MRC: the younger). So
    MATCH finds the relation with ``o`` before the one with ``e``, at every arrival from ``o``'s
    on: ``e`` is never delivered. Under a window ``o`` must have ``e``'s time (the same span, and
    purged no earlier)."""
    sub, conj = timeline.subscription, timeline.conj
    if sub.disposal is not Disposal.NONE or sub.matching is Matching.ALL:
        return None
    if slot.type_name in conj.groups or sum(s.type_name == slot.type_name for s in conj.signature) != 1:
        return None
    k = conj.signature.index(slot)
    here = timeline.index.get(e.id)
    if here is None:
        return None
    for o in seen:
        there = timeline.index.get(o.id)
        if o.id == e.id or o.type != e.type or there is None or not timeline.admitted(o):
            continue
        if (there > here) != sub.matching.most_recent or not timeline.unary_ok(k, o):
            continue
        if timeline.window is not None and timeline.time_of(o) != timeline.time_of(e):
            continue
        return o
    return None


__all__ = ["Bound", "Timeline", "assignments", "bind", "dominated", "free_slots", "members", "slots_of"]
