"""Normalisation: disjunctive normal form, signatures, canonical predicates, deduplication."""

from __future__ import annotations

from faidecs.errors import Diagnostic, FaidecsError
from faidecs.grammar.ast import Span
from faidecs.grammar.checker import AnyOf, Atom, CheckedSubscription, Condition
from faidecs.grammar.model import (
    Aggregate,
    Conjunction,
    Covering,
    Negation,
    NegationKind,
    Predicate,
    PrevOf,
    Slot,
    Subscription,
    Window,
    value_parts,
)

#: A subscription whose condition expands to more conjunctions than this is rejected: DNF
#: can grow exponentially (`(a or b) and (c or d) and ...`) and each conjunction costs queues.
MAX_CONJUNCTIONS = 1024


class TooManyConjunctions(FaidecsError):
    pass


def dnf(condition: Condition) -> list[list[Atom]]:
    """The conjunctions of ``condition``, in the order of writing (left to right, distributing
    `and` over `or` as written).

    Iterative (an explicit post-order stack), as conditions may nest as deep as the text allows.
    Every list of atoms built here belongs to one conjunction only, so a factor with a single
    conjunction is appended in place: a chain of n `and`s costs O(n), not O(n^2)."""
    done: list[list[list[Atom]]] = []
    todo: list[tuple[Condition, bool]] = [(condition, False)]
    while todo:
        node, parts_done = todo.pop()
        if isinstance(node, Atom):
            done.append([[node]])
        elif not parts_done:
            todo.append((node, True))
            todo += [(part, False) for part in reversed(node.parts)]  # the first part runs first
        else:
            parts = done[len(done) - len(node.parts) :]
            del done[len(done) - len(node.parts) :]
            done.append(_any_of(parts) if isinstance(node, AnyOf) else _all_of(parts))
    (out,) = done
    return out


def _any_of(parts: list[list[list[Atom]]]) -> list[list[Atom]]:
    out: list[list[Atom]] = []
    for part in parts:
        out += part
        if len(out) > MAX_CONJUNCTIONS:
            raise TooManyConjunctions
    return out


def _all_of(parts: list[list[list[Atom]]]) -> list[list[Atom]]:
    out = parts[0]
    for part in parts[1:]:
        if len(out) * len(part) > MAX_CONJUNCTIONS:
            raise TooManyConjunctions
        if len(part) == 1:
            for atoms in out:
                atoms += part[0]
        else:
            out = [a + b for a in out for b in part]
    return out


def _span_of(atoms: list[Atom]) -> Span:
    first, last = atoms[0].span, atoms[-1].span
    return Span(first.line, first.column, last.end_line, last.end_column, first.start, last.end)


def conjunction(atoms: list[Atom], written_index: int) -> Conjunction | None:
    """Build one conjunction from its atoms; None if it names no event type at all."""
    top: dict[str, int] = {}

    def declare(slot: Slot) -> None:
        top[slot.type_name] = max(top.get(slot.type_name, -1), slot.index)

    preds: dict[str, Predicate] = {}
    negations: dict[str, Negation] = {}
    groups: set[str] = set()
    for atom in atoms:
        if atom.wildcard is not None:
            declare(atom.wildcard)
        if atom.group is not None:
            groups.add(atom.group)
        if atom.predicate is not None:
            for slot in atom.predicate.slots:
                declare(slot)
            preds.setdefault(atom.predicate.text, atom.predicate)
        if atom.negation is not None:
            neg = atom.negation
            for anchor in (neg.first, neg.second):
                if anchor is not None:
                    declare(anchor)
            for pred in neg.predicates:
                for slot in pred.slots - {neg.slot}:
                    declare(slot)
            negations.setdefault(neg.text, neg)
    if not top:
        return None
    # `T[i]` declares T[0]..T[i]; code point order of names (Python's str order), then index.
    signature = tuple(Slot(t, i) for t in sorted(top) for i in range(top[t] + 1))
    if groups:
        # A group's members are written `T.a`, not `T[0].a`: the member, not the first one.
        bare = frozenset(groups)
        rewritten = (Predicate.make(p.op, p.left, p.right, p.span, bare) for p in preds.values())
        preds = {p.text: p for p in rewritten}
    ordered = tuple(preds[k] for k in sorted(preds))
    negated = tuple(negations[k] for k in sorted(negations))
    return Conjunction(signature, ordered, written_index, _span_of(atoms), frozenset(groups), negated)


def extension_problems(conj: Conjunction, window: Window | None, covering: Covering) -> list[Diagnostic]:
    """What the new operators require of one conjunction: a group is its type's only slot, and
    ``prev``/aggregates name a group; a negation's type is not matched, its anchors are not groups,
    and ``after`` needs a window."""
    out: list[Diagnostic] = []
    for type_name in sorted(conj.groups):
        if Slot(type_name, 1) in conj.signature:
            out.append(
                Diagnostic(
                    f"{type_name}+ is a group: it has one slot, so {type_name}[1] cannot be used beside it",
                    conj.span,
                )
            )
    for pred in conj.predicates:
        for value in (*value_parts(pred.left), *value_parts(pred.right)):
            if isinstance(value, (Aggregate, PrevOf)) and value.slot.type_name not in conj.groups:
                name = "prev" if isinstance(value, PrevOf) else value.function
                out.append(
                    Diagnostic(
                        f"{name}({value.slot.type_name}) needs {value.slot.type_name} to be a group",
                        pred.span,
                        hint=f"write {value.slot.type_name}+ in the same conjunction",
                    )
                )
    signature_types = set(conj.types)
    for neg in conj.negations:
        if neg.type_name in signature_types:
            out.append(
                Diagnostic(
                    f"no {neg.type_name}: {neg.type_name} is also matched in this conjunction",
                    conj.span,
                    hint="negate a type the conjunction does not match",
                )
            )
        for anchor in (neg.first, neg.second):
            if anchor is not None and anchor.type_name in conj.groups:
                out.append(Diagnostic(f"a negation's anchor cannot be the group {anchor.type_name}+", conj.span))
        if neg.kind is NegationKind.AFTER and window is None:
            out.append(
                Diagnostic(
                    f"no {neg.type_name} after ... needs a window: its deadline is the anchor's time plus the window",
                    conj.span,
                    hint="add `within D on ATTR` to the subscription's options",
                )
            )
    if conj.extended and covering is Covering.STAGED:
        out.append(Diagnostic("covering staged does not combine with groups or negations yet", conj.span))
    return out


def normalise(sub: CheckedSubscription) -> tuple[Subscription | None, list[Diagnostic]]:
    try:
        conjunctions_atoms = dnf(sub.condition)
    except TooManyConjunctions:
        return None, [
            Diagnostic(
                f"condition of {sub.name} expands to more than {MAX_CONJUNCTIONS} conjunctions",
                sub.span,
                hint="factor the subscription into several subscriptions",
            )
        ]
    diagnostics: list[Diagnostic] = []
    kept: list[Conjunction] = []
    seen: set[str] = set()
    for atoms in conjunctions_atoms:
        conj = conjunction(atoms, len(kept))
        if conj is None:
            diagnostics.append(
                Diagnostic(
                    "this conjunction names no event type, so it can never deliver",
                    _span_of(atoms),
                    hint="add an event type, e.g. `T` or `T.a > 0`",
                )
            )
            continue
        problems = extension_problems(conj, sub.window, sub.covering)
        if problems:
            diagnostics += problems
            continue
        if conj.text in seen:
            continue  # identical conjunctions in one disjunction are kept once (the first)
        seen.add(conj.text)
        kept.append(conj)
    if diagnostics:
        return None, diagnostics
    return (
        Subscription(
            sub.name, sub.matching, sub.disposal, tuple(kept), sub.source, sub.covering, sub.partition_by, sub.window
        ),
        [],
    )
