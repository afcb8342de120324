"""The Spark pipeline delivers exactly what the embedded engine delivers, on the same events in the
same order: hundreds of random programs (all 16 options, disjunctions, covering staged, partitioned
subscriptions) in one Spark job, the input formats, and bad input named by file and line.

One local[2] session for the module: starting Spark costs seconds, a job about one."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from faidecs import Engine
from faidecs.lab.generator import _conjunction

pyspark = pytest.importorskip("pyspark")  # the `spark` extra; CI installs it

from faidecs.spark import SparkInputError, replay, session
from faidecs.spark.correlate import correlate
from faidecs.spark.plan import column
from tests import stock_extended

# One worker runs the Spark modules, each in order (a module shares one session; its last test stops it).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("spark")]

TYPES = ("T1", "T2", "T3")
TYPES_SOURCE = "".join(f"type {t}(k: int, a: int)\n" for t in TYPES)
OPTIONS = [f"matching {m}, disposal {d}" for m in ("FR", "FRC", "MR", "MRC") for d in ("I", "PI", "IP", "FP")]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    s = session("local[2]")
    yield s
    s.stop()


def _program(rng: random.Random, n: int) -> str:
    """Two or three subscriptions: random options, disjunctions, sometimes staged or partitioned."""
    subs = []
    for k in range(rng.randint(2, 3)):
        conjs = [_conjunction(rng, rng.sample(TYPES, rng.randint(1, 3))) for _ in range(rng.choice((1, 1, 2)))]
        condition = " or ".join("(" + " and ".join(c) + ")" for c in conjs)
        extra = rng.choice(("", "", ", covering staged", ", partition by k"))
        subs.append(f"subscription S{k} ({OPTIONS[(n + k) % 16]}{extra}): {condition}")
    return TYPES_SOURCE + "\n".join(subs) + "\n"


def _events(rng: random.Random, program: int) -> list[dict[str, Any]]:
    return [
        {"id": f"p{program}e{n}", "type": rng.choice(TYPES), "attrs": {"k": rng.randrange(2), "a": rng.randrange(3)}}
        for n in range(rng.randint(5, 40))
    ]


def _embedded(program: str, events: list[dict[str, Any]]) -> list[tuple[str, int, list[str]]]:
    engine = Engine.from_source(program, matcher="reference")
    return [(d.subscription, d.conjunction, d.ids) for e in events for d in engine.publish(e)]


def _flat(spark: Any, streams: dict[int, list[dict[str, Any]]]) -> Any:
    rows = []
    for pid, events in streams.items():
        for order, e in enumerate(events):
            row: dict[str, Any] = {"program": pid, "order": order, "type": e["type"], "id": e["id"]}
            for t in TYPES:
                for a in ("k", "a"):
                    row[column(t, a)] = e["attrs"][a] if e["type"] == t else None
            rows.append(row)
    pdf = pd.DataFrame(rows)
    for t in TYPES:
        for a in ("k", "a"):
            pdf[column(t, a)] = pdf[column(t, a)].astype("Int64")
    return spark.createDataFrame(pdf)


@pytest.mark.parametrize("matcher,programs,bins", [("reference", 120, 0), ("compiled", 6, None), ("reference", 60, 1)])
def test_spark_equals_the_embedded_engine_on_random_programs(
    spark: Any, matcher: str, programs: int, bins: int | None
) -> None:
    """Every program's deliveries, in order, equal the embedded engine's on the same stream, with
    mergers binned into engines (0: the default bins; 1: one engine per program) or one engine
    per merger (None)."""
    rng = random.Random(f"spark:{matcher}")
    texts = {pid: _program(rng, pid) for pid in range(programs)}
    streams = {pid: _events(rng, pid) for pid in range(programs)}
    out = correlate(_flat(spark, streams), texts, matcher=matcher, with_events=False, bins=bins).collect()
    got: dict[int, list[tuple[str, int, list[str]]]] = {pid: [] for pid in texts}
    for r in out:
        got[r["program"]].append((r["subscription"], r["conjunction"], list(r["relation"])))
    expected = {pid: _embedded(texts[pid], streams[pid]) for pid in texts}
    assert sum(len(v) for v in expected.values()) > programs  # the comparison is not vacuous
    mismatched = [pid for pid in texts if got[pid] != expected[pid]]
    assert not mismatched, f"program {mismatched[0]}:\n{texts[mismatched[0]]}"


STOCK = Path(__file__).resolve().parents[2] / "examples"


def _stock_expected() -> list[tuple[str, int, list[str]]]:
    events = [json.loads(line) for line in (STOCK / "stock.jsonl").read_text().splitlines() if line.strip()]
    return _embedded((STOCK / "stock.fdc").read_text(), events)


def test_replay_of_json_lines_with_events(spark: Any) -> None:
    """The stock example from its JSON-lines file: same relations, and each relation's events."""
    rows = replay(spark, (STOCK / "stock.fdc").read_text(), str(STOCK / "stock.jsonl")).collect()
    assert [(r["subscription"], r["conjunction"], list(r["relation"])) for r in rows] == _stock_expected()
    events = json.loads(rows[0]["events"])
    assert [e["id"] for e in events] == list(rows[0]["relation"])
    assert all(set(e) == {"id", "type", "attrs"} for e in events)


def test_replay_of_csv_and_parquet_partitioned_by_type(spark: Any, tmp_path: Path) -> None:
    """CSV in one file, and Parquet in type=T folders with an order column: same deliveries."""
    events = [json.loads(line) for line in (STOCK / "stock.jsonl").read_text().splitlines() if line.strip()]
    flat = pd.DataFrame([{"id": e["id"], "type": e["type"], **e["attrs"], "seq": n} for n, e in enumerate(events)])
    flat.drop(columns="seq").to_csv(tmp_path / "events.csv", index=False)
    program = (STOCK / "stock.fdc").read_text()
    rows = replay(spark, program, str(tmp_path / "events.csv"), with_events=False).collect()
    assert [(r["subscription"], r["conjunction"], list(r["relation"])) for r in rows] == _stock_expected()
    for t, part in flat.groupby("type"):
        folder = tmp_path / "parquet" / f"type={t}"
        folder.mkdir(parents=True)
        part.drop(columns="type").dropna(axis=1, how="all").to_parquet(folder / "part.parquet", index=False)
    rows = replay(spark, program, str(tmp_path / "parquet"), order_column="seq", with_events=False).collect()
    assert [(r["subscription"], r["conjunction"], list(r["relation"])) for r in rows] == _stock_expected()


@pytest.mark.parametrize(
    "lines,message",
    [
        (['{"id": "x", "type": "Nope", "attrs": {}}'], "events.jsonl:1: type Nope is not declared"),
        (
            [
                '{"id": "a", "type": "T1", "attrs": {"k": 1, "a": 2}}',
                '{"id": "b", "type": "T1", "attrs": {"k": "one", "a": 2}}',
            ],
            "events.jsonl:2: attribute k is not a int",
        ),
        (['{"id": "a", "type": "T1", "attrs": {"k": 1}}'], "events.jsonl:1: attribute a missing"),
        (
            ['{"id": "a", "type": "T1", "attrs": {"k": 1, "a": 2, "z": 3}}'],
            "events.jsonl:1: an attribute T1 does not declare",
        ),
        (['{"type": "T1", "attrs": {"k": 1, "a": 2}}'], "events.jsonl:1: no id"),
        (['{"id": "a", "type": "T1", "attrs": {"k": 1, "a": 2}}'] * 2, "duplicate event id 'a'"),
    ],
)
def test_bad_events_are_named_by_file_and_line(spark: Any, tmp_path: Path, lines: list[str], message: str) -> None:
    """Bad input stops the replay with where and what; nothing is dropped silently."""
    (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(SparkInputError) as err:
        replay(spark, TYPES_SOURCE + "subscription S: T1", str(tmp_path / "events.jsonl")).collect()
    assert message in str(err.value)


@pytest.mark.parametrize("bad_order", [False, True])
def test_bad_events_with_an_order_column_are_named_by_file_and_line(
    spark: Any, tmp_path: Path, bad_order: bool
) -> None:
    """With an order column, lines are counted only for the rows reported: still the line in its
    own file, with several small files packed into one partition."""
    good = [{"id": f"e{n}", "type": "T1", "attrs": {"k": n, "a": 1}, "seq": n} for n in range(23)]
    # a.jsonl is the larger: Spark packs larger files first, so b.jsonl's row ids do not start at 0.
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(e) + "\n" for e in good[:20]))
    wrong = {"id": "w", "type": "T1", "attrs": {"k": "x", "a": 1}, "seq": 99}
    if bad_order:
        wrong = {"id": "w", "type": "T1", "attrs": {"k": 5, "a": 1}, "seq": "soon"}
    rest = [good[20], good[21], wrong, good[22]]
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(e) + "\n" for e in rest))
    with pytest.raises(SparkInputError) as err:
        replay(spark, TYPES_SOURCE + "subscription S: T1", str(tmp_path), order_column="seq").collect()
    assert ("b.jsonl:3: seq is not an integer" if bad_order else "b.jsonl:3: attribute k is not a int") in str(
        err.value
    )


def test_attribute_columns_of_types_with_underscores_do_not_collide(spark: Any, tmp_path: Path) -> None:
    """Type A's b__c and type A__b's c are two columns: a float and a 64-bit int stay what they are
    (one shared column widened the int to a double and lost T's delivery without an error)."""
    program = (
        "type A(b__c: float)\ntype A__b(c: int)\n"
        "subscription S: A.b__c > 0.5\nsubscription T: A__b.c = 9007199254740993\n"
    )
    events = [
        {"id": "x", "type": "A", "attrs": {"b__c": 1.5}},
        {"id": "y", "type": "A__b", "attrs": {"c": 9007199254740993}},
        {"id": "z", "type": "A__b", "attrs": {"c": 9007199254740992}},
    ]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    rows = replay(spark, program, str(tmp_path / "events.jsonl")).collect()
    assert [(r["subscription"], list(r["relation"])) for r in rows] == [("S", ["x"]), ("T", ["y"])]
    assert json.loads(rows[1]["events"])[0]["attrs"] == {"c": 9007199254740993}


# The extended language's examples (docs/dsl.md), and a subscription under matching ALL, which
# delivers several relations of one conjunction at one event (Spark sorts them by nth).
EXTENDED = (
    stock_extended.PROGRAM
    + """
subscription Pairs (matching ALL, disposal NONE, within 20 on time):
    StockQuote[0] and StockQuote[1] and StockQuote[0].symbol = StockQuote[1].symbol
"""
)


def test_replay_of_the_extended_stock_examples_equals_the_embedded_engine(spark: Any, tmp_path: Path) -> None:
    """Groups with aggregates, absences, negations and ALL, on a seeded stream: each delivery, its
    timeout and its aggregates as the embedded engine gives them, in its order."""
    events = stock_extended.stream(3, 120)
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    rows = replay(spark, EXTENDED, str(tmp_path / "events.jsonl"), with_events=False).collect()
    engine = Engine.from_source(EXTENDED, matcher="reference")
    expected = [d.to_json() for e in events for d in engine.publish(e)]
    assert {d["subscription"] for d in expected} == {*stock_extended.NAMES, "Pairs"}  # not vacuous
    got = []
    for r in rows:
        d = {"subscription": r["subscription"], "conjunction": r["conjunction"], "relation": list(r["relation"])}
        if r["timeout"]:
            d["timeout"] = True
        if r["aggregates"] is not None:
            d["aggregates"] = json.loads(r["aggregates"])
        got.append(d)
    assert got == expected


def test_cli_spark_run_writes_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str], spark: Any) -> None:
    """(Last in the module: the command stops the session when it ends.) `faidecs spark run`
    writes the deliveries; reading them back gives the embedded engine's."""
    from faidecs.cli.main import main

    out = tmp_path / "out"
    code = main(
        [
            "spark",
            "run",
            "--program",
            str(STOCK / "stock.fdc"),
            "--events",
            str(STOCK / "stock.jsonl"),
            "--out",
            str(out),
            "--out-format",
            "json",
            "--master",
            "local[2]",
        ]
    )
    assert code == 0, capsys.readouterr().err
    rows = [json.loads(line) for f in sorted(out.glob("part-*.json")) for line in f.read_text().splitlines()]
    assert [(r["subscription"], r["conjunction"], r["relation"]) for r in rows] == _stock_expected()
