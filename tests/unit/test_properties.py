"""Property tests of the engine on random programs and streams (semantics file, "Properties").

Each test states a property the semantics file promises and checks it with the generated pieces
(tests/strategies.py), never with the library's own normal form: signatures and predicates are
recomputed and re-evaluated here. ``engine.check()`` runs after every publish.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import (  # noqa: E402
    AttrSpec,
    ConjSpec,
    Event,
    ProgramSpec,
    SubSpec,
    TypeSpec,
    between,
    draw_conjunctions,
    draw_render_program,
    draw_type_specs,
    programs,
    render_subscription,
    streams,
    subscriptions,
    variant_subscription,
)

from faidecs import Engine, SubscriptionNotFound
from faidecs.properties import Property

Delivered = tuple[str, int, tuple[str, ...]]  # (subscription, conjunction as written, ids)


def reference_engine(text: str) -> Engine:
    """These properties are the semantics'; they are checked on the reference matcher, and the
    compiled matcher is shown equal to it in test_compiled_matcher.py (compiling a kernel per
    random program here would cost minutes)."""
    return Engine.from_source(text, matcher="reference")


def publish(engine: Engine, event: Event) -> list[Delivered]:
    out = [(d.subscription, d.conjunction, tuple(d.ids)) for d in engine.publish(event)]
    engine.check()
    return out


def relations_of(delivered: list[Delivered], name: str) -> list[tuple[str, ...]]:
    return [ids for sub, _, ids in delivered if sub == name]


def queue_states(state: dict[str, Any], name: str) -> list[str]:
    """A subscription's conjunction queues, independent of the order the conjunctions were written in."""
    return sorted(json.dumps(q, sort_keys=True) for q in state[name])


# --- determinism, snapshot / restore ------------------------------------------------------------


@given(st.data())
def test_determinism_and_restore_continues_exactly(data: st.DataObject) -> None:
    """Conjunction agreement rests on determinism: two engines fed one stream deliver the same;
    an engine restored from a (JSON round-tripped) snapshot mid-stream continues exactly like the
    original, deliveries and queues."""
    program = data.draw(programs(), label="program")
    stream = data.draw(streams(program.types), label="stream")
    cut = data.draw(st.integers(0, len(stream)), label="cut")
    a, b = reference_engine(program.text), reference_engine(program.text)
    restored: Engine | None = None
    events: list[Event | None] = [*stream, None]
    for i, event in enumerate(events):
        if i == cut:
            snapshot = json.loads(json.dumps(a.snapshot()))
            restored = Engine.restore(snapshot, matcher="reference")
            restored.check()
            assert restored.published == a.published == cut
            assert restored.state_json() == a.state_json()
            assert restored.snapshot() == a.snapshot()
        if event is None:
            break
        got = publish(a, event)
        assert publish(b, event) == got
        assert a.state_json() == b.state_json()
        if restored is not None:
            assert publish(restored, event) == got, f"restored engine diverges at {event['id']}"
            assert restored.state_json() == a.state_json()


# --- safety: admission, no creation, no duplication ---------------------------------------------
# One test checks all of them on each generated example: generating programs and streams costs
# far more than running them, and the file must stay within its time budget.


def _repeated(ids: list[str]) -> set[str]:
    return {i for i in ids if ids.count(i) > 1}


def no_duplication_expected(sub: SubSpec, conj: ConjSpec) -> str | None:
    """Which form of No Duplication the options promise for ``conj``: the strong one under I, PI
    and IP, and under FP when every type has one instance (FP then removes every matched event);
    No Duplication' under FP with FRC or MRC (a relation binds a block of neighbours in each
    queue; FP removes the block's oldest event and all before it, and new events only append, so
    no event of the block ever again has enough older neighbours to take the same position).
    None: FP with FR or MR and several instances of a type, where even No Duplication' fails
    (see test_fp_no_duplication_prime_fr_mr)."""
    if sub.disposal != "FP" or all(inst.index == 0 for inst in conj.signature):
        return Property.NO_DUPLICATION
    if sub.matching in ("FRC", "MRC"):
        return Property.NO_DUPLICATION_PRIME
    return None


def check_safety(program: ProgramSpec, stream: list[Event]) -> None:
    subs = {s.name: s for s in program.subs}
    engine = reference_engine(program.text)
    arrival: dict[str, int] = {}
    per_conj: dict[tuple[str, int], list[str]] = defaultdict(list)
    per_slot: dict[tuple[str, int, int], list[str]] = defaultdict(list)
    for n, event in enumerate(stream):
        arrival[event["id"]] = n
        for d in engine.publish(event):
            sub = subs[d.subscription]
            conj = sub.distinct()[d.conjunction]
            # Admission: the conjunction's signature, each event of its slot's type ...
            assert [str(s) for s in d.signature] == [inst.text() for inst in conj.signature]
            assert len(d.relation) == len(conj.signature)
            assert len(set(d.ids)) == len(d.ids), f"{d.ids}: one event twice in one relation"
            binding = {}
            for inst, e in zip(conj.signature, d.relation):
                assert e.type == inst.type_name, (inst, e)
                # No Creation: a published event, with the values it was published with.
                assert e.id in arrival, f"{e.id} was never published"
                assert e.attrs == stream[arrival[e.id]]["attrs"]
                binding[inst] = e.attrs
            # ... every predicate, evaluated here one by one ...
            for pred in conj.preds:
                assert pred.holds(binding), f"{d.ids} violates {pred.text()}"
            # ... and the matching option's instance order (FR/FRC: T[i+1] arrived after T[i]).
            for prev, cur in zip(conj.signature, conj.signature[1:]):
                if prev.type_name == cur.type_name:
                    p, c = arrival[d[prev.text()].id], arrival[d[cur.text()].id]
                    assert (c < p) if sub.matching in ("MR", "MRC") else (c > p), (sub.matching, d.ids)
            per_conj[d.subscription, d.conjunction].extend(d.ids)
            for k, event_id in enumerate(d.ids):
                per_slot[d.subscription, d.conjunction, k].append(event_id)
        engine.check()
    for (name, index), ids in per_conj.items():
        sub = subs[name]
        expected = no_duplication_expected(sub, sub.distinct()[index])
        if expected == Property.NO_DUPLICATION:
            assert not _repeated(ids), f"{name}[{index}] {sub.matching}+{sub.disposal}: {sorted(_repeated(ids))} twice"
        elif expected == Property.NO_DUPLICATION_PRIME:
            for (n2, i2, k), at_k in per_slot.items():
                if (n2, i2) == (name, index):
                    assert not _repeated(at_k), f"{name}[{index}] slot {k}: {sorted(_repeated(at_k))} twice"


@given(st.data())
def test_safety_admission_no_creation_no_duplication(data: st.DataObject) -> None:
    """Admission: every delivered relation has its conjunction's signature and types, satisfies
    every predicate (re-evaluated here from the generated pieces) and the option's instance order.
    No Creation: only published events, unchanged. No Duplication under I, PI, IP (and FP with one
    instance per type): an event id in at most one relation per conjunction; No Duplication' under
    FP with FRC/MRC: never twice in the same signature position."""
    program = data.draw(programs(), label="program")
    stream = data.draw(streams(program.types), label="stream")
    check_safety(program, stream)


def _duplication_run(program: ProgramSpec, stream: list[Event]) -> dict[tuple[str, int, int], list[str]]:
    """Per (subscription, conjunction, slot): the ids delivered in that position."""
    per_slot: dict[tuple[str, int, int], list[str]] = defaultdict(list)
    engine = reference_engine(program.text)
    for event in stream:
        for sub, conj, ids in publish(engine, event):
            for k, i in enumerate(ids):
                per_slot[sub, conj, k].append(i)
    return per_slot


def _one_type_program(matching: str, condition: str) -> ProgramSpec:
    """A hand-written FP program over `type T(a: int, b: int)`; pieces are not needed here."""
    types = (TypeSpec("T", (AttrSpec("a", "int"), AttrSpec("b", "int"))),)
    text = f"type T(a: int, b: int)\nsubscription S (matching {matching}, disposal FP): {condition}\n"
    return ProgramSpec(types, (), text)


def _t_events(*values: tuple[str, int, int]) -> list[Event]:
    return [{"id": i, "type": "T", "attrs": {"a": a, "b": b}} for i, a, b in values]


# FR: x, w fit T[0]; y fits T[1]. At y: [x, y]; FP removes up to x only, so w and y stay; at u the
# first assignment is T[0]=w, T[1]=y: y is in position T[1] a second time.
FR_COUNTEREXAMPLE = (
    _one_type_program("FR", "T[0].a = 0 and T[1].a = 1"),
    _t_events(("x", 0, 0), ("w", 0, 0), ("y", 1, 0), ("u", 0, 0)),
)
# MR: at s, T[0]=s, T[1]=r (the newest before s with a=1), T[2]=p (the newest before r with
# b = s.b; q is skipped). FP removes up to p only, so q, r, s stay; at t, T[0]=t, T[1]=r again,
# T[2]=q (b = t.b).
MR_COUNTEREXAMPLE = (
    _one_type_program("MR", "T[1].a = 1 and T[0].b = T[2].b"),
    _t_events(("p", 0, 1), ("q", 0, 0), ("r", 1, 0), ("s", 0, 1), ("t", 0, 0)),
)


def test_fp_fr_mr_same_position_counterexamples() -> None:
    """The engine follows the FP rule to the letter on the two counterexamples (so the finding is
    about the rules, not about the engine): an event is delivered twice in one position."""
    for (program, events), expected, queue in (
        (FR_COUNTEREXAMPLE, [[], [], [("x", "y")], [("w", "y")]], ["y", "u"]),
        (MR_COUNTEREXAMPLE, [[], [], [], [("s", "r", "p")], [("t", "r", "q")]], ["r", "s", "t"]),
    ):
        engine = reference_engine(program.text)
        assert [[ids for _, _, ids in publish(engine, e)] for e in events] == expected
        assert engine.state_json() == {"S": [{"T": queue}]}


# --- conjunction agreement: the same conjunctions written differently ---------------------------


@given(st.data())
def test_agreement_between_spellings(data: st.DataObject) -> None:
    """Conjunction (and disjunction) agreement: a subscription and the same disjunction written
    differently (conjunctions shuffled or repeated, predicates reordered, comparisons flipped,
    `T.a` vs `T[0].a`, `=` vs `==`) deliver the same relations in the same order, in one engine
    and in separate engines, and keep the same queues."""
    program = data.draw(programs(), label="program")
    variants = [data.draw(variant_subscription(s, f"V{k}"), label=f"V{k}") for k, s in enumerate(program.subs)]
    same_names = [data.draw(variant_subscription(s, s.name), label=f"{s.name}'") for s in program.subs]
    stream = data.draw(streams(program.types), label="stream")
    together = reference_engine(program.text + "\n" + "\n".join(variants))
    original = reference_engine(program.text)
    rewritten = reference_engine(program.types_text + "\n".join(same_names))
    for event in stream:
        both = publish(together, event)
        got = publish(original, event)
        other = publish(rewritten, event)
        # Separate engines: the same (subscription, relation) sequence, order included.
        assert [(s, ids) for s, _, ids in other] == [(s, ids) for s, _, ids in got], f"at {event['id']}"
        for k, sub in enumerate(program.subs):
            assert relations_of(both, f"V{k}") == relations_of(both, sub.name) == relations_of(got, sub.name)
            state = together.state_json()
            assert queue_states(state, f"V{k}") == queue_states(state, sub.name)
            assert queue_states(rewritten.state_json(), sub.name) == queue_states(original.state_json(), sub.name)


def test_flipped_constant_comparison_is_one_predicate() -> None:
    """`20 > T.a` and `T.a < 20`, `T.a` and `T[0].a`: one conjunction, kept once in a disjunction."""
    engine = reference_engine(
        "type T(a: int)\ntype U(b: int)\nsubscription S: T.a < 20 and U.b = T[0].a or U[0].b == T.a and 20 > T[0].a\n"
    )
    assert engine.state_json() == {"S": [{"T": [], "U": []}]}


# --- covering agreement ---------------------------------------------------------------------------


@st.composite
def covering_programs(draw: st.DrawFn, matching: str = "FR", disposal: str = "PI") -> ProgramSpec:
    """P: Φ, Q: Φ ∧ Φ', where Φ and Φ' have only unary predicates and no type in common."""
    types = draw_type_specs(draw, min_types=2, max_types=4)
    split = between(draw, 1, len(types) - 1)
    phi = draw_conjunctions(draw, types[:split], max_slots=3, binary=False)
    phi2 = draw_conjunctions(draw, types[split:], max_slots=2, binary=False)
    subs = [SubSpec("P", matching, disposal, (phi,)), SubSpec("Q", matching, disposal, (phi.conjoin(phi2),))]
    return ProgramSpec(types, tuple(subs), draw_render_program(draw, types, subs))


def covering_violations(program: ProgramSpec, stream: list[Event]) -> list[str]:
    """Each relation of Q whose Φ part is not a relation P delivered at that arrival or before."""
    phi_types = set(program.subs[0].conjunctions[0].types)
    q_signature = program.subs[1].conjunctions[0].signature
    engine = reference_engine(program.text)
    delivered_by_p: set[tuple[str, ...]] = set()
    problems: list[str] = []
    for event in stream:
        delivered = publish(engine, event)
        delivered_by_p.update(relations_of(delivered, "P"))
        for ids in relations_of(delivered, "Q"):
            part = tuple(i for inst, i in zip(q_signature, ids) if inst.type_name in phi_types)
            if part not in delivered_by_p:
                problems.append(f"at {event['id']}: Q delivered {ids}, P never delivered {part}")
    return problems


@given(st.data())
def test_covering_agreement_fr_pi(data: st.DataObject) -> None:
    """Covering Agreement under FR+PI: whenever Φ ∧ Φ' delivers, Φ has delivered its Φ part
    (at that arrival or earlier)."""
    program = data.draw(covering_programs("FR", "PI"), label="program")
    stream = data.draw(streams(program.types), label="stream")
    assert covering_violations(program, stream) == []


@given(st.data())
def test_covering_agreement_other_combinations_the_papers_keep(data: st.DataObject) -> None:
    """The same for FR+I, FRC+I, FRC+PI and FRC+FP, which the papers' table (ToIT 2013, Table
    4.1) also says keep Covering Agreement. (FR+FP, the sixth such cell, keeps it only in a
    weaker form: see test_covering_fr_fp_phi_part_is_delivered_late.)"""
    matching, disposal = data.draw(st.sampled_from([("FR", "I"), ("FRC", "I"), ("FRC", "PI"), ("FRC", "FP")]))
    program = data.draw(covering_programs(matching, disposal), label="program")
    stream = data.draw(streams(program.types), label="stream")
    assert covering_violations(program, stream) == []


def test_covering_fr_fp_phi_part_is_delivered_late() -> None:
    """FINDING (the rules, not the engine). FR+FP, which the papers' table says keeps Covering
    Agreement: Q = Φ ∧ B delivers [w, y, b2] while P = Φ has not delivered [w, y]; P delivers it
    only at the next A event it admits (z), and never if none comes. Under FP, P's first match
    [x, y] leaves w and y queued, but P only matches on an arrival of its own types."""
    program = (
        "type A(a: int)\ntype B(a: int)\n"
        "subscription P (matching FR, disposal FP): A[0].a = 0 and A[1].a = 1\n"
        "subscription Q (matching FR, disposal FP): A[0].a = 0 and A[1].a = 1 and B\n"
    )
    engine = reference_engine(program)
    events = [("x", "A", 0), ("w", "A", 0), ("b1", "B", 0), ("y", "A", 1), ("b2", "B", 0), ("z", "A", 0)]
    delivered = [
        [(s, ids) for s, _, ids in publish(engine, {"id": i, "type": t, "attrs": {"a": a}})] for i, t, a in events
    ]
    assert delivered == [
        [],
        [],
        [],
        [("P", ("x", "y")), ("Q", ("x", "y", "b1"))],
        [("Q", ("w", "y", "b2"))],  # P has not delivered [w, y] ...
        [("P", ("w", "y"))],  # ... until the next A event it admits
    ]


# --- subscribe / unsubscribe at run time --------------------------------------------------------


@given(st.data())
def test_runtime_subscribe_and_unsubscribe(data: st.DataObject) -> None:
    """A subscription added at run time behaves like an engine that had it from that point on,
    starting with empty queues; removing it stops its deliveries and leaves the others as if it
    had never existed; the name can then be subscribed again, afresh."""
    program = data.draw(programs(), label="program")
    new = data.draw(subscriptions(program.types, "N"), label="N")
    stream = data.draw(streams(program.types), label="stream")
    n = len(stream)
    start = data.draw(st.integers(0, n), label="subscribe at")
    stop = data.draw(st.integers(start, n), label="unsubscribe at")
    again = data.draw(st.integers(stop, n), label="subscribe again at")
    redeclare = data.draw(st.booleans(), label="redeclare types")
    texts = [data.draw(render_subscription(new), label="text") for _ in range(2)]
    if redeclare:
        texts = [program.types_text + t for t in texts]

    actions: dict[int, list[str]] = defaultdict(list)
    for at, action in ((start, "subscribe"), (stop, "unsubscribe"), (again, "subscribe again")):
        actions[at].append(action)  # at one index: in this order

    engine = reference_engine(program.text)
    base = reference_engine(program.text)
    fresh: Engine | None = None
    for i, event in enumerate([*stream, None]):
        for action in actions[i]:
            if action == "unsubscribe":
                engine.unsubscribe("N")
                assert "N" not in engine.state_json()
                fresh = None
                continue
            text = texts[0] if action == "subscribe" else texts[1]
            assert engine.subscribe(text) == ["N"]
            assert engine.state_json()["N"] == [{t: [] for t in c.types} for c in new.distinct()]
            fresh = reference_engine(program.types_text + text.removeprefix(program.types_text))
        if event is None:
            break
        got = publish(engine, event)
        want = publish(base, event) + (publish(fresh, event) if fresh is not None else [])
        assert got == want, f"at {event['id']}"
        expected_state = base.state_json() | (fresh.state_json() if fresh is not None else {})
        assert engine.state_json() == expected_state


def test_unsubscribe_unknown_name_raises() -> None:
    engine = reference_engine("type T(a: int)\nsubscription S: T\n")
    with pytest.raises(SubscriptionNotFound):
        engine.unsubscribe("X")
    engine.unsubscribe("S")
    with pytest.raises(SubscriptionNotFound):
        engine.unsubscribe("S")
