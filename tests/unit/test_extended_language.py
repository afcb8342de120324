"""The extended language (issue 24): parsing, checking with positions, normal form, and the
rules of docs/semantics.md ("The extended language") on small worked examples."""

from __future__ import annotations

from typing import Any

import pytest

from faidecs import Engine
from faidecs.grammar import compile_program
from faidecs.matching.extended_state import ExtendedConjunctionState
from tests.unit.test_diagnostics import single, underlined

TYPES = (
    "type Quote(sym: str, price: float, time: int)\n"
    "type Earnings(sym: str, price: float, time: int)\n"
    "type News(sym: str, time: int)\n"
    "type Tag(sym: str, label: str)\n"
)


@pytest.mark.parametrize(
    ("subscription", "message", "caret"),
    [
        ("subscription S: Quote+ and Quote[1].price > 0", "Quote+ is a group", "Quote+ and Quote[1].price > 0"),
        (
            "subscription S: Quote and prev(Quote).price > 0",
            "prev(Quote) needs Quote to be a group",
            "prev(Quote).price > 0",
        ),
        ("subscription S: Quote+ and avg(Quote.sym) = 1", "avg(...) needs a number", "avg(Quote.sym)"),
        ("subscription S: Quote+ and mean(Quote.price) > 1", "unknown function 'mean'", "mean"),
        ("subscription S: Quote+ and count(Quote[0]) > 1", "takes a group's type", "Quote[0]"),
        ("subscription S: Quote and no News after Quote", "needs a window", "Quote and no News after Quote"),
        ("subscription S (matching ALL): Quote", "matching ALL needs disposal NONE, not PI", "matching ALL"),
        ("subscription S (within 10 on time): Quote and Tag", "type Tag has no attribute 'time'", "within 10 on time"),
        ("subscription S (within 10 on sym): Quote", "Quote.sym is str, not a number", "within 10 on sym"),
        ("subscription S (lateness 3): Quote", "lateness needs a window", "lateness 3"),
        ("subscription S (within 0 on time): Quote", "window duration must be a positive number", "0"),
        ("subscription S: Quote and no Quote between Quote[0] and Quote[1]", "cannot be anchored on Quote", None),
        (
            "subscription S: Quote[1] and no News(Quote[0].price > 1) between Quote[0] and Quote[1]",
            "does not involve the negated event News",
            "Quote[0].price > 1",
        ),
        (
            "subscription S: Quote and Earnings and no Quote between Earnings and Earnings",
            "Quote is also matched",
            None,
        ),
        ("subscription S: count(Quote)", "is a value, not a predicate", "count(Quote)"),
        ("subscription S (matching XY): Quote", "unknown matching option 'XY'", "XY"),
        (
            "subscription S (disposal NONE, covering staged): Quote and Earnings",
            "covering staged does not combine",
            "covering staged",
        ),
        ("subscription S (covering staged): Quote+ and Earnings", "covering staged does not combine with groups", None),
    ],
)
def test_diagnostics_say_where_and_what(subscription: str, message: str, caret: str | None) -> None:
    text = TYPES + subscription + "\n"
    diag, _ = single(text)
    assert message in diag.message
    if caret is not None:
        assert underlined(diag, text) == caret


def test_kleene_token_never_takes_an_addition() -> None:
    """`Quote.price+ Quote.price` stays an addition; `Quote+` is a group only before `and`, `or`,
    `)` or the end."""
    program = compile_program(TYPES + "subscription S: Quote.price+ Quote.price > 3 and (Earnings+)")
    (conj,) = program.subscriptions[0].conjunctions
    assert conj.groups == frozenset({"Earnings"})
    assert [p.text for p in conj.predicates] == ["Quote[0].price + Quote[0].price > 3"]


def test_normal_form_round_trips() -> None:
    text = TYPES + (
        "subscription A (matching MR, disposal I, within 300 on time, lateness 5):\n"
        "  Quote+ and prev(Quote).price < Quote.price and count(Quote) >= 3 and avg(Quote.price) > Earnings.price\n"
        "subscription B (within 60 on time): Earnings and no Quote(Quote.sym = Earnings.sym) after Earnings\n"
        "subscription C (matching ALL, disposal NONE): Quote[1] and no News between Quote[0] and Quote[1]\n"
    )
    program = compile_program(text)
    for sub in program.subscriptions:
        again = compile_program(TYPES + sub.to_source()).subscriptions[0]
        assert again == sub
        assert again.conjunctions[0].text == sub.conjunctions[0].text
    a, b, c = program.subscriptions
    assert a.window is not None and (a.window.duration, a.window.attribute, a.window.lateness) == (300, "time", 5)
    assert b.types == {"Earnings", "Quote"} and c.types == {"Quote", "News"}
    # Group conditions are never filters: only per-member conditions on one event are.
    assert [p.text for p in a.conjunctions[0].predicates if p.unary] == []


def _publish(engine: Engine, stream: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    out = []
    for event_id, type_name, attrs in stream:
        out += [d.to_json() for d in engine.publish({"id": event_id, "type": type_name, "attrs": attrs})]
    return out


def q(sym: str, price: float, time: int) -> dict[str, Any]:
    return {"sym": sym, "price": price, "time": time}


def test_group_binds_the_longest_run_and_delivers_its_aggregates() -> None:
    engine = Engine.from_source(
        TYPES + "subscription R: Quote+ and prev(Quote).price < Quote.price and count(Quote) >= 3"
        " and avg(Quote.price) > Earnings.price"
    )
    stream = [
        ("er", "Earnings", q("A", 10.0, 0)),
        ("q1", "Quote", q("A", 8.0, 1)),
        ("q2", "Quote", q("A", 9.0, 2)),
        ("q3", "Quote", q("A", 12.0, 3)),  # 8, 9, 12 rise; the average 9.67 is below 10
        ("q4", "Quote", q("A", 13.0, 4)),  # FR: from q1, the longest run first: avg(8..13) = 10.5
    ]
    assert _publish(engine, stream) == [
        {
            "subscription": "R",
            "conjunction": 0,
            "relation": ["er", "q1", "q2", "q3", "q4"],
            "aggregates": {"avg(Quote.price)": 10.5, "count(Quote)": 4},
        }
    ]


def test_delivery_names_group_members_as_instances() -> None:
    engine = Engine.from_source(TYPES + "subscription R: Quote+ and count(Quote) >= 2")
    engine.publish({"id": "a", "type": "Quote", "attrs": q("A", 1.0, 0)})
    (d,) = engine.publish({"id": "b", "type": "Quote", "attrs": q("A", 2.0, 1)})
    assert [str(s) for s in d.signature] == ["Quote[0]", "Quote[1]"] and d["Quote[1]"].id == "b"


def test_negation_between_two_instances_in_the_order() -> None:
    engine = Engine.from_source(
        TYPES + "subscription J: Quote[1].price > Quote[0].price * 1.1 and Quote[0].sym = Quote[1].sym"
        " and no News(News.sym = Quote[0].sym) between Quote[0] and Quote[1]"
    )
    stream = [
        ("a1", "Quote", q("A", 10.0, 0)),
        ("nA", "News", {"sym": "A", "time": 1}),
        ("a2", "Quote", q("A", 12.0, 2)),  # news for A lies between a1 and a2
        ("b1", "Quote", q("B", 10.0, 3)),
        ("nC", "News", {"sym": "C", "time": 4}),  # news, but not for B
        ("b2", "Quote", q("B", 12.0, 5)),
    ]
    assert [d["relation"] for d in _publish(engine, stream)] == [["b1", "b2"]]


def test_absence_fires_when_the_order_passes_the_deadline() -> None:
    engine = Engine.from_source(
        TYPES
        + "subscription Silent (within 60 on time): Earnings and no Quote(Quote.sym = Earnings.sym) after Earnings"
    )
    stream = [
        ("eA", "Earnings", q("A", 1.0, 0)),
        ("eB", "Earnings", q("B", 1.0, 10)),
        ("qA", "Quote", q("A", 1.0, 30)),  # A is quoted within 60: no timeout for eA
        ("qC", "Quote", q("C", 1.0, 65)),  # time 65 passes eA's deadline (60), not eB's (70)
    ]
    assert _publish(engine, stream) == []
    assert [d.to_json() for d in engine.advance(69)] == []
    assert [d.to_json() for d in engine.advance(71)] == [
        {"subscription": "Silent", "conjunction": 0, "relation": ["eB"], "timeout": True}
    ]


def test_window_purges_and_counts_late_events() -> None:
    engine = Engine.from_source(
        TYPES + "subscription W (within 10 on time, lateness 2): Quote and Earnings", matcher="reference"
    )
    stream = [("q1", "Quote", q("A", 1.0, 0)), ("q2", "Quote", q("A", 1.0, 20)), ("late", "Quote", q("A", 1.0, 17))]
    _publish(engine, stream)
    (state,) = engine._subscriptions["W"].conjunctions  # noqa: SLF001 - the state's counters
    assert isinstance(state, ExtendedConjunctionState)
    # q1 (time 0) is older than the watermark 18 minus 10: purged; `late` (17 < 18) is counted.
    assert state.state_json() == {"Earnings": [], "Quote": ["q2"]} and state.late == 1
    (gauges,) = engine.metrics()["subscriptions"]["W"]
    assert (gauges["late"], gauges["purged"], gauges["logged"], gauges["queues"]) == (
        1,
        1,
        0,
        {"Earnings": 0, "Quote": 1},
    )
    (d,) = engine.publish({"id": "e", "type": "Earnings", "attrs": q("A", 1.0, 21)})
    assert d.ids == ["e", "q2"]


def test_all_delivers_every_new_relation_once() -> None:
    engine = Engine.from_source(
        TYPES + "subscription P (matching ALL, disposal NONE): Quote and Earnings and Quote.time < Earnings.time"
    )
    stream = [
        ("q1", "Quote", q("A", 1.0, 0)),
        ("q2", "Quote", q("A", 1.0, 1)),
        ("e1", "Earnings", q("A", 1.0, 2)),
        ("e2", "Earnings", q("A", 1.0, 3)),
    ]
    assert [d["relation"] for d in _publish(engine, stream)] == [["e1", "q1"], ["e1", "q2"], ["e2", "q1"], ["e2", "q2"]]


def test_snapshot_keeps_logs_and_time() -> None:
    text = (
        TYPES
        + "subscription Silent (within 60 on time): Earnings and no Quote(Quote.sym = Earnings.sym) after Earnings"
    )
    stream = [("eA", "Earnings", q("A", 1.0, 0)), ("eB", "Earnings", q("B", 1.0, 10)), ("qA", "Quote", q("A", 1.0, 30))]
    engine = Engine.from_source(text)
    _publish(engine, stream)
    again = Engine.restore(engine.snapshot())
    tail = [("x", "Quote", q("C", 1.0, 80))]
    assert (
        _publish(again, tail)
        == _publish(engine, tail)
        == [{"subscription": "Silent", "conjunction": 0, "relation": ["eB"], "timeout": True}]
    )


def test_partitions_have_their_own_windows() -> None:
    engine = Engine.from_source(
        TYPES + "subscription P (within 5 on time, partition by sym): Quote+ and count(Quote) >= 2"
    )
    stream = [
        ("a1", "Quote", q("A", 1.0, 0)),
        ("b1", "Quote", q("B", 1.0, 1)),
        ("a2", "Quote", q("A", 1.0, 4)),
        ("b2", "Quote", q("B", 1.0, 9)),
    ]
    # b1 and b2 are 8 apart: outside the window; a1 and a2 are 4 apart.
    assert [d["relation"] for d in _publish(engine, stream)] == [["a1", "a2"]]


def test_one_arrival_passing_several_deadlines_reports_each() -> None:
    """Under the default FR+PI, one MATCH per arrival would report eA and let the window purge eB:
    an absence repeats MATCH after each DEQUEUE instead."""
    engine = Engine.from_source(TYPES + "subscription Silent (within 60 on time): Earnings and no Quote after Earnings")
    stream = [("eA", "Earnings", q("A", 1.0, 0)), ("eB", "Earnings", q("B", 1.0, 5))]
    assert _publish(engine, stream) == []
    assert [d.ids for d in engine.advance(100)] == [["eA"], ["eB"]]
