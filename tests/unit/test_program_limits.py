"""Programs at and past the language's limits (issue 20): long operand chains, deep nesting and
long integer literals either work or give a positioned ``ProgramError``, never a traceback.

Before: 489 operands joined by `or`, `and` or `+`, or 488 unary minuses, raised RecursionError
from the parser; an integer literal or instance index of more than 4,300 digits raised lark's
VisitError (Python's integer-string limit)."""

from __future__ import annotations

import pytest

from faidecs import Engine
from faidecs.errors import Diagnostic, ProgramError
from faidecs.grammar import compile_program
from faidecs.grammar.checker import MAX_VALUE_DEPTH
from faidecs.grammar.normaliser import MAX_CONJUNCTIONS

TYPES = "type T(a: int, b: int)\n"
PREFIX = "subscription S: "  # conditions start at line 2, column 17


def only_error(text: str) -> Diagnostic:
    with pytest.raises(ProgramError) as info:
        compile_program(text, "big.fdc")
    (diag,) = info.value.diagnostics
    assert info.value.format().startswith(f"big.fdc:{diag.span.line}:{diag.span.column}: error: ")
    return diag


def deliveries(text: str, events: list[dict[str, object]]) -> list[list[str]]:
    engine = Engine.from_source(text, matcher="reference")
    return [d.to_json()["relation"] for e in events for d in engine.publish(e)]


def t_event(ident: str, a: int, b: int = 0) -> dict[str, object]:
    return {"id": ident, "type": "T", "attrs": {"a": a, "b": b}}


# --- chains of `or` and `and` -------------------------------------------------------------------


@pytest.mark.parametrize("operands", [489, 600, MAX_CONJUNCTIONS])
def test_or_chain_up_to_the_conjunction_limit_works(operands: int) -> None:
    text = TYPES + PREFIX + " or ".join(f"T.a = {k}" for k in range(operands)) + "\n"
    (sub,) = compile_program(text).subscriptions
    assert len(sub.conjunctions) == operands
    assert sub.conjunctions[-1].text == f"[T[0]] T[0].a = {operands - 1}"
    assert deliveries(text, [t_event("x", operands - 1), t_event("y", operands)]) == [["x"]]


def test_or_chain_past_the_conjunction_limit_is_a_positioned_error() -> None:
    text = TYPES + PREFIX + " or ".join(f"T.a = {k}" for k in range(MAX_CONJUNCTIONS + 1)) + "\n"
    diag = only_error(text)
    assert diag.message == f"condition of S expands to more than {MAX_CONJUNCTIONS} conjunctions"
    assert (diag.span.line, diag.span.column) == (2, 1)


def test_long_and_chain_is_one_conjunction() -> None:
    # 5,000 predicates over T[0] .. T[4]: one conjunction, every predicate kept, in canonical order.
    text = TYPES + PREFIX + " and ".join(f"T[{k % 5}].a != {k}" for k in range(5000)) + "\n"
    (sub,) = compile_program(text).subscriptions
    (conj,) = sub.conjunctions
    assert len(conj.predicates) == 5000
    assert [str(s) for s in conj.signature] == [f"T[{i}]" for i in range(5)]


def test_deep_parentheses_and_alternating_nesting() -> None:
    deep = TYPES + PREFIX + "(" * 20_000 + "T.a = 1" + ")" * 20_000 + "\n"
    assert compile_program(deep).subscriptions[0].conjunctions[0].text == "[T[0]] T[0].a = 1"
    # `T.a = 0 or (T.a = 1 and (T.a = 2 or (...)))`, 3,000 deep: ten alternatives, the rest `and`.
    parts = [f"T.a = {k} {'or' if k < 10 else 'and'} (" for k in range(3000)]
    nested = TYPES + PREFIX + "".join(parts) + "T.b = 0" + ")" * 3000 + "\n"
    (sub,) = compile_program(nested).subscriptions
    assert len(sub.conjunctions) == 11
    assert len(sub.conjunctions[-1].predicates) == 2991


def test_dnf_order_is_unchanged_by_flattening() -> None:
    # Left to right, distributing `and` over `or` as written, however the chain is bracketed.
    for condition in (
        "(T.a = 1 or T.a = 2) and (T.b = 1 or T.b = 2) and T.a != 9",
        "(T.a = 1 or T.a = 2) and ((T.b = 1 or T.b = 2) and T.a != 9)",
    ):
        (sub,) = compile_program(TYPES + PREFIX + condition).subscriptions
        assert [c.condition_text() for c in sub.conjunctions] == [
            "T[0].a != 9 and T[0].a = 1 and T[0].b = 1",
            "T[0].a != 9 and T[0].a = 1 and T[0].b = 2",
            "T[0].a != 9 and T[0].a = 2 and T[0].b = 1",
            "T[0].a != 9 and T[0].a = 2 and T[0].b = 2",
        ]


# --- arithmetic nesting -------------------------------------------------------------------------


def test_plus_chain_at_the_depth_limit_works() -> None:
    terms = MAX_VALUE_DEPTH + 1  # a chain of n operands nests n - 1 operators
    text = TYPES + PREFIX + "T.b = " + " + ".join(["T.a"] * terms) + "\n"
    assert deliveries(text, [t_event("x", 2, 2 * terms), t_event("y", 2, 2 * terms + 1)]) == [["x"]]


@pytest.mark.parametrize(
    "operand",
    [
        " + ".join(["T.a"] * (MAX_VALUE_DEPTH + 2)),
        " + ".join(["T.a"] * 600),
        "-" * 600 + "T.a",
        "T.a * (" * 5000 + "1" + ")" * 5000,
    ],
    ids=["limit+1", "plus600", "neg600", "parens5000"],
)
def test_deeper_arithmetic_is_a_positioned_error(operand: str) -> None:
    diag = only_error(TYPES + PREFIX + "T.b = " + operand + "\n")
    assert diag.message == f"expression nested too deeply: more than {MAX_VALUE_DEPTH} operators inside one another"
    assert (diag.span.line, diag.span.column) == (2, 23)


def test_unary_minuses_on_a_literal_fold() -> None:
    # Folded into the constant while parsing, so they nest nothing: any number is accepted.
    for minuses, value in ((600, 7), (601, -7)):
        (sub,) = compile_program(TYPES + PREFIX + "T.a = " + "-" * minuses + "7").subscriptions
        assert sub.conjunctions[0].predicates[0].text == f"T[0].a = {value}"


# --- long integers ------------------------------------------------------------------------------


@pytest.mark.parametrize("digits", [20, 4301, 100_000])
def test_long_integer_literal_is_out_of_range_at_its_position(digits: int) -> None:
    literal = "9" * digits
    text = TYPES + PREFIX + "T.a < " + literal + "\n"
    diag = only_error(text)
    assert diag.message == "integer literal outside the 64-bit range"
    assert (diag.span.line, diag.span.column, diag.span.end_column) == (2, 23, 23 + digits)


def test_leading_zeros_do_not_count() -> None:
    zeros = "0" * 5000
    text = TYPES + PREFIX + f"T[{zeros}1].a < {zeros}9223372036854775807 and T.a > -{zeros}9223372036854775808"
    (conj,) = compile_program(text).subscriptions[0].conjunctions
    assert conj.text == "[T[0], T[1]] T[0].a > -9223372036854775808 and T[1].a < 9223372036854775807"


@pytest.mark.parametrize("digits", [4, 4301])
def test_long_instance_index_is_too_large_at_its_position(digits: int) -> None:
    text = TYPES + PREFIX + "T[" + "9" * digits + "].a = 1\n"
    diag = only_error(text)
    shown = "9" * digits if digits <= 20 else f"999999999999... ({digits} digits)"
    assert diag.message == f"instance index {shown} is too large (at most 255)"
    assert (diag.span.line, diag.span.column) == (2, 19)
