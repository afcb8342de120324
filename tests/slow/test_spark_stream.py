"""Streaming correlation on Spark: the deliveries of a query over files arriving one micro-batch at
a time equal the embedded engine's on the same events; a query killed mid-stream (SIGKILL, JVM and
all) and restarted from its checkpoint delivers exactly what an uninterrupted one does, nothing
lost and nothing twice; events out of order or malformed stop the query and say where."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from faidecs import Engine
from faidecs.lab.generator import _conjunction

pyspark = pytest.importorskip("pyspark")

from faidecs.spark import session
from faidecs.spark.stream import stream
from tests import stock_extended

# One worker runs the Spark modules, each in order (a module shares one session; its last test stops it).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("spark")]

TYPES = ("T1", "T2", "T3")
OPTIONS = [f"matching {m}, disposal {d}" for m in ("FR", "FRC", "MR", "MRC") for d in ("I", "PI", "IP", "FP")]
FILES = 8


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    s = session("local[2]")
    yield s
    s.stop()


def _program(seed: int) -> str:
    """16 subscriptions, one per option combination: disjunctions, staged and partitioned ones.
    (The tests use seeds whose programs the reference matcher runs in seconds: under I disposal
    its search grows with the queues, and some random programs take minutes on 200 events.)"""
    rng = random.Random(seed)
    subs = []
    for k, options in enumerate(OPTIONS):
        conjs = [_conjunction(rng, rng.sample(TYPES, rng.randint(1, 3))) for _ in range(rng.choice((1, 1, 2)))]
        extra = ("", ", covering staged", ", partition by k", "")[k % 4]
        subs.append(f"subscription S{k} ({options}{extra}): " + " or ".join("(" + " and ".join(c) + ")" for c in conjs))
    return "".join(f"type {t}(k: int, a: int)\n" for t in TYPES) + "\n".join(subs) + "\n"


def _events(seed: int, n: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {"seq": 10 * i + rng.randrange(10), "id": f"e{i}", "type": rng.choice(TYPES),
         "attrs": {"k": rng.randrange(2), "a": rng.randrange(3)}}
        for i in range(n)
    ]  # fmt: skip


def _write_files(folder: Path, events: list[dict[str, Any]]) -> None:
    """FILES files in order; the file source takes files by modification time, so it is set."""
    folder.mkdir(parents=True)
    size = -(-len(events) // FILES)
    for f in range(FILES):
        path = folder / f"part-{f:02d}.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in events[f * size : (f + 1) * size]))
        os.utime(path, (1_000_000 + f, 1_000_000 + f))


def _embedded(program: str, events: list[dict[str, Any]]) -> list[tuple[str, int, list[str]]]:
    engine = Engine.from_source(program, matcher="reference")
    return [(d.subscription, d.conjunction, d.ids) for e in events for d in engine.publish(e)]


def _delivered(spark: Any, out: Path) -> list[tuple[str, int, list[str]]]:
    rows = spark.read.json(str(out)).orderBy("order", "declared", "rank").collect()  # committed batches only
    return [(r["subscription"], r["conjunction"], list(r["relation"])) for r in rows]


def _run(spark: Any, program: str, root: Path, **kw: Any) -> None:
    query = stream(
        spark, program, str(root / "in"), str(root / "out"), str(root / "checkpoint"),
        order_column="seq", out_format="json", matcher="reference", files_per_trigger=1, available_now=True, **kw,
    )  # fmt: skip
    query.awaitTermination()


def test_stream_equals_the_embedded_engine(spark: Any, tmp_path: Path) -> None:
    """Eight micro-batches, state carried between them per merger: the embedded engine's deliveries."""
    program, events = _program(5), _events(6, 200)
    _write_files(tmp_path / "in", events)
    _run(spark, program, tmp_path)
    expected = _embedded(program, events)
    assert len(expected) > 50  # the comparison is not vacuous
    assert len({e[0] for e in expected}) >= 8  # many subscriptions (option combinations) deliver
    assert _delivered(spark, tmp_path / "out") == expected
    batches = sorted(int(p.name) for p in (tmp_path / "checkpoint" / "commits").iterdir() if p.name.isdigit())
    assert batches == list(range(FILES))  # one micro-batch per file: the state really crossed batches


def test_a_query_killed_mid_stream_resumes_from_its_checkpoint(spark: Any, tmp_path: Path) -> None:
    """SIGKILL the streaming process (and its JVM) after some micro-batches; restart from the
    checkpoint: the deliveries equal the embedded engine's, none lost, none twice."""
    program, events = _program(13), _events(14, 200)
    _write_files(tmp_path / "in", events)
    (tmp_path / "p.fdc").write_text(program)
    command = [
        sys.executable, "-m", "faidecs", "spark", "stream", "--program", str(tmp_path / "p.fdc"),
        "--events", str(tmp_path / "in"), "--out", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "checkpoint"),
        "--order-column", "seq", "--out-format", "json", "--matcher", "reference", "--files-per-trigger", "1",
    ]  # fmt: skip
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    metadata = tmp_path / "out" / "_spark_metadata"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done = [p for p in metadata.iterdir() if p.name.isdigit()] if metadata.exists() else []
            if len(done) >= 2:
                break
            assert process.poll() is None, "the streaming process ended before it was killed"
            time.sleep(0.2)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    committed = len([p for p in metadata.iterdir() if p.name.isdigit()])
    assert 2 <= committed < FILES, f"killed after {committed} of {FILES} micro-batches: not mid-stream"
    _run(spark, program, tmp_path)
    expected = _embedded(program, events)
    assert len(expected) > 50
    assert _delivered(spark, tmp_path / "out") == expected


def test_an_event_out_of_order_stops_the_query_and_says_so(spark: Any, tmp_path: Path) -> None:
    """A file whose events precede events already run is refused, with both order values."""
    program = "type T1(k: int, a: int)\nsubscription S: T1\n"
    late = [{"seq": 5, "id": "late", "type": "T1", "attrs": {"k": 0, "a": 0}}]
    first = [{"seq": 10 + i, "id": f"e{i}", "type": "T1", "attrs": {"k": 0, "a": 0}} for i in range(3)]
    (tmp_path / "in").mkdir()
    for n, chunk in enumerate((first, late)):
        path = tmp_path / "in" / f"part-{n}.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in chunk))
        os.utime(path, (1_000_000 + n, 1_000_000 + n))
    with pytest.raises(Exception) as err:
        _run(spark, program, tmp_path)
    assert "event at order 5 arrived after order 12 was run" in str(err.value)


def test_a_bad_event_stops_the_query_with_its_file(spark: Any, tmp_path: Path) -> None:
    """A malformed event is never skipped: the query fails naming its file, order and problem."""
    program = "type T1(k: int, a: int)\nsubscription S: T1\n"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "part-0.jsonl").write_text(
        json.dumps({"seq": 1, "id": "a", "type": "T1", "attrs": {"k": 0, "a": 0}}) + "\n"
        + json.dumps({"seq": 2, "id": "b", "type": "T1", "attrs": {"k": "zero", "a": 0}}) + "\n"
    )  # fmt: skip
    with pytest.raises(Exception) as err:
        _run(spark, program, tmp_path)
    assert "part-0.jsonl: seq 2: attribute k is not a int" in str(err.value)


def test_the_extended_stock_examples_stream_as_the_embedded_engine_delivers(spark: Any, tmp_path: Path) -> None:
    """Two micro-batches: groups, negation logs, watermarks and pending absences cross them in
    the state store; the deliveries (timeouts and aggregates too) are the embedded engine's."""
    events = [{"seq": k, **e} for k, e in enumerate(stock_extended.stream(8, 120))]
    folder = tmp_path / "in"
    folder.mkdir()
    for f in range(2):
        path = folder / f"part-{f:02d}.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in events[f * 60 : (f + 1) * 60]))
        os.utime(path, (1_000_000 + f, 1_000_000 + f))
    _run(spark, stock_extended.PROGRAM, tmp_path, with_events=False)
    rows = spark.read.json(str(tmp_path / "out")).orderBy("order", "declared", "rank", "nth").collect()
    got = []
    for r in rows:
        d = {"subscription": r["subscription"], "conjunction": r["conjunction"], "relation": list(r["relation"])}
        if r["timeout"]:
            d["timeout"] = True
        if r["aggregates"] is not None:
            d["aggregates"] = json.loads(r["aggregates"])
        got.append(d)
    expected = stock_extended.embedded([{k: v for k, v in e.items() if k != "seq"} for e in events])
    assert {d["subscription"] for d in expected} == set(stock_extended.NAMES)  # not vacuous
    assert got == expected
