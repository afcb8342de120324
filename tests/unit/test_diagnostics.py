"""Static checking: every kind of bad program gives positioned diagnostics with a caret."""

from __future__ import annotations

import pytest

from faidecs.errors import Diagnostic, ProgramError
from faidecs.grammar import compile_program

TYPES = "type T(a: int, f: float, s: str, b: bool)\ntype U(a: int)\n"


def errors_of(text: str, filename: str = "prog.fdc") -> ProgramError:
    """The ProgramError ``text`` raises."""
    with pytest.raises(ProgramError) as info:
        compile_program(text, filename)
    return info.value


def underlined(diag: Diagnostic, text: str) -> str:
    """The text the caret line of ``diag``'s formatted message points at (as displayed)."""
    lines = diag.format(text, "prog.fdc").splitlines()
    source, caret = lines[1], lines[2]
    assert source.startswith("    ") and caret.startswith("    ")
    source, caret = source[4:].expandtabs(), caret[4:].expandtabs()
    start = caret.index("^")
    assert set(caret[start:].rstrip()) == {"^"}, caret
    return source[start : len(caret.rstrip())]


def single(text: str) -> tuple[Diagnostic, ProgramError]:
    """The one diagnostic of a bad program."""
    err = errors_of(text)
    assert len(err.diagnostics) == 1, err.format()
    return err.diagnostics[0], err


def check_one(
    condition: str,
    *,
    message: str,
    column: int,
    caret: str,
    types: str = TYPES,
) -> Diagnostic:
    """Compile ``subscription S: condition`` after ``types`` and check its one diagnostic."""
    text = f"{types}subscription S: {condition}\n"
    diag, err = single(text)
    line = types.count("\n") + 1
    assert message in diag.message
    assert (diag.span.line, diag.span.column) == (line, column), diag.format(text)
    assert underlined(diag, text) == caret
    formatted = err.format()
    assert formatted.startswith(f"prog.fdc:{line}:{column}: error: ")
    assert str(err) == formatted
    return diag


# --- syntax errors ---------------------------------------------------------------------------


def test_syntax_error_unexpected_token_lists_expected() -> None:
    diag = check_one("T.a < < 3", message="unexpected '<'", column=23, caret="<")
    assert "expected" in diag.message
    for name in ("a name", "an integer", "a decimal", "a string", "'('", "'-'", "'true'", "'false'"):
        assert name in diag.message


def test_syntax_error_unexpected_character() -> None:
    diag = check_one("T.a @ 3", message="unexpected character '@'", column=21, caret="@")
    assert "a comparison (< > <= >= = != ==)" in diag.message


def test_syntax_error_single_quoted_string() -> None:
    diag = check_one("T.s = 'x'", message='unexpected character "\'"', column=23, caret="'")
    assert "a string" in diag.message


def test_syntax_error_missing_colon() -> None:
    text = TYPES + "subscription S T.a < 3\n"
    diag, _ = single(text)
    assert (diag.span.line, diag.span.column) == (3, 16)
    assert "unexpected 'T'" in diag.message and "':'" in diag.message and "'('" in diag.message
    assert underlined(diag, text) == "T"


def test_syntax_error_unclosed_type_declaration() -> None:
    text = "type T(a: int\nsubscription S: T\n"
    diag, _ = single(text)
    assert (diag.span.line, diag.span.column) == (2, 1)
    assert "unexpected 'subscription'" in diag.message and "')'" in diag.message and "','" in diag.message
    assert underlined(diag, text) == "subscription"


def test_syntax_error_bad_index() -> None:
    diag = check_one("T[x].a < 3", message="unexpected 'x'; expected an integer", column=19, caret="x")
    assert diag.message.endswith("expected an integer")


def test_syntax_error_unknown_option_key() -> None:
    text = TYPES + "subscription S (colour red): T\n"
    diag, _ = single(text)
    assert diag.message == (
        "unknown option 'colour'; options: matching, disposal, covering, partition by, within D on ATTR, lateness L"
    )
    assert underlined(diag, text) == "colour"


@pytest.mark.parametrize(
    ("options", "message", "caret"),
    [
        ("within 5 at t", "expected 'on' in `within D on ATTR`, not 'at'", "at"),
        ("windows 5 on t", "unknown option 'windows'", "windows"),
        ("within 5", "write the window as `within D on ATTR`", "within 5"),
        ("lateness 5 on t", "lateness takes one number: lateness L", "on"),
        ("within t", "within takes a number", "t"),
    ],
)
def test_window_options_are_checked_where_written(options: str, message: str, caret: str) -> None:
    text = TYPES + f"subscription S ({options}): T\n"
    diag, _ = single(text)
    assert message in diag.message
    assert underlined(diag, text) == caret


def test_on_within_and_lateness_stay_names() -> None:
    program = compile_program(
        "type P(on: bool, within: int, lateness: int)\nsubscription S (within 3 on within): P.on = true"
    )
    assert program.subscriptions[0].window is not None


def test_syntax_error_chained_comparison() -> None:
    check_one("T.a = 3 <= 4", message="unexpected '<='", column=25, caret="<=")


def test_syntax_error_extra_parenthesis() -> None:
    diag = check_one("T.a < 3)", message="unexpected ')'", column=24, caret=")")
    assert "end of input" in diag.message


def test_syntax_error_end_of_input() -> None:
    text = TYPES + "subscription S: T.a < 3 and"
    diag, _ = single(text)
    assert diag.message.startswith("unexpected end of input; expected")
    assert "a name" in diag.message
    assert (diag.span.line, diag.span.column) == (3, 28)  # just after `and`


def test_syntax_error_end_of_input_with_trailing_newlines() -> None:
    """Trailing blank lines do not move the end-of-input position off the last line."""
    text = TYPES + "subscription S: (T.a < 3\n\n\n"
    diag, _ = single(text)
    assert "unexpected end of input" in diag.message and "')'" in diag.message
    assert (diag.span.line, diag.span.column) == (3, 25)


def test_syntax_error_end_of_input_after_trailing_comment() -> None:
    """The end-of-input position is after the last token, not in a trailing comment."""
    text = TYPES + "subscription S: T.a < 3 and # unfinished\n# more comments\n"
    diag, _ = single(text)
    assert "unexpected end of input" in diag.message
    assert diag.span.line == 3, diag.format(text)


def test_syntax_error_is_reported_on_its_line_in_a_long_program() -> None:
    text = "# header\n\n" + TYPES + "subscription S:\n  T.a < 3\n  and U.a >\n  ) or T\n"
    diag, _ = single(text)
    assert (diag.span.line, diag.span.column) == (8, 3)
    assert underlined(diag, text) == ")"


def test_keyword_where_an_operand_is_expected() -> None:
    """`or` is a keyword: a missing operand before it is reported at the `or`."""
    text = "# header\n\n" + TYPES + "subscription S:\n  T.a < 3\n  and U.a >\n  or T\n"
    diag, _ = single(text)
    assert (diag.span.line, diag.span.column) == (8, 3), diag.format(text)
    assert underlined(diag, text) == "or"


def test_syntax_error_invalid_string_escape() -> None:
    check_one('T.s = "\\q"', message="invalid string literal", column=23, caret='"\\q"')


def test_syntax_errors_stop_at_the_first() -> None:
    """A syntax error is reported alone (no cascade of follow-up errors)."""
    err = errors_of(TYPES + "subscription S: T.a < < 3\nsubscription R: T.a > > 3\n")
    assert len(err.diagnostics) == 1


# --- name resolution -------------------------------------------------------------------------


def test_unknown_type() -> None:
    diag = check_one("V.a < 3", message="unknown event type 'V'", column=17, caret="V")
    assert diag.hint is not None and "T, U" in diag.hint


def test_unknown_type_as_wildcard() -> None:
    check_one("T and Nope[2]", message="unknown event type 'Nope'", column=23, caret="Nope")


def test_unknown_type_on_right_side() -> None:
    check_one("T.a < Vx.a", message="unknown event type 'Vx'", column=23, caret="Vx")


def test_unknown_attribute() -> None:
    diag = check_one("T[1].x < 3", message="type T has no attribute 'x'", column=22, caret="x")
    assert diag.hint is not None and "a, f, s, b" in diag.hint


def test_unknown_attribute_in_arithmetic() -> None:
    check_one("T.a + U.zz < 3", message="type U has no attribute 'zz'", column=25, caret="zz")


# --- types of comparisons --------------------------------------------------------------------


def test_str_compared_with_int() -> None:
    check_one("T.s < 3", message="cannot compare str with int", column=17, caret="T.s < 3")


def test_int_compared_with_str() -> None:
    check_one('T.a = "3"', message="cannot compare int with str", column=17, caret='T.a = "3"')


def test_str_compared_with_float_attribute() -> None:
    check_one("U.a > 1 and T.f != T.s", message="cannot compare float with str", column=29, caret="T.f != T.s")


def test_bool_compared_with_int() -> None:
    check_one("T.b = 1", message="cannot compare bool with int", column=17, caret="T.b = 1")


@pytest.mark.parametrize("op", ["<", ">", "<=", ">="])
def test_bool_with_ordering(op: str) -> None:
    condition = f"T.b {op} true"
    check_one(condition, message=f"bool values can only be compared with = or !=, not {op}", column=17, caret=condition)


def test_bool_with_ordering_between_attributes() -> None:
    text = TYPES + "subscription S: T[0].b < T[1].b\n"
    diag, _ = single(text)
    assert "bool" in diag.message and underlined(diag, text) == "T[0].b < T[1].b"


def test_pointless_predicate() -> None:
    diag = check_one("T[0].a < T[0].a", message="pointless predicate", column=17, caret="T[0].a < T[0].a")
    assert "T[0].a" in diag.message


def test_pointless_predicate_short_and_long_forms() -> None:
    """`T.a` and `T[0].a` are the same value."""
    check_one("U and T.a = T[0].a", message="pointless predicate", column=23, caret="T.a = T[0].a")


def test_pointless_predicate_with_arithmetic() -> None:
    check_one("T.a + 1 >= T.a + 1", message="pointless predicate", column=17, caret="T.a + 1 >= T.a + 1")


def test_not_pointless_different_instances() -> None:
    """Same attribute of two instances is a real (binary) predicate."""
    compile_program(TYPES + "subscription S: T[0].a < T[1].a")


def test_comparison_without_instances() -> None:
    check_one("3 < 4", message="involves no event instance", column=17, caret="3 < 4")


def test_conjunction_without_event_type() -> None:
    check_one("T or true", message="names no event type", column=22, caret="true")


# --- declarations and options ----------------------------------------------------------------


def test_duplicate_subscription_name() -> None:
    text = TYPES + "subscription S: T\nsubscription R: U\nsubscription S: U\n"
    diag, _ = single(text)
    assert "duplicate subscription name 'S'" in diag.message and "line 3" in diag.message
    assert (diag.span.line, diag.span.column) == (5, 14)
    assert underlined(diag, text) == "S"


def test_unknown_matching_option() -> None:
    text = TYPES + "subscription S (matching LIFO): T\n"
    diag, _ = single(text)
    assert "unknown matching option 'LIFO'" in diag.message
    assert diag.hint is not None and "FR, MR, FRC, MRC" in diag.hint
    assert (diag.span.line, diag.span.column) == (3, 26)
    assert underlined(diag, text) == "LIFO"


def test_unknown_disposal_option() -> None:
    text = TYPES + "subscription S (matching MR, disposal X): T\n"
    diag, _ = single(text)
    assert "unknown disposal option 'X'" in diag.message
    assert diag.hint is not None and "I, PI, IP, FP" in diag.hint
    assert underlined(diag, text) == "X"


def test_option_values_are_case_sensitive() -> None:
    text = TYPES + "subscription S (matching fr): T\n"
    diag, _ = single(text)
    assert "unknown matching option 'fr'" in diag.message


def test_option_given_twice() -> None:
    text = TYPES + "subscription S (matching MR, matching FR): T\n"
    diag, _ = single(text)
    assert "given twice" in diag.message
    assert underlined(diag, text) == "matching FR"


def test_duplicate_attribute() -> None:
    text = "type T(a: int, b: str, a: float)\n"
    diag, _ = single(text)
    assert "duplicate attribute 'a'" in diag.message
    assert (diag.span.line, diag.span.column) == (1, 24)
    assert underlined(diag, text) == "a"


def test_unknown_attribute_type() -> None:
    text = "type T(a: int, b: string)\n"
    diag, _ = single(text)
    assert "unknown attribute type 'string'" in diag.message
    assert diag.hint is not None and "int, float, str and bool" in diag.hint
    assert (diag.span.line, diag.span.column) == (1, 19)
    assert underlined(diag, text) == "string"


def test_conflicting_type_redeclaration() -> None:
    text = "type T(a: int)\ntype T(a: float)\n"
    diag, _ = single(text)
    assert "declared twice (first at line 1)" in diag.message
    assert underlined(diag, text) == "T"


def test_identical_type_redeclaration_in_one_program() -> None:
    text = "type T(a: int)\ntype T(a: int)\n"
    diag, _ = single(text)
    assert "declared twice (first at line 1)" in diag.message
    assert (diag.span.line, diag.span.column) == (2, 6)


def test_literals_outside_their_range() -> None:
    for literal, message in (
        ("9223372036854775808", "integer literal outside the 64-bit range"),
        ("99999999999999999999999", "integer literal outside the 64-bit range"),
        ("1e400", "decimal literal out of range"),
    ):
        text = f"type T(a: float)\nsubscription S: T.a < {literal}\n"
        diag, _ = single(text)
        assert message in diag.message
        assert underlined(diag, text) == literal


def test_instance_index_limit() -> None:
    text = "type T(a: int)\nsubscription S: T[256].a > 0\n"
    diag, _ = single(text)
    assert "instance index 256 is too large" in diag.message
    assert (diag.span.line, diag.span.column) == (2, 17)


# --- ill-formed expressions ------------------------------------------------------------------


def test_arithmetic_on_strings() -> None:
    check_one('T.s + "x" = "y"', message="arithmetic needs numbers, not str + str", column=17, caret='T.s + "x"')


def test_arithmetic_with_bool() -> None:
    check_one("T.a * T.b > 1", message="arithmetic needs numbers, not int * bool", column=17, caret="T.a * T.b")


def test_negating_a_string() -> None:
    check_one('-T.s = "x"', message="cannot negate a str value", column=17, caret="-T.s")


def test_value_used_as_predicate() -> None:
    diag = check_one("T.a < 3 and T.b", message="is a value, not a predicate", column=29, caret="T.b")
    assert diag.hint is not None


def test_literal_used_as_predicate() -> None:
    check_one("T or 5", message="5 is not a predicate", column=22, caret="5")


def test_false_is_not_a_predicate() -> None:
    check_one("T and false", message="false is not a predicate", column=23, caret="false")


def test_arithmetic_used_as_predicate() -> None:
    check_one("T and T.a + 1", message="arithmetic expression is not a predicate", column=23, caret="T.a + 1")


def test_instance_used_as_value() -> None:
    diag = check_one("T.a < U", message="U[0] is an event instance, not a value", column=23, caret="U")
    assert diag.hint is not None and "U[0].a" in diag.hint


def test_instance_used_as_value_in_arithmetic() -> None:
    check_one("T[1] + 1 > 3", message="T[1] is an event instance, not a value", column=17, caret="T[1]")


def test_condition_used_as_value() -> None:
    check_one("T.a + (T.a < 3) < 3", message="a condition cannot be used as a value", column=24, caret="T.a < 3")


# --- several errors at once ------------------------------------------------------------------


def test_multiple_errors_in_one_run() -> None:
    """Every problem is reported, in source order, each with its own position and caret."""
    text = (
        "type T(a: int, s: str, b: bool, a: int)\n"  # duplicate attribute
        "type U(x: strng)\n"  # unknown attribute type
        "subscription S: V.a < 3 and T.zz > 2\n"  # unknown type, unknown attribute
        "  or T.s < 4 and T.b > true\n"  # str vs int, bool with <
        "subscription R (matching XX): T.a < T.a\n"  # unknown option, pointless
        "subscription S: T\n"  # duplicate name
    )
    err = errors_of(text)
    got = [(d.span.line, d.span.column, underlined(d, text)) for d in err.diagnostics]
    assert got == [
        (1, 33, "a"),
        (2, 11, "strng"),
        (3, 17, "V"),
        (3, 31, "zz"),
        (4, 6, "T.s < 4"),
        (4, 18, "T.b > true"),
        (5, 26, "XX"),
        (5, 31, "T.a < T.a"),
        (6, 14, "S"),
    ]
    messages = [d.message for d in err.diagnostics]
    assert "duplicate attribute" in messages[0]
    assert "unknown attribute type" in messages[1]
    assert "unknown event type" in messages[2]
    assert "no attribute 'zz'" in messages[3]
    assert "cannot compare str with int" in messages[4]
    assert "bool values" in messages[5]
    assert "unknown matching option" in messages[6]
    assert "pointless predicate" in messages[7]
    assert "duplicate subscription name" in messages[8]
    formatted = err.format()
    assert formatted.count("prog.fdc:") == len(err.diagnostics)
    assert formatted.count("error:") == len(err.diagnostics)


def test_errors_in_both_branches_of_or_are_reported() -> None:
    err = errors_of(TYPES + 'subscription S: (T.zz < 1 or U.a = "x") and Nope\n')
    assert [d.span.column for d in err.diagnostics] == [20, 30, 45]


# --- formatting ------------------------------------------------------------------------------


def test_format_includes_filename_source_line_caret_and_hint() -> None:
    text = TYPES + "subscription S: T.a < Q.a\n"
    err = errors_of(text, "my/file.fdc")
    assert err.format().splitlines() == [
        "my/file.fdc:3:23: error: unknown event type 'Q'",
        "    subscription S: T.a < Q.a",
        "                          ^",
        "  hint: declared types: T, U",
    ]
    assert err.filename == "my/file.fdc" and err.text == text


def test_caret_for_span_over_several_lines() -> None:
    """A span that continues on the next line is underlined to the end of its first line."""
    text = TYPES + "subscription S: T.a < 3\n  and T.a <\n  T.a\n"
    diag, _ = single(text)
    assert "pointless" in diag.message
    assert (diag.span.line, diag.span.column) == (4, 7)
    assert underlined(diag, text) == "T.a <"


def test_caret_under_text_after_tab() -> None:
    """The caret stays under the offending text when the source line holds a tab."""
    text = TYPES + "subscription S:\tT.a < 3 and\tT.zz < 4\n"
    diag, _ = single(text)
    assert (diag.span.line, diag.span.column) == (3, 31)
    assert underlined(diag, text) == "zz"


@pytest.mark.parametrize(
    "odd",
    [
        pytest.param("\x0c", id="form-feed-whitespace"),
        pytest.param("# note\u2028 more", id="line-separator-in-comment"),
        pytest.param("# note\x85 more", id="next-line-in-comment"),
    ],
)
def test_source_line_shown_matches_reported_line(odd: str) -> None:
    """Lines are counted by newlines only: a form feed (whitespace) or a Unicode line separator
    inside a comment must not shift the source line shown under the message."""
    text = f"type T(a: int){odd}\nsubscription S: T.zz < 1\n"
    diag, _ = single(text)
    assert (diag.span.line, diag.span.column) == (2, 19)
    assert diag.format(text).splitlines()[1] == "    subscription S: T.zz < 1"
    assert underlined(diag, text) == "zz"


def test_a_huge_line_is_shown_around_its_error_only() -> None:
    """A 5,000-digit literal: the message shows a window of the line with the caret under it."""
    source = "type A(x: int)\nsubscription S: A and A.x > " + "9" * 5000 + " and A.x < 3\n"
    with pytest.raises(ProgramError) as info:
        compile_program(source)
    head, line, caret = info.value.format().split("\n")[:3]
    assert head == "<program>:2:29: error: integer literal outside the 64-bit range"
    assert len(line) < 200 and line.endswith("…") and "subscription S" in line
    assert caret.index("^") == line.index("9")
