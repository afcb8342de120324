"""The compiled engine as a whole: run-time subscriptions, mixed matchers, memory, snapshots.

Why: a compiled engine shares one event store (``EventContext``) between its compiled
conjunctions, falls back to the reference matcher for conjunctions that order strings (also inside
staged coverings), adds and removes kernels at run time, forgets the Python events no queue holds
any more, and must snapshot the same state whether its events came one by one or in batches. Each
of these is checked against a reference engine doing the same thing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import event as note
from hypothesis import given, settings
from hypothesis import strategies as st

from faidecs import Engine
from faidecs.errors import EventError, FaidecsError

Delivered = tuple[str, int, tuple[str, ...]]


def delivered(deliveries: list[Any]) -> list[Delivered]:
    return [(d.subscription, d.conjunction, tuple(d.ids)) for d in deliveries]


EXAMPLES = settings(max_examples=min(50, max(10, (settings.default.max_examples or 100) // 2)), deadline=None)

# --- run-time subscribe / unsubscribe ----------------------------------------------------------

BASE = """\
type T1(a: int, s: str)
type T2(a: int, s: str)
subscription A: T1 and T2
subscription B (matching MR, disposal I): T1.a < T2.a
"""
# Subscriptions that can be added (and removed, and added again) at run time. D declares a new
# type; F orders strings, so it runs on the reference matcher in the compiled engine.
POOL = {
    "A": "subscription A: T1 and T2",
    "B": "subscription B (matching MR, disposal I): T1.a < T2.a",
    "C": "subscription C (matching FRC, disposal FP): T1[0].a <= T1[1].a and T2.a != 1",
    "D": 'type T3(a: int, s: str)\nsubscription D (matching MRC, disposal IP): T3.s = "é" and T3.a > T1.a',
    "F": 'subscription F (matching MR, disposal PI): T2.s < "m" and T2.a = T1.a or T1.a = 3 and T2',
}
POOL_MATCHERS = {
    "A": ["compiled"],
    "B": ["compiled"],
    "C": ["compiled"],
    "D": ["compiled"],
    "F": ["reference", "compiled"],
}

ev_values = st.tuples(st.sampled_from(("T1", "T2", "T3")), st.integers(0, 3), st.sampled_from(("", "é", "a", "z")))
actions = st.lists(
    st.one_of(
        st.tuples(st.just("event"), ev_values),
        st.tuples(st.just("event"), ev_values),
        st.tuples(st.just("event"), ev_values),
        st.tuples(st.just("subscribe"), st.sampled_from(sorted(POOL))),
        st.tuples(st.just("unsubscribe"), st.sampled_from(sorted(POOL))),
    ),
    min_size=5,
    max_size=40,
)


def apply(engine: Engine, action: tuple[str, Any], k: int) -> Any:
    kind, arg = action
    try:
        if kind == "event":
            type_name, a, s = arg
            return delivered(engine.publish({"id": f"e{k}", "type": type_name, "attrs": {"a": a, "s": s}}))
        if kind == "subscribe":
            return engine.subscribe(POOL[arg])
        engine.unsubscribe(arg)
        return None
    except FaidecsError as exc:  # the same refusals on both engines: unknown type, taken name, ...
        return ("error", type(exc).__name__, str(exc))


@EXAMPLES
@given(actions)
def test_subscribe_and_unsubscribe_at_run_time(steps: list[tuple[str, Any]]) -> None:
    compiled = Engine.from_source(BASE, matcher="compiled")
    reference = Engine.from_source(BASE, matcher="reference")
    for k, action in enumerate(steps):
        got, expected = apply(compiled, action, k), apply(reference, action, k)
        assert got == expected, (k, action)
        compiled.check()
        assert compiled.state_json() == reference.state_json(), (k, action)
        assert compiled.metrics() == reference.metrics(), (k, action)
        assert compiled.matchers() == {name: POOL_MATCHERS[name] for name in compiled.matchers()}
        assert compiled.source() == reference.source()
    assert compiled.snapshot() == reference.snapshot()


@pytest.mark.parametrize("matcher", ["compiled", "reference"])
def test_resubscribing_starts_with_empty_queues(matcher: str) -> None:
    """B is removed with x1 queued and added again: the new B knows nothing of x1, so y1 (a = 5)
    finds no T1 partner in it, while A (FR+PI) delivers [x1, y1]."""
    engine = Engine.from_source(BASE, matcher=matcher)
    engine.publish({"id": "x1", "type": "T1", "attrs": {"a": 0, "s": ""}})
    engine.unsubscribe("B")
    assert engine.subscribe(POOL["B"]) == ["B"]
    assert engine.state_json()["B"] == [{"T1": [], "T2": []}]
    assert delivered(engine.publish({"id": "y1", "type": "T2", "attrs": {"a": 5, "s": ""}})) == [("A", 0, ("x1", "y1"))]
    assert engine.state_json()["B"] == [{"T1": [], "T2": ["y1"]}]


def test_events_of_a_type_declared_at_run_time() -> None:
    """T3 is unknown until D declares it; then both engines accept T3 events and agree."""
    engines = [Engine.from_source(BASE, matcher=m) for m in ("compiled", "reference")]
    for engine in engines:
        with pytest.raises(EventError, match="unknown event type 'T3'"):
            engine.publish({"id": "z0", "type": "T3", "attrs": {"a": 1, "s": "é"}})
        assert engine.subscribe(POOL["D"]) == ["D"]
    events = [
        {"id": "x1", "type": "T1", "attrs": {"a": 0, "s": ""}},
        {"id": "z1", "type": "T3", "attrs": {"a": 1, "s": "é"}},
        {"id": "z2", "type": "T3", "attrs": {"a": 1, "s": "e"}},
    ]
    results = [[delivered(e.publish(ev)) for ev in events] for e in engines]
    # D (MRC+IP): z1 is admitted (s = "é") and 1 > 0 with x1: [x1, z1] at z1; z2 is not admitted.
    assert results[0] == results[1] == [[], [("D", 0, ("x1", "z1"))], []]
    assert engines[0].state_json() == engines[1].state_json()


# --- mixed matchers ---------------------------------------------------------------------------

MIXED = """\
type T1(a: int, s: str)
type T2(a: int, s: str)
subscription S (matching MR, disposal I): T1.s < T2.s or T1.a = T2.a
subscription G (matching FR, disposal PI, covering staged): T1.s >= "m" and T2.a > 0
subscription H (matching FRC, disposal FP): T1.s != T2.s and T1.a <= T2.a
"""


def test_matchers_report_the_reference_fallback() -> None:
    """`T1.s < T2.s` orders strings: the kernels cannot run it. G is staged: its components
    (T1 first, then T2) are matched separately, and only the T1 one orders strings."""
    compiled = Engine.from_source(MIXED, matcher="compiled")
    assert compiled.matchers() == {"S": ["reference", "compiled"], "G": ["reference+compiled"], "H": ["compiled"]}
    reference = Engine.from_source(MIXED, matcher="reference")
    assert reference.matchers() == {"S": ["reference", "reference"], "G": ["reference+reference"], "H": ["reference"]}


# At least a dozen events: shorter streams rarely form relations in these programs.
event_lists = st.lists(
    st.tuples(st.sampled_from(("T1", "T2")), st.integers(0, 3), st.sampled_from(("", "a", "m", "z", "é"))),
    min_size=12,
    max_size=40,
).map(lambda picks: [{"id": f"e{k}", "type": t, "attrs": {"a": a, "s": s}} for k, (t, a, s) in enumerate(picks)])


@EXAMPLES
@given(event_lists)
def test_mixed_matchers_agree_with_reference(events: list[dict[str, Any]]) -> None:
    compiled = Engine.from_source(MIXED, matcher="compiled")
    reference = Engine.from_source(MIXED, matcher="reference")
    for k, e in enumerate(events):
        assert delivered(compiled.publish(e)) == delivered(reference.publish(e)), k
        compiled.check()
        assert compiled.state_json() == reference.state_json(), k
    assert compiled.metrics() == reference.metrics()
    assert compiled.snapshot() == reference.snapshot()


# --- memory -----------------------------------------------------------------------------------

PAIR = "type T1(a: int)\ntype T2(a: int)\nsubscription S: T1 and T2\n"
MANY = 20_000


def test_forgotten_events_are_collected_per_event() -> None:
    """FR+PI on `T1 and T2` with T1, T2 alternating: every T2 delivers and empties both queues,
    so at most one event is ever queued. The engine keeps the Python event of every arrival that
    a compiled queue may hold; if it never forgot delivered ones it would hold all 20,000."""
    engine = Engine.from_source(PAIR, matcher="compiled")
    assert engine._context is not None
    largest = 0
    for k in range(MANY):
        got = engine.publish({"id": f"e{k}", "type": "T1" if k % 2 == 0 else "T2", "attrs": {"a": k}})
        assert len(got) == k % 2
        largest = max(largest, len(engine._context.events))
    assert largest < MANY // 4
    assert engine.state_json() == {"S": [{"T1": [], "T2": []}]}
    # What is still queued stays known: a last T1 is delivered with the next T2.
    engine.publish({"id": "last", "type": "T1", "attrs": {"a": 0}})
    assert delivered(engine.publish({"id": "end", "type": "T2", "attrs": {"a": 0}})) == [("S", 0, ("last", "end"))]


def test_forgotten_events_are_collected_per_batch() -> None:
    """The same stream in batches of 2,000: events the kernels delivered within a batch are
    never stored; the engine ends up holding only what is queued."""
    engine = Engine.from_source(PAIR, matcher="compiled")
    reference = Engine.from_source(PAIR, matcher="reference")
    assert engine._context is not None
    size = 2_000
    for start in range(0, MANY, size):
        order = ["T1", "T2"] * (size // 2) + ["T1"]  # one T1 left over, queued
        values = np.arange(start, start + size + 1)
        tables = {"T1": {"a": values[0::2]}, "T2": {"a": values[1::2]}}
        result = engine.publish_batch(tables, order)
        assert len(result) == size // 2  # one per T2
        assert len(engine._context.events) < MANY // 4
        for t, a in zip(order, values.tolist()):
            reference.publish({"type": t, "attrs": {"a": a}})
    assert engine.state_json() == reference.state_json()
    assert engine.snapshot() == reference.snapshot()


# --- snapshots after batches --------------------------------------------------------------------


def batch_of(events: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    tables: dict[str, Any] = {}
    for t in sorted({e["type"] for e in events}):
        rows = [e for e in events if e["type"] == t]
        tables[t] = {
            "a": np.array([e["attrs"]["a"] for e in rows], dtype=np.int64),
            "s": np.array([e["attrs"]["s"] for e in rows], dtype=object),
        }
        if "id" in rows[0]:
            tables[t]["id"] = np.array([e["id"] for e in rows], dtype=object)
    return tables, [e["type"] for e in events]


@EXAMPLES
@given(st.data())
def test_snapshot_after_a_batch_restores_and_continues_identically(data: st.DataObject) -> None:
    events = data.draw(event_lists, label="events")
    if data.draw(st.booleans(), label="default ids"):
        events = [{k: v for k, v in e.items() if k != "id"} for e in events]
    cut = data.draw(st.integers(0, len(events)), label="cut")
    middle = data.draw(st.integers(0, cut), label="second batch starts")

    reference = Engine.from_source(MIXED, matcher="reference")
    expected = [delivered(reference.publish(e)) for e in events]

    compiled = Engine.from_source(MIXED, matcher="compiled")
    batched: list[Delivered] = []
    for part in (events[:middle], events[middle:cut]):
        if part:
            batched += compiled.publish_batch(*batch_of(part)).deliveries()
    assert batched == [d for step in expected[:cut] for d in step]
    note(f"deliveries before the cut: {min(len(batched), 3)}, after: {min(sum(map(len, expected[cut:])), 3)}")

    oracle = Engine.from_source(MIXED, matcher="reference")
    for e in events[:cut]:
        oracle.publish(e)
    snapshot = compiled.snapshot()
    assert snapshot == oracle.snapshot()
    for matcher in ("compiled", "reference"):
        restored = Engine.restore(snapshot, matcher=matcher)
        restored.check()
        assert restored.snapshot() == snapshot
        assert [delivered(restored.publish(e)) for e in events[cut:]] == expected[cut:], matcher
        assert restored.state_json() == reference.state_json()
    # The engine that took the snapshot goes on too, now one event at a time.
    assert [delivered(compiled.publish(e)) for e in events[cut:]] == expected[cut:]
    assert compiled.snapshot() == reference.snapshot()
