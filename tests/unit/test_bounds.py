"""Bounded conjunction state (``faidecs.matching.bounds``) on both matchers.

Why: bounds are applied in two places, in Python by the reference matcher and inside the compiled
kernels (expiry before the admission test, make room at ENQUEUE), and every replica must drop
exactly the same events, or agreement is lost. The property test draws bounds (global or per
subscription), option combinations and streams for fixed programs and requires the compiled
engine to agree with the reference engine on deliveries, queues and metrics (drop counts) after
every event, on the overflow error when the policy is ``error``, and after a snapshot/restore
with the same bounds. The hand-derived cases pin what the bounds mean.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import event as note
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from faidecs import Engine
from faidecs.errors import FaidecsError, QueueOverflowError
from faidecs.matching.bounds import Bounds

MATCHERS = ("compiled", "reference")
MATCHINGS = ("FR", "MR", "FRC", "MRC")
DISPOSALS = ("I", "PI", "IP", "FP")

TYPES = "type T1(a: int)\ntype T2(a: int)\ntype U(a: int)\n"
# Three subscriptions, their options drawn per example (one kernel serves every option
# combination, so this compiles four conjunctions once: two plain, and the two components of
# the staged one).
CONDITIONS = (
    "T1 and T2",
    "T1[0].a < T1[1].a and T2.a != 2 and T1[1].a <= T2.a",
    "T1.a > 0 and T2.a > 0",
)
STAGED = (False, False, True)
NAMES = ("S0", "S1", "S2")


def program(options: list[tuple[str, str]]) -> str:
    subs = []
    for name, condition, staged, (m, d) in zip(NAMES, CONDITIONS, STAGED, options):
        covering = ", covering staged" if staged else ""
        subs.append(f"subscription {name} (matching {m}, disposal {d}{covering}): {condition}")
    return TYPES + "\n".join(subs) + "\n"


def event(event_id: str, type_name: str, a: int = 0) -> dict[str, Any]:
    return {"id": event_id, "type": type_name, "attrs": {"a": a}}


def ids(deliveries: list[Any]) -> list[tuple[str, int, tuple[str, ...]]]:
    return [(d.subscription, d.conjunction, tuple(d.ids)) for d in deliveries]


# --- property: both matchers drop the same events -------------------------------------------

bounds_strategy = st.builds(
    Bounds,
    max_queue=st.none() | st.integers(1, 4),
    max_age=st.none() | st.integers(1, 10),
    overflow=st.just("drop-oldest"),
)


@st.composite
def bounds_specs(draw: st.DrawFn) -> Any:
    """One Bounds for all, or a mapping naming some of the subscriptions; with the error policy
    sometimes."""
    if draw(st.booleans()):
        spec: Any = draw(bounds_strategy)
    else:
        names = draw(st.lists(st.sampled_from(NAMES), unique=True))
        spec = {name: draw(bounds_strategy) for name in names}
    if draw(st.integers(0, 4)) == 0:  # the error policy, with a small queue so that it trips
        limit = draw(st.integers(1, 3))
        spec = Bounds(max_queue=limit, max_age=draw(st.none() | st.integers(2, 10)), overflow="error")
    return spec


@st.composite
def streams(draw: st.DrawFn, max_events: int = 30) -> list[dict[str, Any]]:
    size = draw(st.integers(6, max_events))
    picks = draw(
        st.lists(st.tuples(st.sampled_from(("T1", "T2", "U")), st.integers(0, 4)), min_size=size, max_size=size)
    )
    return [event(f"e{k}", t, a) for k, (t, a) in enumerate(picks)]


Outcome = tuple[str, Any]  # ("ok", deliveries) or ("error", message)


def step(engine: Engine, e: dict[str, Any]) -> Outcome:
    try:
        return ("ok", ids(engine.publish(e)))
    except QueueOverflowError as exc:
        return ("error", (str(exc), exc.subscription, exc.conjunction, exc.type_name, exc.max_queue, exc.event_id))


def trace(engine: Engine, events: list[dict[str, Any]]) -> list[tuple[Outcome, Any, Any]]:
    out = []
    for e in events:
        outcome = step(engine, e)
        if outcome[0] == "ok":
            engine.check()
        out.append((outcome, engine.state_json(), engine.metrics()))
    return out


EXAMPLES = settings(max_examples=min(50, max(10, (settings.default.max_examples or 100) // 2)), deadline=None)


@EXAMPLES
@given(
    options=st.lists(st.tuples(st.sampled_from(MATCHINGS), st.sampled_from(DISPOSALS)), min_size=3, max_size=3),
    bounds=bounds_specs(),
    stream=streams(),
    cut=st.integers(0, 30),
)
def test_bounds_agree_between_matchers(
    options: list[tuple[str, str]], bounds: Any, stream: list[dict[str, Any]], cut: int
) -> None:
    text = program(options)
    reference = Engine.from_source(text, matcher="reference", bounds=bounds)
    compiled = Engine.from_source(text, matcher="compiled", bounds=bounds)
    expected = trace(reference, stream)
    got = trace(compiled, stream)
    for k in range(len(stream)):
        assert got[k] == expected[k], (k, stream[: k + 1])
    # Once an overflow stopped the engine, every later event raises that same error.
    outcomes = [outcome for outcome, _, _ in expected]
    if expected:
        final = expected[-1][2]["subscriptions"]
        note("drops" if any(c["drops"] for cs in final.values() for c in cs) else "no drops")
        note("overflow error" if any(kind == "error" for kind, _ in outcomes) else "no error")
    if any(kind == "error" for kind, _ in outcomes):
        first = next(k for k, (kind, _) in enumerate(outcomes) if kind == "error")
        assert all(outcome == outcomes[first] for outcome in outcomes[first:])
        return
    # Snapshot at a cut and restore into the other matcher (bounds are configuration: passed
    # again); the restored engine goes on exactly as the uninterrupted reference.
    cut = min(cut, len(stream))
    for first_matcher, second_matcher in (("compiled", "reference"), ("reference", "compiled")):
        engine = Engine.from_source(text, matcher=first_matcher, bounds=bounds)
        trace(engine, stream[:cut])
        restored = Engine.restore(engine.snapshot(), matcher=second_matcher, bounds=bounds)
        restored.check()
        assert restored.snapshot() == engine.snapshot()
        assert [(o, s) for o, s, _ in trace(restored, stream[cut:])] == [(o, s) for o, s, _ in expected[cut:]]


# --- hand-derived cases ----------------------------------------------------------------------

PAIR = TYPES + "subscription S: T1 and T2\n"


@pytest.mark.parametrize("matcher", MATCHERS)
def test_max_queue_drop_oldest(matcher: str) -> None:
    """max_queue=2, drop-oldest, `T1 and T2` under FR+PI. Without a T2 nothing matches, so T1
    events pile up: x1, x2 fill the queue; x3 finds it full and x1 (the oldest) is dropped; x4
    drops x2. Then y1 matches the oldest left, x3 (FR), and PI removes x3 and what precedes it:
    Q[T1] = [x4], Q[T2] = [], one delivery, two drops."""
    engine = Engine.from_source(PAIR, matcher=matcher, bounds=Bounds(max_queue=2))
    for k in (1, 2, 3, 4):
        assert engine.publish(event(f"x{k}", "T1")) == []
    assert engine.state_json() == {"S": [{"T1": ["x3", "x4"], "T2": []}]}
    assert engine.metrics()["subscriptions"]["S"] == [{"queues": {"T1": 2, "T2": 0}, "deliveries": 0, "drops": 2}]
    assert ids(engine.publish(event("y1", "T2"))) == [("S", 0, ("x3", "y1"))]
    assert engine.state_json() == {"S": [{"T1": ["x4"], "T2": []}]}
    assert engine.metrics() == {
        "published": 5,
        "subscriptions": {"S": [{"queues": {"T1": 1, "T2": 0}, "deliveries": 1, "drops": 2}]},
    }


@pytest.mark.parametrize("matcher", MATCHERS)
def test_max_queue_counts_only_admitted_events(matcher: str) -> None:
    """The bound applies at ENQUEUE of an admitted event: events that fail the unary predicate
    neither take room nor push anything out."""
    text = TYPES + "subscription S: T1.a > 0 and T2\n"
    engine = Engine.from_source(text, matcher=matcher, bounds=Bounds(max_queue=1))
    engine.publish(event("x1", "T1", 1))
    engine.publish(event("x2", "T1", 0))  # not admitted: x1 stays
    assert engine.state_json() == {"S": [{"T1": ["x1"], "T2": []}]}
    assert engine.metrics()["subscriptions"]["S"][0]["drops"] == 0
    engine.publish(event("x3", "T1", 2))  # admitted into a full queue: x1 goes
    assert engine.state_json() == {"S": [{"T1": ["x3"], "T2": []}]}
    assert engine.metrics()["subscriptions"]["S"][0]["drops"] == 1


@pytest.mark.parametrize("matcher", MATCHERS)
def test_max_age_drops_old_events(matcher: str) -> None:
    """max_age=3 on `T1 and T2`, FR+PI. When an event of the conjunction's types arrives, the
    queued events that arrived 3 or more such arrivals earlier are dropped first. x1, x2, x3 are
    the 1st, 2nd and 3rd arrivals; y1 is the 4th, so x1 (3 arrivals before it) is dropped and x2
    (2 before) stays: [x2, y1] is delivered, where without the bound it is [x1, y1]."""
    engine = Engine.from_source(PAIR, matcher=matcher, bounds=Bounds(max_age=3))
    for k in (1, 2, 3):
        engine.publish(event(f"x{k}", "T1"))
    assert engine.state_json() == {"S": [{"T1": ["x1", "x2", "x3"], "T2": []}]}
    assert ids(engine.publish(event("y1", "T2"))) == [("S", 0, ("x2", "y1"))]
    assert engine.state_json() == {"S": [{"T1": ["x3"], "T2": []}]}
    assert engine.metrics()["subscriptions"]["S"] == [{"queues": {"T1": 1, "T2": 0}, "deliveries": 1, "drops": 1}]

    unbounded = Engine.from_source(PAIR, matcher=matcher)
    for k in (1, 2, 3):
        unbounded.publish(event(f"x{k}", "T1"))
    assert ids(unbounded.publish(event("y1", "T2"))) == [("S", 0, ("x1", "y1"))]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_max_age_across_queue_growth(matcher: str) -> None:
    """Forty T1 events fill a queue well past the compiled matcher's initial capacity (16 rows,
    grown while the kernel runs); ages must not notice. max_age=30: the arrival of x_k drops the
    events 30 or more arrivals older, so after x40 the queue holds x11..x40 (10 drops). y is the
    41st arrival: it drops x11, and FR+PI delivers [x12, y]; PI then removes x12."""
    engine = Engine.from_source(PAIR, matcher=matcher, bounds=Bounds(max_age=30))
    for k in range(1, 41):
        engine.publish(event(f"x{k}", "T1"))
    assert engine.state_json() == {"S": [{"T1": [f"x{k}" for k in range(11, 41)], "T2": []}]}
    assert engine.metrics()["subscriptions"]["S"][0]["drops"] == 10
    assert ids(engine.publish(event("y", "T2"))) == [("S", 0, ("x12", "y"))]
    assert engine.state_json() == {"S": [{"T1": [f"x{k}" for k in range(13, 41)], "T2": []}]}
    assert engine.metrics()["subscriptions"]["S"][0]["drops"] == 11


@pytest.mark.parametrize("matcher", MATCHERS)
def test_max_age_counts_only_arrivals_of_the_conjunctions_types(matcher: str) -> None:
    """Age is counted on the conjunction's own clock, which ticks once per arrival of one of its
    types (``faidecs/matching/bounds.py``): a process that also receives U events must drop
    exactly what a process receiving only T1 and T2 drops. Five U events do not age x1; with
    max_age=2, y1 is the 2nd tick, x1 the 1st, so x1 is 1 tick old and FR+PI delivers [x1, y1]."""
    engine = Engine.from_source(PAIR, matcher=matcher, bounds=Bounds(max_age=2))
    engine.publish(event("x1", "T1"))
    for k in range(5):
        engine.publish(event(f"u{k}", "U"))
    assert engine.state_json() == {"S": [{"T1": ["x1"], "T2": []}]}
    assert ids(engine.publish(event("y1", "T2"))) == [("S", 0, ("x1", "y1"))]
    assert engine.metrics()["subscriptions"]["S"][0]["drops"] == 0


@pytest.mark.parametrize("matcher", MATCHERS)
def test_max_age_applies_before_admission(matcher: str) -> None:
    """An arriving event that is not admitted still ages and expires queued events: with
    max_age=2, x1 (T1.a = 1, admitted) is kept when x2 (T1.a = 0, not admitted by `T1.a > 0`)
    arrives one arrival later, and dropped when x3 (not admitted either) arrives two later."""
    text = TYPES + "subscription S: T1.a > 0 and T2\n"
    engine = Engine.from_source(text, matcher=matcher, bounds=Bounds(max_age=2))
    engine.publish(event("x1", "T1", 1))
    engine.publish(event("x2", "T1", 0))
    assert engine.state_json() == {"S": [{"T1": ["x1"], "T2": []}]}
    engine.publish(event("x3", "T1", 0))
    assert engine.state_json() == {"S": [{"T1": [], "T2": []}]}
    assert engine.metrics()["subscriptions"]["S"][0]["drops"] == 1


@pytest.mark.parametrize("matcher", MATCHERS)
def test_overflow_error_stops_the_engine(matcher: str) -> None:
    """max_queue=1 with the error policy. Conjunction 0 admits T1.a = 1, conjunction 1 (as
    written) admits T1.a = 2: the second x with a = 2 finds conjunction 1's T1 queue full."""
    text = TYPES + "subscription S: T1.a = 1 and T2 or T1.a = 2 and T2\n"
    engine = Engine.from_source(text, matcher=matcher, bounds=Bounds(max_queue=1, overflow="error"))
    engine.publish(event("x1", "T1", 2))
    engine.publish(event("x2", "T1", 1))
    with pytest.raises(QueueOverflowError) as info:
        engine.publish(event("x3", "T1", 2))
    exc = info.value
    assert (exc.subscription, exc.conjunction, exc.type_name, exc.max_queue, exc.event_id) == ("S", 1, "T1", 1, "x3")
    assert str(exc) == (
        "subscription S, conjunction 1: queue T1 is full (1 events) when event 'x3' arrives, "
        "and its overflow policy is error"
    )
    assert isinstance(exc, FaidecsError)
    # Stopped: every later publish (of any type) and every batch raises that same error.
    state = engine.state_json()
    with pytest.raises(QueueOverflowError) as again:
        engine.publish(event("y1", "T2"))
    assert again.value is exc
    with pytest.raises(QueueOverflowError) as batch:
        engine.publish_batch({"T2": {"a": [1]}}, ["T2"])
    assert batch.value is exc
    assert engine.state_json() == state == {"S": [{"T1": ["x2"], "T2": []}, {"T1": ["x1"], "T2": []}]}


def test_overflow_error_is_the_same_on_both_matchers() -> None:
    text = TYPES + "subscription A: T1 and T2\nsubscription B (matching MR, disposal I): T1 and T2\n"
    messages = []
    for matcher in MATCHERS:
        engine = Engine.from_source(text, matcher=matcher, bounds={"B": Bounds(max_queue=2, overflow="error")})
        engine.publish(event("x1", "T1"))
        engine.publish(event("x2", "T1"))
        with pytest.raises(QueueOverflowError) as info:
            engine.publish(event("x3", "T1"))
        messages.append((str(info.value), engine.state_json(), engine.metrics()))
    assert messages[0] == messages[1]
    assert "subscription B, conjunction 0: queue T1 is full (2 events) when event 'x3' arrives" in messages[0][0]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_bounds_per_subscription(matcher: str) -> None:
    """A mapping bounds only the subscriptions it names: A keeps the newest T1 only, B all."""
    text = TYPES + "subscription A: T1 and T2\nsubscription B: T1 and T2\n"
    engine = Engine.from_source(text, matcher=matcher, bounds={"A": Bounds(max_queue=1)})
    for k in (1, 2, 3):
        engine.publish(event(f"x{k}", "T1"))
    assert engine.state_json() == {"A": [{"T1": ["x3"], "T2": []}], "B": [{"T1": ["x1", "x2", "x3"], "T2": []}]}
    subs = engine.metrics()["subscriptions"]
    assert (subs["A"][0]["drops"], subs["B"][0]["drops"]) == (2, 0)
    assert ids(engine.publish(event("y", "T2"))) == [("A", 0, ("x3", "y")), ("B", 0, ("x1", "y"))]


def test_bounds_for_an_unknown_subscription_are_rejected() -> None:
    with pytest.raises(FaidecsError, match="bounds name subscriptions the program does not have: Nope"):
        Engine.from_source(PAIR, bounds={"S": Bounds(max_queue=1), "Nope": Bounds(max_queue=1)})
    with pytest.raises(FaidecsError, match="bounds for 'S' must be a faidecs Bounds, not dict"):
        Engine.from_source(PAIR, bounds={"S": {"max_queue": 1}})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    "kwargs",
    [{"max_queue": 0}, {"max_age": 0}, {"max_queue": -1}, {"overflow": "drop-newest"}, {"max_queu": 3}],
)
def test_invalid_bounds_are_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Bounds(**kwargs)


@pytest.mark.parametrize("first", MATCHERS)
@pytest.mark.parametrize("second", MATCHERS)
def test_restore_keeps_the_age_of_queued_events(first: str, second: str) -> None:
    """max_age=3, FR+PI. x1 and x2 arrive, the snapshot is taken, then x3 and y1 arrive: y1 is
    the 4th arrival of the conjunction's types, so x1 (3 arrivals older) is dropped and [x2, y1]
    is delivered, exactly as without the restore. (A restored engine that counted ages from the
    restore would keep x1 and deliver [x1, y1].)"""
    bounds = Bounds(max_age=3)
    engine = Engine.from_source(PAIR, matcher=first, bounds=bounds)
    engine.publish(event("x1", "T1"))
    engine.publish(event("x2", "T1"))
    restored = Engine.restore(engine.snapshot(), matcher=second, bounds=bounds)
    assert restored.published == 2
    rest = [event("x3", "T1"), event("y1", "T2")]
    got = [ids(restored.publish(e)) for e in rest]
    expected = [ids(engine.publish(e)) for e in rest]
    assert got == expected == [[], [("S", 0, ("x2", "y1"))]]
    assert restored.state_json() == engine.state_json() == {"S": [{"T1": ["x3"], "T2": []}]}
    # Counters are not part of a snapshot, but nothing was dropped or delivered before it.
    assert restored.metrics() == engine.metrics()


# --- the losses docs/semantics.md ("Bounded state") claims, on its own examples ----------------


@pytest.mark.parametrize("matcher", MATCHERS)
def test_a_queue_bound_loses_event_validity(matcher: str) -> None:
    """`x1` is dropped when `x2` arrives and is never delivered, although T2 events keep coming."""
    engine = Engine.from_source(
        "type T1(a: int)\ntype T2(a: int)\nsubscription S: T1 and T2\n", matcher=matcher, bounds=Bounds(max_queue=1)
    )
    stream = [event("x1", "T1"), event("x2", "T1")] + [event(f"y{k}", "T2") for k in range(1, 6)]
    delivered = {i for e in stream for d in engine.publish(e) for i in d.ids}
    assert "x1" not in delivered and "x2" in delivered


@pytest.mark.parametrize("matcher", MATCHERS)
def test_an_age_bound_loses_conjunction_validity(matcher: str) -> None:
    """With max_age 1, `T1 and T2` never delivers on x1, y1, x2, y2, ...: each x is one tick old,
    and dropped, when its partner arrives."""
    engine = Engine.from_source(
        "type T1(a: int)\ntype T2(a: int)\nsubscription S: T1 and T2\n", matcher=matcher, bounds=Bounds(max_age=1)
    )
    stream = [event(f"{name}{k}", t) for k in range(1, 20) for name, t in (("x", "T1"), ("y", "T2"))]
    assert all(engine.publish(e) == [] for e in stream)
    unbounded = Engine.from_source("type T1(a: int)\ntype T2(a: int)\nsubscription S: T1 and T2\n", matcher=matcher)
    assert sum(len(unbounded.publish(e)) for e in stream) == 19
