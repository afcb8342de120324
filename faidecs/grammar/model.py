"""The checked, normalised program: what the engine and every matcher consume.

Everything here is immutable configuration. Expressions are resolved (attributes carry their
position in the event's value tuple and their kind), predicates are in canonical form, and each
conjunction knows its signature: its instances sorted by type name (code point order), then
by index. Sorting by name, not by order of writing, makes every process that writes the same
conjunction differently match identically.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum

from faidecs.grammar.ast import Span


class Kind(str, Enum):
    """Attribute and expression value kinds."""

    INT = "int"
    FLOAT = "float"
    STR = "str"
    BOOL = "bool"

    @property
    def numeric(self) -> bool:
        return self in (Kind.INT, Kind.FLOAT)


@dataclass(frozen=True, slots=True)
class Attribute:
    name: str
    kind: Kind


@dataclass(frozen=True, slots=True)
class EventType:
    name: str
    attributes: tuple[Attribute, ...]
    source: str = field(compare=False, default="")

    def position(self, attribute: str) -> int:
        """Index of ``attribute`` in the event's value tuple."""
        for i, attr in enumerate(self.attributes):
            if attr.name == attribute:
                return i
        raise KeyError(attribute)

    def declaration(self) -> str:
        attrs = ", ".join(f"{a.name}: {a.kind.value}" for a in self.attributes)
        return f"type {self.name}({attrs})"


@dataclass(frozen=True, slots=True, order=True)
class Slot:
    """One instance position `T[i]` of a conjunction. Orders as in a signature."""

    type_name: str
    index: int

    def __str__(self) -> str:
        return f"{self.type_name}[{self.index}]"


# --- resolved expressions ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AttrOf:
    slot: Slot
    attribute: str
    position: int
    kind: Kind


@dataclass(frozen=True, slots=True)
class Const:
    value: int | float | str | bool
    kind: Kind


@dataclass(frozen=True, slots=True)
class Negate:
    operand: Value
    kind: Kind


@dataclass(frozen=True, slots=True)
class ArithOp:
    op: str
    left: Value
    right: Value
    kind: Kind


Value = AttrOf | Const | Negate | ArithOp

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
FLIPPED = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "!=": "!="}


def value_text(v: Value) -> str:
    """Canonical text of a value expression (minimal parentheses)."""
    if isinstance(v, AttrOf):
        return f"{v.slot}.{v.attribute}"
    if isinstance(v, Const):
        if v.kind is Kind.BOOL:
            return "true" if v.value else "false"
        if v.kind is Kind.STR:
            return json.dumps(v.value, ensure_ascii=False)
        return repr(v.value)
    if isinstance(v, Negate):
        inner = value_text(v.operand)
        return f"-({inner})" if isinstance(v.operand, (ArithOp, Negate)) else f"-{inner}"
    prec = _PRECEDENCE[v.op]
    left = value_text(v.left)
    right = value_text(v.right)
    if isinstance(v.left, ArithOp) and _PRECEDENCE[v.left.op] < prec:
        left = f"({left})"
    if isinstance(v.right, ArithOp) and _PRECEDENCE[v.right.op] <= prec:
        right = f"({right})"
    return f"{left} {v.op} {right}"


def value_slots(v: Value) -> frozenset[Slot]:
    if isinstance(v, AttrOf):
        return frozenset((v.slot,))
    if isinstance(v, Const):
        return frozenset()
    if isinstance(v, Negate):
        return value_slots(v.operand)
    return value_slots(v.left) | value_slots(v.right)


@dataclass(frozen=True, slots=True)
class Predicate:
    """A comparison in canonical orientation. Unary when it involves one instance."""

    op: str
    left: Value
    right: Value
    slots: frozenset[Slot] = field(compare=False)
    text: str = field(compare=False)
    span: Span = field(compare=False, default_factory=Span.unknown)

    @staticmethod
    def make(op: str, left: Value, right: Value, span: Span) -> Predicate:
        """Build the predicate in canonical orientation: the side with instances first,
        ties broken by text, so that `20 > T.a` and `T.a < 20` are the same predicate."""
        lt, rt = value_text(left), value_text(right)
        direct = (not value_slots(left), f"{lt} {op} {rt}")
        flipped = (not value_slots(right), f"{rt} {FLIPPED[op]} {lt}")
        if flipped < direct:
            op, left, right, lt, rt = FLIPPED[op], right, left, rt, lt
        return Predicate(op, left, right, value_slots(left) | value_slots(right), f"{lt} {op} {rt}", span)

    @property
    def unary(self) -> bool:
        return len(self.slots) == 1

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class Conjunction:
    """One conjunction of a subscription in normal form."""

    signature: tuple[Slot, ...]
    predicates: tuple[Predicate, ...]  # canonical order (by text), no duplicates
    written_index: int = field(compare=False)
    span: Span = field(compare=False, default_factory=Span.unknown)

    @property
    def types(self) -> tuple[str, ...]:
        """The distinct types of the signature, in canonical order: one queue each."""
        return tuple(dict.fromkeys(s.type_name for s in self.signature))

    def unary(self, slot: Slot) -> tuple[Predicate, ...]:
        return tuple(p for p in self.predicates if p.slots == {slot})

    @property
    def binary(self) -> tuple[Predicate, ...]:
        """Predicates over two or more instances (the papers' binary predicates; arithmetic
        operands may involve more than two)."""
        return tuple(p for p in self.predicates if len(p.slots) > 1)

    @property
    def text(self) -> str:
        """Canonical text: signature, then predicates. Two conjunctions are the same iff
        their texts are equal; disjunctions evaluate their conjunctions in this text's order."""
        sig = ", ".join(str(s) for s in self.signature)
        preds = " and ".join(p.text for p in self.predicates)
        return f"[{sig}]" + (f" {preds}" if preds else "")

    def components(self) -> tuple[frozenset[str], ...]:
        """The types grouped by the predicates that link them (connected components), in the
        canonical order of their first type. Components share no predicate: they match
        independently of each other."""
        parent = {t: t for t in self.types}

        def find(t: str) -> str:
            while parent[t] != t:
                t = parent[t]
            return t

        for p in self.predicates:
            linked = sorted({s.type_name for s in p.slots})
            for other in linked[1:]:
                parent[find(other)] = find(linked[0])
        groups: dict[str, set[str]] = {}
        for t in self.types:
            groups.setdefault(find(t), set()).add(t)
        return tuple(frozenset(g) for g in groups.values())

    def project(self, types: frozenset[str]) -> Conjunction:
        """The part of the conjunction over ``types`` (meaningful for a union of components)."""
        signature = tuple(s for s in self.signature if s.type_name in types)
        preds = tuple(p for p in self.predicates if all(s.type_name in types for s in p.slots))
        return Conjunction(signature, preds, self.written_index, self.span)

    def condition_text(self) -> str:
        """The conjunction as a condition in the language (wildcards declare instances)."""
        parts: list[str] = []
        mentioned = set().union(*(p.slots for p in self.predicates)) if self.predicates else set()
        last: dict[str, int] = {}
        for slot in self.signature:
            last[slot.type_name] = slot.index
        for type_name, top in last.items():
            if Slot(type_name, top) not in mentioned:
                parts.append(str(Slot(type_name, top)))
        parts.extend(p.text for p in self.predicates)
        return " and ".join(parts)


class Matching(str, Enum):
    FR = "FR"
    MR = "MR"
    FRC = "FRC"
    MRC = "MRC"

    @property
    def most_recent(self) -> bool:
        return self in (Matching.MR, Matching.MRC)

    @property
    def contiguous(self) -> bool:
        return self in (Matching.FRC, Matching.MRC)


class Covering(str, Enum):
    """How a conjunction built of independent parts is matched.

    ``plain``: as one conjunction (the papers' rules). ``staged``: each component (types linked
    by predicates) is matched on its own, exactly as a subscriber to that component alone would,
    and the components' relations are then joined first-received with prefix disposal; this keeps
    Covering Agreement by construction (see docs/semantics.md)."""

    PLAIN = "plain"
    STAGED = "staged"


class Disposal(str, Enum):
    I = "I"  # noqa: E741 - the papers' name
    PI = "PI"
    IP = "IP"
    FP = "FP"


@dataclass(frozen=True, slots=True)
class Subscription:
    name: str
    matching: Matching
    disposal: Disposal
    conjunctions: tuple[Conjunction, ...]  # as written, duplicates removed
    source: str = field(compare=False, default="")
    covering: Covering = Covering.PLAIN
    #: ``partition by`` attribute: one independent set of queues per value of it (None: one set).
    partition_by: str | None = None

    def to_source(self) -> str:
        """The normal form as a declaration in the language; it compiles to an equal subscription."""
        condition = " or ".join(c.condition_text() for c in self.conjunctions)
        staged = ", covering staged" if self.covering is Covering.STAGED else ""
        partition = f", partition by {self.partition_by}" if self.partition_by else ""
        return (
            f"subscription {self.name} (matching {self.matching.value}, disposal {self.disposal.value}{staged}"
            f"{partition}): {condition}"
        )

    @property
    def types(self) -> frozenset[str]:
        """Every type some conjunction of this subscription names."""
        return frozenset(t for c in self.conjunctions for t in c.types)

    @property
    def evaluation_order(self) -> tuple[int, ...]:
        """Indices of :attr:`conjunctions` in canonical evaluation order (by canonical text)."""
        return tuple(sorted(range(len(self.conjunctions)), key=lambda i: self.conjunctions[i].text))


@dataclass(frozen=True, slots=True)
class Program:
    types: dict[str, EventType]
    subscriptions: tuple[Subscription, ...]
