"""Seeded generation of lab scenarios aimed at the papers' counterexamples: covering pairs
(Φ and Φ ∧ Φ'), shared extensions (Φ ∧ Φ' and Φ ∧ Φ''), processes over a common type,
disjunctions, several instances of one type, and reactive publishers."""

from __future__ import annotations

import random

from faidecs.lab.scenario import TYPES, Conj, LabScenario, Reaction

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


#: partition keys 0..KEYS-1 of a partitioned scenario: two, so that most runs mix partitions
KEYS = 2


def scenario(rng: random.Random, *, keyed: bool = False) -> LabScenario:
    """A scenario; ``keyed``: each event also gets a partition key (drawn after everything else,
    so that the scenarios of a seed are the plain ones, with keys added)."""
    base_types = rng.sample(TYPES[:2], rng.choice((1, 2, 2)))
    base = _conjunction(rng, base_types)
    if len(base_types) == 2 and rng.random() < 0.4:
        # Link the two base types, so that an early event may find its partner only later.
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
        processes = [("p1", (_conjunction(rng, [t]),)), ("p2", (_conjunction(rng, [t]),)), ("p3", ((f"{t}[0]",),))]
    used = sorted({t for _, cs in processes for c in cs for atom in c for t in TYPES if t in atom})
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
