"""Encoding event values as int64 columns, the one representation the compiled kernels read.

ints are stored as they are, floats by their IEEE 754 bit pattern (a kernel reads them back
through a float64 view of the same memory, so no value changes), bools as 0/1, and strings as
codes of a per-engine :class:`StringTable`: equal strings, equal codes. The kernels compare
strings only for (in)equality; ordering comparisons of strings stay with the reference matcher.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from faidecs.errors import EventError
from faidecs.grammar.model import EventType, Kind
from faidecs.matching.events import INT64_MAX, INT64_MIN, Event


class StringTable:
    """Interned strings: a code per distinct string, and the string per code."""

    __slots__ = ("codes", "strings")

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.strings: list[str] = []

    def code(self, text: str) -> int:
        code = self.codes.get(text)
        if code is None:
            code = self.codes[text] = len(self.strings)
            self.strings.append(text)
        return code

    def encode(self, column: Sequence[str]) -> np.ndarray:
        """Codes for a column of strings: new strings are interned first, then every value is one
        dict lookup (a hash lookup is far cheaper than sorting a column of Python strings)."""
        for text in set(column) - self.codes.keys():
            self.code(text)
        return np.fromiter(map(self.codes.__getitem__, column), dtype=np.int64, count=len(column))


class TypeCodec:
    """Rows of one event type: encodes single events (into a reused one-row buffer) and whole
    columns, and decodes rows back into values."""

    def __init__(self, event_type: EventType, strings: StringTable):
        self.event_type = event_type
        self.kinds = tuple(a.kind for a in event_type.attributes)
        self.width = len(self.kinds)
        self.strings = strings
        self.row = np.zeros((1, self.width), dtype=np.int64)  # the current event, as a 1-row table
        # One struct write fills the whole row: floats as their IEEE 754 bits ("d"), everything
        # else as int64 ("q"), which is the encoding above, at a fraction of a numpy assignment
        # per value.
        self._pack = struct.Struct("=" + "".join("d" if k is Kind.FLOAT else "q" for k in self.kinds)).pack_into
        self._buffer = self.row.data.cast("B") if self.width else memoryview(bytearray())  # no attributes: nothing
        self._strings_at = tuple(j for j, k in enumerate(self.kinds) if k is Kind.STR)
        self._bools_at = tuple(j for j, k in enumerate(self.kinds) if k is Kind.BOOL)

    def encode_event(self, values: Sequence[Any]) -> np.ndarray:
        if self._strings_at or self._bools_at:
            values = list(values)
            code = self.strings.code
            for j in self._strings_at:
                values[j] = code(values[j])
            for j in self._bools_at:
                values[j] = int(values[j])
        self._pack(self._buffer, 0, *values)
        return self.row

    def decode(self, row: np.ndarray) -> tuple[Any, ...]:
        """The attribute values of an encoded row (without the arrival column)."""
        floats = row.view(np.float64)
        out: list[Any] = []
        for j, kind in enumerate(self.kinds):
            if kind is Kind.FLOAT:
                out.append(float(floats[j]))
            elif kind is Kind.STR:
                out.append(self.strings.strings[int(row[j])])
            elif kind is Kind.BOOL:
                out.append(bool(row[j]))
            else:
                out.append(int(row[j]))
        return tuple(out)

    def encode_columns(self, columns: Mapping[str, Any], rows: int) -> np.ndarray:
        """A ``(rows, width)`` table from one column per attribute; raises :class:`EventError`
        naming the type, the attribute and the first bad row."""
        table = np.empty((rows, self.width), dtype=np.int64)
        floats = table.view(np.float64)
        name = self.event_type.name
        for j, attr in enumerate(self.event_type.attributes):
            if attr.name not in columns:
                raise EventError(f"missing column {attr.name!r}", type_name=name, attribute=attr.name)
            column = np.asarray(columns[attr.name])
            if column.shape != (rows,):
                raise EventError(
                    f"column has shape {column.shape}, expected ({rows},)", type_name=name, attribute=attr.name
                )
            if attr.kind is Kind.INT:
                table[:, j] = _int_column(column, name, attr.name)
            elif attr.kind is Kind.FLOAT:
                floats[:, j] = _float_column(column, name, attr.name)
            elif attr.kind is Kind.BOOL:
                if column.dtype != np.bool_:
                    raise EventError(f"expected a bool column, got {column.dtype}", type_name=name, attribute=attr.name)
                table[:, j] = column
            else:
                table[:, j] = _string_codes(self.strings, column, name, attr.name)
        return table


def _int_column(column: np.ndarray, type_name: str, attribute: str) -> np.ndarray:
    if column.dtype.kind in "iu":
        if column.dtype.kind == "u" and column.size and column.max() > INT64_MAX:
            bad = int(np.argmax(column > INT64_MAX))
            raise EventError(f"row {bad}: integer outside the 64-bit range", type_name=type_name, attribute=attribute)
        return column.astype(np.int64)
    if column.dtype == object:
        for i, v in enumerate(column):
            if type(v) is not int or not INT64_MIN <= v <= INT64_MAX:
                raise EventError(
                    f"row {i}: expected an integer within 64 bits, got {v!r}", type_name=type_name, attribute=attribute
                )
        return column.astype(np.int64)
    raise EventError(f"expected an integer column, got {column.dtype}", type_name=type_name, attribute=attribute)


def _float_column(column: np.ndarray, type_name: str, attribute: str) -> np.ndarray:
    if column.dtype.kind not in "iuf":
        raise EventError(f"expected a numeric column, got {column.dtype}", type_name=type_name, attribute=attribute)
    values = column.astype(np.float64)
    finite = np.isfinite(values)
    if not finite.all():
        bad = int(np.argmin(finite))
        raise EventError(
            f"row {bad}: {float(values[bad])!r} is not a finite number", type_name=type_name, attribute=attribute
        )
    return values


def _string_codes(strings: StringTable, column: np.ndarray, type_name: str, attribute: str) -> np.ndarray:
    if column.dtype.kind not in "UO":
        raise EventError(f"expected a string column, got {column.dtype}", type_name=type_name, attribute=attribute)
    values = column.tolist()
    try:
        distinct = set(values)
    except TypeError:  # an unhashable value: certainly not a string
        distinct = {v for v in values if v.__hash__ is not None}
        distinct.add(next(v for v in values if v.__hash__ is None))
    for value in distinct:
        problem = None if isinstance(value, str) else f"expected a string, got {value!r}"
        if problem is None:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                problem = "string contains a lone surrogate escape"
        if problem is not None:
            row = next(i for i, v in enumerate(values) if v is value or (type(v) is type(value) and v == value))
            raise EventError(f"row {row}: {problem}", type_name=type_name, attribute=attribute)
    return strings.encode(values)


def event_from_row(codec: TypeCodec, row: np.ndarray, event_id: str) -> Event:
    return Event(event_id, codec.event_type, codec.decode(row))
