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


#: Aggregate functions over a group (`T+`): ``count(T)``, ``sum(T.a)``, ``avg(T.a)``, ``min(T.a)``, ``max(T.a)``.
AGGREGATES = ("count", "sum", "avg", "min", "max")


@dataclass(frozen=True, slots=True)
class Aggregate:
    """An aggregate over the members of a group slot; ``attribute`` is None for ``count``."""

    function: str
    slot: Slot
    attribute: str | None
    position: int
    kind: Kind


@dataclass(frozen=True, slots=True)
class PrevOf:
    """``prev(T).a``: the attribute of the group member before the one a predicate looks at."""

    slot: Slot
    attribute: str
    position: int
    kind: Kind


Value = AttrOf | Const | Negate | ArithOp | Aggregate | PrevOf

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
FLIPPED = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "!=": "!="}


def value_text(v: Value, bare: frozenset[str] = frozenset()) -> str:
    """Canonical text of a value expression (minimal parentheses). Attributes of the types in
    ``bare`` (groups, negated types: they have one slot) are written without an index."""
    if isinstance(v, AttrOf):
        if v.slot.type_name in bare:
            return f"{v.slot.type_name}.{v.attribute}"
        return f"{v.slot}.{v.attribute}"
    if isinstance(v, Const):
        if v.kind is Kind.BOOL:
            return "true" if v.value else "false"
        if v.kind is Kind.STR:
            return json.dumps(v.value, ensure_ascii=False)
        return repr(v.value)
    if isinstance(v, Aggregate):
        inner = v.slot.type_name + (f".{v.attribute}" if v.attribute is not None else "")
        return f"{v.function}({inner})"
    if isinstance(v, PrevOf):
        return f"prev({v.slot.type_name}).{v.attribute}"
    if isinstance(v, Negate):
        inner = value_text(v.operand, bare)
        return f"-({inner})" if isinstance(v.operand, (ArithOp, Negate)) else f"-{inner}"
    prec = _PRECEDENCE[v.op]
    left = value_text(v.left, bare)
    right = value_text(v.right, bare)
    if isinstance(v.left, ArithOp) and _PRECEDENCE[v.left.op] < prec:
        left = f"({left})"
    if isinstance(v.right, ArithOp) and _PRECEDENCE[v.right.op] <= prec:
        right = f"({right})"
    return f"{left} {v.op} {right}"


def value_slots(v: Value) -> frozenset[Slot]:
    if isinstance(v, (AttrOf, Aggregate, PrevOf)):
        return frozenset((v.slot,))
    if isinstance(v, Const):
        return frozenset()
    if isinstance(v, Negate):
        return value_slots(v.operand)
    return value_slots(v.left) | value_slots(v.right)


def value_parts(v: Value) -> list[Value]:
    """Every node of a value expression (pre-order)."""
    out: list[Value] = []
    todo = [v]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, Negate):
            todo.append(node.operand)
        elif isinstance(node, ArithOp):
            todo += [node.right, node.left]
    return out


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
    def make(op: str, left: Value, right: Value, span: Span, bare: frozenset[str] = frozenset()) -> Predicate:
        """Build the predicate in canonical orientation: the side with instances first,
        ties broken by text, so that `20 > T.a` and `T.a < 20` are the same predicate."""
        lt, rt = value_text(left, bare), value_text(right, bare)
        direct = (not value_slots(left), f"{lt} {op} {rt}")
        flipped = (not value_slots(right), f"{rt} {FLIPPED[op]} {lt}")
        if flipped < direct:
            op, left, right, lt, rt = FLIPPED[op], right, left, rt, lt
        return Predicate(op, left, right, value_slots(left) | value_slots(right), f"{lt} {op} {rt}", span)

    @property
    def unary(self) -> bool:
        """One instance, and neither ``prev`` nor an aggregate: a filter on single events."""
        return len(self.slots) == 1 and not self.structural

    @property
    def structural(self) -> bool:
        """Uses ``prev(T)`` or an aggregate: a condition on a group as a whole, never a filter."""
        return any(isinstance(v, (Aggregate, PrevOf)) for side in (self.left, self.right) for v in value_parts(side))

    def __str__(self) -> str:
        return self.text


class NegationKind(str, Enum):
    BETWEEN = "between"
    AFTER = "after"


@dataclass(frozen=True, slots=True)
class Negation:
    """``no N(preds) between X and Y`` or ``no N(preds) after X``: the relation is valid only if
    no event of ``type_name`` satisfying ``predicates`` (over ``Slot(type_name, 0)``, standing for
    the negated event, and the relation's slots) lies between X and Y in the order, or after X
    before X's deadline (the subscription's window)."""

    type_name: str
    kind: NegationKind
    first: Slot
    second: Slot | None
    predicates: tuple[Predicate, ...]

    @property
    def slot(self) -> Slot:
        return Slot(self.type_name, 0)

    @property
    def text(self) -> str:
        preds = " and ".join(p.text for p in self.predicates)
        head = f"no {self.type_name}" + (f"({preds})" if preds else "")
        if self.kind is NegationKind.BETWEEN:
            return f"{head} between {self.first} and {self.second}"
        return f"{head} after {self.first}"


@dataclass(frozen=True, slots=True)
class Conjunction:
    """One conjunction of a subscription in normal form."""

    signature: tuple[Slot, ...]
    predicates: tuple[Predicate, ...]  # canonical order (by text), no duplicates
    written_index: int = field(compare=False)
    span: Span = field(compare=False, default_factory=Span.unknown)
    #: Types matched as a group (`T+`): their one slot binds a run of queued events.
    groups: frozenset[str] = frozenset()
    #: Negations and absences, in canonical order (by text).
    negations: tuple[Negation, ...] = ()

    @property
    def types(self) -> tuple[str, ...]:
        """The distinct types of the signature, in canonical order: one queue each."""
        return tuple(dict.fromkeys(s.type_name for s in self.signature))

    @property
    def negated_types(self) -> tuple[str, ...]:
        """Types the conjunction watches without queueing them (negations), in canonical order."""
        return tuple(sorted({n.type_name for n in self.negations}))

    @property
    def watched_types(self) -> tuple[str, ...]:
        """Every type whose arrivals the conjunction must see: its queues' and its negations'."""
        return self.types + tuple(t for t in self.negated_types if t not in self.types)

    @property
    def extended(self) -> bool:
        """Uses a group or a negation (the operators beyond the papers' language)."""
        return bool(self.groups or self.negations)

    def slot_text(self, slot: Slot) -> str:
        return f"{slot.type_name}+" if slot.type_name in self.groups else str(slot)

    def unary(self, slot: Slot) -> tuple[Predicate, ...]:
        """The predicates on ``slot`` alone that filter single events (``prev`` and aggregates
        name one slot but judge a group, so they are not among them)."""
        return tuple(p for p in self.predicates if p.slots == {slot} and p.unary)

    @property
    def binary(self) -> tuple[Predicate, ...]:
        """Predicates over two or more instances (the papers' binary predicates; arithmetic
        operands may involve more than two), and those over a group as a whole."""
        return tuple(p for p in self.predicates if not p.unary)

    @property
    def text(self) -> str:
        """Canonical text: signature, then predicates. Two conjunctions are the same iff
        their texts are equal; disjunctions evaluate their conjunctions in this text's order."""
        sig = ", ".join(self.slot_text(s) for s in self.signature)
        preds = " and ".join([p.text for p in self.predicates] + [n.text for n in self.negations])
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
        groups = frozenset(self.groups & types)
        return Conjunction(signature, preds, self.written_index, self.span, groups, self.negations)

    def condition_text(self) -> str:
        """The conjunction as a condition in the language (wildcards declare instances)."""
        parts: list[str] = []
        mentioned = set().union(*(p.slots for p in self.predicates)) if self.predicates else set()
        last: dict[str, int] = {}
        for slot in self.signature:
            last[slot.type_name] = slot.index
        for type_name, top in last.items():
            if type_name in self.groups:
                parts.append(f"{type_name}+")
            elif Slot(type_name, top) not in mentioned:
                parts.append(str(Slot(type_name, top)))
        parts.extend(p.text for p in self.predicates)
        parts.extend(n.text for n in self.negations)
        return " and ".join(parts)


class Matching(str, Enum):
    FR = "FR"
    MR = "MR"
    FRC = "FRC"
    MRC = "MRC"
    #: Every relation that became valid at an arrival, in FR's search order (only with disposal NONE).
    ALL = "ALL"

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
    #: Nothing is removed (a window purges); only relations new at an arrival are considered.
    NONE = "NONE"


@dataclass(frozen=True, slots=True)
class Window:
    """``within D on ATTR`` (and ``lateness L``): relations span at most ``duration`` of the
    event-time attribute ``attribute``; events older than the watermark minus ``duration`` are
    purged, events older than the watermark (the largest time seen minus ``lateness``) are late."""

    duration: int | float
    attribute: str
    lateness: int | float = 0

    @property
    def text(self) -> str:
        late = f", lateness {self.lateness!r}" if self.lateness else ""
        return f"within {self.duration!r} on {self.attribute}{late}"


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
    window: Window | None = None

    def to_source(self) -> str:
        """The normal form as a declaration in the language; it compiles to an equal subscription."""
        condition = " or ".join(c.condition_text() for c in self.conjunctions)
        staged = ", covering staged" if self.covering is Covering.STAGED else ""
        partition = f", partition by {self.partition_by}" if self.partition_by else ""
        window = f", {self.window.text}" if self.window else ""
        return (
            f"subscription {self.name} (matching {self.matching.value}, disposal {self.disposal.value}{staged}"
            f"{partition}{window}): {condition}"
        )

    @property
    def types(self) -> frozenset[str]:
        """Every type some conjunction of this subscription names (negated ones included)."""
        return frozenset(t for c in self.conjunctions for t in c.watched_types)

    @property
    def extended(self) -> bool:
        """Needs the extended matcher: a group, a negation, a window, ALL or NONE."""
        return (
            self.window is not None
            or self.matching is Matching.ALL
            or self.disposal is Disposal.NONE
            or any(c.extended for c in self.conjunctions)
        )

    @property
    def evaluation_order(self) -> tuple[int, ...]:
        """Indices of :attr:`conjunctions` in canonical evaluation order (by canonical text)."""
        return tuple(sorted(range(len(self.conjunctions)), key=lambda i: self.conjunctions[i].text))


@dataclass(frozen=True, slots=True)
class Program:
    types: dict[str, EventType]
    subscriptions: tuple[Subscription, ...]
