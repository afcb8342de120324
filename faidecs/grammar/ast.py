"""The syntax tree of a faidecs program, as written, with source spans.

Nodes are immutable. Every node carries the :class:`Span` of the text it came from so that
the checker can point at the offending text with a caret.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from faidecs.span import Span as Span  # re-exported: spans are part of the tree's vocabulary


@dataclass(frozen=True, slots=True)
class AttributeDecl:
    name: str
    kind: str
    span: Span = field(compare=False)
    kind_span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class TypeDecl:
    name: str
    attributes: tuple[AttributeDecl, ...]
    span: Span = field(compare=False)
    name_span: Span = field(compare=False)
    source: str = field(compare=False)


@dataclass(frozen=True, slots=True)
class OptionSetting:
    key: str  # "matching", "disposal", "covering" or "partition" (value: the attribute)
    value: str
    span: Span = field(compare=False)
    value_span: Span = field(compare=False)


# --- expressions -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ref:
    """`T`, `T[i]`, `T.a` or `T[i].a`; `index` defaults to 0, `attribute` is None for `T[i]`."""

    type_name: str
    index: int
    attribute: str | None
    span: Span = field(compare=False)
    type_span: Span = field(compare=False)
    attribute_span: Span | None = field(compare=False, default=None)


@dataclass(frozen=True, slots=True)
class Literal:
    value: int | float | str | bool
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Neg:
    operand: Expr
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Arith:
    op: str  # + - * /
    left: Expr
    right: Expr
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Compare:
    op: str  # < > <= >= = != (`==` is read as `=`)
    left: Expr
    right: Expr
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class And:
    left: Expr
    right: Expr
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Or:
    left: Expr
    right: Expr
    span: Span = field(compare=False)


Expr = Ref | Literal | Neg | Arith | Compare | And | Or


@dataclass(frozen=True, slots=True)
class SubscriptionDecl:
    name: str
    options: tuple[OptionSetting, ...]
    condition: Expr
    span: Span = field(compare=False)
    name_span: Span = field(compare=False)
    source: str = field(compare=False)


Declaration = TypeDecl | SubscriptionDecl


@dataclass(frozen=True, slots=True)
class ProgramSyntax:
    declarations: tuple[Declaration, ...]
    text: str = field(compare=False, repr=False)
