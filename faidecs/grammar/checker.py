"""Static checking: resolve names, check kinds, reject pointless predicates.

The checker collects every problem it finds (not just the first), each with the span of the
offending text. Its output is a resolved boolean tree per subscription that
:mod:`faidecs.grammar.normaliser` brings into disjunctive normal form.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from faidecs.errors import Diagnostic, FaidecsError
from faidecs.grammar import ast
from faidecs.grammar.model import (
    AGGREGATES,
    Aggregate,
    ArithOp,
    Attribute,
    AttrOf,
    Const,
    Covering,
    Disposal,
    EventType,
    Kind,
    Matching,
    Negate,
    Negation,
    NegationKind,
    Predicate,
    PrevOf,
    Slot,
    Subscription,
    Value,
    Window,
    value_slots,
    value_text,
)

KINDS = {k.value: k for k in Kind}
#: Instances are numbered 0..MAX_INSTANCE_INDEX: a signature slot costs search depth and state.
MAX_INSTANCE_INDEX = 255
#: Operators (unary minus, + - * /) nested in one operand of a comparison. Every consumer of a
#: value (the reference evaluator, the kernel generator, the overlay's wire format, which accepts
#: 100) walks it recursively; the bound keeps them far from the Python stack's limit. `and` and
#: `or` are not bounded: they are flattened here, and only the conjunction limit applies to them.
MAX_VALUE_DEPTH = 64
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
DEFAULT_MATCHING = Matching.FR
DEFAULT_DISPOSAL = Disposal.PI


# --- resolved boolean structure ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Atom:
    """A predicate, a wildcard `T[i]` (declares instances only), `true`, a group `T+` (declares
    T as a group), or a negation (declares its anchors)."""

    predicate: Predicate | None
    wildcard: Slot | None
    span: ast.Span
    group: str | None = None
    negation: Negation | None = None


# n-ary, not binary: a chain of 1,000 `or`s (or 10,000 `and`s) is one node with that many
# parts, so that no later pass recurses once per operand. Not frozen: the checker appends to
# ``parts`` while it reads a chain (each list belongs to one node).
@dataclass(slots=True)
class AllOf:
    parts: list[Condition]


@dataclass(slots=True)
class AnyOf:
    parts: list[Condition]


Condition = Atom | AllOf | AnyOf


@dataclass(frozen=True, slots=True)
class CheckedSubscription:
    name: str
    matching: Matching
    disposal: Disposal
    covering: Covering
    condition: Condition
    span: ast.Span
    source: str
    partition_by: str | None = None
    partition_span: ast.Span | None = None
    window: Window | None = None
    window_span: ast.Span | None = None


class _Invalid(FaidecsError):
    """Raised inside expression checking once a diagnostic has been recorded."""


class Checker:
    def __init__(self, known_types: Mapping[str, EventType] | None = None):
        self.diagnostics: list[Diagnostic] = []
        self.types: dict[str, EventType] = dict(known_types or {})

    def error(self, message: str, span: ast.Span, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(message, span, hint))

    # --- declarations ------------------------------------------------------------------

    def declare_types(self, decls: Iterable[ast.TypeDecl]) -> list[EventType]:
        new: list[EventType] = []
        here: dict[str, ast.TypeDecl] = {}
        for decl in decls:
            if decl.name in here:
                first = here[decl.name].name_span.line
                self.error(f"type {decl.name} is declared twice (first at line {first})", decl.name_span)
                continue
            here[decl.name] = decl
            attrs: list[Attribute] = []
            seen: set[str] = set()
            for a in decl.attributes:
                # A faulty attribute is reported and left out, but the type is still declared so
                # that subscriptions using it are checked too rather than drowned in follow-ups.
                if a.name in seen:
                    self.error(f"duplicate attribute {a.name!r} in type {decl.name}", a.span)
                    continue
                seen.add(a.name)
                kind = KINDS.get(a.kind)
                if kind is None:
                    self.error(
                        f"unknown attribute type {a.kind!r}",
                        a.kind_span,
                        hint="attribute types are int, float, str and bool",
                    )
                    continue
                attrs.append(Attribute(a.name, kind))
            event_type = EventType(decl.name, tuple(attrs), decl.source)
            existing = self.types.get(decl.name)
            if existing is not None:
                # An identical redeclaration (e.g. in a subscription added at run time) is harmless.
                if existing.attributes != event_type.attributes:
                    self.error(f"type {decl.name} is already declared as {existing.declaration()}", decl.name_span)
                continue
            self.types[decl.name] = event_type
            new.append(event_type)
        return new

    def check_subscription(self, decl: ast.SubscriptionDecl) -> CheckedSubscription | None:
        before = len(self.diagnostics)
        matching, disposal, covering = self._options(decl.options)
        window, window_span = self._window(decl.options)
        staged = next((o for o in decl.options if o.key == "covering" and o.value == "staged"), None)
        if staged is not None and (window is not None or Matching.ALL is matching or disposal is Disposal.NONE):
            self.error(
                "covering staged does not combine with windows, matching ALL or disposal NONE yet",
                staged.span,
                hint="use covering plain (the default)",
            )
        condition = self._condition(decl.condition)
        if condition is None or len(self.diagnostics) > before:
            return None
        partition = next((o for o in decl.options if o.key == "partition"), None)
        return CheckedSubscription(
            decl.name,
            matching,
            disposal,
            covering,
            condition,
            decl.span,
            decl.source,
            partition.value if partition else None,
            partition.value_span if partition else None,
            window,
            window_span,
        )

    def _window(self, options: tuple[ast.OptionSetting, ...]) -> tuple[Window | None, ast.Span | None]:
        """``within D on ATTR`` and ``lateness L``: positive numbers; lateness needs a window."""
        within = next((o for o in options if o.key == "within"), None)
        late = next((o for o in options if o.key == "lateness"), None)
        if within is None:
            if late is not None:
                self.error("lateness needs a window", late.span, hint="add `within D on ATTR`")
            return None, None
        duration = _number(within.value)
        if duration <= 0 or not math.isfinite(duration):
            self.error(f"window duration must be a positive number, not {within.value}", within.value_span)
            return None, None
        lateness: int | float = 0
        if late is not None:
            lateness = _number(late.value)
            if not math.isfinite(lateness):
                self.error(f"lateness must be a finite number, not {late.value}", late.value_span)
        assert within.attribute is not None
        return Window(duration, within.attribute, lateness), within.span

    def check_window(self, sub: Subscription, window: Window, span: ast.Span) -> None:
        """Every event type of the subscription, negated ones included, has the window's
        attribute, and it is a number."""
        for type_name in sorted(sub.types):
            attr = next((a for a in self.types[type_name].attributes if a.name == window.attribute), None)
            if attr is None:
                self.error(
                    f"within ... on {window.attribute}: type {type_name} has no attribute {window.attribute!r}",
                    span,
                    hint="every event type of a windowed subscription needs the time attribute",
                )
            elif not attr.kind.numeric:
                self.error(
                    f"within ... on {window.attribute}: {type_name}.{window.attribute} is {attr.kind.value}, "
                    "not a number",
                    span,
                )

    def check_partition(self, sub: Subscription, attribute: str, span: ast.Span) -> None:
        """Every event type of the subscription has the partition attribute, with one kind."""
        kinds: dict[str, list[str]] = {}
        for type_name in sorted(sub.types):
            attr = next((a for a in self.types[type_name].attributes if a.name == attribute), None)
            if attr is None:
                self.error(
                    f"partition by {attribute}: type {type_name} has no attribute {attribute!r}",
                    span,
                    hint="every event type of a partitioned subscription needs the attribute",
                )
            else:
                kinds.setdefault(attr.kind.value, []).append(type_name)
        if len(kinds) > 1:
            found = "; ".join(f"{k} in {', '.join(ts)}" for k, ts in sorted(kinds.items()))
            self.error(f"partition by {attribute}: the attribute's kind differs between types ({found})", span)

    def _options(self, options: tuple[ast.OptionSetting, ...]) -> tuple[Matching, Disposal, Covering]:
        matching, disposal, covering = DEFAULT_MATCHING, DEFAULT_DISPOSAL, Covering.PLAIN
        seen: set[str] = set()
        for opt in options:
            if opt.key in seen:
                self.error(f"option {opt.key!r} given twice", opt.span)
            seen.add(opt.key)
            if opt.key == "matching":
                try:
                    matching = Matching(opt.value)
                except ValueError:
                    self.error(
                        f"unknown matching option {opt.value!r}", opt.value_span, hint="one of FR, MR, FRC, MRC, ALL"
                    )
            elif opt.key in ("partition", "within", "lateness"):
                pass  # checked against the subscription's types once normalised, or by _window
            elif opt.key == "disposal":
                try:
                    disposal = Disposal(opt.value)
                except ValueError:
                    self.error(
                        f"unknown disposal option {opt.value!r}", opt.value_span, hint="one of I, PI, IP, FP, NONE"
                    )
            else:
                try:
                    covering = Covering(opt.value)
                except ValueError:
                    self.error(f"unknown covering option {opt.value!r}", opt.value_span, hint="one of plain, staged")
        if matching is Matching.ALL and disposal is not Disposal.NONE:
            where = next(o for o in options if o.key == "matching")
            self.error(
                f"matching ALL needs disposal NONE, not {disposal.value}",
                where.span,
                hint="every match of every event is delivered, so nothing can be disposed of",
            )
        return matching, disposal, covering

    # --- conditions --------------------------------------------------------------------

    def _condition(self, expr: ast.Expr) -> Condition | None:
        """The resolved condition, or None after recording diagnostics. Both sides of every
        `and`/`or` are checked, so one run reports every faulty predicate.

        Iterative (an explicit post-order stack): chains of `and`/`or` and parentheses may nest
        as deep as the text allows. A chain of one operator becomes one n-ary node."""
        done: list[Condition | None] = []  # results of the subtrees finished so far
        todo: list[tuple[ast.Expr, bool]] = [(expr, False)]
        while todo:
            node, children_done = todo.pop()
            if not isinstance(node, (ast.Or, ast.And)):
                try:
                    done.append(self._atom(node))
                except _Invalid:
                    done.append(None)
            elif not children_done:
                todo += [(node, True), (node.right, False), (node.left, False)]  # left runs first
            else:
                right, left = done.pop(), done.pop()
                done.append(None if left is None or right is None else _joined(isinstance(node, ast.Or), left, right))
        (result,) = done
        return result

    def _atom(self, expr: ast.Expr) -> Atom:
        if isinstance(expr, ast.Ref):
            if expr.attribute is not None:
                self.error(
                    f"{expr.type_name}[{expr.index}].{expr.attribute} is a value, not a predicate",
                    expr.span,
                    hint="compare it, e.g. T.a > 0, or name the instance alone, e.g. T[0]",
                )
                raise _Invalid
            slot = self._slot(expr)
            return Atom(None, slot, expr.span)
        if isinstance(expr, ast.Literal):
            if expr.value is True:
                return Atom(None, None, expr.span)
            self.error(f"{value_text(Const(expr.value, _literal_kind(expr.value)))} is not a predicate", expr.span)
            raise _Invalid
        if isinstance(expr, ast.Compare):
            return Atom(self._comparison(expr), None, expr.span)
        if isinstance(expr, ast.Group):
            slot = self._slot(ast.Ref(expr.type_name, 0, None, expr.span, expr.span))
            return Atom(None, slot, expr.span, group=expr.type_name)
        if isinstance(expr, ast.NoEvent):
            return Atom(None, None, expr.span, negation=self._negation(expr))
        if isinstance(expr, ast.Call):
            self.error(f"{expr.function}(...) is a value, not a predicate; compare it with something", expr.span)
            raise _Invalid
        self.error("an arithmetic expression is not a predicate; compare it with something", expr.span)
        raise _Invalid

    def _negation(self, expr: ast.NoEvent) -> Negation:
        self._slot(ast.Ref(expr.type_name, 0, None, expr.type_span, expr.type_span))
        anchors: list[Slot] = []
        for ref in (expr.first, expr.second):
            if ref is None:
                continue
            if ref.attribute is not None:
                self.error("a negation's anchor is an event instance, e.g. T[0], not a value", ref.span)
                raise _Invalid
            anchors.append(self._slot(ref))
        if expr.type_name in {a.type_name for a in anchors}:
            self.error(f"no {expr.type_name} ... cannot be anchored on {expr.type_name} itself", expr.span)
            raise _Invalid
        preds: dict[str, Predicate] = {}
        todo: list[ast.Expr] = [] if expr.condition is None else [expr.condition]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.And):
                todo += [node.right, node.left]
            elif isinstance(node, ast.Compare):
                pred = self._comparison(node, frozenset((expr.type_name,)))
                if Slot(expr.type_name, 0) not in pred.slots:
                    self.error(
                        f"this condition does not involve the negated event {expr.type_name}",
                        node.span,
                        hint="move it out of the negation",
                    )
                    raise _Invalid
                if any(s.type_name == expr.type_name and s.index != 0 for s in pred.slots):
                    self.error(f"the negated event is {expr.type_name}, without an index", node.span)
                    raise _Invalid
                preds.setdefault(pred.text, pred)
            else:
                self.error("a negation's condition is comparisons joined by `and`", node.span)
                raise _Invalid
        kind = NegationKind(expr.kind)
        second = anchors[1] if kind is NegationKind.BETWEEN else None
        return Negation(expr.type_name, kind, anchors[0], second, tuple(preds[k] for k in sorted(preds)))

    def _comparison(self, expr: ast.Compare, bare: frozenset[str] = frozenset()) -> Predicate:
        for side in (expr.left, expr.right):
            if _depth(side) > MAX_VALUE_DEPTH:
                self.error(
                    f"expression nested too deeply: more than {MAX_VALUE_DEPTH} operators inside one another",
                    side.span,
                    hint="split it with a comparison of partial sums, or use fewer operators",
                )
                raise _Invalid
        left = self._value(expr.left)
        right = self._value(expr.right)
        lk, rk = left.kind, right.kind
        if lk.numeric and rk.numeric:
            pass
        elif lk is rk is Kind.STR:
            pass
        elif lk is rk is Kind.BOOL:
            if expr.op not in ("=", "!="):
                self.error(f"bool values can only be compared with = or !=, not {expr.op}", expr.span)
                raise _Invalid
        else:
            self.error(f"cannot compare {lk.value} with {rk.value}", expr.span)
            raise _Invalid
        if not value_slots(left) and not value_slots(right):
            self.error("this comparison involves no event instance", expr.span)
            raise _Invalid
        if value_text(left) == value_text(right):
            self.error(
                f"pointless predicate: both sides are {value_text(left)}",
                expr.span,
                hint="it is always true or always false; compare different attributes or instances",
            )
            raise _Invalid
        return Predicate.make(expr.op, left, right, expr.span, bare)

    def _value(self, expr: ast.Expr) -> Value:
        if isinstance(expr, ast.Literal):
            kind = _literal_kind(expr.value)
            if kind is Kind.INT and not INT64_MIN <= expr.value <= INT64_MAX:  # type: ignore[operator]
                self.error("integer literal outside the 64-bit range", expr.span)
                raise _Invalid
            return Const(expr.value, kind)
        if isinstance(expr, ast.Ref):
            slot = self._slot(expr)
            if expr.attribute is None:
                self.error(
                    f"{slot} is an event instance, not a value",
                    expr.span,
                    hint=f"name one of its attributes, e.g. {slot}.{self._example_attribute(expr.type_name)}",
                )
                raise _Invalid
            event_type = self.types[expr.type_name]
            try:
                position = event_type.position(expr.attribute)
            except KeyError:
                names = ", ".join(a.name for a in event_type.attributes) or "none"
                assert expr.attribute_span is not None
                self.error(
                    f"type {expr.type_name} has no attribute {expr.attribute!r}",
                    expr.attribute_span,
                    hint=f"its attributes: {names}",
                )
                raise _Invalid from None
            return AttrOf(slot, expr.attribute, position, event_type.attributes[position].kind)
        if isinstance(expr, ast.Call):
            return self._call(expr)
        if isinstance(expr, ast.Neg):
            operand = self._value(expr.operand)
            if not operand.kind.numeric:
                self.error(f"cannot negate a {operand.kind.value} value", expr.span)
                raise _Invalid
            return Negate(operand, operand.kind)
        if isinstance(expr, ast.Arith):
            left = self._value(expr.left)
            right = self._value(expr.right)
            if not (left.kind.numeric and right.kind.numeric):
                self.error(
                    f"arithmetic needs numbers, not {left.kind.value} {expr.op} {right.kind.value}",
                    expr.span,
                )
                raise _Invalid
            kind = Kind.INT if (left.kind is right.kind is Kind.INT and expr.op != "/") else Kind.FLOAT
            return ArithOp(expr.op, left, right, kind)
        self.error("a condition cannot be used as a value", expr.span)
        raise _Invalid

    def _call(self, expr: ast.Call) -> Value:
        """``prev(T).a`` or an aggregate; that T is a group is checked once the conjunction is known."""
        arg, name = expr.argument, expr.function
        if name not in ("prev", *AGGREGATES):
            self.error(
                f"unknown function {name!r}",
                expr.function_span,
                hint="functions: prev(T).a, count(T), sum(T.a), avg(T.a), min(T.a), max(T.a)",
            )
            raise _Invalid
        if arg.index != 0 or arg.span.end - arg.type_span.end not in (0, len(f".{arg.attribute}")):
            self.error(f"{name}(...) takes a group's type, e.g. {name}({arg.type_name}), not an instance", arg.span)
            raise _Invalid
        slot = self._slot(arg)
        event_type = self.types[arg.type_name]
        if name == "prev" or name == "count":
            wanted = expr.attribute if name == "prev" else None
            if arg.attribute is not None or (name == "prev") != (expr.attribute is not None):
                shape = f"prev({arg.type_name}).a" if name == "prev" else f"count({arg.type_name})"
                self.error(f"write {shape}", expr.span)
                raise _Invalid
            if wanted is None:
                return Aggregate("count", slot, None, -1, Kind.INT)
            position = self._position(event_type, wanted, expr.span)
            return PrevOf(slot, wanted, position, event_type.attributes[position].kind)
        if arg.attribute is None or expr.attribute is not None:
            self.error(f"write {name}({arg.type_name}.a): the aggregate of one attribute", expr.span)
            raise _Invalid
        position = self._position(event_type, arg.attribute, arg.attribute_span or arg.span)
        kind = event_type.attributes[position].kind
        if not kind.numeric:
            self.error(f"{name}(...) needs a number, and {arg.type_name}.{arg.attribute} is {kind.value}", expr.span)
            raise _Invalid
        return Aggregate(name, slot, arg.attribute, position, Kind.FLOAT if name == "avg" else kind)

    def _position(self, event_type: EventType, attribute: str, span: ast.Span) -> int:
        try:
            return event_type.position(attribute)
        except KeyError:
            names = ", ".join(a.name for a in event_type.attributes) or "none"
            self.error(f"type {event_type.name} has no attribute {attribute!r}", span, hint=f"its attributes: {names}")
            raise _Invalid from None

    def _slot(self, ref: ast.Ref) -> Slot:
        if ref.type_name not in self.types:
            declared = ", ".join(sorted(self.types)) or "none"
            self.error(f"unknown event type {ref.type_name!r}", ref.type_span, hint=f"declared types: {declared}")
            raise _Invalid
        if ref.index > MAX_INSTANCE_INDEX:
            self.error(f"instance index {ref.index} is too large (at most {MAX_INSTANCE_INDEX})", ref.span)
            raise _Invalid
        return Slot(ref.type_name, ref.index)

    def _example_attribute(self, type_name: str) -> str:
        attrs = self.types[type_name].attributes
        return attrs[0].name if attrs else "a"


def _joined(any_of: bool, left: Condition, right: Condition) -> Condition:
    """``left or right`` (``any_of``) or ``left and right``, flattened into one n-ary node.
    ``left`` is extended in place: it is the node just built for the chain, used nowhere else."""
    kind = AnyOf if any_of else AllOf
    parts = right.parts if isinstance(right, kind) else [right]
    if isinstance(left, kind):
        left.parts.extend(parts)
        return left
    return kind([left, *parts])


def _depth(expr: ast.Expr) -> int:
    """How many operators nest in ``expr`` (0 for a reference or a literal), found without
    recursion: the checker's own walk of a value is recursive and must not start on a deep one."""
    deepest = 0
    todo: list[tuple[ast.Expr, int]] = [(expr, 0)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        if isinstance(node, ast.Neg):
            todo.append((node.operand, depth + 1))
        elif isinstance(node, (ast.Arith, ast.Compare, ast.And, ast.Or)):
            todo += [(node.left, depth + 1), (node.right, depth + 1)]
    return deepest


def _number(text: str) -> int | float:
    return int(text) if text.isdigit() else float(text)


def _literal_kind(value: object) -> Kind:
    if isinstance(value, bool):
        return Kind.BOOL
    if isinstance(value, int):
        return Kind.INT
    if isinstance(value, float):
        return Kind.FLOAT
    return Kind.STR
