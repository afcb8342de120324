"""Text to syntax tree: the lark parser and the transformer to :mod:`faidecs.grammar.ast`."""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from typing import Any

from lark import Lark, Token, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError
from lark.visitors import Transformer_NonRecursive

from faidecs.errors import Diagnostic, FaidecsError, ProgramError
from faidecs.grammar import ast
from faidecs.grammar.checker import MAX_INSTANCE_INDEX

# Readable names for the terminals lark reports as expected.
_TERMINAL_NAMES = {
    "NAME": "a name",
    "INT": "an integer",
    "DECIMAL": "a decimal",
    "STRING": "a string",
    "CMP_OP": "a comparison (< > <= >= = != ==)",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "MATCHING": "'matching'",
    "DISPOSAL": "'disposal'",
    "COVERING": "'covering'",
    "PARTITION": "'partition'",
    "BY": "'by'",
    "KLEENE": "a group (T+)",
    "NO": "'no'",
    "BETWEEN": "'between'",
    "AFTER": "'after'",
    "TRUE": "'true'",
    "FALSE": "'false'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COLON": "':'",
    "COMMA": "','",
    "DOT": "'.'",
    "TYPE": "'type'",
    "SUBSCRIPTION": "'subscription'",
    "AND": "'and'",
    "OR": "'or'",
    "$END": "end of input",
}


@lru_cache(maxsize=1)
def _lark() -> Lark:
    grammar = resources.files("faidecs.grammar").joinpath("faidecs.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=True)


def _span_of(meta: Any) -> ast.Span:
    return ast.Span(meta.line, meta.column, meta.end_line, meta.end_column, meta.start_pos, meta.end_pos)


def _token_span(tok: Token) -> ast.Span:
    return ast.Span(
        tok.line or 0,
        tok.column or 0,
        tok.end_line or 0,
        tok.end_column or 0,
        tok.start_pos or 0,
        tok.end_pos or 0,
    )


class _BadLiteral(FaidecsError):
    def __init__(self, message: str, span: ast.Span):
        super().__init__(message)
        self.span = span


#: Digits of an integer that can still be in the 64-bit range (2**63 has 19), after leading
#: zeros. Longer literals are refused before ``int()`` reads them: Python refuses to convert more
#: than 4,300 digits, and reading them costs time quadratic in their length.
_MAX_INT_DIGITS = 19
#: Digits of an instance index after leading zeros: more cannot be within the checker's limit.
_MAX_INDEX_DIGITS = len(str(MAX_INSTANCE_INDEX))


_OPTIONS = "matching, disposal, covering, partition by, within D on ATTR, lateness L"


def _expect_word(tok: Token, words: tuple[str, ...], what: str) -> None:
    if str(tok) not in words:
        raise _BadLiteral(
            f"unknown option {str(tok)!r}; options: {_OPTIONS}"
            if what == "an option"
            else f"expected {' or '.join(repr(w) for w in words)} in {what}, not {str(tok)!r}",
            _token_span(tok),
        )


def _digits(tok: Token) -> str:
    """The significant digits of an INT token (``"0"`` for zero)."""
    return str(tok).lstrip("0") or "0"


def _shortened(digits: str) -> str:
    """A long number as messages show it: its first digits and its length."""
    return digits if len(digits) <= 20 else f"{digits[:12]}... ({len(digits)} digits)"


# Non-recursive: a chain of `or`, `and` or `+` is a left-deep tree as deep as the chain is long,
# and lark's recursive Transformer exhausts the Python stack at about 490 operands.
@v_args(meta=True)
class _ToAst(Transformer_NonRecursive[Token, Any]):
    def __init__(self, text: str):
        super().__init__()
        self._text = text

    def start(self, meta: Any, children: list[Any]) -> ast.ProgramSyntax:
        return ast.ProgramSyntax(tuple(children), self._text)

    def type_decl(self, meta: Any, children: list[Any]) -> ast.TypeDecl:
        name, *attributes = children
        attrs = tuple(a for a in attributes if a is not None)
        span = _span_of(meta)
        return ast.TypeDecl(str(name), attrs, span, _token_span(name), self._text[span.start : span.end])

    def attribute(self, meta: Any, children: list[Token]) -> ast.AttributeDecl:
        name, kind = children
        return ast.AttributeDecl(str(name), str(kind), _token_span(name), _token_span(kind))

    def subscription_decl(self, meta: Any, children: list[Any]) -> ast.SubscriptionDecl:
        name, options, condition = children
        span = _span_of(meta)
        return ast.SubscriptionDecl(
            str(name),
            tuple(options or ()),
            condition,
            span,
            _token_span(name),
            self._text[span.start : span.end],
        )

    def options(self, meta: Any, children: list[ast.OptionSetting]) -> list[ast.OptionSetting]:
        return children

    def option(self, meta: Any, children: list[Token]) -> ast.OptionSetting:
        key, value = children
        return ast.OptionSetting(str(key), str(value), _span_of(meta), _token_span(value))

    def window_option(self, meta: Any, children: list[Any]) -> ast.OptionSetting:
        key, number, on, attribute = children
        _expect_word(key, ("within", "lateness"), "an option")
        if str(key) == "lateness":
            raise _BadLiteral("lateness takes one number: lateness L", _token_span(on))
        _expect_word(on, ("on",), "`within D on ATTR`")
        return ast.OptionSetting(
            "within", str(number), _span_of(meta), _token_span(number), str(attribute), _token_span(attribute)
        )

    def lateness_option(self, meta: Any, children: list[Any]) -> ast.OptionSetting:
        key, number = children
        _expect_word(key, ("lateness", "within"), "an option")
        if str(key) == "within":
            raise _BadLiteral("write the window as `within D on ATTR`", _span_of(meta))
        return ast.OptionSetting("lateness", str(number), _span_of(meta), _token_span(number))

    def unknown_option(self, meta: Any, children: list[Any]) -> ast.OptionSetting:
        key = children[0]
        if str(key) in ("within", "lateness"):
            raise _BadLiteral(f"{key} takes a number: `within D on ATTR`, `lateness L`", _token_span(children[1]))
        raise _BadLiteral(f"unknown option {str(key)!r}; options: {_OPTIONS}", _token_span(key))

    def number(self, meta: Any, children: list[Token]) -> Token:
        return children[0]

    def call(self, meta: Any, children: list[Any]) -> ast.Call:
        name, argument, attribute = children
        return ast.Call(
            str(name), argument, None if attribute is None else str(attribute), _span_of(meta), _token_span(name)
        )

    def group(self, meta: Any, children: list[Token]) -> ast.Group:
        return ast.Group(str(children[0])[:-1], _token_span(children[0]))

    def no_between(self, meta: Any, children: list[Any]) -> ast.NoEvent:
        _no, name, condition, _between, first, second = children
        return ast.NoEvent(str(name), condition, "between", first, second, _span_of(meta), _token_span(name))

    def no_after(self, meta: Any, children: list[Any]) -> ast.NoEvent:
        _no, name, condition, _after, first = children
        return ast.NoEvent(str(name), condition, "after", first, None, _span_of(meta), _token_span(name))

    def or_(self, meta: Any, children: list[ast.Expr]) -> ast.Or:
        return ast.Or(children[0], children[1], _span_of(meta))

    def and_(self, meta: Any, children: list[ast.Expr]) -> ast.And:
        return ast.And(children[0], children[1], _span_of(meta))

    def compare(self, meta: Any, children: list[Any]) -> ast.Compare:
        left, op, right = children
        return ast.Compare("=" if op == "==" else str(op), left, right, _span_of(meta))

    def _arith(self, op: str, meta: Any, children: list[Any]) -> ast.Arith:
        left, right = children
        return ast.Arith(op, left, right, _span_of(meta))

    def add(self, meta: Any, children: list[Any]) -> ast.Arith:
        return self._arith("+", meta, children)

    def sub(self, meta: Any, children: list[Any]) -> ast.Arith:
        return self._arith("-", meta, children)

    def mul(self, meta: Any, children: list[Any]) -> ast.Arith:
        return self._arith("*", meta, children)

    def div(self, meta: Any, children: list[Any]) -> ast.Arith:
        return self._arith("/", meta, children)

    def neg(self, meta: Any, children: list[ast.Expr]) -> ast.Expr:
        operand = children[0]
        span = _span_of(meta)
        # Fold `-5` into a literal so that negative constants print and compare as constants.
        if (
            isinstance(operand, ast.Literal)
            and isinstance(operand.value, (int, float))
            and not isinstance(operand.value, bool)
        ):
            return ast.Literal(-operand.value, span)
        return ast.Neg(operand, span)

    def ref(self, meta: Any, children: list[Any]) -> ast.Ref:
        name, index, attribute = children
        return ast.Ref(
            str(name),
            0 if index is None else index,
            None if attribute is None else str(attribute),
            _span_of(meta),
            _token_span(name),
            None if attribute is None else _token_span(attribute),
        )

    def index(self, meta: Any, children: list[Token]) -> int:
        digits = _digits(children[0])
        if len(digits) > _MAX_INDEX_DIGITS:
            # The checker bounds smaller indexes with the same message, at the reference.
            raise _BadLiteral(
                f"instance index {_shortened(digits)} is too large (at most {MAX_INSTANCE_INDEX})",
                _token_span(children[0]),
            )
        return int(digits)

    def int_lit(self, meta: Any, children: list[Token]) -> ast.Literal:
        # Bounded like event integers; 2**63 itself is allowed so that -2**63 can be written.
        digits = _digits(children[0])
        value = int(digits) if len(digits) <= _MAX_INT_DIGITS else None
        if value is None or value > 2**63:
            raise _BadLiteral("integer literal outside the 64-bit range", _token_span(children[0]))
        return ast.Literal(value, _token_span(children[0]))

    def float_lit(self, meta: Any, children: list[Token]) -> ast.Literal:
        value = float(children[0])
        if not math.isfinite(value):
            raise _BadLiteral("decimal literal out of range", _token_span(children[0]))
        return ast.Literal(value, _token_span(children[0]))

    def str_lit(self, meta: Any, children: list[Token]) -> ast.Literal:
        tok = children[0]
        try:
            value = json.loads(str(tok))
            value.encode("utf-8")
        except json.JSONDecodeError as exc:
            raise _BadLiteral(
                f"invalid string literal: {exc.msg.removesuffix(' at')} at character {exc.pos + 1} of the literal",
                _token_span(tok),
            ) from None
        except UnicodeEncodeError:
            raise _BadLiteral("invalid string literal: lone surrogate escape", _token_span(tok)) from None
        return ast.Literal(value, _token_span(tok))

    def true_lit(self, meta: Any, children: list[Token]) -> ast.Literal:
        return ast.Literal(True, _token_span(children[0]))

    def false_lit(self, meta: Any, children: list[Token]) -> ast.Literal:
        return ast.Literal(False, _token_span(children[0]))


def _expected(terminals: set[str] | frozenset[str]) -> str:
    names = sorted({_TERMINAL_NAMES.get(t, t) for t in terminals})
    return ", ".join(names)


def _end_of_input(text: str) -> ast.Span:
    """Where input ends for a reader: just after the last token (comments and blanks do not count)."""
    end = 0
    for tok in _lark().lex(text):
        end = tok.end_pos or end
    line = text.count("\n", 0, end) + 1
    column = end - (text.rfind("\n", 0, end) + 1) + 1
    return ast.Span(line, column, line, column + 1, end, end)


def _syntax_diagnostic(err: UnexpectedInput, text: str) -> Diagnostic:
    if isinstance(err, UnexpectedEOF) or (isinstance(err, UnexpectedToken) and err.token.type == "$END"):
        return Diagnostic(f"unexpected end of input; expected {_expected(set(err.expected))}", _end_of_input(text))
    if isinstance(err, UnexpectedToken):
        tok = err.token
        span = _token_span(tok)
        return Diagnostic(f"unexpected {str(tok)!r}; expected {_expected(err.expected)}", span)
    assert isinstance(err, UnexpectedCharacters)
    pos = err.pos_in_stream or 0
    span = ast.Span(err.line, err.column, err.line, err.column + 1, pos, pos + 1)
    allowed = _expected(err.allowed) if err.allowed else "a declaration"
    return Diagnostic(f"unexpected character {text[pos]!r}; expected {allowed}", span)


def parse(text: str, filename: str = "<program>") -> ast.ProgramSyntax:
    """Parse program text into its syntax tree, or raise :class:`ProgramError` with the position."""
    result = _parse(text)
    if isinstance(result, Diagnostic):
        raise ProgramError([result], text, filename)
    return result


@lru_cache(maxsize=4096)
def _parse(text: str) -> ast.ProgramSyntax | Diagnostic:
    # Cached on the text alone: trees are immutable, and replicas, joining subscribers and the
    # lab parse the same texts over and over.
    try:
        tree: Tree[Token] = _lark().parse(text)
    except UnexpectedInput as err:
        return _syntax_diagnostic(err, text)
    try:
        result = _ToAst(text).transform(tree)
    except VisitError as err:
        if isinstance(err.orig_exc, _BadLiteral):
            return Diagnostic(str(err.orig_exc), err.orig_exc.span)
        raise
    assert isinstance(result, ast.ProgramSyntax)
    return result
