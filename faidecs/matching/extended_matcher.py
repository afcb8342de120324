"""MATCH for the extended language: groups (`T+`), negations, absences and windows.

The search is the reference matcher's (``docs/semantics.md``): slots in signature order, each
trying its candidates in the matching option's order, predicates checked at the slot that binds
the last of their instances. A group slot tries runs of its queue that are contiguous in the
queue: FR, FRC and ALL from the oldest start, the longest run first; MR and MRC from the newest
end, the longest run first. Negations and the window's span are checked like predicates, at the
slot that binds their last anchor. It yields every valid assignment in search order; the state
takes the first (FR, MR, FRC, MRC) or all new ones (ALL).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from faidecs.grammar.model import Conjunction, Matching, Negation, NegationKind, Slot, Window
from faidecs.matching.events import Event
from faidecs.matching.extended_values import GroupPredicate, Runs, View
from faidecs.matching.reference import candidates

#: A slot's choice: a queue position, or for a group the run ``(start, end)``, both included.
Choice = int | tuple[int, int]


@dataclass(frozen=True, slots=True)
class Logged:
    """An event of a negated type, kept while it may still lie between or after queued events."""

    event: Event
    arrival: int
    time: Any


@dataclass(slots=True)
class Moment:
    """What the search needs besides the queues: the negated events seen, the watermark now and
    before this arrival (for absences), and the arrival number of the event being processed."""

    logs: list[list[Logged]]  # per negation, in the conjunction's order
    watermark: float
    before: float


class _NegationCheck:
    __slots__ = ("negation", "first", "second", "filters", "checks", "position", "extra")

    def __init__(self, negation: Negation, positions: Mapping[Slot, int], extra: int, groups: frozenset[str]):
        self.negation = negation
        self.first = positions[negation.first]
        self.second = None if negation.second is None else positions[negation.second]
        own = dict(positions)
        own[negation.slot] = extra
        self.extra = extra
        compiled = [GroupPredicate(p, own, groups) for p in negation.predicates]
        self.filters = [c for c, p in zip(compiled, negation.predicates) if p.slots == {negation.slot}]
        self.checks = [c for c, p in zip(compiled, negation.predicates) if p.slots != {negation.slot}]
        anchors = [self.first] + ([] if self.second is None else [self.second])
        self.position = max(anchors + [positions[s] for p in negation.predicates for s in p.slots - {negation.slot}])


class ExtendedMatcher:
    """MATCH (and the filters of ENQUEUE) for one extended conjunction under one matching option.
    Stateless like :class:`~faidecs.matching.reference.ReferenceMatcher`."""

    def __init__(self, conjunction: Conjunction, matching: Matching, window: Window | None):
        self.conjunction = conjunction
        self.matching = matching
        self.window = window
        self.signature = conjunction.signature
        n = len(self.signature)
        positions = {slot: k for k, slot in enumerate(self.signature)}
        self.group = [slot.type_name in conjunction.groups for slot in self.signature]
        self._unary: list[list[GroupPredicate]] = [[] for _ in self.signature]
        self._checks: list[list[GroupPredicate]] = [[] for _ in self.signature]
        # Per group slot: predicates on its members alone (bound instances aside), which the
        # search evaluates once per queue position instead of once per run.
        self._member: list[list[GroupPredicate]] = [[] for _ in self.signature]
        self._pair: list[list[GroupPredicate]] = [[] for _ in self.signature]
        for pred in conjunction.predicates:
            check = GroupPredicate(pred, positions, conjunction.groups)
            if pred.unary:
                (slot,) = pred.slots
                self._unary[positions[slot]].append(check)
            k = check.position
            if self.group[k] and check.members == (k,) and not check.aggregates:
                (self._pair if check.paired else self._member)[k].append(check)
            else:
                self._checks[k].append(check)
        self.negations = [
            _NegationCheck(neg, positions, n + j, conjunction.groups) for j, neg in enumerate(conjunction.negations)
        ]
        self._negations_at: list[list[_NegationCheck]] = [[] for _ in self.signature]
        for negation in self.negations:
            self._negations_at[negation.position].append(negation)
        self.absences = [c for c in self.negations if c.negation.kind is NegationKind.AFTER]
        self._view_size = n + len(self.negations)
        self._slots_of_type: dict[str, list[int]] = {}
        for k, slot in enumerate(self.signature):
            self._slots_of_type.setdefault(slot.type_name, []).append(k)

    # --- ENQUEUE ---------------------------------------------------------------------------

    def admits(self, event: Event) -> bool:
        """Some position of the event's type has all its unary predicates satisfied."""
        view: View = [None] * self._view_size
        for k in self._slots_of_type.get(event.type, ()):
            view[k] = event
            if all(p.test(view, view, []) for p in self._unary[k]):
                return True
            view[k] = None
        return False

    def logs(self, event: Event) -> list[int]:
        """The negations whose log keeps ``event`` (it passes their conditions on it alone)."""
        out = []
        for j, check in enumerate(self.negations):
            if check.negation.type_name != event.type:
                continue
            view: View = [None] * self._view_size
            view[check.extra] = event
            if all(p.test(view, view, []) for p in check.filters):
                out.append(j)
        return out

    # --- MATCH -----------------------------------------------------------------------------

    def _instance_candidates(self, k: int, n: int, chosen: list[Choice]) -> Sequence[int]:
        first = self.signature[k].index == 0
        previous = -1 if first else chosen[k - 1]  # the same type's instance i-1, never a group
        assert isinstance(previous, int)
        return candidates(self.matching, first, n, previous)

    def _runs(self, k: int, queue: Sequence[Event], view: View, prev: View, runs: Runs) -> Iterator[tuple[int, int]]:
        """The runs a group slot tries, in order, that its member and pair predicates allow."""
        n = len(queue)
        member_ok = []
        for event in queue:
            view[k] = event
            member_ok.append(all(p.test(view, prev, runs) for p in self._member[k]))
        pair_ok = [True]
        for i in range(1, n):
            view[k], prev[k] = queue[i], queue[i - 1]
            pair_ok.append(all(p.test(view, prev, runs) for p in self._pair[k]))
        view[k] = prev[k] = None
        # reach[s]: the last end a run starting at s may have; back[e]: the first start for end e.
        if self.matching.most_recent:
            back = [0] * n
            for e in range(n):
                if not member_ok[e]:
                    back[e] = e + 1
                elif e and pair_ok[e] and member_ok[e - 1]:
                    back[e] = back[e - 1]
                else:
                    back[e] = e
            for e in range(n - 1, -1, -1):
                for s in range(back[e], e + 1):
                    yield s, e
        else:
            reach = [0] * n
            for s in range(n - 1, -1, -1):
                if not member_ok[s]:
                    reach[s] = s - 1
                elif s + 1 < n and pair_ok[s + 1] and member_ok[s + 1]:
                    reach[s] = reach[s + 1]
                else:
                    reach[s] = s
            for s in range(n):
                for e in range(reach[s], s - 1, -1):
                    yield s, e

    def search(
        self,
        queues: Mapping[str, Sequence[Event]],
        arrivals: Mapping[str, Sequence[int]],
        times: Mapping[str, Sequence[Any]] | None,
        moment: Moment,
    ) -> Iterator[list[Choice]]:
        """Every valid assignment, in search order (one choice per signature slot)."""
        n = len(self.signature)
        view: View = [None] * self._view_size
        prev: View = [None] * self._view_size
        runs: Runs = [None] * n
        chosen: list[Choice] = [-1] * n
        order: list[tuple[int, int]] = [(0, 0)] * n  # (first, last) arrival number bound at each slot
        span: list[tuple[Any, Any]] = [(0, 0)] * n  # (min, max) time bound so far
        duration = None if self.window is None else self.window.duration

        def bind(k: int) -> Iterator[None]:
            type_name = self.signature[k].type_name
            queue = queues[type_name]
            marks = arrivals[type_name]
            stamps = None if times is None else times[type_name]
            candidates: Iterator[Any]
            if self.group[k]:
                candidates = self._runs(k, queue, view, prev, runs)
            else:
                candidates = iter(self._instance_candidates(k, len(queue), chosen))
            for cand in candidates:
                if isinstance(cand, tuple):
                    s, e = cand
                    run = queue[s : e + 1]
                    runs[k] = run
                    view[k], prev[k] = run[0], None
                    order[k] = (marks[s], marks[e])
                    low, high = (min(stamps[s : e + 1]), max(stamps[s : e + 1])) if stamps is not None else (0, 0)
                else:
                    view[k] = queue[cand]
                    order[k] = (marks[cand], marks[cand])
                    low = high = stamps[cand] if stamps is not None else 0
                if duration is not None:
                    if k:
                        low, high = min(low, span[k - 1][0]), max(high, span[k - 1][1])
                    if high - low > duration:
                        continue
                    span[k] = (low, high)
                if not all(p.holds(view, prev, runs) for p in self._checks[k]):
                    continue
                if not all(self._negation_holds(c, view, prev, runs, order, moment) for c in self._negations_at[k]):
                    continue
                chosen[k] = cand
                yield None
            view[k] = prev[k] = None
            runs[k] = None

        def walk(k: int) -> Iterator[list[Choice]]:
            if k == n:
                yield list(chosen)
                return
            for _ in bind(k):
                yield from walk(k + 1)

        yield from walk(0)

    def _negation_holds(
        self,
        check: _NegationCheck,
        view: View,
        prev: View,
        runs: Runs,
        order: list[tuple[int, int]],
        moment: Moment,
    ) -> bool:
        log = moment.logs[check.extra - len(self.signature)]
        first = order[check.first][0]
        if check.second is None:
            assert self.window is not None
            anchor = view[check.first]
            assert anchor is not None
            deadline = self.deadline(anchor)
            if not moment.watermark > deadline:
                return False
            window: Callable[[Logged], bool] = lambda x: x.arrival > first and x.time <= deadline  # noqa: E731
        else:
            second = order[check.second][0]
            low, high = min(first, second), max(first, second)
            window = lambda x: low < x.arrival < high  # noqa: E731
        for logged in log:
            if window(logged):
                view[check.extra] = logged.event
                if all(p.holds(view, prev, runs) for p in check.checks):
                    view[check.extra] = None
                    return False
        view[check.extra] = None
        return True

    def deadline(self, anchor: Event) -> Any:
        """An absence's deadline: its anchor's time plus the window."""
        assert self.window is not None
        return anchor.values[anchor.event_type.position(self.window.attribute)] + self.window.duration

    def deadlines(self, chosen: Sequence[Choice], queues: Mapping[str, Sequence[Event]]) -> list[Any]:
        """The absence deadlines of an assignment. Anchors are instances, never groups, so each
        one's choice is a queue position."""
        out = []
        for check in self.absences:
            choice = chosen[check.first]
            assert isinstance(choice, int)
            out.append(self.deadline(queues[check.negation.first.type_name][choice]))
        return out
