"""``Engine.publish_batch``: a batch of events given as columns equals publishing them one by one.

Why: the batch path validates whole columns (not events), runs every compiled conjunction's kernel
once over the batch, feeds the conjunctions the kernels cannot run one event at a time, and then
sorts the relations into delivery order; ids default to arrival numbers computed from the batch's
start. Any slip there changes deliveries, their order, the queues, or lets a bad value in that
``publish`` would reject. The oracle is per-event publishing on the reference matcher. Tables come
as mappings of numpy arrays or lists, pandas DataFrames and pyarrow Tables; the order as type
names or table indices.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped]
import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from hypothesis import event as note
from hypothesis import given, settings
from hypothesis import strategies as st

from faidecs import Engine
from faidecs.errors import EventError, QueueOverflowError
from faidecs.matching.bounds import Bounds

MATCHERS = ("compiled", "reference")

# S's conjunctions run compiled; R orders strings, so it stays with the reference matcher even in a
# compiled engine (the batch feeds it event by event). E has no attributes.
PROGRAM = """\
type T1(a: int, s: str)
type T2(a: int, f: float, b: bool)
type E()
subscription S (matching FR, disposal I):
    T1.a <= T2.a and T2.b = true
    or T1[0].a < T1[1].a and T1[1].a < T2.a
subscription R (matching MR, disposal PI): T1.s < "y" and T2.f > T1.a / 2
subscription Z (matching FRC, disposal FP): E and T1.a = 4
"""
DTYPES = {"a": np.int64, "s": object, "f": np.float64, "b": np.bool_}
ATTRS = {"T1": ("a", "s"), "T2": ("a", "f", "b"), "E": ()}

Delivered = tuple[str, int, tuple[str, ...]]


def test_matchers_of_the_program() -> None:
    engine = Engine.from_source(PROGRAM, matcher="compiled")
    assert engine.matchers() == {"S": ["compiled", "compiled"], "R": ["reference"], "Z": ["compiled"]}


def delivered(deliveries: list[Any]) -> list[Delivered]:
    return [(d.subscription, d.conjunction, tuple(d.ids)) for d in deliveries]


def columns_of(events: list[dict[str, Any]], type_name: str, with_ids: bool) -> dict[str, np.ndarray]:
    rows = [e for e in events if e["type"] == type_name]
    out: dict[str, np.ndarray] = {a: np.array([e["attrs"][a] for e in rows], dtype=DTYPES[a]) for a in ATTRS[type_name]}
    if with_ids:
        out["id"] = np.array([e["id"] for e in rows], dtype=object)
    return out


def as_table(columns: dict[str, np.ndarray], form: str, rows: int) -> Any:
    if form == "numpy":
        return columns
    if form == "lists":  # plain Python lists (a column of no rows stays a typed array)
        return {k: (v.tolist() if len(v) else v) for k, v in columns.items()}
    if form == "pandas":
        return pd.DataFrame(columns, index=range(rows))  # the index gives E's table its rows
    assert form == "arrow"
    if not columns:  # an Arrow table of `rows` rows and no columns
        return pa.table({"_": np.zeros(rows)}).drop_columns(["_"])
    return pa.table(columns)


def as_batch(events: list[dict[str, Any]], with_ids: bool, form: str, order_form: str, extra: bool) -> tuple[Any, Any]:
    """Tables for the types in ``events`` (with ``extra``, an empty table for a type that has
    none), in an order of keys unrelated to the events' order, and the order itself."""
    names = sorted({e["type"] for e in events}, reverse=True)
    if extra:
        names += [t for t in ("T2", "T1") if t not in names][:1]
    tables = {t: as_table(columns_of(events, t, with_ids), form, sum(e["type"] == t for e in events)) for t in names}
    order: Any = [e["type"] for e in events]
    if order_form == "codes":
        order = [names.index(t) for t in order]
    elif order_form == "code array":
        order = np.array([names.index(t) for t in order], dtype=np.int32)
    elif order_form == "name array":
        order = np.array(order)
    return tables, order


# --- property: batches equal events ---------------------------------------------------------

values = st.fixed_dictionaries(
    {
        "a": st.integers(0, 4),
        "s": st.sampled_from(("", "x", "y", "é", 'q"t', "b\\s")),
        "f": st.sampled_from((0.0, -0.0, 0.5, 1.0, 2.5)),
        "b": st.booleans(),
    }
)


@st.composite
def streams(draw: st.DrawFn, with_ids: bool, max_events: int = 40) -> list[dict[str, Any]]:
    events = []
    for k, (type_name, attrs) in enumerate(
        draw(st.lists(st.tuples(st.sampled_from(("T1", "T1", "T2", "T2", "E")), values), max_size=max_events))
    ):
        e: dict[str, Any] = {"type": type_name, "attrs": {a: attrs[a] for a in ATTRS[type_name]}}
        if with_ids:
            e["id"] = f"e{k}"
        events.append(e)
    return events


EXAMPLES = settings(max_examples=min(50, max(10, (settings.default.max_examples or 100) // 2)), deadline=None)
FORMS = ("numpy", "lists", "pandas", "arrow")
ORDER_FORMS = ("names", "name array", "codes", "code array")


@EXAMPLES
@given(st.data())
def test_batches_equal_publishing_one_by_one(data: st.DataObject) -> None:
    with_ids = data.draw(st.booleans(), label="with ids")
    stream = data.draw(streams(with_ids), label="stream")
    oracle = Engine.from_source(PROGRAM, matcher="reference")
    per_event: list[list[Delivered]] = []
    states = [oracle.state_json()]  # states[k]: after the first k events
    for e in stream:
        per_event.append(delivered(oracle.publish(e)))
        states.append(oracle.state_json())
    for matcher in MATCHERS:
        engine = Engine.from_source(PROGRAM, matcher=matcher)
        k = 0
        while k < len(stream):
            size = data.draw(st.integers(1, 15), label="chunk")
            chunk = stream[k : k + size]
            if size == 1 and data.draw(st.booleans(), label="publish single"):
                got = [(0, d) for d in delivered(engine.publish(chunk[0]))]
            else:
                form = data.draw(st.sampled_from(FORMS), label="form")
                order_form = data.draw(st.sampled_from(ORDER_FORMS), label="order form")
                extra = data.draw(st.booleans(), label="extra empty table")
                tables, order = as_batch(chunk, with_ids, form, order_form, extra)
                result = engine.publish_batch(tables, order)
                assert (result.first_arrival, result.size, len(result)) == (k, len(chunk), len(result.order))
                got = []
                for (g, r), d in zip(result.order.tolist(), result.deliveries()):
                    group = result.groups[g]
                    assert (group.subscription, group.conjunction) == d[:2]
                    assert tuple(result.ids(group.arrivals[r])) == d[2]
                    got.append((int(group.positions[r]), d))
            # Same relations, same order, and each delivered at the same event of the chunk.
            expected = [(b, d) for b in range(len(chunk)) for d in per_event[k + b]]
            if len(chunk) > 1:
                note(f"{matcher} batch with {'many' if len(expected) > 2 else len(expected)} deliveries")
            assert got == expected, (matcher, k)
            k += len(chunk)
            engine.check()
            assert engine.state_json() == states[k], (matcher, k)
            assert engine.published == k
        assert engine.snapshot() == oracle.snapshot()


# --- relations across batches ----------------------------------------------------------------


@pytest.mark.parametrize("matcher", MATCHERS)
@pytest.mark.parametrize("with_ids", [True, False])
def test_relation_spanning_two_batches_and_a_single_event(matcher: str, with_ids: bool) -> None:
    """x1 comes in a batch, x2 alone, y in a second batch. S's conjunction 1,
    `T1[0].a < T1[1].a and T1[1].a < T2.a` under FR, binds the oldest T1 first: [x1, x2, y]
    (1 < 2 < 3) is delivered by the second batch. Without ids, events are named by their
    1-based arrival number, as publish names them: x1 is "1", x2 "2", y "3"."""
    x1 = {"type": "T1", "attrs": {"a": 1, "s": "b"}}
    x2 = {"type": "T1", "attrs": {"a": 2, "s": "c"}}
    y = {"type": "T2", "attrs": {"a": 3, "f": 0.0, "b": False}}
    names = ("x1", "x2", "y") if with_ids else ("1", "2", "3")
    if with_ids:
        for e, name in zip((x1, x2, y), names):
            e["id"] = name
    engine = Engine.from_source(PROGRAM, matcher=matcher)
    first = engine.publish_batch(*as_batch([x1], with_ids, "numpy", "names", False))
    assert first.deliveries() == []
    assert delivered(engine.publish(x2)) == []  # x2 alone: T1[0] < T1[1] needs a T2 too
    second = engine.publish_batch(*as_batch([y], with_ids, "pandas", "codes", False))
    assert second.first_arrival == 2 and second.size == 1
    assert ("S", 1, names) in second.deliveries()
    group = next(g for g in second.groups if (g.subscription, g.conjunction) == ("S", 1))
    assert group.arrivals.tolist() == [[0, 1, 2]] and group.positions.tolist() == [0]
    assert second.ids(group.arrivals).tolist() == [list(names)]

    oracle = Engine.from_source(PROGRAM, matcher="reference")
    expected = [delivered(oracle.publish(e)) for e in (x1, x2, y)]
    assert second.deliveries() == expected[2]
    assert engine.state_json() == oracle.state_json()
    assert engine.snapshot() == oracle.snapshot()


@pytest.mark.parametrize("matcher", MATCHERS)
def test_events_queued_by_a_batch_are_delivered_by_later_single_events(matcher: str) -> None:
    """A batch of three T1 (default ids "1", "2", "3") leaves them queued; a single T2 ("4")
    then completes S's conjunction 0 with the oldest (FR: a = 0 <= 0, b is true), and R's with
    the newest (MR: "r" < "y" and 9.0 > 6 / 2). Conjunction 1 of S needs T1[1].a < 0: nothing."""
    engine = Engine.from_source(PROGRAM, matcher=matcher)
    batch = engine.publish_batch({"T1": {"a": [0, 5, 6], "s": ["p", "q", "r"]}}, ["T1", "T1", "T1"])
    assert batch.deliveries() == []
    got = delivered(engine.publish({"type": "T2", "attrs": {"a": 0, "f": 9.0, "b": True}}))
    assert got == [("S", 0, ("1", "4")), ("R", 0, ("3", "4"))]
    oracle = Engine.from_source(PROGRAM, matcher="reference")
    for a, s in ((0, "p"), (5, "q"), (6, "r")):
        oracle.publish({"type": "T1", "attrs": {"a": a, "s": s}})
    assert got == delivered(oracle.publish({"type": "T2", "attrs": {"a": 0, "f": 9.0, "b": True}}))
    assert engine.state_json() == oracle.state_json()


# --- empty batches ---------------------------------------------------------------------------


@pytest.mark.parametrize("matcher", MATCHERS)
@pytest.mark.parametrize(
    ("tables", "order"),
    [
        ({}, []),
        ({}, np.array([], dtype=object)),
        ({"T1": {"a": np.zeros(0, np.int64), "s": np.zeros(0, object)}}, []),
        ({"T1": {"a": np.zeros(0, np.int64), "s": np.zeros(0, object)}}, np.zeros(0, np.int64)),
    ],
    ids=["no tables, empty list", "no tables, empty name array", "empty table, empty list", "empty table, empty codes"],
)
def test_empty_batch(matcher: str, tables: Any, order: Any) -> None:
    engine = Engine.from_source(PROGRAM, matcher=matcher)
    engine.publish({"id": "x", "type": "T1", "attrs": {"a": 1, "s": "s"}})
    before = engine.snapshot()
    result = engine.publish_batch(tables, order)
    assert (result.size, len(result), result.deliveries(), result.first_arrival) == (0, 0, [], 1)
    assert engine.snapshot() == before and engine.published == 1


# --- errors: clear messages, and nothing changes -----------------------------------------------


def t1(**over: Any) -> dict[str, Any]:
    return {"a": np.array([1, 2], np.int64), "s": np.array(["x", "y"], object), **over}


def t2(**over: Any) -> dict[str, Any]:
    return {"a": np.array([1], np.int64), "f": np.array([1.0]), "b": np.array([True]), **over}


ERRORS: list[tuple[str, Any, Any, str]] = [
    ("unknown type", {"Nope": {"a": [1]}}, ["Nope"], "unknown event type 'Nope' (declared types: E, T1, T2)"),
    (
        "order names a type without a table",
        {"T1": t1()},
        ["T1", "T2", "T1"],
        "order names 'T2', which has no table in the batch (tables: T1)",
    ),
    ("order index too large", {"T1": t1(), "T2": t2()}, [0, 2, 1], "order position 1: table index 2 out of range 0..1"),
    (
        "order index negative",
        {"T1": t1(), "T2": t2()},
        [0, 0, -1],
        "order position 2: table index -1 out of range 0..1",
    ),
    (
        "fewer order entries than rows",
        {"T1": t1()},
        ["T1"],
        "type T1, attribute 'a': column has shape (2,), expected (1,)",
    ),
    (
        "more order entries than rows",
        {"T1": t1(), "T2": t2()},
        ["T1", "T2", "T2", "T1"],
        "type T2, attribute 'a': column has shape (1,), expected (2,)",
    ),
    (
        "id column shorter than the order says",
        {"E": {"id": np.array(["e1"], object)}},
        ["E", "E"],
        "type E: id column has shape (1,), expected (2,)",
    ),
    ("missing column", {"T1": {"a": [1, 2]}}, ["T1", "T1"], "type T1, attribute 's': missing column 's'"),
    ("unknown column", {"T1": t1(zzz=[1, 2])}, ["T1", "T1"], "type T1: unknown column 'zzz'"),
    (
        "float column for an int attribute",
        {"T1": t1(a=np.array([1.0, 2.0]))},
        ["T1", "T1"],
        "type T1, attribute 'a': expected an integer column, got float64",
    ),
    (
        "int column for a str attribute",
        {"T1": t1(s=np.array([1, 2]))},
        ["T1", "T1"],
        "type T1, attribute 's': expected a string column, got int64",
    ),
    (
        "int column for a bool attribute",
        {"T2": t2(b=np.array([1]))},
        ["T2"],
        "type T2, attribute 'b': expected a bool column, got int64",
    ),
    (
        "str column for a float attribute",
        {"T2": t2(f=np.array(["1.0"], object))},
        ["T2"],
        "type T2, attribute 'f': expected a numeric column, got object",
    ),
    (
        "a bool in an object int column",
        {"T1": t1(a=np.array([1, True], object))},
        ["T1", "T1"],
        "type T1, attribute 'a': row 1: expected an integer within 64 bits, got True",
    ),
    (
        "uint64 beyond int64",
        {"T1": t1(a=np.array([1, 2**64 - 1], np.uint64))},
        ["T1", "T1"],
        "type T1, attribute 'a': row 1: integer outside the 64-bit range",
    ),
    (
        "NaN in a float column",
        {"T2": t2(a=np.array([1, 2]), f=np.array([1.0, math.nan]), b=np.array([True, False]))},
        ["T2", "T2"],
        "type T2, attribute 'f': row 1: nan is not a finite number",
    ),
    (
        "inf in a float column",
        {"T2": t2(f=np.array([-math.inf]))},
        ["T2"],
        "type T2, attribute 'f': row 0: -inf is not a finite number",
    ),
    (
        "non-string in a str column",
        {"T1": t1(s=np.array(["x", 3], object))},
        ["T1", "T1"],
        "type T1, attribute 's': row 1: expected a string, got 3",
    ),
    (
        "lone surrogate in a str column",
        {"T1": t1(s=np.array(["x", "\ud800"], object))},
        ["T1", "T1"],
        "type T1, attribute 's': row 1: string contains a lone surrogate escape",
    ),
    (
        "non-string id",
        {"T1": t1(id=np.array(["a", 5], object))},
        ["T1", "T1"],
        "type T1: row 1: an id must be a non-empty string, got 5",
    ),
    (
        "empty id",
        {"T1": t1(id=np.array(["", "b"], object))},
        ["T1", "T1"],
        "type T1: row 0: an id must be a non-empty string, got ''",
    ),
    ("order of two dimensions", {"T1": t1()}, [["T1"], ["T1"]], "order must be one-dimensional, not of shape (2, 1)"),
    ("order of floats", {"T1": t1()}, [0.0, 0.0], "order must hold type names or table indices, not float64"),
    (
        "not a table",
        {"T1": [[1, "x"], [2, "y"]]},
        ["T1", "T1"],
        "type T1: expected a mapping of columns, a DataFrame or an Arrow table, not list",
    ),
]


def assert_rejected(engine: Engine, tables: Any, order: Any) -> EventError:
    """The batch raises EventError and leaves the engine exactly as it was, and still usable."""
    before, published = engine.snapshot(), engine.published
    with pytest.raises(EventError) as info:
        engine.publish_batch(tables, order)
    assert engine.snapshot() == before and engine.published == published
    engine.check()
    assert delivered(engine.publish({"id": "after", "type": "T2", "attrs": {"a": 9, "f": 9.0, "b": True}})) != []
    return info.value


@pytest.mark.parametrize("matcher", MATCHERS)
@pytest.mark.parametrize(("case", "tables", "order", "message"), ERRORS, ids=[c[0] for c in ERRORS])
def test_batch_errors(matcher: str, case: str, tables: Any, order: Any, message: str) -> None:
    engine = Engine.from_source(PROGRAM, matcher=matcher)
    engine.publish({"id": "x0", "type": "T1", "attrs": {"a": 0, "s": "x"}})  # so that "after" delivers
    assert str(assert_rejected(engine, tables, order)) == message


@pytest.mark.parametrize("matcher", MATCHERS)
def test_lone_surrogate_id_is_rejected_like_publish_rejects_it(matcher: str) -> None:
    """publish refuses an id that is not valid Unicode text (it could not be written back as
    JSON or UTF-8, in deliveries or snapshots); a batch must refuse it too, naming the row."""
    engine = Engine.from_source(PROGRAM, matcher=matcher)
    with pytest.raises(EventError):
        engine.publish({"id": "\udc80", "type": "T1", "attrs": {"a": 1, "s": "x"}})
    engine.publish({"id": "x0", "type": "T1", "attrs": {"a": 0, "s": "x"}})
    error = assert_rejected(engine, {"T1": t1(id=np.array(["ok", "\udc80"], object))}, ["T1", "T1"])
    assert "row 1" in str(error) and "surrogate" in str(error) and "T1" in str(error)


@pytest.mark.parametrize("matcher", MATCHERS)
def test_row_count_of_a_table_without_columns_must_match_the_order(matcher: str) -> None:
    """E has no attributes: a DataFrame of two rows and no columns holds two E events, so an
    order with three E's does not fit it (with columns, the same mismatch is an error)."""
    engine = Engine.from_source(PROGRAM, matcher=matcher)
    engine.publish({"id": "x0", "type": "T1", "attrs": {"a": 0, "s": "x"}})
    error = assert_rejected(engine, {"E": pd.DataFrame(index=range(2))}, ["E", "E", "E"])
    assert "E" in str(error) and "2" in str(error) and "3" in str(error)


@pytest.mark.parametrize("matcher", MATCHERS)
def test_overflow_in_a_batch_is_the_overflow_publishing_one_by_one_meets(matcher: str) -> None:
    """With the error policy, the batch must stop at the same event, with the same error, as
    publishing one by one: B's queue (max 1, admits a = 1) is full when x3 arrives, before A's
    (max 3, admits everything) is full at x4."""
    text = "type T1(a: int)\ntype T2(a: int)\nsubscription A: T1 and T2\nsubscription B: T1.a = 1 and T2\n"
    bounds = {"A": Bounds(max_queue=3, overflow="error"), "B": Bounds(max_queue=1, overflow="error")}
    values = [1, 0, 1, 0, 0]
    one_by_one = Engine.from_source(text, matcher=matcher, bounds=bounds)
    with pytest.raises(QueueOverflowError) as expected:
        for k, a in enumerate(values, 1):
            one_by_one.publish({"id": f"x{k}", "type": "T1", "attrs": {"a": a}})
    assert (expected.value.subscription, expected.value.event_id) == ("B", "x3")
    batched = Engine.from_source(text, matcher=matcher, bounds=bounds)
    with pytest.raises(QueueOverflowError) as got:
        batched.publish_batch({"T1": {"a": values, "id": [f"x{k}" for k in range(1, 6)]}}, ["T1"] * 5)
    assert str(got.value) == str(expected.value)
