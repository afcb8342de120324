"""The state of one conjunction of the extended language: queues, negation logs and event time.

It follows :class:`~faidecs.matching.conjunction_state.ConjunctionState` (ENQUEUE, MATCH,
DEQUEUE, bounds, snapshots) and adds what ``docs/semantics.md`` ("The extended language") states:
the log of each negation's events, the window's watermark with late events counted and old
events purged, absences that fire when the watermark passes their deadline (also on
:meth:`advance`, a heartbeat), and disposal NONE / matching ALL, under which only relations new
at an arrival are considered and ALL delivers every one of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from faidecs.errors import EngineStateError, QueueOverflowError, SnapshotError
from faidecs.grammar.model import Aggregate, Conjunction, Disposal, Matching, Slot, Window, value_parts
from faidecs.matching.bounds import UNBOUNDED, Bounds
from faidecs.matching.conjunction_state import Validate, read_queues, write_queues
from faidecs.matching.events import Event
from faidecs.matching.extended_matcher import Choice, ExtendedMatcher, Logged, Moment
from faidecs.matching.extended_values import aggregate
from faidecs.matching.found import Found, Matches
from faidecs.matching.reference import Queues, dispose, expired
from faidecs.matching.snapshot_schema import EventJson, convert

NEVER = -math.inf


class ExtendedConjunctionState:
    """Queues and time of one extended conjunction; the arrival step and the heartbeat."""

    def __init__(
        self,
        conjunction: Conjunction,
        matching: Matching,
        disposal: Disposal,
        window: Window | None,
        bounds: Bounds = UNBOUNDED,
        owner: tuple[str, int] = ("", 0),
    ):
        self.conjunction = conjunction
        self.matcher = ExtendedMatcher(conjunction, matching, window)
        self.matching = matching
        self.disposal = disposal
        self.window = window
        self.bounds = bounds
        self.owner = owner
        self.queues: Queues = {t: [] for t in conjunction.types}
        self.arrivals: dict[str, list[int]] = {t: [] for t in conjunction.types}
        self.ticks: dict[str, list[int]] = {t: [] for t in conjunction.types}
        # Beside each queue, its events' times (with a window), and whether they are in order:
        # then purging looks at the front only.
        self.times: dict[str, list[Any]] = {t: [] for t in conjunction.types}
        self.in_order: dict[str, bool] = dict.fromkeys(conjunction.types, True)
        self.logs: list[list[Logged]] = [[] for _ in conjunction.negations]
        self.watched = frozenset(conjunction.watched_types)
        self.clock = 0
        self.deliveries = 0
        self.drops = 0
        self.late = 0
        self.purged = 0
        self.max_time: Any = None
        self.last_arrivals: tuple[int, ...] = ()
        seen: dict[str, Aggregate] = {}
        for pred in conjunction.predicates:
            for v in (*value_parts(pred.left), *value_parts(pred.right)):
                if isinstance(v, Aggregate):
                    seen.setdefault(_text(v), v)
        self._aggregates = [(text, seen[text]) for text in sorted(seen)]

    # --- time ------------------------------------------------------------------------------

    @property
    def watermark(self) -> float:
        if self.window is None or self.max_time is None:
            return NEVER
        return float(self.max_time - self.window.lateness)

    def _time(self, event: Event) -> Any:
        assert self.window is not None
        return event.values[event.event_type.position(self.window.attribute)]

    def _retime(self) -> None:
        """Rebuild the times beside the queues (after a restore)."""
        self.times = {t: [self._time(e) for e in q] if self.window else [] for t, q in self.queues.items()}
        self.in_order = {t: all(a <= b for a, b in zip(ts, ts[1:])) for t, ts in self.times.items()}

    # --- the arrival step ------------------------------------------------------------------

    def offer(self, event: Event, arrival: int, clock: int | None = None) -> Matches | None:
        if event.type not in self.watched:
            return None
        self.clock = self.clock + 1 if clock is None else clock
        if self.bounds.max_age is not None:
            self._expire(self.clock - self.bounds.max_age)
        before = self.watermark
        if self.window is not None:
            t = self._time(event)
            if t < before:
                self.late += 1  # later than the lateness allows: counted, never matched
                return None
            self.max_time = t if self.max_time is None else max(self.max_time, t)
        for j in self.matcher.logs(event):
            self.logs[j].append(Logged(event, arrival, self._time(event) if self.window else None))
        enqueued = event.type in self.queues and self.matcher.admits(event)
        if enqueued:
            queue = self.queues[event.type]
            limit = self.bounds.max_queue
            if limit is not None and len(queue) >= limit:
                if self.bounds.overflow == "error":
                    raise QueueOverflowError(*self.owner, event.type, limit, event.id)
                del queue[0], self.arrivals[event.type][0], self.ticks[event.type][0]
                if self.window is not None:
                    del self.times[event.type][0]
                self.drops += 1
            if self.window is not None:
                times = self.times[event.type]
                t = self._time(event)
                if times and t < times[-1]:
                    self.in_order[event.type] = False
                times.append(t)
            queue.append(event)
            self.arrivals[event.type].append(arrival)
            self.ticks[event.type].append(self.clock)
        found = self._match(arrival if enqueued else None, before) if enqueued or self.matcher.absences else []
        self._purge()
        return Matches(found) if found else None

    def advance(self, time: Any) -> Matches | None:
        """A heartbeat: the order has reached event time ``time`` (no event). Absences whose
        deadline it passes fire; old events are purged."""
        if self.window is None or (self.max_time is not None and time <= self.max_time):
            return None
        before = self.watermark
        self.max_time = time
        found = self._match(None, before) if self.matcher.absences else []
        self._purge()
        return Matches(found) if found else None

    def _match(self, new: int | None, before: float) -> list[Found]:
        """MATCH (and DEQUEUE) at one arrival. ALL takes every new relation; an absence takes
        every relation MATCH finds when repeated after each DEQUEUE (under NONE: every new one),
        so that an arrival passing several deadlines reports each of them before the window
        purges their anchors; otherwise the first relation only."""
        moment = Moment(self.logs, self.watermark, before)
        times = self.times if self.window else None
        every = self.matching is Matching.ALL or (self.disposal is Disposal.NONE and bool(self.matcher.absences))
        repeat = bool(self.matcher.absences) and not every
        out: list[Found] = []
        while True:
            found = False
            for chosen in self.matcher.search(self.queues, self.arrivals, times, moment):
                if self.disposal is Disposal.NONE and not self._is_new(chosen, new, before):
                    continue
                out.append(self._found(chosen))
                found = True
                if not every:
                    if self.disposal is not Disposal.NONE:
                        self._dispose(chosen)
                    break
            if not (repeat and found):
                break
        self.deliveries += len(out)
        return out

    def _positions(self, chosen: list[Choice]) -> dict[str, list[int]]:
        used: dict[str, list[int]] = {}
        for slot, choice in zip(self.conjunction.signature, chosen):
            span = range(choice[0], choice[1] + 1) if isinstance(choice, tuple) else [choice]
            used.setdefault(slot.type_name, []).extend(span)
        return used

    def _is_new(self, chosen: list[Choice], new: int | None, before: float) -> bool:
        """Under NONE: the relation contains the arriving event, or the watermark passed one of
        its absence deadlines at this arrival (it was not valid before)."""
        if new is not None:
            for type_name, positions in self._positions(chosen).items():
                marks = self.arrivals[type_name]
                if any(marks[p] == new for p in positions):
                    return True
        return any(d >= before for d in self.matcher.deadlines(chosen, self.queues))

    def _found(self, chosen: list[Choice]) -> Found:
        events: list[Event] = []
        slots: list[Slot] = []
        arrivals: list[int] = []
        runs: dict[str, list[Event]] = {}
        for slot, choice in zip(self.conjunction.signature, chosen):
            queue, marks = self.queues[slot.type_name], self.arrivals[slot.type_name]
            if isinstance(choice, tuple):
                members = queue[choice[0] : choice[1] + 1]
                runs[slot.type_name] = members
                events += members
                slots += [Slot(slot.type_name, i) for i in range(len(members))]
                arrivals += marks[choice[0] : choice[1] + 1]
            else:
                events.append(queue[choice])
                slots.append(slot)
                arrivals.append(marks[choice])
        self.last_arrivals = tuple(arrivals)
        values = {text: aggregate(a.function, runs[a.slot.type_name], a.position) for text, a in self._aggregates}
        return Found(tuple(events), tuple(slots), bool(self.matcher.absences), values, self.last_arrivals)

    def _dispose(self, chosen: list[Choice]) -> None:
        for type_name, matched in self._positions(chosen).items():
            self.queues[type_name] = dispose(self.queues[type_name], matched, self.disposal)
            self.arrivals[type_name] = dispose(self.arrivals[type_name], matched, self.disposal)
            self.ticks[type_name] = dispose(self.ticks[type_name], matched, self.disposal)
            if self.window is not None:
                self.times[type_name] = dispose(self.times[type_name], matched, self.disposal)

    def _purge(self) -> None:
        """Drop queued events the window no longer admits, and logged events older than every
        queued one (no relation can have them between or after its events any more)."""
        if self.window is not None and self.max_time is not None:
            cutoff = self.watermark - self.window.duration
            for type_name, queue in self.queues.items():
                times = self.times[type_name]
                if self.in_order[type_name]:
                    old = 0
                    while old < len(times) and times[old] < cutoff:
                        old += 1
                    if old:
                        self.purged += old
                        del queue[:old], times[:old], self.arrivals[type_name][:old], self.ticks[type_name][:old]
                    continue
                keep = [i for i, t in enumerate(times) if t >= cutoff]
                if len(keep) < len(queue):
                    self.purged += len(queue) - len(keep)
                    self.queues[type_name] = [queue[i] for i in keep]
                    self.arrivals[type_name] = [self.arrivals[type_name][i] for i in keep]
                    self.ticks[type_name] = [self.ticks[type_name][i] for i in keep]
                    self._retime()
        oldest = min((marks[0] for marks in self.arrivals.values() if marks), default=None)
        for j, log in enumerate(self.logs):
            if log and (oldest is None or log[0].arrival < oldest):
                self.logs[j] = [x for x in log if oldest is not None and x.arrival > oldest]

    def _expire(self, limit: int) -> None:
        for type_name, ticks in self.ticks.items():
            old = expired(ticks, limit)
            if old:
                del ticks[:old], self.arrivals[type_name][:old], self.queues[type_name][:old]
                if self.window is not None:
                    del self.times[type_name][:old]
                self.drops += old

    # --- what the engine reads ---------------------------------------------------------------

    def set_clock(self, clock: int) -> None:
        self.clock = clock

    def state_json(self) -> dict[str, Any]:
        return {t: [e.id for e in q] for t, q in self.queues.items()}

    def queue_lengths(self) -> dict[str, int]:
        return {t: len(q) for t, q in self.queues.items()}

    def log_lengths(self) -> list[int]:
        return [len(log) for log in self.logs]

    def check(self) -> None:
        """Queues hold their types in arrival order; logs are in arrival order; the window holds."""
        for type_name, queue in self.queues.items():
            if any(e.type != type_name for e in queue):
                raise EngineStateError(f"queue {type_name} holds another type")
            marks = self.arrivals[type_name]
            if len(marks) != len(queue) or marks != sorted(set(marks)) or len(self.ticks[type_name]) != len(queue):
                raise EngineStateError(f"queue {type_name}: arrival numbers {marks} (expected one each, increasing)")
        for log in self.logs:
            if [x.arrival for x in log] != sorted({x.arrival for x in log}):
                raise EngineStateError("a negation's log is not in arrival order")
        if self.window is not None and self.max_time is not None:
            cutoff = self.watermark - self.window.duration
            if any(self._time(e) < cutoff for q in self.queues.values() for e in q):
                raise EngineStateError(f"an event older than the window ({cutoff}) is still queued")

    def snapshot(self) -> dict[str, Any]:
        return {
            "queues": write_queues(self.queues, self.arrivals, self.ticks, self.clock),
            "logs": [[{"event": x.event.to_json(), "arrival": x.arrival} for x in log] for log in self.logs],
            "max_time": self.max_time,
            "late": self.late,
        }

    def restore(self, saved: Any, validate: Validate, published: int) -> None:
        if not isinstance(saved, Mapping) or set(saved) != {"queues", "logs", "max_time", "late"}:
            raise SnapshotError("expected queues, logs, max_time and late")
        self.queues, self.arrivals, self.ticks, self.clock = read_queues(
            saved["queues"], self.conjunction.types, validate, published
        )
        self._retime()
        logs = saved["logs"]
        if not isinstance(logs, list) or len(logs) != len(self.logs):
            raise SnapshotError(f"expected {len(self.logs)} negation logs")
        restored: list[list[Logged]] = []
        for j, (log, neg) in enumerate(zip(logs, self.conjunction.negations)):
            if not isinstance(log, list):
                raise SnapshotError(f"logs[{j}]: expected a list")
            entries = []
            for x in log:
                if not isinstance(x, Mapping) or type(x.get("arrival")) is not int or not 0 <= x["arrival"] < published:
                    raise SnapshotError(f"logs[{j}]: each entry needs an event and an arrival number below {published}")
                event = validate(convert(x.get("event"), EventJson, f"logs[{j}]"))
                if event.type != neg.type_name:
                    raise SnapshotError(f"logs[{j}] holds {event.type}, not {neg.type_name}")
                entries.append(Logged(event, x["arrival"], self._time(event) if self.window else None))
            restored.append(entries)
        max_time = saved["max_time"]
        if max_time is not None and (isinstance(max_time, bool) or not isinstance(max_time, (int, float))):
            raise SnapshotError("max_time must be a number or null")
        if type(saved["late"]) is not int or saved["late"] < 0:
            raise SnapshotError("late must be a count")
        self.logs, self.max_time, self.late = restored, max_time, saved["late"]


def _text(a: Aggregate) -> str:
    return f"{a.function}({a.slot.type_name}" + (f".{a.attribute})" if a.attribute else ")")


Make = Callable[[Conjunction], ExtendedConjunctionState]
