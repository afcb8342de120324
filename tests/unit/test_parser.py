"""The faidecs language: accepted forms, precedence, DNF normalisation and round-trips.

Everything goes through :func:`faidecs.grammar.compile_program`, the one entry point the rest of
faidecs uses, and checks the normal form it produces (conjunctions, signatures, predicates).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faidecs.errors import ProgramError
from faidecs.grammar import (
    Conjunction,
    Disposal,
    Kind,
    Matching,
    Program,
    Slot,
    Subscription,
    compile_program,
)

TYPES = """\
type T1(a1: int, a2: float, name: str, flag: bool)
type T2(a1: int, a2: float, name: str, flag: bool)
type T3(a1: int, a2: float, name: str, flag: bool)
"""


def compile_sub(condition: str, options: str = "", types: str = TYPES) -> Subscription:
    """Compile one subscription ``S`` over ``types`` and return it."""
    program = compile_program(f"{types}subscription S{options}: {condition}\n")
    assert len(program.subscriptions) == 1
    return program.subscriptions[0]


def conditions(sub: Subscription) -> list[str]:
    """The conjunctions' condition texts, in the order of writing."""
    return [c.condition_text() for c in sub.conjunctions]


def sig(conj: Conjunction) -> list[str]:
    """A conjunction's signature as text."""
    return [str(s) for s in conj.signature]


# --- the exact forms of the issue ------------------------------------------------------------

ISSUE_PROGRAM = """\
# comment
type T1(a1: int, a2: float, name: str, flag: bool)
type T2(a1: int, a2: float, name: str, flag: bool)
type T3(a1: int, a2: float, name: str, flag: bool)
subscription S1: T1[0].a1 < T2[0].a1 and T3.a1 < 20
subscription S2 (matching MR, disposal IP): T1 and T2[1]
subscription S3: T1.a1 = 5 or T2.name = "x" and T3
"""


def test_issue_forms_parse() -> None:
    """The forms given in the issue compile, with the documented meaning."""
    program = compile_program(ISSUE_PROGRAM)
    assert list(program.types) == ["T1", "T2", "T3"]
    t1 = program.types["T1"]
    assert [(a.name, a.kind) for a in t1.attributes] == [
        ("a1", Kind.INT),
        ("a2", Kind.FLOAT),
        ("name", Kind.STR),
        ("flag", Kind.BOOL),
    ]
    s1, s2, s3 = program.subscriptions
    assert [s.name for s in program.subscriptions] == ["S1", "S2", "S3"]

    assert (s1.matching, s1.disposal) == (Matching.FR, Disposal.PI)
    (c,) = s1.conjunctions
    assert sig(c) == ["T1[0]", "T2[0]", "T3[0]"]
    assert c.condition_text() == "T1[0].a1 < T2[0].a1 and T3[0].a1 < 20"
    assert [p.text for p in c.binary] == ["T1[0].a1 < T2[0].a1"]
    assert [p.text for p in c.unary(Slot("T3", 0))] == ["T3[0].a1 < 20"]

    assert (s2.matching, s2.disposal) == (Matching.MR, Disposal.IP)
    (c,) = s2.conjunctions
    assert sig(c) == ["T1[0]", "T2[0]", "T2[1]"]
    assert c.predicates == ()

    assert (s3.matching, s3.disposal) == (Matching.FR, Disposal.PI)
    assert conditions(s3) == ["T1[0].a1 = 5", 'T3[0] and T2[0].name = "x"']
    assert [sig(c) for c in s3.conjunctions] == [["T1[0]"], ["T2[0]", "T3[0]"]]


def test_empty_program_and_comment_only_program() -> None:
    """No declarations at all is a valid (empty) program."""
    for text in ("", "\n\n", "# nothing here\n", "# no newline at the end"):
        program = compile_program(text)
        assert isinstance(program, Program)
        assert program.types == {} and program.subscriptions == ()


def test_type_without_attributes() -> None:
    program = compile_program("type Ping()\nsubscription S: Ping[1]")
    assert program.types["Ping"].attributes == ()
    assert sig(program.subscriptions[0].conjunctions[0]) == ["Ping[0]", "Ping[1]"]


@pytest.mark.parametrize(
    ("options", "matching", "disposal"),
    [
        ("", Matching.FR, Disposal.PI),
        (" (matching FR)", Matching.FR, Disposal.PI),
        (" (matching MR)", Matching.MR, Disposal.PI),
        (" (matching FRC)", Matching.FRC, Disposal.PI),
        (" (matching MRC)", Matching.MRC, Disposal.PI),
        (" (disposal I)", Matching.FR, Disposal.I),
        (" (disposal PI)", Matching.FR, Disposal.PI),
        (" (disposal IP)", Matching.FR, Disposal.IP),
        (" (disposal FP)", Matching.FR, Disposal.FP),
        (" (matching MRC, disposal FP)", Matching.MRC, Disposal.FP),
        (" (disposal I, matching FRC)", Matching.FRC, Disposal.I),
    ],
)
def test_options(options: str, matching: Matching, disposal: Disposal) -> None:
    """Every option value; defaults FR and PI; either order."""
    sub = compile_sub("T1", options)
    assert (sub.matching, sub.disposal) == (matching, disposal)


# --- layout: lines and comments ----------------------------------------------------------------


def test_multi_line_subscription_runs_until_next_keyword() -> None:
    """A subscription may span lines; it ends at the next `type` or `subscription`."""
    text = TYPES + (
        "subscription A:\n"
        "    T1.a1 < 5\n"
        "    and T2.a1 > 3\n"
        "\n"
        "    or T3\n"
        "subscription B (matching MR,\n"
        "                disposal I):\n"
        "  T1[1]\n"
        "type T4(x: int)\n"
        "subscription C: T4.x\n"
        "  =\n"
        "  1\n"
    )
    program = compile_program(text)
    a, b, c = program.subscriptions
    assert conditions(a) == ["T1[0].a1 < 5 and T2[0].a1 > 3", "T3[0]"]
    assert (b.matching, b.disposal) == (Matching.MR, Disposal.I)
    assert conditions(b) == ["T1[1]"]
    assert "T4" in program.types
    assert conditions(c) == ["T4[0].x = 1"]


def test_comments_anywhere() -> None:
    """Comments may appear between declarations, at line ends and inside a declaration."""
    text = (
        "# leading comment\n"
        "type T1(a1: int, # first attribute\n"
        "        name: str) # after the type\n"
        "  # indented comment\n"
        "subscription S # before the options\n"
        "  ( # inside options\n"
        "    matching MR, # between options\n"
        "    disposal I\n"
        "  ) # before the colon\n"
        "  : # after the colon\n"
        "  T1[0] # after an instance\n"
        "  . a1 # between parts of a reference\n"
        "  < # after an operator\n"
        "  5 # after a value\n"
        '  and T1.name = "#not a comment" # strings keep their #\n'
        "# trailing comment without newline"
    )
    (sub,) = compile_program(text).subscriptions
    assert (sub.matching, sub.disposal) == (Matching.MR, Disposal.I)
    assert conditions(sub) == ['T1[0].a1 < 5 and T1[0].name = "#not a comment"']


def test_crlf_line_endings() -> None:
    """Windows line endings are whitespace like any other."""
    text = TYPES.replace("\n", "\r\n") + "subscription S:\r\n  T1.a1 < 5\r\n  and T2\r\n"
    (sub,) = compile_program(text).subscriptions
    assert conditions(sub) == ["T2[0] and T1[0].a1 < 5"]


def test_all_on_one_line() -> None:
    """Newlines are not needed between declarations."""
    text = "type A(x: int) type B(y: int) subscription S: A.x < B.y subscription R: B"
    program = compile_program(text)
    assert [s.name for s in program.subscriptions] == ["S", "R"]
    assert conditions(program.subscriptions[0]) == ["A[0].x < B[0].y"]


@pytest.mark.parametrize("name", ["orders", "andy", "typeX", "subscriptions", "or_", "and1", "matchingT"])
def test_names_that_start_with_keywords(name: str) -> None:
    """Keywords are whole words: a name that merely starts with one is a name."""
    text = f"type {name}(x: int)\nsubscription S: {name}.x < 3 and {name}[1] or {name}.x > 7"
    (sub,) = compile_program(text).subscriptions
    assert conditions(sub) == [f"{name}[1] and {name}[0].x < 3", f"{name}[0].x > 7"]


@pytest.mark.parametrize("name", ["trueish", "falsehood", "true_events", "falseAlarm"])
def test_type_names_that_start_with_true_or_false(name: str) -> None:
    """`true`/`false` are whole-word literals too: `trueish.x` names the type `trueish`."""
    text = f"type {name}(x: int)\nsubscription S: {name}.x < 3"
    (sub,) = compile_program(text).subscriptions
    assert conditions(sub) == [f"{name}[0].x < 3"]


# --- predicates, instances, values -----------------------------------------------------------


def test_short_forms() -> None:
    """`T.a` is `T[0].a` and `T` is `T[0]`."""
    assert compile_sub("T1.a1 < 5") == compile_sub("T1[0].a1 < 5")
    assert compile_sub("T1 and T2") == compile_sub("T1[0] and T2[0]")


def test_instance_index_declares_lower_instances() -> None:
    """`T[2]` declares T[0], T[1] and T[2]; indices are 0-based."""
    sub = compile_sub("T1[2] and T2[1].a1 > 0")
    (c,) = sub.conjunctions
    assert sig(c) == ["T1[0]", "T1[1]", "T1[2]", "T2[0]", "T2[1]"]
    assert c.condition_text() == "T1[2] and T2[1].a1 > 0"


def test_unary_and_binary_classification() -> None:
    """Unary: one instance (also two attributes of one instance); binary: two instances."""
    sub = compile_sub("T1.a1 < 5 and T1.a1 < T1.a2 and T1[0].a1 < T1[1].a1 and T1.a1 = T2.a1 and T2.a1 + T3.a1 > T1.a2")
    (c,) = sub.conjunctions
    assert [p.text for p in c.unary(Slot("T1", 0))] == ["T1[0].a1 < 5", "T1[0].a1 < T1[0].a2"]
    assert c.unary(Slot("T1", 1)) == ()
    assert [p.text for p in c.binary] == [
        "T1[0].a1 < T1[1].a1",
        "T1[0].a1 = T2[0].a1",
        "T1[0].a2 < T2[0].a1 + T3[0].a1",
    ]
    assert all(p.unary for p in c.unary(Slot("T1", 0)))
    assert not any(p.unary for p in c.binary)


@pytest.mark.parametrize(
    ("written", "normal"),
    [
        ("T1.a1 < 20", "T1[0].a1 < 20"),
        ("T1.a1 > -3", "T1[0].a1 > -3"),
        ("T1.a1 <= 1", "T1[0].a1 <= 1"),
        ("T1.a1 >= 1", "T1[0].a1 >= 1"),
        ("T1.a1 = 1", "T1[0].a1 = 1"),
        ("T1.a1 == 1", "T1[0].a1 = 1"),
        ("T1.a1 != 1", "T1[0].a1 != 1"),
        ("T1.a2 < 2.5", "T1[0].a2 < 2.5"),
        ("T1.a2 < .5", "T1[0].a2 < 0.5"),
        ("T1.a2 < 5.", "T1[0].a2 < 5.0"),
        ("T1.a2 < 1e3", "T1[0].a2 < 1000.0"),
        ("T1.a2 < 1.5E-2", "T1[0].a2 < 0.015"),
        ("T1.a1 < T1.a2", "T1[0].a1 < T1[0].a2"),
        ('T1.name = "x"', 'T1[0].name = "x"'),
        ('T1.name = "with \\"quotes\\" and \\\\"', 'T1[0].name = "with \\"quotes\\" and \\\\"'),
        ('T1.name != "é\\u00e9"', 'T1[0].name != "éé"'),
        ("T1.name < T2.name", "T1[0].name < T2[0].name"),
        ("T1.flag = true", "T1[0].flag = true"),
        ("T1.flag != false", "T1[0].flag != false"),
        ("T1.flag == T2.flag", "T1[0].flag = T2[0].flag"),
        ("T1 and true", "T1[0]"),
    ],
)
def test_predicate_forms(written: str, normal: str) -> None:
    """Every operator and literal kind, in its normal form."""
    assert conditions(compile_sub(written)) == [normal]


def test_double_equals_is_equals() -> None:
    assert compile_sub("T1.a1 == 5 and T1.name == T2.name") == compile_sub("T1.a1 = 5 and T1.name = T2.name")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("T1.a1 < 20", "20 > T1.a1"),
        ("T1.a1 <= 20", "20 >= T1.a1"),
        ("T1.a1 != 20", "20 != T1.a1"),
        ("T1.a1 = 20", "20 == T1.a1"),
        ("T1.a1 < T2.a1", "T2.a1 > T1.a1"),
        ("T1[1].a1 >= T1[0].a1", "T1[0].a1 <= T1[1].a1"),
        ("T1.a1 + 1 < T2.a2 * 2", "T2.a2 * 2 > T1.a1 + 1"),
        ('"x" = T1.name', 'T1.name = "x"'),
    ],
)
def test_flipped_comparisons_normalise_equal(a: str, b: str) -> None:
    """Writing a comparison the other way round gives the same predicate and text."""
    sa, sb = compile_sub(a), compile_sub(b)
    assert sa == sb
    assert conditions(sa) == conditions(sb)
    assert sa.conjunctions[0].text == sb.conjunctions[0].text


def test_constant_goes_to_the_right() -> None:
    assert conditions(compile_sub("20 > T1.a1")) == ["T1[0].a1 < 20"]


def test_duplicate_predicates_in_one_conjunction_are_merged() -> None:
    sub = compile_sub("T1.a1 < 5 and 5 > T1.a1 and T1.a1 < 5")
    assert len(sub.conjunctions[0].predicates) == 1


def test_predicates_in_canonical_order() -> None:
    """The order of writing does not matter within a conjunction."""
    a = compile_sub("T2.a1 > 1 and T1.a1 < 5 and T3")
    b = compile_sub("T3 and T1.a1 < 5 and T2.a1 > 1")
    assert a == b
    assert a.conjunctions[0].text == b.conjunctions[0].text


def test_arithmetic_in_operands() -> None:
    """+ - * / with the usual precedence, parentheses inside operands, unary minus."""
    cases = {
        "T1.a1 + T1.a2 * 2 < 10": "T1[0].a1 + T1[0].a2 * 2 < 10",
        "(T1.a1 + T1.a2) * 2 < 10": "(T1[0].a1 + T1[0].a2) * 2 < 10",
        "T1.a1 - (T2.a1 - 1) > 0": "T1[0].a1 - (T2[0].a1 - 1) > 0",
        "(T1.a1 - T2.a1) - 1 > 0": "T1[0].a1 - T2[0].a1 - 1 > 0",
        "T1.a1 / (T1.a2 * 2) < 1": "T1[0].a1 / (T1[0].a2 * 2) < 1",
        "-T1.a1 < 3": "-T1[0].a1 < 3",
        "-(T1.a1 + 1) < 3": "-(T1[0].a1 + 1) < 3",
        "T1.a1 - -5 < 3": "T1[0].a1 - -5 < 3",
        "((T1.a1)) < ((3))": "T1[0].a1 < 3",
    }
    for written, normal in cases.items():
        assert conditions(compile_sub(written)) == [normal], written


def test_arithmetic_result_kinds() -> None:
    """int op int is int (except /), anything with float or / is float."""
    (c,) = compile_sub("T1.a1 + T1.a1 < 3 and T1.a1 / T1.a1 < 3 and T1.a1 * T1.a2 < 3").conjunctions
    kinds = {p.text: p.left.kind for p in c.predicates}
    assert kinds == {
        "T1[0].a1 + T1[0].a1 < 3": Kind.INT,
        "T1[0].a1 / T1[0].a1 < 3": Kind.FLOAT,
        "T1[0].a1 * T1[0].a2 < 3": Kind.FLOAT,
    }


# --- precedence, parentheses, DNF ------------------------------------------------------------

A, B, C, D = "T1.a1 = 1", "T2.a1 = 2", "T3.a1 = 3", "T1.a2 = 4.0"
NA, NB, NC, ND = "T1[0].a1 = 1", "T2[0].a1 = 2", "T3[0].a1 = 3", "T1[0].a2 = 4.0"


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        (f"{A} or {B} and {C}", [[NA], [NB, NC]]),
        (f"{A} and {B} or {C}", [[NA, NB], [NC]]),
        (f"({A} or {B}) and {C}", [[NA, NC], [NB, NC]]),
        (f"{A} and ({B} or {C})", [[NA, NB], [NA, NC]]),
        (f"({A} or {B}) and ({C} or {D})", [[NA, NC], [NA, ND], [NB, NC], [ND, NB]]),
        (f"{A} and ({B} or {C}) and {D}", [[NA, ND, NB], [NA, ND, NC]]),
        (f"(({A}))", [[NA]]),
        (f"({A} or ({B} or {C}))", [[NA], [NB], [NC]]),
        (f"{A} or {B} or {C} and {D}", [[NA], [NB], [ND, NC]]),
    ],
)
def test_precedence_and_dnf(condition: str, expected: list[list[str]]) -> None:
    """`and` binds tighter than `or`; DNF distributes in the order of writing."""
    sub = compile_sub(condition)
    assert [c.condition_text() for c in sub.conjunctions] == [" and ".join(ps) for ps in expected]
    assert [c.written_index for c in sub.conjunctions] == list(range(len(expected)))


def test_dnf_signatures_and_evaluation_order() -> None:
    """Each conjunction has its own signature; evaluation follows the canonical text."""
    sub = compile_sub("T3.a1 = 1 or T1.a1 = 1 and T2 or T2[1]")
    assert [sig(c) for c in sub.conjunctions] == [["T3[0]"], ["T1[0]", "T2[0]"], ["T2[0]", "T2[1]"]]
    texts = [c.text for c in sub.conjunctions]
    assert texts == ["[T3[0]] T3[0].a1 = 1", "[T1[0], T2[0]] T1[0].a1 = 1", "[T2[0], T2[1]]"]
    assert sub.evaluation_order == (1, 2, 0)
    assert [texts[i] for i in sub.evaluation_order] == sorted(texts)


def test_evaluation_order_independent_of_writing() -> None:
    """The same disjunction written in another order evaluates the same conjunctions in the same order."""
    a = compile_sub("T3.a1 = 1 or T1 and T2 or T2[1]")
    b = compile_sub("T2[1] or T3.a1 = 1 or T2 and T1")
    order_a = [a.conjunctions[i].text for i in a.evaluation_order]
    order_b = [b.conjunctions[i].text for i in b.evaluation_order]
    assert order_a == order_b


def test_duplicate_conjunctions_kept_once_first_occurrence() -> None:
    """Identical conjunctions (however written) are kept once, at the first occurrence."""
    text = TYPES + "subscription S: T1.a1 = 1 or T2\n  or 1 = T1.a1 or T2[0] and true or T3"
    (sub,) = compile_program(text).subscriptions
    assert conditions(sub) == ["T1[0].a1 = 1", "T2[0]", "T3[0]"]
    assert [c.written_index for c in sub.conjunctions] == [0, 1, 2]
    first = sub.conjunctions[0]
    assert (first.span.line, first.span.column) == (4, 17)  # `T1.a1 = 1`, not `1 = T1.a1`


def test_duplicate_conjunctions_from_distribution() -> None:
    """`(A or A) and B` expands to two identical conjunctions: one is kept."""
    sub = compile_sub(f"({A} or {A}) and ({B} or {B})")
    assert conditions(sub) == [f"{NA} and {NB}"]


def test_equivalent_conjunctions_are_same_text() -> None:
    """Differently written but identical conjunctions collapse; different ones do not."""
    sub = compile_sub("T1 and T2.a1 < 3 or 3 > T2.a1 and T1[0] or T1[1] and T2.a1 < 3")
    assert conditions(sub) == ["T1[0] and T2[0].a1 < 3", "T1[1] and T2[0].a1 < 3"]


# --- signatures ------------------------------------------------------------------------------


def test_signature_uses_code_point_order() -> None:
    """Types sort by code point: uppercase before lowercase ("B" < "Z" < "a")."""
    text = "type B(v: int)\ntype a(v: int)\ntype Z(v: int)\nsubscription S: a.v < 1 and Z[1].v < B.v and a[1]"
    (sub,) = compile_program(text).subscriptions
    (c,) = sub.conjunctions
    assert sig(c) == ["B[0]", "Z[0]", "Z[1]", "a[0]", "a[1]"]
    assert c.types == ("B", "Z", "a")
    assert c.signature == tuple(sorted(c.signature))


def test_signature_sorts_index_numerically() -> None:
    """Index 10 comes after index 9 (numeric, not textual order)."""
    (c,) = compile_sub("T1[10]").conjunctions
    assert sig(c) == [f"T1[{i}]" for i in range(11)]


def test_signature_example_of_semantics_file() -> None:
    """The example of the semantics file."""
    types = "type EarningsReport(time: int)\ntype StockQuote(time: int, value: float)\n"
    sub = compile_sub(
        "StockQuote[0].time > EarningsReport[0].time and StockQuote[1].value > StockQuote[0].value "
        "and StockQuote[2].value > StockQuote[1].value",
        types=types,
    )
    assert sig(sub.conjunctions[0]) == ["EarningsReport[0]", "StockQuote[0]", "StockQuote[1]", "StockQuote[2]"]


def test_signature_independent_of_writing_order() -> None:
    assert compile_sub("T3 and T1[1] and T2") == compile_sub("T2 and T1[1] and T3")


# --- round trip ------------------------------------------------------------------------------


def assert_round_trip(program: Program, types: str) -> None:
    """Each subscription's ``to_source()`` compiles to an equal subscription with the same normal form."""
    for sub in program.subscriptions:
        source = sub.to_source()
        (again,) = compile_program(types + source + "\n").subscriptions
        assert again == sub, source
        assert again.to_source() == source
        assert [c.text for c in again.conjunctions] == [c.text for c in sub.conjunctions]
        assert [c.condition_text() for c in again.conjunctions] == [c.condition_text() for c in sub.conjunctions]
        assert again.evaluation_order == sub.evaluation_order


ROUND_TRIP_CONDITIONS = [
    "T1[0].a1 < T2[0].a1 and T3.a1 < 20",
    "T1 and T2[1]",
    'T1.a1 = 5 or T2.name = "x" and T3',
    '(T1.a1 < 3 or T1.a1 > 5) and (T1.flag = true or T2.name != "y")',
    "T1[2] and T1[0].a1 < T1[1].a1",
    "T1[1] and T1[0].a2 >= 1.5e-7",
    "T1.a2 * 2 + 1 < T2.a2 / (T3.a2 - 0.5) or T2",
    "-T1.a1 * 2 < -(T1.a1 - -5)",
    "T1.a1 - (T1.a2 - 1) < T1.a1 / (2 * T1.a2)",
    "T1.a2 = -0.0 and T2.a2 != 1e300",
    'T1.name = "tab\\tnewline\\n quote\\" backslash\\\\ unicode é ✓ \\u0001"',
    "T1.a1 < 9223372036854775807 and T1.a1 > -9223372036854775808",
    "T1 and true or T2 and true",
    "T1.flag != T2.flag and T2.flag = false",
    "T1.a1 = 1 or T1.a1 = 1 or T2",
    "T3[1] or T2[2] and T2[0].a1 = T2[2].a1 or T1",
]


@pytest.mark.parametrize("condition", ROUND_TRIP_CONDITIONS)
@pytest.mark.parametrize("options", ["", " (matching MRC, disposal FP)", " (disposal I)"])
def test_round_trip(condition: str, options: str) -> None:
    program = compile_program(f"{TYPES}subscription S{options}: {condition}\n")
    assert_round_trip(program, TYPES)


def test_round_trip_of_the_issue_program() -> None:
    program = compile_program(ISSUE_PROGRAM)
    assert_round_trip(program, ISSUE_PROGRAM.split("subscription")[0])


def test_round_trip_of_overflowing_float_literal() -> None:
    """A literal too large for a float must either be rejected or round-trip (not print `inf`)."""
    try:
        sub = compile_sub("T1.a2 < 1e400")
    except ProgramError:
        return
    assert_round_trip(compile_program(f"{TYPES}{sub.to_source()}\n"), TYPES)


# --- hypothesis: random well-formed conditions -----------------------------------------------

H_TYPES = "type A(x: int, y: float)\ntype B(s: str, b: bool, n: int)\ntype a(x: int)\n"
_NUMERIC = [("A", "x"), ("A", "y"), ("B", "n"), ("a", "x")]

_index = st.integers(min_value=0, max_value=2)
_num_ref = st.builds(lambda ta, i: f"{ta[0]}[{i}].{ta[1]}", st.sampled_from(_NUMERIC), _index)
_short_ref = st.sampled_from(["A.x", "A.y", "B.n", "a.x"])
_int_lit = st.integers(min_value=-(2**63), max_value=2**63 - 1).map(str)
_float_lit = st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr)
_num_lit = st.one_of(_int_lit, _float_lit)


def _num_expr(depth: int) -> st.SearchStrategy[str]:
    """A numeric operand that mentions at least one instance."""
    base = st.one_of(_num_ref, _short_ref)
    if depth == 0:
        return base
    sub = _num_expr(depth - 1)
    other = st.one_of(sub, _num_lit)
    return st.one_of(
        base,
        st.builds(lambda lhs, op, r: f"{lhs} {op} {r}", sub, st.sampled_from("+-*/"), other),
        st.builds(lambda lhs, op, r: f"({lhs}) {op} ({r})", other, st.sampled_from("+-*/"), sub),
        st.builds(lambda e: f"-({e})", sub),
        st.builds(lambda e: f"-{e}", base),
    )


_cmp = st.sampled_from(["<", ">", "<=", ">=", "=", "!=", "=="])
_strings = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)


def _str_lit(value: str) -> str:
    """A string literal, with non-ASCII characters escaped or not."""
    return json.dumps(value, ensure_ascii=bool(len(value) % 2))


_predicate = st.one_of(
    st.builds(lambda lhs, op, r: f"{lhs} {op} {r}", _num_expr(2), _cmp, _num_lit),
    st.builds(lambda lhs, op, r: f"{lhs} {op} {r}", _num_lit, _cmp, _num_expr(2)),
    st.builds(lambda i, j, op: f"A[{i}].x {op} a[{j}].x", _index, _index, _cmp),
    st.builds(lambda i, op: f"A[{i}].y {op} B[{i}].n + 1", _index, _cmp),
    st.builds(lambda i, op, s: f"B[{i}].s {op} {_str_lit(s)}", _index, _cmp, _strings),
    st.builds(lambda i, j, op: f"B[{i}].s {op} B[{j}].s", st.just(0), st.just(1), _cmp),
    st.builds(
        lambda i, op, v: f"B[{i}].b {op} {v}",
        _index,
        st.sampled_from(["=", "!=", "=="]),
        st.sampled_from(["true", "false"]),
    ),
    st.builds(lambda t, i: f"{t}[{i}]", st.sampled_from(["A", "B", "a"]), _index),
    st.sampled_from(["A", "B", "a"]),
    st.builds(lambda p: f"{p} and true", st.sampled_from(["A", "B[1]", "a.x > 0"])),
)


def _condition(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return _predicate
    sub = _condition(depth - 1)
    return st.one_of(
        _predicate,
        st.builds(lambda lhs, r: f"{lhs} and {r}", sub, sub),
        st.builds(lambda lhs, r: f"{lhs} or {r}", sub, sub),
        st.builds(lambda lhs, r: f"({lhs}) and ({r})", sub, sub),
        st.builds(lambda lhs, r: f"({lhs} or {r})", sub, sub),
    )


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    condition=_condition(3),
    matching=st.sampled_from(list(Matching)),
    disposal=st.sampled_from(list(Disposal)),
)
def test_round_trip_random_conditions(condition: str, matching: Matching, disposal: Disposal) -> None:
    """Random well-formed conditions compile, and their normal form round-trips."""
    if matching is Matching.ALL:
        disposal = Disposal.NONE  # the only disposal ALL takes
    text = f"{H_TYPES}subscription S (matching {matching.value}, disposal {disposal.value}): {condition}\n"
    program = compile_program(text)
    (sub,) = program.subscriptions
    assert (sub.matching, sub.disposal) == (matching, disposal)
    texts = [c.text for c in sub.conjunctions]
    assert len(set(texts)) == len(texts)  # duplicates removed
    for c in sub.conjunctions:
        assert c.signature == tuple(sorted(c.signature))
    assert_round_trip(program, H_TYPES)
