"""Values and predicates over bindings with groups: the evaluation the extended matcher uses.

A binding here is three lists by slot position: ``view`` (the event a predicate looks at: the
instance's event, or the group member being checked), ``prev`` (for a group, the member before
it) and ``runs`` (for a group, its whole run, which aggregates read). A predicate that names a
group's members (``T.a`` or ``prev(T).a``) must hold for every member, or every consecutive pair
with ``prev``. Arithmetic follows :mod:`faidecs.matching.evaluate`: a failing operation makes the
predicate false.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from faidecs.grammar.model import Aggregate, ArithOp, AttrOf, Const, Negate, Predicate, PrevOf, Slot, Value, value_parts
from faidecs.matching.evaluate import _ARITH, _COMPARE, _checked
from faidecs.matching.events import Event

View = list[Event | None]
Runs = list[Sequence[Event] | None]
ValueFn = Callable[[View, View, Runs], Any]


def aggregate(function: str, run: Sequence[Event], position: int) -> Any:
    """``count``, ``sum``, ``avg``, ``min`` or ``max`` of attribute ``position`` over ``run``."""
    if function == "count":
        return len(run)
    values = [e.values[position] for e in run]
    if function == "min":
        return min(values)
    if function == "max":
        return max(values)
    total = values[0]
    for v in values[1:]:
        total = _checked(total + v)
    return total if function == "sum" else float(total) / len(values)


def compile_value(value: Value, positions: Mapping[Slot, int]) -> ValueFn:
    if isinstance(value, AttrOf):
        k, attr = positions[value.slot], value.position
        return lambda view, prev, runs: view[k].values[attr]  # type: ignore[union-attr]
    if isinstance(value, PrevOf):
        k, attr = positions[value.slot], value.position
        return lambda view, prev, runs: prev[k].values[attr]  # type: ignore[union-attr]
    if isinstance(value, Aggregate):
        k, attr, function = positions[value.slot], value.position, value.function
        return lambda view, prev, runs: aggregate(function, runs[k], attr)  # type: ignore[arg-type]
    if isinstance(value, Const):
        constant = value.value
        return lambda view, prev, runs: constant
    if isinstance(value, Negate):
        inner = compile_value(value.operand, positions)
        return lambda view, prev, runs: _checked(-inner(view, prev, runs))
    assert isinstance(value, ArithOp)
    fn = _ARITH[value.op]
    left, right = compile_value(value.left, positions), compile_value(value.right, positions)
    return lambda view, prev, runs: fn(left(view, prev, runs), right(view, prev, runs))


class GroupPredicate:
    """One predicate, evaluated over every member (or consecutive pair) of the groups it names."""

    __slots__ = ("text", "_cmp", "_left", "_right", "members", "paired", "aggregates", "position")

    def __init__(self, pred: Predicate, positions: Mapping[Slot, int], groups: frozenset[str]):
        self.text = pred.text
        self._cmp = _COMPARE[pred.op]
        self._left = compile_value(pred.left, positions)
        self._right = compile_value(pred.right, positions)
        parts = [*value_parts(pred.left), *value_parts(pred.right)]
        member_slots = {v.slot for v in parts if isinstance(v, (AttrOf, PrevOf)) and v.slot.type_name in groups}
        #: Group positions whose members the predicate names, and those it pairs with ``prev``.
        self.members = tuple(sorted(positions[s] for s in member_slots))
        self.paired = frozenset(positions[v.slot] for v in parts if isinstance(v, PrevOf))
        self.aggregates = any(isinstance(v, Aggregate) for v in parts)
        #: The slot that binds the last of its instances: where the search checks it.
        self.position = max(positions[s] for s in pred.slots)

    def test(self, view: View, prev: View, runs: Runs) -> bool:
        try:
            return bool(self._cmp(self._left(view, prev, runs), self._right(view, prev, runs)))
        except ArithmeticError:
            return False

    def holds(self, view: View, prev: View, runs: Runs) -> bool:
        """True iff the predicate holds for every member (pair) of each group it names."""
        if not self.members:
            return self.test(view, prev, runs)
        ranges = [range(1 if k in self.paired else 0, len(runs[k] or ())) for k in self.members]
        saved = [(view[k], prev[k]) for k in self.members]
        try:
            for picks in itertools.product(*ranges):
                for k, i in zip(self.members, picks):
                    run = runs[k]
                    assert run is not None
                    view[k], prev[k] = run[i], run[i - 1] if i else None
                if not self.test(view, prev, runs):
                    return False
            return True
        finally:
            for k, (v, p) in zip(self.members, saved):
                view[k], prev[k] = v, p
