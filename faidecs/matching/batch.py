"""The columnar batch path: a whole batch of events, given as columns, matched inside compiled
code, with the relations returned as arrays.

A batch is one table per event type plus the global order. Every compiled conjunction runs its
kernel once over the whole batch (conjunctions own their state, so they never wait for each
other); the relations are then put in delivery order: by the arrival that completed them, then
subscription, then conjunction in canonical order, exactly as :meth:`Engine.publish` would have
delivered them one event at a time. Conjunctions the kernels cannot run are fed the batch's
events one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt

from faidecs.errors import EventError, FaidecsError, QueueOverflowError
from faidecs.grammar.model import EventType, Slot, Subscription
from faidecs.matching.batch_routes import BatchRoutes
from faidecs.matching.columns import TypeCodec
from faidecs.matching.compiled_state import BatchRows, CompiledConjunctionState, EventContext
from faidecs.matching.events import Event
from faidecs.matching.filter_index import Route
from faidecs.matching.found import Found
from faidecs.matching.tiered_state import TieredState


@runtime_checkable
class ArrowTable(Protocol):
    """What the batch reads of a ``pyarrow.Table``."""

    @property
    def column_names(self) -> list[str]: ...

    @property
    def num_rows(self) -> int: ...

    def column(self, name: str, /) -> Any: ...  # a pyarrow.ChunkedArray (pyarrow ships no types)


@runtime_checkable
class DataFrame(Protocol):
    """What the batch reads of a ``pandas.DataFrame``."""

    @property
    def columns(self) -> Iterable[Any]: ...

    def __getitem__(self, name: Any, /) -> Any: ...  # a pandas.Series (pandas ships no types)

    def __len__(self) -> int: ...

    def to_numpy(self, *args: Any, **kwargs: Any) -> np.ndarray: ...


ColumnTable: TypeAlias = Mapping[str, npt.ArrayLike] | DataFrame | ArrowTable
"""One event type's events as columns: a mapping of attribute name (and optionally ``id``) to an
array-like of one value per event, a pandas DataFrame or a pyarrow Table."""

Order: TypeAlias = Sequence[str] | Sequence[int] | np.ndarray
"""The batch's global arrival order: one type name, or index into the batch's tables (in their
mapping's order), per event."""


@dataclass(frozen=True)
class BatchGroup:
    """The relations one conjunction delivered during the batch, oldest first."""

    subscription: str
    conjunction: int  # as written
    signature: tuple[Slot, ...]
    positions: np.ndarray  # (k,): batch position of the arrival that completed each relation
    arrivals: np.ndarray  # (k, len(signature)): arrival numbers of the relation's events
    #: For the extended language (one group per conjunction and relation length, as a group's
    #: relations vary in length): per row, whether it is an absence's timeout, and the aggregates.
    timeouts: np.ndarray | None = None
    aggregates: list[Mapping[str, Any]] | None = None
    #: Per row, its place among the conjunction's relations at that arrival (ALL delivers several).
    within: np.ndarray | None = None
    route: int = -1  # the route's place in delivery order; -1: the group's own index


@dataclass
class BatchResult:
    """Deliveries of a batch as arrays. ``first_arrival`` is the engine's arrival number of the
    batch's first event: an arrival ``a`` in the batch is batch position ``a - first_arrival``.
    ``order`` lists ``(group, row)`` in delivery order."""

    first_arrival: int
    size: int
    groups: list[BatchGroup]
    order: np.ndarray
    _batch_ids: Any = field(repr=False)  # callable: batch positions -> ids
    _older: dict[int, Event] = field(repr=False)  # events published before the batch, in its relations

    def __len__(self) -> int:
        return len(self.order)

    def ids(self, arrivals: np.ndarray) -> np.ndarray:
        """The event ids of an array of arrival numbers (an object array of the same shape)."""
        flat = np.asarray(arrivals, dtype=np.int64).reshape(-1)
        out = np.empty(len(flat), dtype=object)
        inside = flat >= self.first_arrival
        if inside.any():
            out[inside] = self._batch_ids(flat[inside] - self.first_arrival)
        for k in np.flatnonzero(~inside):
            out[k] = self._older[int(flat[k])].id
        return out.reshape(np.shape(arrivals))

    def older_event(self, arrival: int) -> Event:
        """An event published before the batch that is part of one of its relations (the batch's
        own events are the caller's rows: ``arrival - first_arrival``)."""
        return self._older[arrival]

    def deliveries(self) -> list[tuple[str, int, tuple[str, ...]]]:
        """``(subscription, conjunction, ids)`` in delivery order (convenient, not fast)."""
        ids = [self.ids(g.arrivals) for g in self.groups]
        return [
            (self.groups[g].subscription, self.groups[g].conjunction, tuple(ids[g][r])) for g, r in self.order.tolist()
        ]


def _columns(obj: ColumnTable, type_name: str) -> tuple[Mapping[str, Any], int | None]:
    """Columns by name from a mapping, a pandas DataFrame or a pyarrow Table, and the number of
    rows when the table itself knows it (a mapping only knows its columns' lengths)."""
    if isinstance(obj, ArrowTable):
        columns = {name: obj.column(name).to_numpy(zero_copy_only=False) for name in obj.column_names}
        return columns, int(obj.num_rows)
    if isinstance(obj, DataFrame):
        return {str(name): obj[name].to_numpy() for name in obj.columns}, len(obj)
    if isinstance(obj, Mapping):
        return obj, None
    raise EventError(
        f"expected a mapping of columns, a DataFrame or an Arrow table, not {type(obj).__name__}", type_name=type_name
    )


def _order_codes(order: Order, names: list[str]) -> np.ndarray:
    codes = np.asarray(order)
    if codes.ndim != 1:
        raise EventError(f"order must be one-dimensional, not of shape {codes.shape}")
    if codes.size == 0:
        return np.zeros(0, dtype=np.int64)
    if codes.dtype.kind in "UO":
        index = {name: i for i, name in enumerate(names)}
        values = codes.tolist()
        try:
            unknown = set(values) - index.keys()
        except TypeError:
            unknown = {next(repr(v) for v in values if v.__hash__ is None)}
        if unknown:
            raise EventError(
                f"order names {sorted(map(str, unknown))[0]!r}, which has no table in the batch "
                f"(tables: {', '.join(names) or 'none'})"
            )
        return np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))
    if codes.dtype.kind not in "iu":
        raise EventError(f"order must hold type names or table indices, not {codes.dtype}")
    codes = codes.astype(np.int64)
    if len(codes) and (codes.min() < 0 or codes.max() >= len(names)):
        bad = int(np.argmax((codes < 0) | (codes >= len(names))))
        raise EventError(f"order position {bad}: table index {codes[bad]} out of range 0..{len(names) - 1}")
    return codes


def _ids(columns: Mapping[str, Any], type_name: str, rows: int) -> np.ndarray | None:
    if "id" not in columns:
        return None
    ids = np.asarray(columns["id"], dtype=object)
    if ids.shape != (rows,):
        raise EventError(f"id column has shape {ids.shape}, expected ({rows},)", type_name=type_name)
    for i, v in enumerate(ids.tolist()):
        if type(v) is not str or not v:
            raise EventError(f"row {i}: an id must be a non-empty string, got {v!r}", type_name=type_name)
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise EventError(f"row {i}: id contains a lone surrogate escape", type_name=type_name) from None
    return ids


@dataclass(slots=True)
class BatchScope:
    """What a batch reads and advances of the engine it runs in (:meth:`Engine.publish_batch`)."""

    types: Mapping[str, EventType]
    context: EventContext | None  # None: the engine keeps no events (reference matchers only)
    published: int  # events published before the batch; advanced by the batch's size
    seen: MutableMapping[str, int]  # arrivals per type, the routes' clocks; advanced by the batch
    routes: Iterable[tuple[Subscription, Iterable[Route]]]  # per subscription, its conjunctions' routes


def publish_batch(scope: BatchScope, tables: Mapping[str, ColumnTable], order: Order) -> BatchResult:
    declared = scope.types
    names = list(tables)
    for name in names:
        if name not in declared:
            raise EventError(f"unknown event type {name!r} (declared types: {', '.join(sorted(declared)) or 'none'})")
    codes = _order_codes(order, names)
    size = len(codes)
    counts = np.bincount(codes, minlength=len(names)) if size else np.zeros(len(names), np.int64)
    ev_row = np.empty(size, dtype=np.int64)
    positions_of = [np.flatnonzero(codes == i) for i in range(len(names))]  # batch positions per table
    for where in positions_of:
        ev_row[where] = np.arange(len(where))
    context = scope.context or EventContext()
    codecs: list[TypeCodec] = []
    encoded: list[np.ndarray] = []
    ids: list[np.ndarray | None] = []
    for i, name in enumerate(names):
        columns, rows = _columns(tables[name], name)
        if rows is not None and rows != counts[i]:
            raise EventError(f"the table has {rows} rows but order names the type {counts[i]} times", type_name=name)
        extra = sorted(set(columns) - {a.name for a in declared[name].attributes} - {"id"})
        if extra:
            raise EventError(f"unknown column {extra[0]!r}", type_name=name)
        codec = context.codec(declared[name])
        codecs.append(codec)
        encoded.append(codec.encode_columns(columns, int(counts[i])))
        ids.append(_ids(columns, name, int(counts[i])))
    first = scope.published

    rows_of_batch = BatchRows(first, codes, ev_row, codecs, encoded, ids)

    every_id: list[np.ndarray] = []  # the batch's ids by position, made on first use

    def batch_ids(positions: np.ndarray) -> np.ndarray:
        if not every_id:
            # One gather per table rather than a lookup per relation event.
            out = np.empty(size, dtype=object)
            for column, where in zip(ids, positions_of):
                if column is not None:
                    out[where] = column[ev_row[where]]
                else:
                    out[where] = [str(first + b + 1) for b in where.tolist()]
            every_id.append(out)
        found: np.ndarray = every_id[0][positions]
        return found

    events: dict[int, Event] = {}

    def event_at(b: int) -> Event:
        event = events.get(b)
        if event is None:
            event = events[b] = rows_of_batch.event(b)
        return event

    groups: list[BatchGroup] = []
    older: dict[int, Event] = {}  # events published before the batch, in its relations
    # Conjunctions run one after another over the whole batch, so the overflow to report is the
    # one the earliest event caused (then the first in delivery order), as publishing event by
    # event would have reported it.
    overflows: list[tuple[int, int, QueueOverflowError]] = []
    routes = BatchRoutes(names, [declared[n] for n in names], codes, positions_of, encoded, context.strings)
    seen = scope.seen
    for sub, sub_routes in scope.routes:
        for route in sub_routes:
            index, conj = route.index, route.state
            if isinstance(conj, TieredState) and conj.compiled:
                conj = conj.impl  # swapped in: the kernel runs the batch
            signature = sub.conjunctions[index].signature
            at = routes.positions(route)
            ticks = routes.ticks(route, at, route.clock(seen)) if route.clocked else None
            if isinstance(conj, CompiledConjunctionState):
                assert ticks is not None
                lookup = np.array([conj.local.get(n, -1) for n in names] + [-1], dtype=np.int64)
                local_tables = [
                    np.ascontiguousarray(encoded[names.index(t)]) if t in names else np.zeros((0, w), np.int64)
                    for t, w in zip(conj.types, (c.width for c in conj.codecs))
                ]

                def event_id(b: int, at: np.ndarray = at) -> str:
                    return rows_of_batch.event_id(int(at[b]))

                found, overflow = conj.run_batch(
                    lookup[codes[at]], ev_row[at], first + at, ticks, local_tables, event_id
                )
                if overflow is not None:
                    overflows.append((int(at[overflow.position]), len(overflows), overflow.error))
                groups.append(BatchGroup(sub.name, index, signature, at[found[:, 0]], found[:, 1:].copy()))
                continue
            if sub.extended:
                try:
                    groups += _extended_groups(sub.name, index, len(groups), conj, at, first, event_at, older)
                except _Overflow as stop:
                    overflows.append((stop.position, len(overflows), stop.error))
                continue
            positions, arrivals = [], []
            for k, b in enumerate(at.tolist()):
                try:
                    if ticks is not None:
                        relation = conj.offer(event_at(b), first + b, int(ticks[k]))
                    else:
                        relation = conj.offer(event_at(b), first + b)
                except QueueOverflowError as error:
                    overflows.append((b, len(overflows), error))
                    break
                if relation is not None:
                    positions.append(b)
                    arrivals.append(conj.last_arrivals)
                    older.update((a, e) for a, e in zip(conj.last_arrivals, relation) if a < first)
            groups.append(
                BatchGroup(
                    sub.name,
                    index,
                    signature,
                    np.asarray(positions, dtype=np.int64),
                    np.asarray(arrivals, dtype=np.int64).reshape(len(positions), len(signature)),
                )
            )
    scope.published += size
    for i, name in enumerate(names):
        seen[name] += int(counts[i])
    if overflows:
        raise min(overflows, key=lambda o: o[:2])[2]
    for g in groups:
        for a in np.unique(g.arrivals[g.arrivals < first]).tolist():
            if a not in older:
                older[a] = context.event(a)
    if scope.context is not None:
        # The batch's events stay reachable (as rows) for later relations, state and snapshots.
        context.batches.append(rows_of_batch)
        context.events.update((first + b, e) for b, e in events.items())
    keys = [(np.full(len(g.positions), k), g.positions) for k, g in enumerate(groups)]
    group_of = np.concatenate([k for k, _ in keys]) if keys else np.zeros(0, np.int64)
    route_of = (
        np.concatenate([np.full(len(g.positions), k if g.route < 0 else g.route) for k, g in enumerate(groups)])
        if groups
        else np.zeros(0, np.int64)
    )
    within = (
        np.concatenate([g.within if g.within is not None else np.zeros(len(g.positions), np.int64) for g in groups])
        if groups
        else np.zeros(0, np.int64)
    )
    position = np.concatenate([p for _, p in keys]) if keys else np.zeros(0, np.int64)
    row_of = np.concatenate([np.arange(len(g.positions)) for g in groups]) if groups else np.zeros(0, np.int64)
    ranking = np.lexsort((within, route_of, position))
    order_out = np.stack([group_of[ranking], row_of[ranking]], axis=1).astype(np.int64)
    return BatchResult(first, size, groups, order_out, batch_ids, older)


class _Overflow(FaidecsError):
    """An extended conjunction's queue overflowed at batch position ``position``."""

    def __init__(self, position: int, error: QueueOverflowError):
        self.position, self.error = position, error


def _extended_groups(
    name: str,
    index: int,
    route: int,
    conj: Any,
    at: np.ndarray,
    first: int,
    event_at: Callable[[int], Event],
    older: dict[int, Event],
) -> list[BatchGroup]:
    """An extended conjunction (plain or partitioned) over the batch, event by event: one group per relation length
    (a group's relations vary in length), each row knowing its place at its arrival."""
    rows: dict[int, list[tuple[int, int, tuple[int, ...], Found]]] = {}
    for b in at.tolist():
        try:
            found = conj.offer(event_at(b), first + b)
        except QueueOverflowError as error:
            raise _Overflow(b, error) from None
        for k, f in enumerate(found or ()):
            marks = f.arrivals
            older.update((a, e) for a, e in zip(marks, f.relation) if a < first)
            rows.setdefault(len(f.relation), []).append((b, k, marks, f))
    out = []
    for length, found_rows in sorted(rows.items()):
        out.append(
            BatchGroup(
                name,
                index,
                found_rows[0][3].signature,
                np.asarray([r[0] for r in found_rows], dtype=np.int64),
                np.asarray([r[2] for r in found_rows], dtype=np.int64).reshape(len(found_rows), length),
                np.asarray([r[3].timeout for r in found_rows], dtype=bool),
                [r[3].aggregates for r in found_rows],
                np.asarray([r[1] for r in found_rows], dtype=np.int64),
                route,
            )
        )
    return out
