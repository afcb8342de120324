"""Predicate evaluation for the reference matcher: expressions become Python closures over a
binding (the events bound to a conjunction's signature slots, by slot position).

Value semantics, shared with the compiled matchers (``docs/dsl.md``, "Arithmetic"): integers are
64-bit and integer arithmetic is checked, so a result outside the 64-bit range makes the
predicate false, as division by zero does; ``/`` divides as floats; an operation or comparison
mixing an int with a float computes on the float (the int rounded to the nearest float64) for
arithmetic, and compares exactly, as Python does, for comparisons."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _checked(value: Any) -> Any:
    """An integer result must fit 64 bits (bool is never an operand: the checker forbids it)."""
    if type(value) is int and not INT64_MIN <= value <= INT64_MAX:
        raise OverflowError("integer result outside 64 bits")
    return value


def _divide(left: Any, right: Any) -> float:
    # As floats even for two ints: Python's exact int/int rounding would differ from every
    # machine-level division once the operands pass 2**53.
    return float(left) / float(right)


_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: _checked(a + b),
    "-": lambda a, b: _checked(a - b),
    "*": lambda a, b: _checked(a * b),
    "/": _divide,
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
        return lambda b: _checked(-inner(b))
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
