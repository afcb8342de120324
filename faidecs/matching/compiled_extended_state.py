"""An extended conjunction whose MATCH runs as a compiled kernel.

It is the extended reference state (:class:`~faidecs.matching.extended_state.ExtendedConjunctionState`)
with one step replaced: the search. Everything else (ENQUEUE and the negations' logs, the
watermark and late events, purging, bounds, disposal, the delivered shape, snapshots) is the
reference state's own code on the same Python queues, so relations, their order, queues and
snapshots are the reference's by construction, and a snapshot of either restores into the other.
The kernel (:mod:`faidecs.matching.extended_kernel_source`) reads the queues and logs as encoded
rows, mirrored incrementally before each search (appended events are encoded once; removed ones
are dropped from the mirror).

Until its kernel is loaded (background compilation) the state searches with the reference
matcher; it switches at the next search after the kernel arrives. Being one object throughout,
the switch carries the whole state over: queues, logs, watermark, counters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from faidecs.grammar.model import Conjunction, Disposal, EventType, Matching, NegationKind, Window
from faidecs.matching.bounds import UNBOUNDED, Bounds
from faidecs.matching.columns import StringTable, TypeCodec
from faidecs.matching.conjunction_state import Validate
from faidecs.matching.events import Event
from faidecs.matching.extended_kernel_source import (
    ALL,
    BEFORE,
    CODES,
    DURATION,
    FIXED,
    FRESH,
    MATCHING,
    META_SIZE,
    MF_SIZE,
    NEW,
    SPAN,
    UNDECIDED,
    WATERMARK,
    SpanMode,
)
from faidecs.matching.extended_matcher import Choice
from faidecs.matching.extended_state import ExtendedConjunctionState
from faidecs.matching.found import Found, Matches
from faidecs.matching.kernel_broker import KernelHandle
from faidecs.matching.kernel_cache import CompiledKernel
from faidecs.matching.kernel_layout import ARRIVAL, VALUES
from faidecs.matching.kernel_source import KernelSource, constant_array


class _Mirror:
    """The encoded rows of one Python queue (or log): ``[arrival, 0, values...]`` per event."""

    __slots__ = ("arrivals", "codec", "rows")

    def __init__(self, codec: TypeCodec):
        self.codec = codec
        self.rows = np.zeros((16, VALUES + codec.width), dtype=np.int64)
        self.arrivals: list[int] = []

    def sync(self, arrivals: list[int], events: Sequence[Event]) -> np.ndarray:
        """The rows of ``events`` (arrival numbers ``arrivals``). Since the last sync, the queue
        can only have lost events and gained newer ones at its end."""
        old = self.arrivals
        if arrivals != old:
            last = old[-1] if old else -1
            kept = len(arrivals)
            while kept and arrivals[kept - 1] > last:
                kept -= 1
            if arrivals[:kept] != old:
                where = np.searchsorted(np.asarray(old, dtype=np.int64), np.asarray(arrivals[:kept], dtype=np.int64))
                self.rows[:kept] = self.rows[where]
            if len(arrivals) > self.rows.shape[0]:
                grown = np.zeros((2 * len(arrivals), self.rows.shape[1]), dtype=np.int64)
                grown[:kept] = self.rows[:kept]
                self.rows = grown
            encode = self.codec.encode_event
            for j in range(kept, len(arrivals)):
                self.rows[j, ARRIVAL] = arrivals[j]
                self.rows[j, VALUES:] = encode(events[j].values)[0]
            self.arrivals = list(arrivals)
        return self.rows[: len(arrivals)]


class CompiledExtendedState(ExtendedConjunctionState):
    """An extended conjunction searched by its kernel once ``kernel`` is set (see the module)."""

    def __init__(
        self,
        conjunction: Conjunction,
        matching: Matching,
        disposal: Disposal,
        window: Window | None,
        source: KernelSource,
        span: SpanMode,
        strings: StringTable,
        types: dict[str, EventType],
        bounds: Bounds = UNBOUNDED,
        owner: tuple[str, int] = ("", 0),
    ):
        super().__init__(conjunction, matching, disposal, window, bounds, owner)
        self.kernel: CompiledKernel | None = None
        self.handle: KernelHandle | None = None
        self.sc = constant_array(source.constants, strings.code)
        self._queue_mirrors = [_Mirror(TypeCodec(types[t], strings)) for t in conjunction.types]
        self._log_mirrors = [_Mirror(TypeCodec(types[n.type_name], strings)) for n in conjunction.negations]
        self.meta = np.zeros(META_SIZE, dtype=np.int64)
        self.mf = np.zeros(MF_SIZE, dtype=np.float64)
        self.meta[MATCHING] = CODES[matching.value]
        # As the reference's _match: ALL, and NONE with absences, take every new relation; an
        # absence under another disposal repeats MATCH after each DEQUEUE.
        absences = any(n.kind is NegationKind.AFTER for n in conjunction.negations)
        every = matching is Matching.ALL or (disposal is Disposal.NONE and absences)
        self._repeat = absences and not every
        self.meta[ALL] = 1 if every else 0
        self.meta[FRESH] = 1 if disposal is Disposal.NONE else 0
        self.meta[SPAN], self.mf[DURATION] = span.duration(window)
        self.out = np.zeros((16, 2 * len(conjunction.signature)), dtype=np.int64)  # (start, end) per slot
        self._groups = [slot.type_name in conjunction.groups for slot in conjunction.signature]
        signature = conjunction.signature
        # The slot the arriving event of each type takes when only relations with it can match:
        # the last of its type under FR, FRC and ALL, the first under MR and MRC.
        newest: dict[str, int] = {}
        for k, slot in enumerate(signature):
            if matching.most_recent:
                newest.setdefault(slot.type_name, k)
            else:
                newest[slot.type_name] = k
        self._newest = newest
        self._arriving = ""
        # True when the queues may hold a match without the arriving event: after a match was
        # disposed of, after purging, at the start, after a restore and when the kernel takes over.
        self.dirty = True

    # --- the kernel --------------------------------------------------------------------------

    def poll(self) -> bool:
        """Take the kernel if its handle holds it; True once the kernel runs (or never will)."""
        handle = self.handle
        if handle is not None and handle.done.is_set():
            self.kernel, self.handle = handle.kernel, None
            self.dirty = True
        return self.handle is None

    @property
    def compiled(self) -> bool:
        return self.kernel is not None

    def offer(self, event: Event, arrival: int, clock: int | None = None) -> Matches | None:
        self._arriving = event.type
        return super().offer(event, arrival, clock)

    def _match(self, new: int | None, before: float) -> list[Found]:
        if self.handle is not None:
            self.poll()
        kernel = self.kernel
        if kernel is None:
            return super()._match(new, before)
        meta = self.meta
        meta[NEW] = -1 if new is None else new
        self.mf[WATERMARK], self.mf[BEFORE] = self.watermark, before
        if self.matcher.absences:
            # Absences become valid as time passes, without an arrival: search everything.
            meta[FIXED] = -1
        elif self.disposal is Disposal.NONE or not self.dirty:
            # Only relations with the arriving event can be new (NONE) or valid (no match before).
            if new is None:
                return []
            self.meta[FIXED] = self._newest[self._arriving]
        else:
            self.meta[FIXED] = -1
        out: list[Found] = []
        while True:
            chosen = self._search(kernel)
            if chosen is None:  # undecided: the reference matcher goes on from here
                self.deliveries += len(out)
                return out + super()._match(new, before)
            out += [self._found(c) for c in chosen]
            if chosen and self.disposal is not Disposal.NONE:
                self._dispose(chosen[0])
            # An absence repeats MATCH after each DEQUEUE (the reference's _match), so that an
            # arrival passing several deadlines reports each before the window purges them.
            if not (self._repeat and chosen):
                break
        self.dirty = bool(out)
        self.deliveries += len(out)
        return out

    def _search(self, kernel: CompiledKernel) -> list[list[Choice]] | None:
        """The kernel's relations on the queues and logs as they are now (one, or every one
        under ALL and under NONE with absences); None when only the reference can decide."""
        queues = [
            mirror.sync(self.arrivals[t], self.queues[t])
            for mirror, t in zip(self._queue_mirrors, self.conjunction.types)
        ]
        logs = [
            mirror.sync([x.arrival for x in log], [x.event for x in log])
            for mirror, log in zip(self._log_mirrors, self.logs)
        ]
        while True:
            count = kernel.run(self.meta, self.sc, self.mf, *queues, *logs, self.out)
            if count >= 0:
                return [self._choices(row) for row in self.out[:count].tolist()]
            if count == UNDECIDED:
                return None
            self.out = np.zeros((2 * self.out.shape[0], self.out.shape[1]), dtype=np.int64)

    def _purge(self) -> None:
        purged = self.purged
        super()._purge()
        if self.purged != purged:
            # Purging may take an event from between two others, which then are neighbours: a
            # group's run, or instances under FRC / MRC, that may be valid without any arrival.
            self.dirty = True

    def _choices(self, row: list[int]) -> list[Choice]:
        """The kernel's (start, end) per slot as the reference's choices: a position, or a run."""
        return [(row[2 * k], row[2 * k + 1]) if g else row[2 * k] for k, g in enumerate(self._groups)]

    # --- state -------------------------------------------------------------------------------

    def restore(self, saved: Any, validate: Validate, published: int) -> None:
        super().restore(saved, validate, published)
        for mirror in (*self._queue_mirrors, *self._log_mirrors):
            mirror.arrivals = []  # the restored queues are other events: encode them afresh
        self.dirty = True
