"""The engine against an independent, deliberately naive brute-force oracle.

Why: the engine's matcher prunes and searches depth first; the semantics file defines the result
as "the first assignment in search order". This oracle is written from the semantics file alone
(it imports nothing of faidecs but the public ``Engine`` it checks): ENQUEUE with the unary
predicates of the generated pieces, MATCH by enumerating *every* assignment of queue positions to
signature slots with ``itertools.product`` (each slot's candidates listed in the order its matching
option prescribes, so the product runs in search order) and keeping the first that satisfies the
option's ordering constraint and every predicate, DEQUEUE by the four disposal rules. Deliveries
and queue states are compared after every event, for all 16 option combinations.

Sizes are bounded (≤ 4 slots, ≤ 8 events per type, so queues ≤ 8) to keep brute force fast.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from strategies import (  # noqa: E402
    DISPOSALS,
    MATCHINGS,
    AttrRef,
    AttrSpec,
    ConjSpec,
    Const,
    Event,
    Instance,
    PredSpec,
    ProgramSpec,
    SubSpec,
    TypeSpec,
    between,
    chance,
    draw_predicates,
    draw_render_program,
    pick,
    program_text,
    programs,
    streams,
)

from faidecs import Engine

Delivered = tuple[str, int, tuple[str, ...]]  # (subscription, conjunction as written, ids)


class OracleConjunction:
    """One conjunction's queues and its naive ENQUEUE / MATCH / DEQUEUE."""

    def __init__(self, conj: ConjSpec, matching: str, disposal: str) -> None:
        self.conj = conj
        self.matching = matching
        self.disposal = disposal
        self.signature: tuple[Instance, ...] = conj.signature
        self.queues: dict[str, list[Event]] = {t: [] for t in conj.types}
        # Adjacent signature slots of the same type: (k-1, k) holds instances i and i+1.
        self.chains = [
            k for k in range(1, len(self.signature)) if self.signature[k].type_name == self.signature[k - 1].type_name
        ]

    def admits(self, event: Event) -> bool:
        """ENQUEUE: some position of the event's type has all its unary predicates satisfied."""
        for inst in self.signature:
            if inst.type_name == event["type"]:
                binding = {inst: event["attrs"]}
                if all(p.holds(binding) for p in self.conj.unary_on(inst)):
                    return True
        return False

    def ordered(self, assignment: Sequence[int]) -> bool:
        """The option's constraint between instance i and i+1 of one type."""
        for k in self.chains:
            prev, cur = assignment[k - 1], assignment[k]
            if self.matching == "FR" and not cur > prev:
                return False
            if self.matching == "MR" and not cur < prev:
                return False
            if self.matching == "FRC" and cur != prev + 1:
                return False
            if self.matching == "MRC" and cur != prev - 1:
                return False
        return True

    def match(self) -> tuple[int, ...] | None:
        """MATCH: the first assignment, in search order, satisfying the ordering and every predicate."""
        newest_first = self.matching in ("MR", "MRC")
        candidates = []
        for inst in self.signature:
            n = len(self.queues[inst.type_name])
            candidates.append(range(n - 1, -1, -1) if newest_first else range(n))
        for assignment in itertools.product(*candidates):
            if not self.ordered(assignment):
                continue
            binding = {inst: self.queues[inst.type_name][pos]["attrs"] for inst, pos in zip(self.signature, assignment)}
            if self.conj.holds(binding):
                return assignment
        return None

    def dequeue(self, assignment: Sequence[int]) -> None:
        for type_name, queue in self.queues.items():
            matched = [pos for inst, pos in zip(self.signature, assignment) if inst.type_name == type_name]
            first, last = min(matched), max(matched)
            if self.disposal == "I":
                self.queues[type_name] = [e for i, e in enumerate(queue) if i not in matched]
            elif self.disposal == "PI":
                self.queues[type_name] = queue[last + 1 :]
            elif self.disposal == "IP":
                self.queues[type_name] = queue[:first]
            else:  # FP
                self.queues[type_name] = queue[first + 1 :]

    def offer(self, event: Event) -> tuple[str, ...] | None:
        if event["type"] not in self.queues or not self.admits(event):
            return None
        self.queues[event["type"]].append(event)
        assignment = self.match()
        if assignment is None:
            return None
        ids = tuple(self.queues[inst.type_name][pos]["id"] for inst, pos in zip(self.signature, assignment))
        self.dequeue(assignment)
        return ids

    def state(self) -> dict[str, list[str]]:
        return {t: [e["id"] for e in q] for t, q in self.queues.items()}


class Oracle:
    """Every subscription in declaration order; each distinct conjunction keeps its own queues."""

    def __init__(self, subs: Sequence[SubSpec]) -> None:
        self.subs = [(s.name, [OracleConjunction(c, s.matching, s.disposal) for c in s.distinct()]) for s in subs]

    def publish(self, event: Event) -> list[Delivered]:
        out: list[Delivered] = []
        for name, conjs in self.subs:
            for index, conj in enumerate(conjs):
                ids = conj.offer(event)
                if ids is not None:
                    out.append((name, index, ids))
        return out

    def state_json(self) -> dict[str, list[dict[str, list[str]]]]:
        return {name: [c.state() for c in conjs] for name, conjs in self.subs}


def publish(engine: Engine, event: Event) -> list[Delivered]:
    out = [(d.subscription, d.conjunction, tuple(d.ids)) for d in engine.publish(event)]
    engine.check()
    return out


def by_position(delivered: list[Delivered], order: list[str]) -> list[Delivered]:
    """Deliveries of one arrival sorted by (subscription in declaration order, conjunction): the
    semantics fixes the conjunction order only as 'canonical', test_properties checks it."""
    return sorted(delivered, key=lambda d: (order.index(d[0]), d[1]))


def run_both(program: ProgramSpec, stream: list[Event]) -> None:
    engine = Engine.from_source(program.text, matcher="reference")
    oracle = Oracle(program.subs)
    order = [s.name for s in program.subs]
    assert engine.state_json() == oracle.state_json()
    for event in stream:
        got = publish(engine, event)
        want = oracle.publish(event)
        # Subscriptions are processed in declaration order (Engine's documented contract).
        assert [order.index(d[0]) for d in got] == sorted(order.index(d[0]) for d in got)
        assert by_position(got, order) == by_position(want, order), f"at {event['id']}"
        assert engine.state_json() == oracle.state_json(), f"queues after {event['id']}"


# --- the oracle itself reproduces the normative worked examples ------------------------------


def _ev(event_id: str, type_name: str, **attrs: Any) -> Event:
    return {"id": event_id, "type": type_name, "attrs": attrs}


def _oracle_run(conj: ConjSpec, matching: str, disposal: str, events: list[Event]) -> tuple[list[Any], Any]:
    oracle = OracleConjunction(conj, matching, disposal)
    delivered = [(e["id"], list(ids)) for e in events if (ids := oracle.offer(e)) is not None]
    return delivered, oracle.state()


def test_oracle_worked_example_1() -> None:
    """Why: the oracle is only worth something if it agrees with the normative examples."""
    conj = ConjSpec((("T1", 0), ("T2", 0)), ())
    events = [_ev("x1", "T1", a=1), _ev("x2", "T1", a=2), _ev("y1", "T2", a=3)]
    assert _oracle_run(conj, "FR", "PI", events) == ([("y1", ["x1", "y1"])], {"T1": ["x2"], "T2": []})
    assert _oracle_run(conj, "MR", "I", events) == ([("y1", ["x2", "y1"])], {"T1": ["x1"], "T2": []})


def test_oracle_worked_example_2() -> None:
    t0, t1 = Instance("T", 0), Instance("T", 1)
    conj = ConjSpec((("T", 1),), (PredSpec(AttrRef(t0, "v", "int"), ">", AttrRef(t1, "v", "int")),))
    events = [_ev("a", "T", v=5), _ev("b", "T", v=3), _ev("c", "T", v=4)]
    assert _oracle_run(conj, "FR", "PI", events) == ([("b", ["a", "b"])], {"T": ["c"]})
    assert _oracle_run(conj, "MR", "PI", events) == ([("c", ["c", "b"])], {"T": []})


def test_oracle_worked_example_3() -> None:
    def k(t: str, i: int) -> AttrRef:
        return AttrRef(Instance(t, i), "k", "int")

    conj = ConjSpec(
        (("T1", 1), ("T2", 1)), (PredSpec(k("T1", 0), "=", k("T2", 0)), PredSpec(k("T1", 1), "=", k("T2", 1)))
    )
    events = [_ev(f"e{n}", "T1", k=v) for n, v in zip(range(1, 6), (1, 7, 3, 8, 5))]
    events += [_ev(i, "T2", k=v) for i, v in (("ea", 11), ("eb", 7), ("ec", 8))]
    expected = {
        "PI": {"T1": ["e5"], "T2": []},
        "I": {"T1": ["e1", "e3", "e5"], "T2": ["ea"]},
        "IP": {"T1": ["e1"], "T2": ["ea"]},
        "FP": {"T1": ["e3", "e4", "e5"], "T2": ["ec"]},
    }
    for disposal, queues in expected.items():
        assert _oracle_run(conj, "FR", disposal, events) == ([("ec", ["e2", "e4", "eb", "ec"])], queues)


def test_oracle_contiguity_is_within_the_queue() -> None:
    """FRC: T[1] must be the queue neighbour of T[0]; events that failed ENQUEUE do not count."""
    t0, t1 = Instance("T", 0), Instance("T", 1)
    conj = ConjSpec(
        (("T", 1),),
        (
            PredSpec(AttrRef(t0, "v", "int"), "=", Const(1, "int")),
            PredSpec(AttrRef(t1, "v", "int"), "=", Const(2, "int")),
        ),
    )
    events = [_ev("a", "T", v=1), _ev("x", "T", v=0), _ev("b", "T", v=2)]
    assert _oracle_run(conj, "FRC", "PI", events) == ([("b", ["a", "b"])], {"T": []})
    events = [_ev("a", "T", v=1), _ev("x", "T", v=1), _ev("b", "T", v=2)]
    assert _oracle_run(conj, "FRC", "PI", events) == ([("b", ["x", "b"])], {"T": []})
    assert _oracle_run(conj, "FR", "I", events) == ([("b", ["a", "b"])], {"T": ["x"]})


# --- the property ----------------------------------------------------------------------------


@given(st.data())
def test_engine_agrees_with_bruteforce_oracle(data: st.DataObject) -> None:
    """Deliveries and queue states equal the brute-force oracle's after every event, for random
    programs (1–3 subscriptions of 1–3 conjunctions, ≤ 4 slots) under all 16 option combinations."""
    program = data.draw(programs(max_subs=3, max_conj=3, max_slots=4), label="program")
    stream = data.draw(streams(program.types, max_events=40, max_per_type=8), label="stream")
    run_both(program, stream)


@st.composite
def many_instances(draw: st.DrawFn) -> ProgramSpec:
    """One subscription whose conjunctions have three or four instances of one type (and maybe
    one of another), with unary and binary predicates between them."""
    types = (TypeSpec("T", (AttrSpec("a", "int"), AttrSpec("b", "int"))), TypeSpec("U", (AttrSpec("a", "int"),)))
    by_name = {t.name: t for t in types}
    conjs = []
    for _ in range(between(draw, 1, 2)):
        tops = (("T", 3),) if chance(draw, 2) else (("T", 2), ("U", 0))
        instances = ConjSpec(tops, ()).signature
        preds = [draw_predicates(draw, by_name, instances) for _ in range(between(draw, 1, 4))]
        conjs.append(ConjSpec(tops, tuple(preds)))
    sub = SubSpec("S0", pick(draw, MATCHINGS), pick(draw, DISPOSALS), tuple(conjs))
    return ProgramSpec(types, (sub,), draw_render_program(draw, types, [sub]))


@given(st.data())
def test_engine_agrees_with_oracle_on_many_instances_of_one_type(data: st.DataObject) -> None:
    """Same, focused on what FR/MR/FRC/MRC differ in: three or four instances of one type (one
    queue, so the ordering constraints and binary predicates between instances do all the work)."""
    program = data.draw(many_instances(), label="program")
    stream = data.draw(streams(program.types, max_events=16, max_per_type=8), label="stream")
    run_both(program, stream)


def test_program_text_helper_compiles() -> None:
    """The plain renderer used for hand-built pieces produces a program the engine accepts."""
    types = (TypeSpec("T", (AttrSpec("a", "int"),)),)
    sub = SubSpec("S", "MRC", "FP", (ConjSpec((("T", 2),), ()),))
    assert Engine.from_source(program_text(types, [sub]), matcher="reference").state_json() == {"S": [{"T": []}]}
