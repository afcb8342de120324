"""The runtime state of one conjunction: one FIFO queue per type of its signature."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from faidecs.errors import EngineStateError, QueueOverflowError, SnapshotError
from faidecs.grammar.model import Conjunction, Disposal, Slot
from faidecs.matching.bounds import UNBOUNDED, Bounds
from faidecs.matching.events import Event
from faidecs.matching.found import Matches, Offered
from faidecs.matching.reference import Queues, ReferenceMatcher, dispose, expired
from faidecs.matching.snapshot_schema import EventJson, PlainCounters, Staged, convert

Validate = Callable[[Any], Event]


# Snapshot keys beside the type names (no type can be called that).
ARRIVALS, TICKS, CLOCK = "@arrivals", "@ticks", "@clock"


class ConjunctionState:
    """Queues of one conjunction, and the arrival step ENQUEUE → MATCH → DEQUEUE.

    Beside each queued event it keeps the event's arrival number in the engine and its tick on
    the conjunction's own clock, which counts the arrivals of the conjunction's types: age bounds
    count ticks, so every process with this conjunction sees the same clock whatever other types
    it receives. It counts deliveries and bound drops for the metrics."""

    __slots__ = (
        "conjunction",
        "matcher",
        "disposal",
        "bounds",
        "queues",
        "arrivals",
        "ticks",
        "clock",
        "deliveries",
        "drops",
        "owner",
        "last_arrivals",
    )

    def __init__(
        self,
        matcher: ReferenceMatcher,
        disposal: Disposal,
        bounds: Bounds = UNBOUNDED,
        owner: tuple[str, int] = ("", 0),
    ):
        self.conjunction: Conjunction = matcher.conjunction
        self.matcher = matcher
        self.disposal = disposal
        self.bounds = bounds
        self.queues: Queues = {t: [] for t in self.conjunction.types}
        self.arrivals: dict[str, list[int]] = {t: [] for t in self.conjunction.types}
        self.ticks: dict[str, list[int]] = {t: [] for t in self.conjunction.types}
        self.clock = 0
        self.deliveries = 0
        self.drops = 0
        self.owner = owner  # (subscription, conjunction as written), for errors
        self.last_arrivals: tuple[int, ...] = ()  # arrival numbers of the last relation, per slot

    def offer(self, event: Event, arrival: int, clock: int | None = None) -> tuple[Event, ...] | None:
        """Process one arriving event (the engine's ``arrival``-th, from 0); return the relation
        it completes, if any. ``clock``: the conjunction's clock with this arrival counted, when
        the caller keeps it (an engine's filter index skips arrivals the conjunction would not
        admit, and they still count); by default the state counts its own arrivals.

        At most one relation per arrival. The relation need not contain ``event``: an older
        assignment may still match (e.g. after infix-only disposal)."""
        queue = self.queues.get(event.type)
        if queue is None:
            return None
        self.clock = self.clock + 1 if clock is None else clock
        if self.bounds.max_age is not None:
            self._expire(self.clock - self.bounds.max_age)
        if not self.matcher.admits(event):
            return None
        limit = self.bounds.max_queue
        if limit is not None and len(queue) >= limit:
            if self.bounds.overflow == "error":
                raise QueueOverflowError(*self.owner, event.type, limit, event.id)
            del queue[0], self.arrivals[event.type][0], self.ticks[event.type][0]
            self.drops += 1
        queue.append(event)
        self.arrivals[event.type].append(arrival)
        self.ticks[event.type].append(self.clock)
        chosen = self.matcher.match(self.queues)
        if chosen is None:
            return None
        signature = self.conjunction.signature
        relation = tuple(self.queues[slot.type_name][pos] for slot, pos in zip(signature, chosen))
        self.last_arrivals = tuple(self.arrivals[slot.type_name][pos] for slot, pos in zip(signature, chosen))
        for type_name in self.conjunction.types:
            matched = [pos for slot, pos in zip(signature, chosen) if slot.type_name == type_name]
            self.queues[type_name] = dispose(self.queues[type_name], matched, self.disposal)
            self.arrivals[type_name] = dispose(self.arrivals[type_name], matched, self.disposal)
            self.ticks[type_name] = dispose(self.ticks[type_name], matched, self.disposal)
        self.deliveries += 1
        return relation

    def _expire(self, limit: int) -> None:
        """Drop the events whose tick is at or before ``limit``."""
        for type_name, ticks in self.ticks.items():
            old = expired(ticks, limit)
            if old:
                del ticks[:old], self.arrivals[type_name][:old], self.queues[type_name][:old]
                self.drops += old

    def set_clock(self, clock: int) -> None:
        """Catch the clock up with arrivals the caller did not offer (see :meth:`offer`)."""
        self.clock = clock

    def state_json(self) -> dict[str, Any]:
        return {t: [e.id for e in q] for t, q in self.queues.items()}

    def queue_lengths(self) -> dict[str, int]:
        return {t: len(q) for t, q in self.queues.items()}

    def check(self) -> None:
        """Check the invariants: one queue per signature type, each holding only its type, in
        arrival order, with ticks on the conjunction's clock. Raises :class:`EngineStateError`."""
        if list(self.queues) != list(self.conjunction.types):
            raise EngineStateError(f"queues {list(self.queues)}, expected {list(self.conjunction.types)}")
        for type_name, queue in self.queues.items():
            stranger = next((e for e in queue if e.type != type_name), None)
            if stranger is not None:
                raise EngineStateError(f"queue {type_name} holds event {stranger.id!r} of type {stranger.type}")
            arrivals, ticks = self.arrivals[type_name], self.ticks[type_name]
            if len(arrivals) != len(queue) or arrivals != sorted(set(arrivals)):
                raise EngineStateError(
                    f"queue {type_name}: {len(queue)} events, arrivals {arrivals} (expected as many, increasing)"
                )
            if len(ticks) != len(queue) or ticks != sorted(set(ticks)) or not all(0 < k <= self.clock for k in ticks):
                raise EngineStateError(
                    f"queue {type_name}: {len(queue)} events, ticks {ticks} "
                    f"(expected as many, increasing, in 1..{self.clock})"
                )

    def snapshot(self) -> dict[str, Any]:
        return write_queues(self.queues, self.arrivals, self.ticks, self.clock)

    def restore(self, saved: Any, validate: Validate, published: int) -> None:
        """Take the queues of a :meth:`snapshot`; raises :class:`SnapshotError` if they do not fit."""
        saved_queues = read_queues(saved, self.conjunction.types, validate, published)
        self.queues, self.arrivals, self.ticks, self.clock = saved_queues


SavedQueues = tuple[Queues, dict[str, list[int]], dict[str, list[int]], int]


def write_queues(
    queues: Queues, arrivals: dict[str, list[int]], ticks: dict[str, list[int]], clock: int
) -> dict[str, Any]:
    """Queues, arrival numbers, ticks and clock as a conjunction snapshot (:func:`read_queues` reads it)."""
    out: dict[str, Any] = {t: [e.to_json() for e in q] for t, q in queues.items()}
    out[ARRIVALS] = {t: list(a) for t, a in arrivals.items()}
    out[TICKS] = {t: list(k) for t, k in ticks.items()}
    out[CLOCK] = clock
    return out


def read_queues(saved: Any, types: tuple[str, ...], validate: Validate, published: int) -> SavedQueues:
    """Queues, arrival numbers, ticks and clock from a conjunction snapshot, checked against ``types``."""
    if not isinstance(saved, Mapping) or [k for k in saved if k not in (ARRIVALS, TICKS, CLOCK)] != list(types):
        raise SnapshotError(f"expected queues {list(types)}")
    queues: Queues = {}
    arrivals: dict[str, list[int]] = {}
    ticks: dict[str, list[int]] = {}
    counters = convert({k: saved[k] for k in (ARRIVALS, TICKS, CLOCK) if k in saved}, PlainCounters)
    saved_arrivals, saved_ticks, clock = counters.arrivals, counters.ticks, counters.clock
    for type_name in types:
        events = convert(saved[type_name], list[EventJson], type_name)
        restored = [validate(e) for e in events]
        if any(e.type != type_name for e in restored):
            raise SnapshotError(f"queue {type_name} holds another type")
        queues[type_name] = restored
        numbers = saved_arrivals.get(type_name)
        if (
            not isinstance(numbers, list)
            or len(numbers) != len(restored)
            or not all(type(a) is int and 0 <= a < published for a in numbers)
            or numbers != sorted(set(numbers))
        ):
            raise SnapshotError(
                f"queue {type_name}: arrival numbers must be increasing integers below {published}, one per event"
            )
        arrivals[type_name] = list(numbers)
        marks = saved_ticks.get(type_name)
        if (
            not isinstance(marks, list)
            or len(marks) != len(restored)
            or not all(type(k) is int and 0 < k <= clock for k in marks)
            or marks != sorted(set(marks))
        ):
            raise SnapshotError(f"queue {type_name}: ticks must be increasing integers in 1..{clock}, one per event")
        ticks[type_name] = list(marks)
    return queues, arrivals, ticks, clock


class StagedConjunctionState:
    """A conjunction matched component by component (``covering staged``).

    Each component (types linked by predicates) is a conjunction of its own with its own queues,
    matched under the subscription's options exactly as a subscriber to that component alone
    would. Its relations wait in a FIFO; when every component has one waiting, the oldest of each
    are joined into one relation (first received, prefix disposal). An arrival reaches the one
    component of its type, which yields at most one relation, so at most one relation is
    delivered per arrival."""

    __slots__ = ("conjunction", "parts", "pending", "pending_arrivals", "_owner", "_delivered", "last_arrivals")

    def __init__(self, conjunction: Conjunction, make: Callable[[Conjunction], PlainState]):
        self.conjunction = conjunction
        self.parts = [make(conjunction.project(c)) for c in conjunction.components()]
        self.pending: list[list[tuple[Event, ...]]] = [[] for _ in self.parts]
        self.pending_arrivals: list[list[tuple[int, ...]]] = [[] for _ in self.parts]
        self._owner = {t: k for k, part in enumerate(self.parts) for t in part.conjunction.types}
        self._delivered = 0
        self.last_arrivals: tuple[int, ...] = ()

    def offer(self, event: Event, arrival: int) -> tuple[Event, ...] | None:
        k = self._owner.get(event.type)
        if k is None:
            return None
        relation = self.parts[k].offer(event, arrival)
        if relation is None:
            return None
        # Staged covering refuses the extended language, so a part returns plain relations.
        assert not isinstance(relation, Matches)
        self.pending[k].append(relation)
        self.pending_arrivals[k].append(self.parts[k].last_arrivals)
        if not all(self.pending):
            return None
        by_slot: dict[Slot, tuple[Event, int]] = {}
        for part, waiting, arrivals in zip(self.parts, self.pending, self.pending_arrivals):
            by_slot.update(zip(part.conjunction.signature, zip(waiting.pop(0), arrivals.pop(0))))
        self._delivered += 1
        joined = [by_slot[s] for s in self.conjunction.signature]
        self.last_arrivals = tuple(a for _, a in joined)
        return tuple(e for e, _ in joined)

    @property
    def deliveries(self) -> int:
        return self._delivered

    @property
    def drops(self) -> int:
        return sum(part.drops for part in self.parts)

    def queue_lengths(self) -> dict[str, int]:
        merged = {t: n for part in self.parts for t, n in part.queue_lengths().items()}
        return {t: merged[t] for t in self.conjunction.types}

    @property
    def queues(self) -> Queues:
        merged = {t: q for part in self.parts for t, q in part.queues.items()}
        return {t: merged[t] for t in self.conjunction.types}

    def state_json(self) -> dict[str, Any]:
        """The queues per type, and under ``"staged"`` the component relations waiting to be joined
        (one list per component, components in canonical order)."""
        out: dict[str, Any] = {t: [e.id for e in q] for t, q in self.queues.items()}
        out["staged"] = [[[e.id for e in rel] for rel in waiting] for waiting in self.pending]
        return out

    def check(self) -> None:
        for part in self.parts:
            part.check()
        if all(self.pending):
            raise EngineStateError("every component has a relation waiting, yet they were not joined")

    def snapshot(self) -> dict[str, Any]:
        return {
            "parts": [part.snapshot() for part in self.parts],
            "pending": [[[e.to_json() for e in rel] for rel in waiting] for waiting in self.pending],
            "pending_arrivals": [[list(a) for a in waiting] for waiting in self.pending_arrivals],
        }

    def restore(self, saved: Any, validate: Validate, published: int) -> None:
        staged: Staged = convert(saved, Staged)
        n = len(self.parts)
        if (len(staged.parts), len(staged.pending), len(staged.pending_arrivals)) != (n, n, n):
            raise SnapshotError(f"expected {n} components (parts, pending and pending_arrivals)")
        for k, (part, part_saved) in enumerate(zip(self.parts, staged.parts)):
            try:
                part.restore(part_saved, validate, published)
            except SnapshotError as exc:
                raise SnapshotError(f"parts[{k}]: {exc}") from None
        self.pending = [[tuple(validate(e) for e in rel) for rel in waiting] for waiting in staged.pending]
        arrivals = staged.pending_arrivals
        if [len(w) for w in arrivals] != [len(w) for w in self.pending]:
            raise SnapshotError("expected one list of arrival numbers per pending relation")
        self.pending_arrivals = []
        for waiting, numbers in zip(self.pending, arrivals):
            if any(len(a) != len(rel) or not all(x < published for x in a) for rel, a in zip(waiting, numbers)):
                raise SnapshotError(f"pending arrival numbers must be integers below {published}, one per event")
            self.pending_arrivals.append([tuple(a) for a in numbers])


class PlainState(Protocol):
    """What every matcher's conjunction state offers (the reference one and the compiled one)."""

    @property
    def conjunction(self) -> Conjunction: ...
    @property
    def deliveries(self) -> int: ...
    @property
    def last_arrivals(self) -> tuple[int, ...]:  # of the last relation offer returned, per slot
        ...

    @property
    def drops(self) -> int: ...

    def offer(self, event: Event, arrival: int, clock: int | None = None) -> Offered: ...
    def set_clock(self, clock: int) -> None: ...
    @property
    def clock(self) -> int: ...
    def state_json(self) -> dict[str, Any]: ...
    def queue_lengths(self) -> dict[str, int]: ...
    def check(self) -> None: ...
    def snapshot(self) -> dict[str, Any]: ...
    def restore(self, saved: Any, validate: Validate, published: int) -> None: ...
    @property
    def queues(self) -> Queues: ...


AnyConjunctionState = PlainState | StagedConjunctionState
