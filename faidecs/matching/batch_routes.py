"""Which events of a batch each conjunction must see, and its clock at each of them.

The batch counterpart of the filter index (:mod:`faidecs.matching.filter_index`): a conjunction
found by equality on an attribute is handed only the batch's events whose value of that
attribute is one of its constants, found by sorting the attribute's encoded column once per
batch; every other conjunction is handed every event of its types. A conjunction's clock counts
every arrival of its types, handed or not, so each handed event comes with its tick: the clock
before the batch plus the batch's events of the conjunction's types up to and including it.

Cost per batch: one stable sort per indexed attribute; per conjunction, a bisection per constant
and work in the number of events it is handed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from faidecs.grammar.model import EventType, Kind
from faidecs.matching.columns import StringTable
from faidecs.matching.filter_index import Bounded, Equal, Route


class BatchRoutes:
    """The batch's events by type and by indexed attribute value, computed on first use."""

    def __init__(
        self,
        names: Sequence[str],
        types: Sequence[EventType],
        codes: np.ndarray,
        positions: Sequence[np.ndarray],
        encoded: Sequence[np.ndarray],
        strings: StringTable,
    ):
        self.table = {name: i for i, name in enumerate(names)}
        self.types = types
        self.codes = codes
        self.encoded = encoded
        self.strings = strings
        self._positions = positions  # per table: the batch positions of its events
        self._sorted: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._counts: dict[int, np.ndarray] = {}  # table -> events of its type up to each position

    def _code(self, kind: Kind, key: Any) -> int | None:
        """The encoded value equal to ``key``, None if no event of the batch can hold it (or
        the key's Python type does not match the column's kind: then nothing is narrowed)."""
        if kind is Kind.STR and type(key) is str:
            return self.strings.codes.get(key, -1)
        if kind is Kind.INT and type(key) is int:
            return key
        if kind is Kind.BOOL and type(key) is bool:
            return int(key)
        return None

    def _rows_equal(self, table: int, access: Equal) -> np.ndarray | None:
        kind = self.types[table].attributes[access.position].kind
        found = [self._code(kind, key) for key in access.keys]
        codes = [c for c in found if c is not None]
        if len(codes) < len(found):
            return None
        sort = self._sorted.get((table, access.position))
        if sort is None:
            column = self.encoded[table][:, access.position]
            order = np.argsort(column, kind="stable")
            sort = self._sorted[(table, access.position)] = (order, column[order])
        order, values = sort
        parts = [order[np.searchsorted(values, c, "left") : np.searchsorted(values, c, "right")] for c in codes]
        rows: np.ndarray = np.sort(np.concatenate(parts)) if len(parts) != 1 else parts[0]
        return rows

    def _rows_bounded(self, table: int, access: Bounded) -> np.ndarray | None:
        """The rows whose attribute passes one of the range tests, compared exactly as Python
        compares the values (None: a test this cannot decide exactly, so nothing is narrowed)."""
        kind = self.types[table].attributes[access.position].kind
        column = self.encoded[table][:, access.position]
        mask = np.zeros(len(column), dtype=bool)
        for op, constant in access.tests:
            passed = _compare(column, kind, op, constant)
            if passed is None:
                return None
            mask |= passed
        return np.flatnonzero(mask)

    def positions(self, route: Route) -> np.ndarray:
        """The batch positions of the events ``route`` must be offered, in batch order."""
        parts = []
        for type_name in route.types:
            table = self.table.get(type_name)
            if table is None:
                continue
            how = route.access.get(type_name)
            rows = None
            if isinstance(how, Equal):
                rows = self._rows_equal(table, how)
            elif isinstance(how, Bounded):
                rows = self._rows_bounded(table, how)
            everything = self._positions[table]
            parts.append(everything if rows is None else everything[rows])
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts))

    def ticks(self, route: Route, positions: np.ndarray, clock: int) -> np.ndarray:
        """The conjunction's clock at each of ``positions``, counting that event; ``clock`` is
        its clock before the batch."""
        ticks = np.full(len(positions), clock, dtype=np.int64)
        for type_name in route.types:
            table = self.table.get(type_name)
            if table is None:
                continue
            counts = self._counts.get(table)
            if counts is None:
                counts = self._counts[table] = np.cumsum(self.codes == table, dtype=np.int64)
            ticks += counts[positions]
        return ticks


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NUMPY_OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}


def _compare(column: np.ndarray, kind: Kind, op: str, constant: Any) -> np.ndarray | None:
    """``column op constant`` for an encoded column of ``kind``, exactly; None if that cannot be
    done in numpy without rounding."""
    compare = _NUMPY_OPS[op]
    if kind is Kind.FLOAT:
        value = float(constant)
        if type(constant) is int and int(value) != constant:
            return None  # numpy would compare against the rounded constant
        return np.asarray(compare(column.view(np.float64), value))
    if kind is not Kind.INT:
        return None
    if type(constant) is float:
        # For an integer x: x > c iff x > floor(c), x >= c iff x >= ceil(c), and so on.
        constant = math.floor(constant) if op in (">", "<=") else math.ceil(constant)
    if type(constant) is not int:
        return None
    if constant > _INT64_MAX or constant < _INT64_MIN:
        # Every int64 lies on one side of it.
        below = constant > _INT64_MAX
        holds = below if op in ("<", "<=") else not below
        return np.full(len(column), holds, dtype=bool)
    return np.asarray(compare(column, np.int64(constant)))
