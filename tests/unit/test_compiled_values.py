"""Value semantics of the compiled matcher: arithmetic, int/float mixes and limits, strings, bools.

Why: the compiled kernels evaluate predicates on int64 and float64 machine values (floats stored as
bit patterns, strings as interned codes, checked integer helpers, an exact int/float comparison),
while the reference matcher evaluates them on Python objects. ``docs/dsl.md`` ("Arithmetic") fixes
one meaning for both: 64-bit ints with checked + - * and unary minus (an out-of-range result makes
the predicate false), ``/`` on floats (division by zero makes the predicate false), int/float
arithmetic in float, and exact int-vs-float comparisons. The property test draws streams of edge
values (0, ±1, ±2**53, ±(2**53+1), the int64 limits, 1e308, subnormals, -0.0, ...) for a few fixed
programs and requires identical deliveries and queues after every event, under several option
combinations; the hand-derived cases pin the meaning itself on both matchers, so that the two
cannot agree on a wrong answer.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import event as note
from hypothesis import given, settings
from hypothesis import strategies as st
from stepwise import per_event  # noqa: E402

from faidecs import Engine

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
TWO53 = 2**53

Delivered = tuple[str, int, tuple[str, ...]]

# One subscription per option combination, all with the same condition: kernels are shared by
# structure (the options are run-time values), so each program compiles each conjunction once.
OPTIONS = (("FR", "PI"), ("MR", "I"), ("FRC", "FP"), ("MRC", "IP"))

TYPES = """\
type N(i: int, j: int, f: float, g: float)
type W(i: int, f: float, s: str, b: bool)
"""

# Each alternative is one conjunction (one kernel).
CONDITIONS = {
    # Checked int arithmetic (+, -, *, unary minus) in a binary and a unary predicate.
    "ints": "N[0].i + N[1].i >= N[1].j - N[0].j and -N[0].i != N[0].j * 3",
    # int/float mixes, division (by zero too), parentheses, int-vs-float comparisons of attributes.
    "mixed": "(N.f + W.i) / (N.g - W.f) < N.i * 1.5 and N.j >= W.f and W.f - N.j != -(N.f * 2)",
    # Comparisons near 2**53 and 2**63 (constants of the other kind), binary str and bool equality.
    "limits": (
        "W[0].s = W[1].s and W[0].b != W[1].b and W[1].i < 9223372036854775808.0 "
        "and W[0].f >= 9007199254740993 or W.i > 9007199254740992.0 and W.f <= -9223372036854775808"
    ),
    # String constants with quotes, backslashes and non-ASCII (escaped and not), bools, -0.0.
    "strings": (
        'W.s != "q\\"t\\\\é" and W.b = true and 1 / N.g > N.f - W.i and N.f = -0.0 '
        'or W.s = "\\u00e9\\\\" and N.g < -0.0 * N.i or W.s = "q\\"t" and N.i - W.i <= -9223372036854775807 - 1'
    ),
}


def program(condition: str) -> str:
    subs = [f"subscription S_{m}_{d} (matching {m}, disposal {d}): {condition}" for m, d in OPTIONS]
    return TYPES + "\n".join(subs) + "\n"


INT_EDGES = (
    0, 1, -1, 2, -2, 3,
    TWO53, -TWO53, TWO53 + 1, -(TWO53 + 1), TWO53 - 1,
    2**62, -(2**62),
    INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1,
)  # fmt: skip
FLOAT_EDGES = (
    0.0, -0.0, 1.0, -1.0, 0.5, 1.5,
    float(TWO53), -float(TWO53), float(TWO53 + 2), 9007199254740991.0,
    1e308, -1e308, 1.7976931348623157e308, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300,
    9.223372036854775808e18, -9.223372036854775808e18, 9.2233720368547748e18,
    # ints given for float attributes: accepted and rounded to the nearest float64
    3, TWO53 + 1, INT64_MAX, INT64_MIN,
)  # fmt: skip
STR_EDGES = ("", "x", 'q"t', 'q"t\\é', "é\\", "é", "e\u0301", "\\", '"', "😀", "\t")
KINDS: dict[str, tuple[Any, ...]] = {"int": INT_EDGES, "float": FLOAT_EDGES, "str": STR_EDGES, "bool": (False, True)}
ATTRS = {
    "N": (("i", "int"), ("j", "int"), ("f", "float"), ("g", "float")),
    "W": (("i", "int"), ("f", "float"), ("s", "str"), ("b", "bool")),
}


@st.composite
def edge_streams(draw: st.DrawFn, max_events: int = 24) -> list[dict[str, Any]]:
    """Events of N and W with every attribute drawn from the edge values of its kind."""
    size = draw(st.integers(6, max_events))
    events = []
    for k in range(size):
        type_name = draw(st.sampled_from(("N", "W")))
        attrs = {name: draw(st.sampled_from(KINDS[kind])) for name, kind in ATTRS[type_name]}
        events.append({"id": f"e{k}", "type": type_name, "attrs": attrs})
    return events


def test_value_programs_compile() -> None:
    """Every conjunction of the programs runs compiled (none falls back to the reference)."""
    for condition in CONDITIONS.values():
        engine = Engine.from_source(program(condition), matcher="compiled")
        assert all(kind == "compiled" for kinds in engine.matchers().values() for kind in kinds)


EXAMPLES = settings(max_examples=min(50, max(10, (settings.default.max_examples or 100) // 2)), deadline=None)


@pytest.mark.parametrize("name", list(CONDITIONS))
@EXAMPLES
@given(stream=edge_streams())
def test_compiled_agrees_with_reference_on_edge_values(name: str, stream: list[dict[str, Any]]) -> None:
    text = program(CONDITIONS[name])
    reference = Engine.from_source(text, matcher="reference")
    compiled = Engine.from_source(text, matcher="compiled")
    expected, expected_states = per_event(reference, stream)
    got, got_states = per_event(compiled, stream)
    for k in range(len(stream)):
        assert got[k] == expected[k], (k, stream[: k + 1])
        assert got_states[k] == expected_states[k], (k, stream[: k + 1])
    assert compiled.snapshot() == reference.snapshot()
    assert compiled.metrics() == reference.metrics()
    note(f"{name}: {min(sum(map(len, expected)), 3)} deliveries")


# --- hand-derived cases ------------------------------------------------------------------------
# Each case is a one-instance conjunction over T: an event is delivered (alone, at once) iff it
# satisfies the predicate, so the expectation is just the predicate's truth value under the rules
# of docs/dsl.md, worked out in the comment beside each case. Every distinct predicate is one
# more kernel to compile, so most predicates read their operands from attributes and serve
# several cases.

T_DECL = "type T(a: int, b: int, c: int, f: float, g: float, h: float, s: str, p: bool)\n"
DEFAULTS: dict[str, Any] = {"a": 0, "b": 0, "c": 0, "f": 0.0, "g": 0.0, "h": 0.0, "s": "", "p": False}
NAN_PAIR = {"f": 1e308, "g": 10.0}  # f * g is inf, and inf - inf is NaN

CASES: list[tuple[str, dict[str, Any], bool]] = [
    # 2**63-1 + 1 is outside 64 bits: the sum fails and makes the predicate false.
    ("T.a + 1 > 0", {"a": INT64_MAX}, False),
    ("T.a + 1 > 0", {"a": 5}, True),
    # The same with `!=`: a wrapped sum (-2**63) would be != 0 and deliver.
    ("T.a + T.b != T.c", {"a": INT64_MAX, "b": 1}, False),
    ("T.a + T.b != T.c", {"a": INT64_MIN, "b": -1}, False),
    ("T.a + T.b != T.c", {"a": INT64_MAX, "b": INT64_MIN}, True),  # -1 fits
    # -2**63 - 1 and 0 - (-2**63) overflow; -2**63 - (-1) fits.
    ("T.a - T.b != T.c", {"a": INT64_MIN, "b": 1}, False),
    ("T.a - T.b != T.c", {"a": 0, "b": INT64_MIN}, False),
    ("T.a - T.b != T.c", {"a": INT64_MIN, "b": -1}, True),
    # Constant arithmetic: -9223372036854775807 - 1 is -2**63 exactly; a - 1 overflows for -2**63.
    ("T.a - 1 <= -9223372036854775807 - 1", {"a": INT64_MIN + 1}, True),
    ("T.a - 1 <= -9223372036854775807 - 1", {"a": INT64_MIN}, False),
    # Checked multiplication: 2**62 * 2 = 2**63 and 2**62 * 3 overflow (wrapped they would be
    # -2**63 and -2**62, both != 0); -(2**62) * 2 = -2**63 fits; -2**63 * -1 overflows;
    # 3037000500**2 > 2**63-1 >= 3037000499**2.
    ("T.a * T.b != T.c", {"a": 2**62, "b": 2}, False),
    ("T.a * T.b != T.c", {"a": 2**62, "b": 3}, False),
    ("T.a * T.b != T.c", {"a": -(2**62), "b": 2}, True),
    ("T.a * T.b != T.c", {"a": INT64_MIN, "b": -1}, False),
    ("T.a * T.b != T.c", {"a": INT64_MIN, "b": 0, "c": 1}, True),
    ("T.a * T.b != T.c", {"a": 3037000500, "b": 3037000500}, False),
    ("T.a * T.b != T.c", {"a": 3037000499, "b": 3037000499}, True),
    ("T.a * 2 > 0", {"a": 2**62}, False),
    ("T.a * 2 > 0", {"a": 2**62 - 1}, True),
    # Unary minus is checked: -(-2**63) does not fit.
    ("-T.a > T.c", {"a": INT64_MIN}, False),
    ("-T.a > T.c", {"a": -1}, True),
    # Exact int/float comparison with a constant: 2**53+1 > 2**53 although both round to the
    # same float; 9223372036854775808.0 is 2**63, above every int64 (rounding 2**63-1 to a float
    # would make them equal).
    ("T.a > 9007199254740992.0", {"a": TWO53 + 1}, True),
    ("T.a > 9007199254740992.0", {"a": TWO53}, False),
    ("T.a < 9223372036854775808.0", {"a": INT64_MAX}, True),
    # ... and between attributes.
    ("T.a < T.f", {"a": INT64_MAX, "f": 9.223372036854775808e18}, True),
    ("T.a < T.f", {"a": TWO53 + 1, "f": float(TWO53)}, False),
    ("T.a < T.f", {"a": TWO53, "f": float(TWO53 + 2)}, True),
    ("T.a < T.f", {"a": INT64_MIN, "f": -9.223372036854775808e18}, False),  # equal
    ("T.a < T.f", {"a": 0, "f": -0.0}, False),
    ("T.a < T.f", {"a": -1, "f": -0.0}, True),
    ("T.a < T.f", {"a": 0, "f": 5e-324}, True),
    # A float attribute against an int constant: the int 2**63-1 given for a float attribute
    # becomes 2**63 (nearest float64), exactly greater than 2**63-1; the float just below 2**63
    # is 2**63-1024.
    ("T.f > 9223372036854775807", {"f": INT64_MAX}, True),
    ("T.f > 9223372036854775807", {"f": 9.2233720368547748e18}, False),
    # `/` converts both ints to float first: float(2**53+1) = 2**53, and 2**53 / 3 rounds to
    # 3002399751580330.5, below 3002399751580331 = (2**53+1) / 3 exactly. 7 / 2 is 3.5.
    ("T.a / T.b < T.f", {"a": TWO53 + 1, "b": 3, "f": 3002399751580331.0}, True),
    ("T.a / T.b < T.f", {"a": 7, "b": 2, "f": 3.5}, False),
    ("T.a / T.b < T.f", {"a": 7, "b": 2, "f": 3.75}, True),
    # Division by zero makes the predicate false, whatever the operator (-0.0 is a zero too).
    ("T.a / T.b < T.f", {"a": -1, "b": 0, "f": 5.0}, False),
    ("T.f / T.g != T.h", {"f": 1.0, "g": -0.0}, False),
    ("T.f / T.g != T.h", {"f": 1.0, "g": 1.0}, True),
    ("T.f / T.g != T.h", {"f": 1e308, "g": 1e-308}, True),  # inf, not an error
    # int + float is float: 2**53 + 0.5 and 2**53 + 1.0 round (half to even) to 2**53, which is
    # not > 2**53; 2**53 + 2.0 is.
    ("T.a + T.f > T.a", {"a": TWO53, "f": 0.5}, False),
    ("T.a + T.f > T.a", {"a": TWO53, "f": 1.0}, False),
    ("T.a + T.f > T.a", {"a": TWO53, "f": 2.0}, True),
    ("T.a + T.f > T.a", {"a": 1, "f": 0.5}, True),
    # Float overflow is infinity; inf - inf is NaN, unequal to everything and not ordered, also
    # against an int.
    ("T.f * T.g - T.f * T.g != T.h", NAN_PAIR, True),
    ("T.f * T.g - T.f * T.g != T.h", {"f": 1.0, "g": 1.0}, False),
    ("T.f * T.g - T.f * T.g < T.h", NAN_PAIR, False),
    ("T.f * T.g - T.f * T.g < T.h", {"f": 1.0, "g": 1.0, "h": 1.0}, True),
    ("T.f * T.g - T.f * T.g >= T.a", {**NAN_PAIR, "a": INT64_MIN}, False),
    ("T.f * T.g > T.h", {"f": -1e308, "g": -1e308, "h": 1e308}, True),
    ("T.f * T.g > T.h", {"f": 1e-300, "g": 1e-300}, False),  # underflows to 0.0
    # -0.0 equals 0 (an int constant) and 0.0; -0.0 as a constant equals 0.0.
    ("T.g = 0", {"g": -0.0}, True),
    ("T.g = 0", {"g": 5e-324}, False),
    ("T.g = -0.0", {"g": 0.0}, True),
    # Precedence: a - (1 * b) + 1, left to right; unary minus binds tightest, so -a * b with
    # a = -2**63 fails at -a even when b = 0 (-(a * b) would be 0).
    ("T.a - 1 * T.b + 1 = T.c", {"a": 3, "b": 2, "c": 2}, True),
    ("(T.a - 1) * (T.b + 1) = T.c", {"a": 3, "b": 2, "c": 6}, True),
    ("(T.a - 1) * (T.b + 1) = T.c", {"a": 3, "b": 2, "c": 2}, False),
    ("-T.a * T.b = T.c", {"a": 2, "b": 3, "c": -6}, True),
    ("-T.a * T.b = T.c", {"a": INT64_MIN, "b": 0}, False),
    # Strings: escapes in literals, quotes, backslashes and non-ASCII compare by value; no
    # Unicode normalisation (e + combining accent is not é).
    ('T.s = "q\\"t\\\\é"', {"s": 'q"t\\é'}, True),
    ('T.s = "q\\"t\\\\é"', {"s": 'q"t\\e'}, False),
    ('T.s != "\\u00e9"', {"s": "e\u0301"}, True),
    ('T.s != "\\u00e9"', {"s": "é"}, False),
    ("T.p = true", {"p": True}, True),
    ("T.p = true", {"p": False}, False),
]


@pytest.mark.parametrize("matcher", ["compiled", "reference"])
@pytest.mark.parametrize(("predicate", "attrs", "holds"), CASES, ids=[f"{p} {a}" for p, a, _ in CASES])
def test_hand_derived_value(matcher: str, predicate: str, attrs: dict[str, Any], holds: bool) -> None:
    engine = Engine.from_source(T_DECL + f"subscription S: {predicate}\n", matcher=matcher)
    assert engine.matchers() == {"S": [matcher]}
    got = engine.publish({"id": "x", "type": "T", "attrs": {**DEFAULTS, **attrs}})
    assert [tuple(d.ids) for d in got] == ([("x",)] if holds else [])
    # The predicate is unary, so it also decides ENQUEUE: an event that fails it is not queued,
    # and one that passes is delivered and removed at once (FR+PI).
    assert engine.state_json() == {"S": [{"T": []}]}


@pytest.mark.parametrize("matcher", ["compiled", "reference"])
def test_binary_overflow_leaves_the_pair_unmatched(matcher: str) -> None:
    """`T[0].a - T[1].a != 0` under FR+PI: T[0] is the older event. -2**63 - 1 overflows, so
    (x, y) fails and both stay queued; z gives -2**63 - (-1) = -2**63 + 1, which is != 0, and
    FR tries T[0] = x first, so [x, z] is delivered and PI removes x, and y (before z)."""
    engine = Engine.from_source("type T(a: int)\nsubscription S: T[0].a - T[1].a != 0\n", matcher=matcher)
    assert engine.publish({"id": "x", "type": "T", "attrs": {"a": INT64_MIN}}) == []
    assert engine.publish({"id": "y", "type": "T", "attrs": {"a": 1}}) == []
    assert engine.state_json() == {"S": [{"T": ["x", "y"]}]}
    # y - z = 1 - (-1) = 2 would also hold, but FR binds T[0] to the oldest event first.
    assert [tuple(d.ids) for d in engine.publish({"id": "z", "type": "T", "attrs": {"a": -1}})] == [("x", "z")]
    assert engine.state_json() == {"S": [{"T": []}]}
