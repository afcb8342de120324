"""A conjunction's state held in numpy queues and advanced by its compiled kernel.

It behaves exactly like :class:`~faidecs.matching.conjunction_state.ConjunctionState` (same
relations, same queues, same snapshots) but keeps events as encoded rows. The Python objects of
queued events live once per engine in an :class:`EventContext`, keyed by arrival number, so a
relation found by a kernel is handed out as the very ``Event`` objects that were published.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from faidecs.errors import EngineStateError, QueueOverflowError, SnapshotError
from faidecs.grammar.model import Conjunction, Const, Disposal, EventType, Matching
from faidecs.matching.bounds import UNBOUNDED, Bounds
from faidecs.matching.columns import StringTable, TypeCodec
from faidecs.matching.conjunction_state import ARRIVALS, CLOCK, TICKS, ConjunctionState, Validate, read_queues
from faidecs.matching.events import Event
from faidecs.matching.kernel_cache import CompiledKernel
from faidecs.matching.kernel_layout import (
    ARRIVAL,
    DISPOSAL_CODES,
    MATCHING_CODES,
    STATUS_DONE,
    STATUS_GROW,
    TICK,
    VALUES,
    field,
    meta_size,
)
from faidecs.matching.kernel_source import constant_array
from faidecs.matching.reference import Queues

INITIAL_CAPACITY = 16


@dataclass(frozen=True)
class OverflowAt:
    """A bounded queue overflowed under ``overflow = "error"`` at batch position ``position``."""

    position: int
    error: QueueOverflowError


@dataclass
class BatchRows:
    """The events of one batch as the batch path encoded them. An ``Event`` object is built only
    for an event someone asks for (a relation handed to ``publish``, state, a snapshot): a batch
    whose queues keep a million events must not build a million objects."""

    first: int  # arrival number of position 0
    codes: np.ndarray  # table index per position
    rows: np.ndarray  # row in that table per position
    codecs: list[TypeCodec]
    tables: list[np.ndarray]
    ids: list[np.ndarray | None]  # per table: the id column, or None for default ids

    def __len__(self) -> int:
        return len(self.codes)

    def event_id(self, position: int) -> str:
        ids = self.ids[self.codes[position]]
        return str(ids[self.rows[position]]) if ids is not None else str(self.first + position + 1)

    def event(self, position: int) -> Event:
        table = int(self.codes[position])
        codec = self.codecs[table]
        values = codec.decode(self.tables[table][self.rows[position]])
        return Event(self.event_id(position), codec.event_type, values)


class EventContext:
    """What the compiled states of one engine share: string codes, one encoder per type, and the
    events that may still sit in a compiled queue, by arrival number (built lazily for events
    that came in a batch)."""

    def __init__(self) -> None:
        self.strings = StringTable()
        self.codecs: dict[str, TypeCodec] = {}
        self.events: dict[int, Event] = {}
        self.batches: list[BatchRows] = []  # by first arrival
        self._encoded: tuple[int, str] = (-1, "")
        self.next_collection = 4096

    def event(self, arrival: int) -> Event:
        event = self.events.get(arrival)
        if event is None:
            firsts = [b.first for b in self.batches]
            k = bisect.bisect_right(firsts, arrival) - 1
            if k < 0 or arrival >= self.batches[k].first + len(self.batches[k]):
                raise KeyError(arrival)
            event = self.events[arrival] = self.batches[k].event(arrival - self.batches[k].first)
        return event

    def known(self, arrival: int) -> Event | None:
        try:
            return self.event(arrival)
        except KeyError:
            return None

    def size(self) -> int:
        return len(self.events) + sum(len(b) for b in self.batches)

    def codec(self, event_type: EventType) -> TypeCodec:
        codec = self.codecs.get(event_type.name)
        if codec is None:
            codec = self.codecs[event_type.name] = TypeCodec(event_type, self.strings)
        return codec

    def encode(self, event: Event, arrival: int) -> None:
        """Encode the arriving event into its type's row buffer (once, however many compiled
        conjunctions look at it) and remember it."""
        name = event.event_type.name
        if self._encoded != (arrival, name):
            self.codecs[name].encode_event(event.values)
            self.events[arrival] = event
            self._encoded = (arrival, name)

    def forget_encoded(self) -> None:
        """The row buffers were overwritten: the next :meth:`encode` must encode again."""
        self._encoded = (-1, "")

    def collect(self, live: Iterable[np.ndarray], states: int = 0) -> None:
        """Forget the events no compiled queue holds any more. A batch few of whose events are
        still queued is replaced by those events, so it does not keep its whole tables alive.
        ``states``: how many compiled states ``live`` came from; a collection reads every one of
        them, so with many states it runs less often (its cost per event stays bounded)."""
        arrivals = np.unique(np.concatenate([np.zeros(0, np.int64), *live]))
        alive = set(arrivals.tolist())
        self.events = {a: e for a, e in self.events.items() if a in alive}
        kept = []
        for batch in self.batches:
            inside = arrivals[
                np.searchsorted(arrivals, batch.first) : np.searchsorted(arrivals, batch.first + len(batch))
            ]
            if 8 * len(inside) >= len(batch):
                kept.append(batch)
            else:
                for a in inside.tolist():
                    self.events.setdefault(a, batch.event(a - batch.first))
        self.batches = kept
        self.next_collection = 2 * len(arrivals) + 4096 + 64 * states


class CompiledConjunctionState:
    """One conjunction under one option combination, matched by a compiled kernel."""

    def __init__(
        self,
        conjunction: Conjunction,
        matching: Matching,
        disposal: Disposal,
        kernel: CompiledKernel,
        constants: tuple[Const, ...],
        context: EventContext,
        types: dict[str, EventType],
        bounds: Bounds = UNBOUNDED,
        owner: tuple[str, int] = ("", 0),
    ):
        self.conjunction = conjunction
        self.kernel = kernel
        self.context = context
        self.bounds = bounds
        self.owner = owner
        self.deliveries = 0
        self.last_arrivals: tuple[int, ...] = ()
        source = kernel.source  # of this shape: may be another conjunction's, over other types
        self.types = conjunction.types
        self.m, self.n = len(self.types), len(conjunction.signature)
        self.local = {t: i for i, t in enumerate(self.types)}
        self.codecs = [context.codec(types[t]) for t in self.types]
        self.queues_rows = [np.empty((INITIAL_CAPACITY, VALUES + w), dtype=np.int64) for w in source.widths]
        self.meta = np.zeros(meta_size(self.m), dtype=np.int64)
        self.memo = self._new_memo()
        meta, m = self.meta, self.m
        meta[field(m, "matching")] = MATCHING_CODES[matching]
        meta[field(m, "disposal")] = DISPOSAL_CODES[disposal]
        meta[field(m, "max_queue")] = bounds.max_queue or 0
        meta[field(m, "max_age")] = bounds.max_age or 0
        meta[field(m, "policy")] = 1 if bounds.overflow == "error" else 0
        # This conjunction's constants: the kernel may be shared with conjunctions of the same shape.
        self.sc = constant_array(constants, context.strings.code)
        # Per-event calls reuse these arrays: one event of local type t, read from its type's
        # row buffer; the other types' input tables are empty.
        empty = [np.zeros((0, w), dtype=np.int64) for w in source.widths]
        self._single_types = [np.array([t], dtype=np.int64) for t in range(m)]
        self._single_row = np.zeros(1, dtype=np.int64)
        self._single_inputs = [tuple(self.codecs[t].row if u == t else empty[u] for u in range(m)) for t in range(m)]
        self._single_out = np.zeros((1, 1 + self.n), dtype=np.int64)
        self._single_arrival = np.zeros(1, dtype=np.int64)
        self._single_tick = np.zeros(1, dtype=np.int64)
        self._args: list[tuple[Any, ...]] | None = None
        # The per-event path reads and writes single numbers of these arrays: through
        # memoryviews of the same memory, each access costs a fraction of numpy's.
        self._meta_view = _int64_view(self.meta)
        self._arrival_view = _int64_view(self._single_arrival)
        self._tick_view = _int64_view(self._single_tick)
        self._out_view = _int64_view(self._single_out)
        self._out_at = field(m, "out")
        self._status_at = field(m, "status")
        self._clock_at = field(m, "clock")

    # --- running the kernel ------------------------------------------------------------------

    def _run(
        self,
        ev_type: np.ndarray,
        ev_row: np.ndarray,
        ev_arrival: np.ndarray,
        ev_tick: np.ndarray,
        inputs: Sequence[np.ndarray],
        out: np.ndarray,
        event_id: Callable[[int], str],
    ) -> tuple[int, OverflowAt | None]:
        """Run the kernel over the events ``b`` of ``ev_type`` (the engine's arrival
        ``ev_arrival[b]``, the conjunction's clock ``ev_tick[b]`` with it counted), growing queues
        as needed. Returns how many relations it wrote to ``out``, and the overflow that stopped
        it, if one did (``overflow = "error"``)."""
        meta = self.meta
        meta[self._out_at] = 0
        b = 0
        run = self.kernel.run
        while True:
            b = run(meta, self.sc, *self.queues_rows, ev_type, ev_row, ev_arrival, ev_tick, b, *inputs, out, self.memo)
            status = meta[self._status_at]
            if status == STATUS_DONE:
                return int(meta[self._out_at]), None
            t = int(meta[field(self.m, "grow")])
            if status == STATUS_GROW:
                self._grow(t)
                continue
            error = QueueOverflowError(*self.owner, self.types[t], int(self.bounds.max_queue or 0), event_id(b))
            return int(meta[self._out_at]), OverflowAt(b, error)

    def _new_memo(self) -> np.ndarray:
        """The search's failure memo: one stamp per slot and queue row (see kernel_source)."""
        if not self.kernel.source.memo:
            return np.zeros((0, 0), dtype=np.int64)
        return np.zeros((self.n, max(q.shape[0] for q in self.queues_rows)), dtype=np.int64)

    def _grow(self, t: int) -> None:
        old = self.queues_rows[t]
        s, e = int(self.meta[2 * t]), int(self.meta[2 * t + 1])
        new = np.empty((2 * old.shape[0], old.shape[1]), dtype=np.int64)
        new[: e - s] = old[s:e]
        self.queues_rows[t] = new
        self.meta[2 * t], self.meta[2 * t + 1] = 0, e - s
        self.memo = self._new_memo()
        self._args = None

    def _single_args(self) -> list[tuple[Any, ...]]:
        """Per local type, the kernel's arguments for one arriving event of that type. Rebuilt
        when the queues or the memo are replaced (growth, restore)."""
        return [
            (
                self.meta,
                self.sc,
                *self.queues_rows,
                self._single_types[t],
                self._single_row,
                self._single_arrival,
                self._single_tick,
                0,
                *self._single_inputs[t],
                self._single_out,
                self.memo,
            )
            for t in range(self.m)
        ]

    def offer(self, event: Event, arrival: int, clock: int | None = None) -> tuple[Event, ...] | None:
        t = self.local.get(event.event_type.name)
        if t is None:
            return None
        meta = self._meta_view
        self._arrival_view[0] = arrival
        self._tick_view[0] = clock if clock is not None else meta[self._clock_at] + 1
        self.context.encode(event, arrival)
        meta[self._out_at] = 0
        args = self._args
        if args is None:
            args = self._args = self._single_args()
        # The kernel's own entry point: the arguments are the arrays made for it, so the
        # dispatcher's type checks (a microsecond per call) would find nothing.
        self.kernel.entry(*args[t])
        if meta[self._status_at] != STATUS_DONE:
            _, overflow = self._run(
                self._single_types[t],
                self._single_row,
                self._single_arrival,
                self._single_tick,
                self._single_inputs[t],
                self._single_out,
                lambda b: event.id,
            )
            # A queue had to grow (or a bounded one overflowed): the general path handles it.
            self._args = None
            if overflow is not None:
                raise overflow.error
        if not meta[self._out_at]:
            return None
        self.deliveries += 1
        self.last_arrivals = arrivals = tuple(self._out_view[1:].tolist())
        lookup = self.context.event
        return tuple([lookup(a) for a in arrivals])

    def run_batch(
        self,
        ev_type: np.ndarray,
        ev_row: np.ndarray,
        ev_arrival: np.ndarray,
        ev_tick: np.ndarray,
        tables: Sequence[np.ndarray],
        event_id: Callable[[int], str],
    ) -> tuple[np.ndarray, OverflowAt | None]:
        """Process a batch of events ``b``: ``ev_type`` holds the local type of each (-1: none of
        this conjunction's), ``ev_row`` its row in that type's table, ``ev_arrival`` its arrival
        number in the engine and ``ev_tick`` the conjunction's clock with it counted. Returns the
        relations as rows ``[b, arrival of each slot...]``, and the overflow that stopped the
        batch early, if any (``event_id(b)`` names the event in its message)."""
        out = np.empty((int(np.count_nonzero(ev_type >= 0)), 1 + self.n), dtype=np.int64)
        count, overflow = self._run(ev_type, ev_row, ev_arrival, ev_tick, tables, out, event_id)
        self.deliveries += count
        return out[:count], overflow

    # --- state -------------------------------------------------------------------------------

    @property
    def drops(self) -> int:
        return int(self.meta[field(self.m, "drops")])

    def live_arrivals(self, t: int) -> np.ndarray:
        return self.queues_rows[t][self.meta[2 * t] : self.meta[2 * t + 1], 0]

    def _live_rows(self, t: int) -> np.ndarray:
        return self.queues_rows[t][self.meta[2 * t] : self.meta[2 * t + 1]]

    @property
    def queues(self) -> Queues:
        lookup = self.context.event
        return {name: [lookup(a) for a in self.live_arrivals(t).tolist()] for t, name in enumerate(self.types)}

    def queue_lengths(self) -> dict[str, int]:
        return {name: int(self.meta[2 * t + 1] - self.meta[2 * t]) for t, name in enumerate(self.types)}

    def state_json(self) -> dict[str, Any]:
        return {t: [e.id for e in q] for t, q in self.queues.items()}

    def check(self) -> None:
        """Check the invariants: live rows within bounds, arrivals increasing, every queued event
        known, of its queue's type, and stored with exactly its values; ticks increasing on the
        conjunction's clock; no queue longer than its bound. Raises :class:`EngineStateError`."""
        for t, name in enumerate(self.types):
            s, e = int(self.meta[2 * t]), int(self.meta[2 * t + 1])
            if not 0 <= s <= e <= self.queues_rows[t].shape[0]:
                raise EngineStateError(f"queue {name}: live rows {s}..{e} of {self.queues_rows[t].shape[0]}")
            arrivals = self.live_arrivals(t)
            if not (np.diff(arrivals) > 0).all():
                raise EngineStateError(f"queue {name}: arrivals {arrivals.tolist()} not increasing")
            for row in self._live_rows(t):
                event = self.context.event(int(row[0]))
                if event.type != name:
                    raise EngineStateError(f"queue {name} holds event {event.id!r} of type {event.type}")
                if self.codecs[t].decode(row[VALUES:]) != event.values:
                    raise EngineStateError(f"queue {name}: event {event.id!r} stored with other values")
            ticks = self._live_rows(t)[:, TICK]
            if not ((np.diff(ticks) > 0).all() and (ticks > 0).all() and (ticks <= self.clock).all()):
                raise EngineStateError(
                    f"queue {name}: ticks {ticks.tolist()} (expected increasing, in 1..{self.clock})"
                )
            if self.bounds.max_queue is not None and e - s > self.bounds.max_queue:
                raise EngineStateError(f"queue {name}: {e - s} events, over its bound of {self.bounds.max_queue}")

    def snapshot(self) -> dict[str, Any]:
        out: dict[str, Any] = {t: [e.to_json() for e in q] for t, q in self.queues.items()}
        out[ARRIVALS] = {name: self.live_arrivals(t).tolist() for t, name in enumerate(self.types)}
        out[TICKS] = {name: self._live_rows(t)[:, TICK].tolist() for t, name in enumerate(self.types)}
        out[CLOCK] = self.clock
        return out

    @property
    def clock(self) -> int:
        return int(self.meta[self._clock_at])

    def set_clock(self, clock: int) -> None:
        """Catch the clock up with arrivals the engine did not offer (see ``ConjunctionState.offer``)."""
        self.meta[self._clock_at] = clock

    def restore(self, saved: Any, validate: Validate, published: int) -> None:
        self._load(*read_queues(saved, self.types, validate, published))

    def take(self, other: ConjunctionState) -> None:
        """Continue from the reference matcher's state of the same conjunction (which ran it
        while this kernel was compiled): its queues, clock and counters, exactly."""
        self._load(other.queues, other.arrivals, other.ticks, other.clock)
        self.deliveries = other.deliveries
        self.meta[field(self.m, "drops")] = other.drops
        self.last_arrivals = other.last_arrivals

    def _load(self, queues: Queues, arrivals: dict[str, list[int]], ticks: dict[str, list[int]], clock: int) -> None:
        self.meta[field(self.m, "clock")] = clock
        context = self.context
        for t, name in enumerate(self.types):
            rows = np.empty((max(INITIAL_CAPACITY, 2 * len(queues[name])), self.queues_rows[t].shape[1]), np.int64)
            for k, (event, arrival, tick) in enumerate(zip(queues[name], arrivals[name], ticks[name])):
                known = context.known(arrival)
                if known is None:
                    context.events[arrival] = known = event
                if known != event:
                    raise SnapshotError(f"arrival {arrival} names two different events ({known.id!r}, {event.id!r})")
                rows[k, ARRIVAL], rows[k, TICK] = arrival, tick
                rows[k, VALUES:] = self.codecs[t].encode_event(event.values)[0]
            # That used the type's shared row buffer, which may hold the arriving event already
            # encoded (this state can take over in the middle of an arrival): encode it again.
            context.forget_encoded()
            self.queues_rows[t] = rows
            self.meta[2 * t], self.meta[2 * t + 1] = 0, len(queues[name])
        self.memo = self._new_memo()
        self._args = None
        # A snapshot taken right after a match may hold another one: search fully next time.
        self.meta[field(self.m, "dirty")] = 1


def _int64_view(array: np.ndarray) -> memoryview:
    """A flat int64 memoryview of a C-contiguous int64 array (the same memory)."""
    return array.data.cast("B").cast("q")
