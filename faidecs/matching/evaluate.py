"""Predicate evaluation for the reference matcher: expressions become Python closures over a
binding (the events bound to a conjunction's signature slots, by slot position)."""

from __future__ import annotations

import operator
from typing import Any, Callable, Mapping, Sequence

from faidecs.grammar.model import ArithOp, AttrOf, Const, Negate, Predicate, Slot, Value
from faidecs.matching.events import Event

Binding = Sequence[Event | None]
ValueFn = Callable[[Binding], Any]
PredicateFn = Callable[[Binding], bool]

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
    "=": operator.eq,
    "!=": operator.ne,
}
_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}


def compile_value(value: Value, positions: Mapping[Slot, int]) -> ValueFn:
    if isinstance(value, AttrOf):
        slot, attr = positions[value.slot], value.position
        return lambda b: b[slot].values[attr]  # type: ignore[union-attr]
    if isinstance(value, Const):
        constant = value.value
        return lambda b: constant
    if isinstance(value, Negate):
        inner = compile_value(value.operand, positions)
        return lambda b: -inner(b)
    assert isinstance(value, ArithOp)
    fn = _ARITH[value.op]
    left, right = compile_value(value.left, positions), compile_value(value.right, positions)
    return lambda b: fn(left(b), right(b))


def compile_predicate(pred: Predicate, positions: Mapping[Slot, int]) -> PredicateFn:
    """A closure that evaluates ``pred`` on a binding.

    Arithmetic that fails (division by zero, overflow) makes the predicate false: matching must
    stay deterministic and total, and no event can satisfy a comparison with an undefined value.
    """
    cmp = _COMPARE[pred.op]
    left, right = compile_value(pred.left, positions), compile_value(pred.right, positions)

    def evaluate(b: Binding) -> bool:
        try:
            return bool(cmp(left(b), right(b)))
        except ArithmeticError:
            return False

    return evaluate
