"""Hypothesis strategies: random *valid* faidecs programs and event streams.

A program is generated as pieces (types, subscriptions, conjunctions, predicates) and rendered to
program TEXT with random but meaning-preserving surface choices (``T.a`` or ``T[0].a``, flipped
comparisons, ``=`` or ``==``, parentheses, comments, redundant wildcards and ``true``), so every
test exercises the parser, the checker and the normaliser. The pieces are kept so that the tests
can compute signatures, evaluate predicates and write variants *without* the library's own normal
form: that is what keeps the brute-force oracle and the property tests independent of it.

Value ranges are tiny (ints 0..4) so that predicates hold often enough for relations to form.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from hypothesis import strategies as st

MATCHINGS: tuple[str, ...] = ("FR", "MR", "FRC", "MRC")
DISPOSALS: tuple[str, ...] = ("I", "PI", "IP", "FP")
OPS: tuple[str, ...] = ("<", ">", "<=", ">=", "=", "!=")
FLIP: dict[str, str] = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "!=": "!="}
COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
    "=": operator.eq,
    "!=": operator.ne,
}

# Names chosen so that code point order differs from order of writing and from a case-insensitive
# sort ("Zed" < "_t" < "ab"): signatures must sort by code point.
TYPE_NAMES: tuple[str, ...] = ("A", "B", "C", "Quote", "Zed", "_t", "ab", "b2")
ATTR_NAMES: tuple[str, ...] = ("a", "b", "c", "v", "copy")
# Extra attributes are mostly ints (so that binary predicates find partners), sometimes other kinds.
EXTRA_KINDS: tuple[str, ...] = ("int", "int", "str", "bool", "float")

EVENT_VALUES: dict[str, tuple[Any, ...]] = {
    "int": (0, 1, 2, 3, 4),
    # An int given for a float attribute is accepted (and converted) by the engine.
    "float": (0.0, 0.5, 1.0, 2.5, 4.0, 1, 3),
    "str": ("", "x", "y", 'q"t', "é", "b\\s"),
    "bool": (False, True),
}
NUMERIC_CONSTANTS: tuple[Any, ...] = (-1, 0, 1, 2, 3, 4, 5, 0.5, 2.5, -0.5)
# Quotes, backslashes and non-ASCII text go through the string literal's escapes (rendered with
# and without \u escapes).
STR_CONSTANTS: tuple[str, ...] = ("", "x", "y", 'q"t', "é", "b\\s", "z")

Event = dict[str, Any]  # the input JSON shape: {"id", "type", "attrs"}
T_ = TypeVar("T_")


# --- cheap draws ---------------------------------------------------------------------------------
# Generation dominates the run time of these tests, and most of it is hypothesis validating
# freshly built strategy objects: the helpers below draw from cached strategies instead.


@cache
def _between(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


def between(draw: st.DrawFn, lo: int, hi: int) -> int:
    return lo if lo >= hi else draw(_between(lo, hi))


def pick(draw: st.DrawFn, seq: Sequence[T_]) -> T_:
    """One element of ``seq`` (shrinks towards the first)."""
    return seq[between(draw, 0, len(seq) - 1)]


@cache
def unique_lists(options: tuple[str, ...], lo: int, hi: int) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(options), min_size=lo, max_size=hi, unique=True)


def shuffle(draw: st.DrawFn, seq: Sequence[T_]) -> list[T_]:
    """A random permutation (Fisher–Yates with cached draws; the identity is the simplest)."""
    out = list(seq)
    for i in range(len(out) - 1):
        j = between(draw, i, len(out) - 1)
        out[i], out[j] = out[j], out[i]
    return out


def chance(draw: st.DrawFn, one_in: int) -> bool:
    """True about once in ``one_in`` draws (shrinks towards False)."""
    return draw(_between(0, one_in - 1)) == one_in - 1


def compatible(k1: str, k2: str) -> bool:
    """Kinds the checker lets one compare: numbers with numbers, otherwise the same kind."""
    numeric = ("int", "float")
    return (k1 in numeric and k2 in numeric) or k1 == k2


# --- pieces ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttrSpec:
    name: str
    kind: str


@dataclass(frozen=True)
class TypeSpec:
    name: str
    attrs: tuple[AttrSpec, ...]

    def declaration(self) -> str:
        return f"type {self.name}(" + ", ".join(f"{a.name}: {a.kind}" for a in self.attrs) + ")"


@dataclass(frozen=True, order=True)
class Instance:
    """`T[i]`. The dataclass order (name by code point, then index) is the signature order."""

    type_name: str
    index: int

    def text(self, long: bool = True) -> str:
        return self.type_name if (self.index == 0 and not long) else f"{self.type_name}[{self.index}]"


@dataclass(frozen=True)
class AttrRef:
    inst: Instance
    attr: str
    kind: str

    def key(self) -> tuple[Any, ...]:
        return ("ref", self.inst.type_name, self.inst.index, self.attr)

    def text(self, long: bool = True) -> str:
        return f"{self.inst.text(long)}.{self.attr}"


@dataclass(frozen=True)
class Const:
    value: Any
    kind: str

    def key(self) -> tuple[Any, ...]:
        # The kind is part of the identity: `T.f = 1` and `T.f = 1.0` are different predicates.
        return ("const", self.kind, repr(self.value))

    def text(self, ascii_only: bool = False) -> str:
        if self.kind == "bool":
            return "true" if self.value else "false"
        if self.kind == "str":
            return json.dumps(self.value, ensure_ascii=ascii_only)
        return repr(self.value)


Operand = AttrRef | Const
Binding = Mapping[Instance, Mapping[str, Any]]  # instance -> the bound event's attrs


def operand_value(operand: Operand, binding: Binding) -> Any:
    return binding[operand.inst][operand.attr] if isinstance(operand, AttrRef) else operand.value


@dataclass(frozen=True)
class PredSpec:
    """`left op right`; at least one side is an attribute reference."""

    left: Operand
    op: str
    right: Operand

    @property
    def instances(self) -> frozenset[Instance]:
        return frozenset(o.inst for o in (self.left, self.right) if isinstance(o, AttrRef))

    @property
    def unary(self) -> bool:
        return len(self.instances) == 1

    def holds(self, binding: Binding) -> bool:
        """Evaluated with plain Python comparisons (no arithmetic is generated)."""
        return bool(COMPARE[self.op](operand_value(self.left, binding), operand_value(self.right, binding)))

    def key(self) -> tuple[Any, ...]:
        """Identity independent of orientation: `20 > T.a` and `T.a < 20` are the same predicate."""
        a = (self.left.key(), self.op, self.right.key())
        b = (self.right.key(), FLIP[self.op], self.left.key())
        return min(a, b)

    def flipped(self) -> PredSpec:
        return PredSpec(self.right, FLIP[self.op], self.left)

    def text(self, *, long: bool = True, double_eq: bool = False, ascii_only: bool = False) -> str:
        def side(o: Operand) -> str:
            return o.text(long) if isinstance(o, AttrRef) else o.text(ascii_only)

        op = "==" if (self.op == "=" and double_eq) else self.op
        return f"{side(self.left)} {op} {side(self.right)}"


@dataclass(frozen=True)
class ConjSpec:
    """A conjunction: the highest index per type (``T[i]`` declares ``T[0]..T[i]``) and predicates."""

    tops: tuple[tuple[str, int], ...]  # sorted by type name
    preds: tuple[PredSpec, ...]

    @property
    def signature(self) -> tuple[Instance, ...]:
        return tuple(Instance(t, i) for t, top in sorted(self.tops) for i in range(top + 1))

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(t for t, _ in sorted(self.tops))

    def key(self) -> tuple[Any, ...]:
        return (self.signature, frozenset(p.key() for p in self.preds))

    def unary_on(self, inst: Instance) -> tuple[PredSpec, ...]:
        return tuple(p for p in self.preds if p.instances == {inst})

    def holds(self, binding: Binding) -> bool:
        return all(p.holds(binding) for p in self.preds)

    def text(self) -> str:
        """A plain rendering (for messages and for building programs by hand)."""
        mentioned = set().union(*(p.instances for p in self.preds)) if self.preds else set()
        atoms = [Instance(t, top).text() for t, top in self.tops if Instance(t, top) not in mentioned]
        atoms += [p.text() for p in self.preds]
        return " and ".join(atoms)

    def conjoin(self, other: ConjSpec) -> ConjSpec:
        """``self ∧ other`` (used for covering agreement: other's types are disjoint)."""
        tops = dict(self.tops)
        for t, top in other.tops:
            tops[t] = max(top, tops.get(t, -1))
        return ConjSpec(tuple(sorted(tops.items())), self.preds + other.preds)


@dataclass(frozen=True)
class SubSpec:
    name: str
    matching: str
    disposal: str
    conjunctions: tuple[ConjSpec, ...]  # in order of writing, duplicates included

    def distinct(self) -> tuple[ConjSpec, ...]:
        """The conjunctions as the engine indexes them: in order of writing, identical ones
        (same signature and same predicates up to orientation) kept once, the first."""
        seen: set[tuple[Any, ...]] = set()
        out: list[ConjSpec] = []
        for c in self.conjunctions:
            if c.key() not in seen:
                seen.add(c.key())
                out.append(c)
        return tuple(out)

    def text(self) -> str:
        """A plain rendering with explicit options."""
        cond = " or ".join(c.text() for c in self.conjunctions)
        return f"subscription {self.name} (matching {self.matching}, disposal {self.disposal}): {cond}"


@dataclass(frozen=True)
class ProgramSpec:
    types: tuple[TypeSpec, ...]
    subs: tuple[SubSpec, ...]  # in order of declaration
    text: str  # the generated program text

    @property
    def types_text(self) -> str:
        return "\n".join(t.declaration() for t in self.types) + "\n"


def program_text(types: Sequence[TypeSpec], subs: Sequence[SubSpec]) -> str:
    """Plain program text for hand-built pieces."""
    return "\n".join([t.declaration() for t in types] + [s.text() for s in subs]) + "\n"


# --- generation of pieces ----------------------------------------------------------------------


def draw_type_specs(draw: st.DrawFn, min_types: int = 2, max_types: int = 4) -> tuple[TypeSpec, ...]:
    """2–4 types; the first attribute is always an int so binary predicates can always be formed."""
    names = draw(unique_lists(TYPE_NAMES, min_types, max_types))
    types: list[TypeSpec] = []
    for name in names:
        attr_names = draw(unique_lists(ATTR_NAMES, 1, 3))
        attrs = [AttrSpec(attr_names[0], "int")]
        attrs += [AttrSpec(n, pick(draw, EXTRA_KINDS)) for n in attr_names[1:]]
        types.append(TypeSpec(name, tuple(attrs)))
    return tuple(types)


_CONSTANTS: dict[str, tuple[Const, ...]] = {
    "int": tuple(Const(v, "float" if isinstance(v, float) else "int") for v in NUMERIC_CONSTANTS),
    "str": tuple(Const(v, "str") for v in STR_CONSTANTS),
    "bool": (Const(False, "bool"), Const(True, "bool")),
}
_CONSTANTS["float"] = _CONSTANTS["int"]


def draw_predicates(
    draw: st.DrawFn, types: Mapping[str, TypeSpec], instances: Sequence[Instance], binary: bool = True
) -> PredSpec:
    """`T[i].a op const`, `T[i].a op T[i].b`, or (if ``binary``) `T[i].a op U[j].b`."""
    forms = ["const", "attr"] + (["binary"] if binary and len(instances) > 1 else [])
    form = pick(draw, forms)
    inst = pick(draw, instances)
    attr = pick(draw, types[inst.type_name].attrs)
    left = AttrRef(inst, attr.name, attr.kind)
    right: Operand | None = None
    if form == "attr":
        others = [a for a in types[inst.type_name].attrs if a.name != attr.name and compatible(a.kind, attr.kind)]
        if others:
            other = pick(draw, others)
            right = AttrRef(inst, other.name, other.kind)
    elif form == "binary":
        other_inst = pick(draw, [i for i in instances if i != inst])
        partners = [a for a in types[other_inst.type_name].attrs if compatible(a.kind, attr.kind)]
        if partners:
            other = pick(draw, partners)
            right = AttrRef(other_inst, other.name, other.kind)
    if right is None:
        right = pick(draw, _CONSTANTS[attr.kind])
    ops = ("=", "!=") if attr.kind == "bool" else OPS
    return PredSpec(left, pick(draw, ops), right)


def draw_conjunctions(
    draw: st.DrawFn,
    types: Sequence[TypeSpec],
    *,
    max_slots: int = 4,
    max_index: int = 2,
    max_preds: int = 4,
    binary: bool = True,
) -> ConjSpec:
    """A conjunction over some of ``types`` with at most ``max_slots`` signature slots."""
    by_name = {t.name: t for t in types}
    names = draw(unique_lists(tuple(sorted(by_name)), 1, min(len(types), max_slots)))
    tops: dict[str, int] = {}
    budget = max_slots
    for k, name in enumerate(names):
        later = len(names) - k - 1
        top = between(draw, 0, min(max_index, budget - later - 1))
        tops[name] = top
        budget -= top + 1
    instances = [Instance(t, i) for t in sorted(tops) for i in range(tops[t] + 1)]
    preds = [draw_predicates(draw, by_name, instances, binary) for _ in range(between(draw, 0, max_preds))]
    return ConjSpec(tuple(sorted(tops.items())), tuple(preds))


# --- rendering: random meaning-preserving surface syntax -------------------------------------


def draw_render_predicate(draw: st.DrawFn, pred: PredSpec) -> str:
    flags = between(draw, 0, 31)  # one draw for five choices; 0 is the plain spelling
    if flags & 1:
        pred = pred.flipped()
    text = pred.text(long=bool(flags & 2), double_eq=bool(flags & 4), ascii_only=bool(flags & 8))
    return f"({text})" if flags & 16 else text


def draw_render_conjunction(draw: st.DrawFn, conj: ConjSpec, *, extras: bool = True) -> str:
    """Predicates in random order and style; a wildcard for every highest instance no predicate
    names; with ``extras``, no-op atoms too (`true`, an implied wildcard, a repeated predicate)."""
    atoms = [draw_render_predicate(draw, p) for p in conj.preds]
    mentioned: set[Instance] = set().union(*(p.instances for p in conj.preds)) if conj.preds else set()
    for t, top in conj.tops:
        if Instance(t, top) not in mentioned:
            atoms.append(Instance(t, top).text(long=chance(draw, 2)))
    if extras and chance(draw, 2):
        if chance(draw, 3):
            atoms.append("true")
        if chance(draw, 3):
            t, top = pick(draw, conj.tops)
            atoms.append(Instance(t, between(draw, 0, top)).text(long=chance(draw, 2)))
        if conj.preds and chance(draw, 3):
            atoms.append(draw_render_predicate(draw, pick(draw, conj.preds)))
    atoms = shuffle(draw, atoms)
    if len(atoms) >= 3 and chance(draw, 2):
        i = between(draw, 0, len(atoms) - 2)
        j = between(draw, i + 2, len(atoms))
        atoms[i:j] = ["(" + " and ".join(atoms[i:j]) + ")"]
    out = atoms[0]
    separators = (" and ", "\n    and ", " and  # a comment\n    ")
    for atom in atoms[1:]:
        out += pick(draw, separators) + atom
    return out


def draw_render_options(draw: st.DrawFn, matching: str, disposal: str) -> str:
    forms = [f" (matching {matching}, disposal {disposal})", f"(disposal {disposal}, matching {matching})"]
    if disposal == "PI":
        forms.append(f" (matching {matching})")
    if matching == "FR":
        forms.append(f" (disposal {disposal})")
    if matching == "FR" and disposal == "PI":
        forms.append("")
    return pick(draw, forms)


def draw_render_subscription(draw: st.DrawFn, sub: SubSpec, *, extras: bool = True) -> str:
    """The declaration of ``sub``; its conjunctions keep their order of writing."""
    parts = []
    for conj in sub.conjunctions:
        text = draw_render_conjunction(draw, conj, extras=extras)
        parts.append(f"({text})" if len(sub.conjunctions) > 1 and chance(draw, 2) else text)
    condition = pick(draw, (" or ", "\n  or ")).join(parts)
    return f"subscription {sub.name}{draw_render_options(draw, sub.matching, sub.disposal)}: {condition}"


def draw_render_program(draw: st.DrawFn, types: Sequence[TypeSpec], subs: Sequence[SubSpec]) -> str:
    """Types in random order, before or after the subscriptions (declaration order of the
    subscriptions is kept: it is the engine's processing order)."""
    type_decls = shuffle(draw, [t.declaration() for t in types])
    sub_decls = [draw_render_subscription(draw, s) for s in subs]
    decls = sub_decls + type_decls if chance(draw, 4) else type_decls + sub_decls
    return pick(draw, ("\n", "\n\n", "\n# comment\n")).join(decls) + "\n"


# --- programs ------------------------------------------------------------------------------------


def draw_subscriptions(
    draw: st.DrawFn,
    types: Sequence[TypeSpec],
    name: str,
    *,
    matchings: Sequence[str] = MATCHINGS,
    disposals: Sequence[str] = DISPOSALS,
    max_conj: int = 3,
    max_slots: int = 4,
    binary: bool = True,
) -> SubSpec:
    conjs = tuple(
        draw_conjunctions(draw, types, max_slots=max_slots, binary=binary) for _ in range(between(draw, 1, max_conj))
    )
    return SubSpec(name, pick(draw, matchings), pick(draw, disposals), conjs)


def draw_programs(
    draw: st.DrawFn,
    *,
    min_types: int = 2,
    max_types: int = 4,
    min_subs: int = 1,
    max_subs: int = 2,
    max_conj: int = 3,
    max_slots: int = 4,
    matchings: Sequence[str] = MATCHINGS,
    disposals: Sequence[str] = DISPOSALS,
    binary: bool = True,
) -> ProgramSpec:
    """A random valid program, as pieces and as text."""
    types = draw_type_specs(draw, min_types, max_types)
    n = between(draw, min_subs, max_subs)
    subs = tuple(
        draw(
            subscriptions(
                types,
                f"S{k}",
                matchings=matchings,
                disposals=disposals,
                max_conj=max_conj,
                max_slots=max_slots,
                binary=binary,
            )
        )
        for k in range(n)
    )
    return ProgramSpec(types, subs, draw_render_program(draw, types, subs))


# --- events --------------------------------------------------------------------------------------


def _event_space(t: TypeSpec) -> list[tuple[str, dict[str, Any]]]:
    """Every (type, attrs) an event of ``t`` can have, simplest first."""
    out: list[tuple[str, dict[str, Any]]] = [(t.name, {})]
    for a in t.attrs:
        out = [(name, {**attrs, a.name: v}) for name, attrs in out for v in EVENT_VALUES[a.kind]]
    return out


@cache
def _event_lists(types: tuple[TypeSpec, ...], size: int) -> st.SearchStrategy[list[tuple[str, dict[str, Any]]]]:
    """Two integer draws per event (its type, then its values as an index into all the values
    of that type): a stream is the largest part of an example, and per-attribute draws made
    generation the bottleneck. Types are equally likely whatever their number of attributes."""
    spaces = [_event_space(t) for t in types]
    widest = max(len(sp) for sp in spaces)

    def decode(picks: list[tuple[int, int]]) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for t, v in picks:
            name, attrs = spaces[t][v % len(spaces[t])]
            out.append((name, dict(attrs)))
        return out

    one = st.tuples(st.integers(0, len(types) - 1), st.integers(0, widest - 1))
    return st.lists(one, min_size=size, max_size=size).map(decode)


def draw_streams(
    draw: st.DrawFn,
    types: Sequence[TypeSpec],
    *,
    max_events: int = 40,
    max_per_type: int | None = None,
) -> list[Event]:
    """Events ``{"id": "e<n>", "type", "attrs"}`` of the given types, ids unique. With
    ``max_per_type``, later events of a type that already has that many are dropped (this bounds
    queue lengths, which keeps brute force fast)."""
    # Draw the length first: left to itself hypothesis mostly draws a handful of events, too few
    # to fill queues. The simplest draw (False) asks for a long stream; True allows any length,
    # which lets the shrinker still reach short counterexamples.
    size = between(draw, max_events // 2 if chance(draw, 2) else 0, max_events)
    raw = draw(_event_lists(tuple(types), size))
    counts: dict[str, int] = {}
    out: list[Event] = []
    for type_name, attrs in raw:
        counts[type_name] = counts.get(type_name, 0) + 1
        if max_per_type is None or counts[type_name] <= max_per_type:
            out.append({"id": f"e{len(out)}", "type": type_name, "attrs": attrs})
    return out


def draw_variant_subscription(draw: st.DrawFn, sub: SubSpec, name: str) -> str:
    """A declaration of the *same* disjunction written differently: conjunctions shuffled, each
    rendered anew (predicate order, flipped comparisons, `T.a` / `T[0].a`, ...), sometimes one
    repeated in another spelling (kept once), sometimes distributed over `and true`."""
    conjs = list(sub.conjunctions)
    if chance(draw, 2):
        conjs.append(pick(draw, conjs))
    conjs = shuffle(draw, conjs)
    condition = " or ".join(f"({draw_render_conjunction(draw, c)})" for c in conjs)
    shape = between(draw, 0, 3)
    if shape == 1:
        condition = f"({condition}) and true"
    elif shape == 2:
        condition = f"true and ({condition})"
    return f"subscription {name}{draw_render_options(draw, sub.matching, sub.disposal)}: {condition}"


# --- the strategies ----------------------------------------------------------------------------
# The draw_* functions do the work and call each other directly: building a fresh strategy object
# per nested draw made hypothesis spend most of the run time validating strategies.

type_specs = st.composite(draw_type_specs)
predicates = st.composite(draw_predicates)
conjunctions = st.composite(draw_conjunctions)
render_predicate = st.composite(draw_render_predicate)
render_conjunction = st.composite(draw_render_conjunction)
render_options = st.composite(draw_render_options)
render_subscription = st.composite(draw_render_subscription)
render_program = st.composite(draw_render_program)
subscriptions = st.composite(draw_subscriptions)
programs = st.composite(draw_programs)
streams = st.composite(draw_streams)
variant_subscription = st.composite(draw_variant_subscription)
