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
    key: str  # "matching", "disposal", "covering", "partition" (value: the attribute), "within", "lateness"
    value: str
    span: Span = field(compare=False)
    value_span: Span = field(compare=False)
    #: ``within D on ATTR``: the attribute (``value`` is D).
    attribute: str | None = None
    attribute_span: Span | None = field(compare=False, default=None)


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


@dataclass(frozen=True, slots=True)
class Call:
    """``prev(T).a`` or an aggregate ``count(T)``, ``sum(T.a)``, ...: ``function`` as written."""

    function: str
    argument: Ref
    attribute: str | None  # after the call: ``prev(T).a``
    span: Span = field(compare=False)
    function_span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Group:
    """``T+``: T's one slot binds a run of queued events (Kleene closure)."""

    type_name: str
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class NoEvent:
    """``no N(cond) between X and Y`` or ``no N(cond) after X`` (``second`` is None)."""

    type_name: str
    condition: Expr | None
    kind: str  # "between" or "after"
    first: Ref
    second: Ref | None
    span: Span = field(compare=False)
    type_span: Span = field(compare=False)


Expr = Ref | Literal | Neg | Arith | Compare | And | Or | Call | Group | NoEvent


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
