"""Fuzzing the program reader (issue 20, item 6): whatever text a user writes, ``compile_program``
returns a program or raises ``ProgramError`` whose every diagnostic has a line and column inside
the text; nothing else (no RecursionError, ValueError, lark VisitError). A program that compiles
is also described as ``faidecs check`` prints it and built into a reference engine.

Three kinds of input: Hypothesis's (valid programs from tests/strategies.py, strings of the
language's tokens, and arbitrary text), and a seeded mutation corpus: the example programs and the
issue's cases (long chains, deep nesting, long digits), cut, spliced, stretched and repeated a few
hundred times each run. Bounded to a few seconds in all."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import ProgramSpec, programs

from faidecs import Engine
from faidecs.errors import ProgramError
from faidecs.grammar import Program, compile_program
from faidecs.lab.describe import describe_program

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _read(text: str) -> Program | None:
    """Compile ``text``: a program, or None after checking that every diagnostic is positioned."""
    try:
        program = compile_program(text, "fuzz.fdc")
    except ProgramError as err:
        assert err.diagnostics
        lines = text.count("\n") + 1
        for diag in err.diagnostics:
            assert 1 <= diag.span.line <= lines, diag
            assert diag.span.column >= 1, diag
        assert err.format().startswith("fuzz.fdc:")
        return None
    describe_program(program)
    Engine(program, matcher="reference")
    return program


# --- Hypothesis ------------------------------------------------------------------------------------


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(programs())
def test_generated_programs_compile(spec: ProgramSpec) -> None:
    assert _read(spec.text) is not None


TOKENS = (
    "type", "subscription", "T", "U", "a", "b", "(", ")", "[", "]", ":", ",", ".", "int", "str",
    "float", "bool", "and", "or", "+", "-", "*", "/", "<", "<=", "=", "==", "!=", ">", "0", "1",
    "255", "256", "9223372036854775808", "1e999", "1.5", '"s"', '"\\ud800"', "true", "false",
    "matching", "MR", "disposal", "I", "covering", "staged", "partition", "by", "#c\n", "\n", "\r\n",
)  # fmt: skip
HEAD = "type T(a: int, b: float)\ntype U(a: int, s: str)\nsubscription S: "


# Explicit example counts: the test stays a few seconds under the CI profile (400) too.
@settings(max_examples=100)
@given(st.lists(st.sampled_from(TOKENS), max_size=40))
def test_token_soup(tokens: list[str]) -> None:
    _read(" ".join(tokens))
    _read(HEAD + " ".join(tokens))


@settings(max_examples=60)
@given(st.text(max_size=200))
def test_arbitrary_text(text: str) -> None:
    _read(text)
    _read(HEAD + text)


# --- the mutation corpus ---------------------------------------------------------------------------

T = "type T(a: int, b: int)\n"
CORPUS = [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.fdc"))] + [
    T + "subscription S: " + " or ".join(f"T.a = {k}" for k in range(600)),
    T + "subscription S: " + " and ".join(f"T[{k % 7}].a != {k}" for k in range(600)),
    T + "subscription S: T.b = " + " + ".join(["T.a"] * 600),
    T + "subscription S: T.b = " + "-" * 600 + "T.a",
    T + "subscription S: T.b = " + "-" * 600 + "1",
    T + "subscription S: T.a < " + "9" * 5000,
    T + "subscription S: T[" + "9" * 5000 + "].a = 1",
    T + "subscription S: " + "(" * 2000 + "T.a = 1" + ")" * 2000,
    T + "subscription S (matching MR, disposal I, partition by a): T[1].a * 2 >= T.b / 3.5 or T[0]",
]


def _mutate(rng: random.Random, text: str) -> str:
    s = text
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(s) + 1)
        op = rng.randrange(6)
        if op == 0:  # cut a piece out
            s = s[:at] + s[at + rng.randint(1, 40) :]
        elif op == 1:  # cut the end off
            s = s[:at]
        elif op == 2:  # splice in a piece of another program
            other = rng.choice(CORPUS)
            start = rng.randrange(len(other))
            s = s[:at] + other[start : start + rng.randint(1, 60)] + s[at:]
        elif op == 3:  # repeat a piece many times: long chains, deep nests, long numbers
            piece = s[at : at + rng.randint(1, 12)] or "("
            s = s[:at] + piece * rng.randint(2, 700) + s[at:]
        elif op == 4:  # an odd character
            s = s[:at] + rng.choice('()[]-+.:,"\\#\r\n\t\x00é\ud800') + s[at:]
        else:  # a long run of digits
            s = s[:at] + rng.choice("09") * rng.randint(18, 5000) + s[at:]
    return s


@pytest.mark.parametrize("seed", range(2))
def test_mutation_corpus(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        _read(_mutate(rng, rng.choice(CORPUS)))


def test_the_corpus_itself_reads() -> None:
    """The seeds compile, or fail only as the issue's cases should (positioned, tested above)."""
    read = [_read(text) is not None for text in CORPUS]
    assert read == [True, True, True, True, True, False, False, True, False, False, True, True]
