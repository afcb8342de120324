"""The Spark pipeline's push-down and batching against the embedded engine.

Push-down (faidecs.spark.pushdown) drops, before the shuffle, the rows no merger can use: every
pushed predicate must mean in Spark exactly what it means in the engine (ints at the 64-bit limits,
-0.0 and tiny doubles, strings by code point, booleans), and what is not pushed must only weaken
the filter. The pipeline must also give the embedded engine's deliveries for partitioned
subscriptions (-0.0 and 0.0 are one partition), for groups spread over many Arrow batches (with the
events of relations written from earlier batches), for rows no merger uses, and for a program
without subscriptions.

Every check compares with the embedded engine on the same events in the same order. One local[2]
session for the module."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from faidecs import Engine
from faidecs.grammar import compile_program
from faidecs.grammar.model import Kind, Predicate, Slot
from faidecs.matching.evaluate import compile_predicate

pyspark = pytest.importorskip("pyspark")  # the `spark` extra; CI installs it

from faidecs.spark import session
from faidecs.spark.correlate import DELIVERY_SCHEMA, correlate, routed
from faidecs.spark.plan import SPARK_KINDS, Plan, column
from faidecs.spark.pushdown import literal_sql, merger_filter, predicate_sql, type_condition_sql

# One worker runs the Spark modules, each in order (a module shares one session; its last test stops it).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("spark")]

Event = dict[str, Any]
Delivery = tuple[str, int, list[str]]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# One type per kind, so that each merger's union of filters stays selective: a predicate pushed
# too strictly then loses deliveries. M mixes kinds for the predicates that are not pushed; Z is
# declared but used by no subscription.
KINDS_PROGRAM = r"""
type I(i: int, j: int)
type F(f: float, g: float)
type S(s: str, t: str)
type Bo(b: bool, c: bool)
type M(i: int, f: float, s: str, b: bool)
type Z(x: int)

subscription Ints:
    I.i < -9223372036854775807 and I.j > 1
    or I.i <= -9223372036854775807 and I.j = 0
    or I.i > 9223372036854775806 and I.j != 0
    or I.i >= 9223372036854775806 and I.j = -9223372036854775808
    or I.i = -9223372036854775808 and I.j <= -1
    or I.i = 0 and I.j >= 9223372036854775807
subscription IntPairs (matching MR, disposal I):
    I[0].i < I[1].i and I[0].j >= 9223372036854775807 and I[1].i != -9223372036854775808 and I[1].j = 0
subscription IntAttrs (disposal I):
    I.i = I.j and I.j < 0 or I.i < I.j and I.j <= -1 or I.i != I.j and I.i >= 9223372036854775807
    or I.i > I.j and I.i <= -1 or I.i >= I.j and I.j = 1 or I.i <= I.j and I.i = 2

subscription Floats:
    F.f < -0.0 and F.g > 1e-300
    or F.f = -0.0 and F.g != 5e-324 and F.g > 0.0
    or F.f >= 0.0 and F.g <= -1e300
    or F.f > 5e-324 and F.g < -5e-324
    or F.f <= -1e300 and F.g = 0.0
    or F.f != 0.0 and F.g = 5e-324
subscription FloatAttrs (matching FRC, disposal FP):
    F.f = F.g and F.g <= -0.0 or F.f < F.g and F.g <= -5e-324 or F.f > F.g and F.g >= 2.0
    or F.f != F.g and F.f <= -2.5 and F.g > 0.0 or F.f >= F.g and F.g = -5e-324
    or F[0].f <= F[0].g and F[0].f >= 2.0 and F[1].g > 2.0

subscription Strs:
    S.s > "日本" and S.t < "\ud83d\ude00" and S.t >= "\uffff"
    or S.s = "q\"u'o\\te" and S.t != "a\nb"
    or S.s > "\uffff" and S.t <= "\\"
    or S.s <= "" and S.t != "Zebra"
    or S.s < "Zebra" and S.t >= "日本"
    or S.s != "日本" and S.t = "Ä"
subscription StrAttrs (matching MR):
    S.s = S.t and S.t > "a" or S.s < S.t and S.t = "\\" or S.s <= "Ä" and S.s > S.t and S.t >= "a"
    or S.s != S.t and S.t = "😀" or S.s >= S.t and S.s = "\uffff" or S.s <= S.t and S.t = "q\"u'o\\te"

subscription Bools:
    Bo.b = true and Bo.c != true or Bo.b != false and Bo.c = true and Bo[1].b = true and Bo[1].c != false
subscription BoolAttrs (matching MRC, disposal IP):
    Bo.b = Bo.c and Bo.c = true or Bo.b != Bo.c and Bo.b = true

subscription Unpushed:
    M.i + 1 > 1 and M.b = true
    or M.i > 2.5 and M.s < "é"
    or M.f > 2 and M.i <= 0
    or M.i < M.f and M.s >= "日本"
    or -M.i < 0 and M.b = false and M.f * 2 < 5.0
subscription NotPushedAtAll (disposal I): M.i / 2 > 1.0 or M.f = 2

subscription Pairs (matching FRC, disposal PI):
    I.i < F.f and I.j >= 1 and F.g != 0.0
    or S.s = M.s and M.b = true and S.t < "日本"
    or Bo.b = M.b and Bo.c = true and M.i + 0 = 1
"""

# The unary predicates of KINDS_PROGRAM that push-down must leave to the engine.
NOT_PUSHED = {
    "M[0].i + 1 > 1",
    "M[0].i > 2.5",
    "M[0].f > 2",
    "M[0].f > M[0].i",
    "-M[0].i < 0",
    "M[0].f * 2 < 5.0",
    "M[0].i / 2 > 1.0",
    "M[0].f = 2",
    "M[0].i + 0 = 1",
}

STRINGS = ["", "a", "Zebra", "Ä", "é", "日本", "😀", "\uffff", "\U00010000", "q\"u'o\\te", "a\nb", "\\"]
FLOATS = [-1e300, -2.5, -5e-324, -0.0, 0.0, 5e-324, 1e-300, 2.0, 2.5]
INTS = [INT64_MIN, INT64_MIN + 1, -1, 0, 1, 2, INT64_MAX - 1, INT64_MAX]
DOMAINS: dict[Kind, Sequence[Any]] = {
    Kind.INT: INTS,
    Kind.FLOAT: FLOATS,
    Kind.STR: STRINGS,
    Kind.BOOL: [False, True],
}
# M's attributes over domains on which its arithmetic predicates are sometimes true.
M_DOMAINS: dict[str, Sequence[Any]] = {
    "i": [INT64_MIN, -1, 0, 1, 2, 3, INT64_MAX],
    "f": [-0.0, 0.0, 1.5, 2.0, 2.5, 3.0],
    "s": ["a", "é", "日本", "😀"],
    "b": [False, True],
}


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    s = session("local[2]")
    yield s
    s.stop()


def _random_events(
    rng: random.Random,
    program: str,
    count: int,
    domains: dict[Kind, Sequence[Any]],
    overrides: dict[str, dict[str, Sequence[Any]]] | None = None,
    prefix: str = "e",
) -> list[Event]:
    """``count`` events of the program's types, attributes drawn from small domains (per kind,
    or per type and attribute in ``overrides``)."""
    types = compile_program(program).types
    names = sorted(types)
    events = []
    for n in range(count):
        t = types[rng.choice(names)]
        pick = (overrides or {}).get(t.name, {})
        attrs = {a.name: rng.choice(pick.get(a.name) or domains[a.kind]) for a in t.attributes}
        events.append({"id": f"{prefix}{n}", "type": t.name, "attrs": attrs})
    return events


def _flat(spark: Any, program: str, streams: dict[int, list[Event]]) -> Any:
    """The pipeline's flat table (as ingest builds it) for each program's stream."""
    types = compile_program(program).types
    columns = [(t.name, a.name, a.kind) for t in types.values() for a in t.attributes]
    ddl = "program int, order bigint, type string, id string, " + ", ".join(
        f"`{column(t, a)}` {SPARK_KINDS[k]}" for t, a, k in columns
    )
    rows = [
        (pid, order, e["type"], e["id"], *[e["attrs"][a] if e["type"] == t else None for t, a, _ in columns])
        for pid, events in streams.items()
        for order, e in enumerate(events)
    ]
    return spark.createDataFrame(rows, ddl)


def _embedded(program: str, events: list[Event]) -> list[tuple[Delivery, list[Event]]]:
    """The embedded engine's deliveries and their events (input JSON shape), in delivery order:
    the reference matcher is the oracle for either matcher on Spark."""
    engine = Engine.from_source(program, matcher="reference")
    out = []
    for e in events:
        for d in engine.publish(e):
            out.append(((d.subscription, d.conjunction, list(d.ids)), d.to_json(with_events=True)["events"]))
    return out


def _strict(value: Any) -> Any:
    """JSON data with kinds made visible: 1 and 1.0, 0.0 and -0.0, 1 and True all differ."""
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strict(v) for v in value]
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def _deliveries(rows: list[Any]) -> list[Delivery]:
    return [(r["subscription"], r["conjunction"], list(r["relation"])) for r in rows]


def _unary_predicates(program: str) -> list[tuple[Predicate, Slot]]:
    """Every unary predicate of the program with its slot, once per text (predicates compare
    equal across texts: ``F.f < 0.0`` equals ``F.f < -0.0``)."""
    found: dict[tuple[str, Slot], Predicate] = {}
    for sub in compile_program(program).subscriptions:
        for conj in sub.conjunctions:
            for slot in conj.signature:
                for pred in conj.unary(slot):
                    found.setdefault((pred.text, slot), pred)
    return [(pred, slot) for (_, slot), pred in found.items()]


# 1. Push-down of every kind, end to end and predicate by predicate.


@pytest.fixture(scope="module")
def kinds_events() -> list[Event]:
    return _random_events(random.Random("pushdown:kinds"), KINDS_PROGRAM, 700, DOMAINS, {"M": M_DOMAINS})


def test_pushed_predicates_mean_what_the_engine_means(spark: Any, kinds_events: list[Event]) -> None:
    """Each unary predicate's SQL, evaluated by Spark on every event of its type, is true exactly
    where the engine's predicate is; the predicates with arithmetic or mixed int/float are the
    ones (and the only ones) not translated."""
    sql = [(pred, slot, predicate_sql(pred, slot.type_name)) for pred, slot in _unary_predicates(KINDS_PROGRAM)]
    assert {pred.text for pred, _, s in sql if s is None} == NOT_PUSHED
    pushed = [(pred, slot, s) for pred, slot, s in sql if s is not None]
    selects = [f"CASE WHEN type = '{slot.type_name}' THEN {s} END AS p{k}" for k, (_, slot, s) in enumerate(pushed)]
    rows = _flat(spark, KINDS_PROGRAM, {0: kinds_events}).selectExpr("id", *selects).collect()
    got = {r["id"]: [r[f"p{k}"] for k in range(len(pushed))] for r in rows}
    engine = Engine.from_source(KINDS_PROGRAM, matcher="reference")
    checked: dict[str, set[bool]] = {}
    for e in kinds_events:
        event = engine.validate(e)
        for k, (pred, slot, _) in enumerate(pushed):
            if event.type != slot.type_name:
                assert got[e["id"]][k] is None
                continue
            expected = compile_predicate(pred, {slot: 0})((event,))
            assert got[e["id"]][k] is expected, f"{pred.text} on {e}: Spark {got[e['id']][k]}, engine {expected}"
            checked.setdefault(pred.text, set()).add(expected)
    # Not vacuous: every pushed predicate was seen both true and false.
    assert {text for text, seen in checked.items() if seen != {True, False}} == set()


def test_rows_reach_exactly_the_mergers_whose_pushed_filter_they_pass(spark: Any, kinds_events: list[Event]) -> None:
    """``routed`` copies a row to a merger iff the pushed part of the merger's filter holds (never
    less than the engine's filter: it only drops rows no consumer needs); Z rows go nowhere."""
    plan = Plan.of(KINDS_PROGRAM)
    found = routed(_flat(spark, KINDS_PROGRAM, {0: kinds_events}), {0: KINDS_PROGRAM})
    assert found is not None
    rows, _ = found
    got = {(r["merger"], r["id"]) for r in rows.select("merger", "id").collect()}
    engine = Engine.from_source(KINDS_PROGRAM, matcher="reference")
    expected: set[tuple[int, str]] = set()
    for m, merger in enumerate(plan.mergers):
        filt = merger_filter(merger)
        for e in kinds_events:
            event = engine.validate(e)
            alternatives = filt.alternatives.get(event.type)
            if alternatives is None:
                continue
            pushed = any(
                all(compile_predicate(p, {s: 0})((event,)) for p, s in alt if predicate_sql(p, s.type_name))
                for alt in alternatives
            )
            if filt.passes(event):
                assert pushed, f"{e} is needed by merger {m} but the pushed filter drops it"
            if pushed:
                expected.add((m, e["id"]))
    assert got == expected
    assert not {i for _, i in got} & {e["id"] for e in kinds_events if e["type"] == "Z"}
    # Not vacuous: wherever a condition is pushed, it drops some rows of its type.
    for m, merger in enumerate(plan.mergers):
        for t in merger.role:
            if type_condition_sql(merger_filter(merger), t) is not None:
                of_type = {e["id"] for e in kinds_events if e["type"] == t}
                assert of_type - {i for n, i in got if n == m}, f"merger {m} keeps every {t}"


def test_deliveries_with_pushdown_of_every_kind_equal_the_engine(spark: Any, kinds_events: list[Event]) -> None:
    """The whole pipeline on the kinds program (unions of filters per merger, disjunctions,
    predicates not pushed, rows of an unused type) delivers what the embedded engine delivers,
    in the same order, with the same events."""
    out = correlate(_flat(spark, KINDS_PROGRAM, {0: kinds_events}), {0: KINDS_PROGRAM}, matcher="reference").collect()
    expected = _embedded(KINDS_PROGRAM, kinds_events)
    assert _deliveries(out) == [d for d, _ in expected]
    assert [_strict(json.loads(r["events"])) for r in out] == [_strict(ev) for _, ev in expected]
    by_subscription = {d[0] for d, _ in expected}
    assert by_subscription == {s.name for s in compile_program(KINDS_PROGRAM).subscriptions}


# 2. Literals and predicates, evaluated by Spark.


LITERALS: list[tuple[Any, Kind]] = [
    (INT64_MAX, Kind.INT),
    (INT64_MIN, Kind.INT),
    (0, Kind.INT),
    (-1, Kind.INT),
    (1e-300, Kind.FLOAT),
    (5e-324, Kind.FLOAT),
    (-5e-324, Kind.FLOAT),
    (-0.0, Kind.FLOAT),
    (0.0, Kind.FLOAT),
    (0.1, Kind.FLOAT),
    (1.7976931348623157e308, Kind.FLOAT),
    (-2.5, Kind.FLOAT),
    (9007199254740993.0, Kind.FLOAT),
    ("", Kind.STR),
    ('it\'s "quoted"', Kind.STR),
    ("back\\slash\\", Kind.STR),
    ("line\nbreak\r\ttab", Kind.STR),
    ("é日本😀\U00010000\uffff", Kind.STR),
    ("'; SELECT 1 --", Kind.STR),
    ("\x00nul", Kind.STR),
    (True, Kind.BOOL),
    (False, Kind.BOOL),
]


def test_literals_are_read_back_exactly_by_spark(spark: Any) -> None:
    """``literal_sql`` gives Spark the very value: INT64 limits, subnormal and tiny doubles, the
    sign of -0.0 (Spark keeps it), strings with quotes, backslashes, control and non-BMP
    characters, booleans; an int outside 64 bits has no literal."""
    query = "SELECT " + ", ".join(f"{literal_sql(v, k)} AS c{n}" for n, (v, k) in enumerate(LITERALS))
    row = spark.sql(query).collect()[0]
    for n, (value, kind) in enumerate(LITERALS):
        got = row[f"c{n}"]
        assert type(got) is type(value), (value, got)
        assert _strict(got) == _strict(value), (value, got)
        if kind is Kind.FLOAT:
            assert math.copysign(1.0, got) == math.copysign(1.0, value)
    assert literal_sql(INT64_MAX + 1, Kind.INT) is None
    assert literal_sql(INT64_MIN - 1, Kind.INT) is None


def test_float_comparisons_treat_negative_zero_as_zero_in_spark_and_engine(spark: Any) -> None:
    """Against -0.0 and 0.0, every operator gives in Spark what Python (the engine) gives, for
    constants and for two attributes of one event."""
    program = (
        "type F(f: float, g: float)\nsubscription S: "
        + " or ".join(f"F.f {op} {c}" for op in ("<", "<=", ">", ">=", "=", "!=") for c in ("-0.0", "0.0", "-5e-324"))
        + " or "
        + " or ".join(f"F.f {op} F.g" for op in ("<", "<=", ">", ">=", "=", "!="))
    )
    values = [-0.0, 0.0, -5e-324, 5e-324]
    events = [
        {"id": f"f{n}", "type": "F", "attrs": {"f": f, "g": g}}
        for n, (f, g) in enumerate((f, g) for f in values for g in values)
    ]
    predicates = _unary_predicates(program)
    selects = [f"{predicate_sql(p, s.type_name)} AS p{k}" for k, (p, s) in enumerate(predicates)]
    rows = {r["id"]: r for r in _flat(spark, program, {0: events}).selectExpr("id", *selects).collect()}
    engine = Engine.from_source(program, matcher="reference")
    for e in events:
        event = engine.validate(e)
        for k, (pred, slot) in enumerate(predicates):
            assert rows[e["id"]][f"p{k}"] is compile_predicate(pred, {slot: 0})((event,)), (pred.text, e["attrs"])


# 3. Partitioned subscriptions.


PARTITIONED_PROGRAM = r"""
type PF(k: float, v: int)
type QF(k: float, w: int)
type PS(k: str, v: int)
type QS(k: str, w: int)
type PB(k: bool, v: int)
type QB(k: bool, w: int)

subscription SF (partition by k): PF and QF and PF.v <= QF.w
subscription SF2 (matching MR, disposal I, partition by k): PF and QF and QF.k != 1.5
subscription SS (partition by k, matching FRC): PS[0] and PS[1] and QS and PS[0].v < QS.w
subscription SB (partition by k, disposal FP): PB and QB and QB.w != 0
"""
PARTITION_KEYS: dict[str, Sequence[Any]] = {
    "F": [0.0, -0.0, 1.5, -1.5],
    "S": ["", "é", "日本", "😀", "a'b\\"],
    "B": [False, True],
}


def _partitioned_events(rng: random.Random, count: int) -> list[Event]:
    events = []
    for n in range(count):
        t = rng.choice(["PF", "QF", "PS", "QS", "PB", "QB"])
        value = "v" if t.startswith("P") else "w"
        attrs = {"k": rng.choice(PARTITION_KEYS[t[1]]), value: rng.randrange(3)}
        events.append({"id": f"p{n}", "type": t, "attrs": attrs})
    return events


def test_partitioned_subscriptions_equal_the_engine(spark: Any) -> None:
    """Partitioned by a float (0.0 and -0.0 are one partition, as in the engine), a string and a
    bool: same deliveries in the same order, and the same events (signs of zero kept)."""
    events = _partitioned_events(random.Random("pushdown:partitions"), 400)
    plan = Plan.of(PARTITIONED_PROGRAM)
    assert {m.partition_by for m in plan.mergers} == {"k"}
    flat = _flat(spark, PARTITIONED_PROGRAM, {0: events})
    out = correlate(flat, {0: PARTITIONED_PROGRAM}, matcher="reference").collect()
    expected = _embedded(PARTITIONED_PROGRAM, events)
    assert _deliveries(out) == [d for d, _ in expected]
    assert [_strict(json.loads(r["events"])) for r in out] == [_strict(ev) for _, ev in expected]
    # Not vacuous: some relations join a -0.0 event with a 0.0 event.
    signs = [{repr(e["attrs"]["k"]) for e in ev} for d, ev in expected if d[0] == "SF"]
    assert any(s == {"0.0", "-0.0"} for s in signs)
    assert {d[0] for d, _ in expected} == {"SF", "SF2", "SS", "SB"}


# 4. Groups over many Arrow batches.


BATCHES_PROGRAM = r"""
type A(i: int, f: float, s: str, b: bool)
type B(i: int, f: float, s: str, b: bool)

subscription Recent (matching MR, disposal I): A and B and A.b = B.b
subscription First (matching FR, disposal PI): A[0] and A[1] and B and A[0].i <= B.i
subscription Keyed (matching FRC, disposal IP, partition by s): A and B and A.f != B.f
"""
BATCH_DOMAINS: dict[Kind, Sequence[Any]] = {
    Kind.INT: [INT64_MIN, -1, 0, INT64_MAX],
    Kind.FLOAT: [-0.0, 0.0, 1.5, 1e-300, 5e-324],
    Kind.STR: ["é", "日本", "😀", "q\"u'o\\te"],
    Kind.BOOL: [False, True],
}


@pytest.fixture
def three_rows_per_batch(spark: Any) -> Iterator[None]:
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key)
    spark.conf.set(key, "3")
    try:
        yield
    finally:
        spark.conf.set(key, before)


@pytest.mark.usefixtures("three_rows_per_batch")
@pytest.mark.parametrize("matcher", ["reference", "compiled"])
def test_groups_spanning_arrow_batches_equal_the_engine(spark: Any, matcher: str) -> None:
    """With three rows per Arrow batch every group runs through one engine over many batches:
    deliveries, and the ``events`` of relations that reach back into earlier batches, are the
    embedded engine's (attributes as given, -0.0 and 64-bit ints intact)."""
    [merger] = Plan.of(BATCHES_PROGRAM).mergers  # one group: every A and B, in stream order
    assert merger.partition_by is None
    events = _random_events(random.Random("pushdown:batches"), BATCHES_PROGRAM, 120, BATCH_DOMAINS, prefix="b")
    flat = _flat(spark, BATCHES_PROGRAM, {0: events})

    def sizes(batches: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        for pdf in batches:
            yield pd.DataFrame({"n": [len(pdf)]})

    assert max(r["n"] for r in flat.mapInPandas(sizes, "n long").collect()) <= 3  # the premise
    out = correlate(flat, {0: BATCHES_PROGRAM}, matcher=matcher, with_events=True).collect()
    expected = _embedded(BATCHES_PROGRAM, events)
    assert _deliveries(out) == [d for d, _ in expected]
    assert [_strict(json.loads(r["events"])) for r in out] == [_strict(ev) for _, ev in expected]
    # Not vacuous: the group is the whole stream, so a relation whose events lie three or more
    # rows apart took some of them from an earlier batch.
    position = {e["id"]: n for n, e in enumerate(events)}
    spans = [max(position[i] for i in d[2]) - min(position[i] for i in d[2]) for d, _ in expected]
    assert sum(s >= 3 for s in spans) >= 10
    assert any(d[0] == "Keyed" for d, _ in expected)


# 5. Rows no merger uses; no subscriptions.


def test_rows_of_unused_types_are_dropped_and_no_subscriptions_give_nothing(spark: Any) -> None:
    """A row whose type no merger uses is dropped without error (deliveries still equal the
    engine's); a program with no subscriptions routes nothing and delivers nothing, alone (an
    empty frame of the delivery schema) and next to another program."""
    types_only = "type A(i: int)\ntype Z(x: int)\n"
    program = types_only + "subscription S (matching MR, disposal I): A[0] and A[1] and A[0].i < A[1].i\n"
    rng = random.Random("pushdown:unused")
    events = [
        {"id": f"u{n}", "type": t, "attrs": {"i" if t == "A" else "x": rng.randrange(4)}}
        for n, t in enumerate(rng.choice("AZZ") for _ in range(60))
    ]
    flat = _flat(spark, program, {0: events, 1: events})
    assert routed(flat.where("program = 1"), {1: types_only}) is None
    out = correlate(flat, {0: program, 1: types_only}, matcher="reference", with_events=False).collect()
    assert {r["program"] for r in out} <= {0}
    assert _deliveries(out) == [d for d, _ in _embedded(program, events)]
    assert out  # not vacuous

    alone = correlate(flat.where("program = 1"), {1: types_only})
    assert alone.collect() == []
    assert alone.columns == [c.split()[0] for c in DELIVERY_SCHEMA.split(", ")]
    assert _embedded(types_only, events) == []
