"""Seeded generation of lab scenarios aimed at the papers' counterexamples: covering pairs
(Φ and Φ ∧ Φ'), shared extensions (Φ ∧ Φ' and Φ ∧ Φ''), processes over a common type,
disjunctions, several instances of one type, and reactive publishers.

With an *operator* of the extended language (:data:`OPERATORS`), the shared part Φ (and the
one-type conjunctions) use it: ``group`` makes Φ's first type a group ``T+`` with member, ``prev``
and aggregate conditions; ``negation`` adds ``no T5(...) between X and Y`` on two of Φ's slots;
``absence`` adds ``no T5(...) after X`` (its runs are windowed); ``window`` leaves the conditions
as they are and windows every subscription (:data:`~faidecs.lab.scenario.WINDOW`)."""

from __future__ import annotations

import random
import re

from faidecs.lab.scenario import NEGATED, TYPES, WINDOW, Conj, LabScenario, Reaction

#: the extended language's operators the lab measures, each on the shapes above
OPERATORS = ("group", "negation", "absence", "window")


def operator_extra(operator: str) -> str:
    """The subscription options an operator's runs need: a window for ``absence`` and ``window``."""
    return WINDOW if operator in ("absence", "window") else ""


OPS = ("<", ">", "=", "!=", "<=", ">=")
VALUES = 3  # attribute values 0..VALUES-1: small, so that matches and near-misses are frequent


def _conjunction(rng: random.Random, types: list[str]) -> Conj:
    """A conjunction over ``types``: instances, unary and binary predicates."""
    slots: list[str] = []
    for t in types:
        top = rng.choice((0, 0, 0, 1, 1, 2))
        slots += [f"{t}[{i}]" for i in range(top + 1)]
    atoms: list[str] = []
    for s in slots:
        if rng.random() < 0.35:
            atoms.append(f"{s}.a {rng.choice(OPS)} {rng.randrange(VALUES)}")
    for _ in range(rng.choice((0, 1, 1, 2))):
        if len(slots) >= 2:
            x, y = rng.sample(slots, 2)
            atoms.append(f"{x}.a {rng.choice(OPS)} {y}.a")
    mentioned = " ".join(atoms)
    for t in types:  # declare the highest instance of each type
        top = max(int(s[len(t) + 1 : -1]) for s in slots if s.startswith(t + "["))
        if f"{t}[{top}]" not in mentioned:
            atoms.insert(0, f"{t}[{top}]")
    return tuple(atoms)


def _group_conjunction(rng: random.Random, types: list[str]) -> Conj:
    """A conjunction whose first type is a group: member, pair (``prev``) and aggregate
    conditions, and the other types as instances, possibly linked to the group."""
    group, rest = types[0], types[1:]
    atoms = [f"{group}+"]
    if rng.random() < 0.35:
        atoms.append(f"{group}.a {rng.choice(OPS)} {rng.randrange(VALUES)}")
    if rng.random() < 0.4:
        atoms.append(f"prev({group}).a {rng.choice(OPS)} {group}.a")
    if rng.random() < 0.4:
        atoms.append(
            rng.choice((f"count({group}) >= 2", f"sum({group}.a) {rng.choice(OPS)} {rng.randrange(2 * VALUES)}"))
        )
    if rest:
        other = _conjunction(rng, rest)
        atoms += other
        if rng.random() < 0.5:
            target = f"{rest[0]}[0].a"
            atoms.append(
                rng.choice((f"{group}.a {rng.choice(OPS)} {target}", f"max({group}.a) {rng.choice(OPS)} {target}"))
            )
    return tuple(atoms)


def _slots(conj: Conj) -> list[str]:
    """Every instance the conjunction declares (``T1[2]`` declares ``T1[0]`` and ``T1[1]`` too)."""
    top: dict[str, int] = {}
    for t, i in re.findall(r"(T\d)\[(\d)\]", " ".join(conj)):
        top[t] = max(top.get(t, 0), int(i))
    return [f"{t}[{i}]" for t in sorted(top) for i in range(top[t] + 1)]


def _negated(rng: random.Random, conj: Conj, kind: str) -> Conj:
    """``conj`` with ``no T5(...) between X and Y`` (two of its slots) or ``no T5(...) after X``."""
    slots = _slots(conj)
    if kind == "between" and len(slots) < 2:
        base = slots[0][:2] if slots else "T1"
        conj = conj + (f"{base}[1]",)
        slots = _slots(conj)
    x, y = rng.sample(slots, 2) if kind == "between" else (rng.choice(slots), "")
    conditions = []
    if rng.random() < 0.4:
        conditions.append(f"{NEGATED}.a {rng.choice(OPS)} {rng.randrange(VALUES)}")
    if rng.random() < 0.5:
        conditions.append(f"{NEGATED}.a {rng.choice(OPS)} {x}.a")
    inner = f"({' and '.join(conditions)})" if conditions else ""
    where = f"between {x} and {y}" if kind == "between" else f"after {x}"
    return conj + (f"no {NEGATED}{inner} {where}",)


def _operator_conjunction(rng: random.Random, types: list[str], operator: str) -> Conj:
    if operator == "group":
        return _group_conjunction(rng, types)
    conj = _conjunction(rng, types)
    if operator == "negation":
        return _negated(rng, conj, "between")
    if operator == "absence":
        return _negated(rng, conj, "after")
    return conj


#: partition keys 0..KEYS-1 of a partitioned scenario: two, so that most runs mix partitions
KEYS = 2


def scenario(rng: random.Random, *, keyed: bool = False, operator: str = "") -> LabScenario:
    """A scenario; ``keyed``: each event also gets a partition key (drawn after everything else,
    so that the scenarios of a seed are the plain ones, with keys added); ``operator``: one of
    :data:`OPERATORS`, used by the shared part and the one-type conjunctions."""
    base_types = rng.sample(TYPES[:2], rng.choice((1, 2, 2)))
    base = _operator_conjunction(rng, base_types, operator) if operator else _conjunction(rng, base_types)
    if len(base_types) == 2 and rng.random() < 0.4:
        # Link the two base types, so that an early event may find its partner only later.
        if operator == "group":  # the group is the first type: its members link to the other
            first, second = base_types
            base = base + (f"{first}.a {rng.choice(OPS)} {second}[0].a",)
        else:
            base = base + (f"T1[0].a {rng.choice(OPS)} T2[0].a",)
    ext_a = _conjunction(rng, ["T3"])
    ext_b = _conjunction(rng, ["T4"])
    other = _conjunction(rng, rng.sample(["T1", "T2", "T3"], rng.choice((1, 2))))
    processes: list[tuple[str, tuple[Conj, ...]]]
    shape = rng.randrange(6)
    if shape == 0:  # covering pair
        processes = [("p1", (base,)), ("p2", (base + ext_a,))]
    elif shape == 1:  # two extensions of one part
        processes = [("p1", (base + ext_a,)), ("p2", (base + ext_b,))]
    elif shape == 2:  # different conjunctions over a common type
        processes = [("p1", (base,)), ("p2", (other,))]
    elif shape == 3:  # disjunctions sharing conjunctions
        processes = [("p1", (base, other)), ("p2", (other, base + ext_a)), ("p3", (base,))]
    elif shape == 4:  # identical conjunctions, covering and an unrelated one
        processes = [("p1", (base,)), ("p2", (base,)), ("p3", (base + ext_a,)), ("p4", (other,))]
    else:  # one type seen by a plain subscriber and by conjunctions with several instances of it
        t = rng.choice(TYPES[:2])
        one = _conjunction if not operator else lambda r, ts: _operator_conjunction(r, ts, operator)
        processes = [("p1", (one(rng, [t]),)), ("p2", (one(rng, [t]),)), ("p3", ((f"{t}[0]",),))]
    used = sorted({t for _, cs in processes for c in cs for atom in c for t in TYPES + (NEGATED,) if t in atom})
    n = rng.randrange(3, 13)
    events = tuple((rng.choice(used), rng.randrange(VALUES)) for _ in range(n))
    if rng.random() < 0.4:
        # Hold back the extensions' events: queues of the shared part fill up first.
        late = ("T3", "T4")
        events = tuple(e for e in events if e[0] not in late) + tuple(e for e in events if e[0] in late)
    reactions: tuple[tuple[str, Reaction], ...] = ()
    if rng.random() < 0.3:
        who = rng.choice([name for name, _ in processes])
        reactions = ((who, Reaction(rng.choice(used), rng.randrange(VALUES), rng.choice((1, 2)))),)
    keys = tuple(rng.randrange(KEYS) for _ in events) if keyed else ()
    return LabScenario(tuple(processes), events, reactions, keys)
