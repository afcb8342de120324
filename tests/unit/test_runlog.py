"""Run logs (format ``faidecs.runs.runlog/1``): writing, reading, every reader error with its line, the
recorder, and ``faidecs run --log`` followed by ``faidecs verify``."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from faidecs.cli.main import main
from faidecs.properties import CHECKS
from faidecs.runs.processes import run_processes
from faidecs.runs.runlog import FORMAT, Delivered, Published, RunLog, RunLogError, RunRecorder

TYPES = "type T1(a: int)\ntype T2(name: str)\n"
HEADER = json.dumps({"record": "header", "format": FORMAT, "types": TYPES})
PROCESS = json.dumps({"record": "process", "process": "p", "subscription": "subscription P: T1 and T2"})


def event(event_id: str, type_name: str, attrs: dict[str, Any], publisher: str = "src", seq: int = 0) -> dict[str, Any]:
    return {"id": event_id, "type": type_name, "attrs": attrs, "publisher": publisher, "seq": seq}


def sample_log() -> RunLog:
    """A hand-built log with every kind of record, interleaved publications and deliveries, and
    non-ASCII text."""
    return RunLog(
        TYPES,
        {"p": "subscription P: T1 and T2", "q": "subscription Q (matching MR, disposal I): T2[1] or T1"},
        [
            Published(1, event("x1", "T1", {"a": 1})),
            Published(2, event("y1", "T2", {"name": "Zürich"}, seq=1)),
            Published(5, event("x2", "T1", {"a": -3}, publisher="q", seq=0)),
            Published(6, event("ü", "T2", {"name": "東京"}, seq=2)),
        ],
        [
            Delivered(3, "p", 0, ("x1", "y1")),
            Delivered(4, "q", 1, ("x1",)),
            Delivered(7, "q", 0, ("ü", "y1")),
        ],
        {"p": [{"T1": ["x2"], "T2": ["ü"]}], "q": [{"T2": []}, {"T1": []}]},
    )


def read_text(text: str, name: str = "<run log>") -> RunLog:
    return RunLog.read(io.StringIO(text), name)


# --- writing and reading back ------------------------------------------------------------------


def test_round_trip() -> None:
    log = sample_log()
    text = log.dumps()
    assert read_text(text) == log
    assert read_text(text).dumps() == text


def test_dumps_record_order_and_shape() -> None:
    records = [json.loads(line) for line in sample_log().dumps().splitlines()]
    assert [r["record"] for r in records] == [
        "header",
        "process",
        "process",
        "publish",
        "publish",
        "deliver",
        "deliver",
        "publish",
        "publish",
        "deliver",
        "final",
        "final",
    ]
    assert records[0] == {"record": "header", "format": "faidecs.runs.runlog/1", "types": TYPES}
    assert [r["time"] for r in records if "time" in r] == [1, 2, 3, 4, 5, 6, 7]
    assert records[5] == {"record": "deliver", "time": 3, "process": "p", "conjunction": 0, "relation": ["x1", "y1"]}
    assert records[-1] == {"record": "final", "process": "q", "queues": [{"T2": []}, {"T1": []}]}


def test_dumps_keeps_non_ascii_text() -> None:
    text = sample_log().dumps()
    assert "東京" in text and "Zürich" in text and "\\u" not in text


def test_write_equals_dumps() -> None:
    out = io.StringIO()
    sample_log().write(out)
    assert out.getvalue() == sample_log().dumps()


def test_round_trip_of_an_engine_run() -> None:
    log = run_processes(
        "type T1(a: int)\ntype T2(a: int)\n",
        {"p": "subscription P: T1.a = T2.a", "q": "subscription Q (matching MR, disposal I): T1 and T2"},
        [{"id": f"e{k}", "type": f"T{k % 2 + 1}", "attrs": {"a": k % 3}} for k in range(8)],
    )
    assert log.delivered
    assert read_text(log.dumps()) == log


def test_blank_lines_are_skipped_but_counted() -> None:
    text = "\n" + HEADER + "\n\n   \n" + PROCESS + "\nnot json\n"
    with pytest.raises(RunLogError, match=r"^<run log>:6: invalid JSON"):
        read_text(text)
    assert read_text("\n" + HEADER + "\n\n" + PROCESS + "\n").processes == {"p": "subscription P: T1 and T2"}


def test_derived_types_and_subscriptions() -> None:
    log = sample_log()
    assert list(log.types()) == ["T1", "T2"]
    subs = log.subscriptions()
    assert list(subs) == ["p", "q"]
    assert subs["q"].matching.value == "MR" and len(subs["q"].conjunctions) == 2


def test_a_process_has_exactly_one_subscription() -> None:
    log = RunLog(TYPES, {"p": "subscription A: T1\nsubscription B: T2"})
    with pytest.raises(RunLogError, match="process p: expected exactly one subscription"):
        log.subscriptions()


# --- reader errors -----------------------------------------------------------------------------


def publish_line(time: int, **changes: Any) -> str:
    ev = event("x", "T1", {"a": 1})
    ev.update(changes)
    for key in [k for k, v in ev.items() if v is None]:
        del ev[key]
    return json.dumps({"record": "publish", "time": time, "event": ev})


def deliver_line(time: int, process: str = "p", relation: Any = ("x",), conjunction: Any = 0) -> str:
    record = {"record": "deliver", "time": time, "process": process, "conjunction": conjunction}
    record["relation"] = list(relation) if isinstance(relation, tuple) else relation
    return json.dumps(record)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        pytest.param([HEADER, PROCESS, "{not json"], "<run log>:3: invalid JSON: ", id="not-json"),
        pytest.param([HEADER, "[1, 2]"], "<run log>:2: a record is a JSON object with a 'record' field", id="array"),
        pytest.param(
            [HEADER, '{"time": 1}'], "<run log>:2: a record is a JSON object with a 'record' field", id="no-kind"
        ),
        pytest.param(
            [PROCESS, HEADER],
            "<run log>:1: a run log starts with a header of format 'faidecs.runs.runlog/1'",
            id="no-header",
        ),
        pytest.param(
            [HEADER.replace("runlog/1", "runlog/2"), PROCESS],
            "<run log>:1: a run log starts with a header of format 'faidecs.runs.runlog/1'",
            id="wrong-format",
        ),
        pytest.param(
            [json.dumps({"record": "header", "types": TYPES})],
            "<run log>:1: a run log starts with a header",
            id="header-without-format",
        ),
        pytest.param(
            [json.dumps({"record": "header", "format": FORMAT})],
            "<run log>:1: field 'types' must be str",
            id="header-without-types",
        ),
        pytest.param([], "<run log>: empty run log", id="empty"),
        pytest.param(["", "  "], "<run log>: empty run log", id="only-blank"),
        pytest.param(
            [HEADER, PROCESS, publish_line(2), publish_line(2, id="y")],
            "<run log>:4: time 2 does not increase (previous 2)",
            id="time-repeated",
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(5), deliver_line(3)],
            "<run log>:4: time 3 does not increase (previous 5)",
            id="time-decreasing",
        ),
        pytest.param(
            [HEADER, PROCESS, json.dumps({"record": "publish", "time": "1", "event": event("x", "T1", {})})],
            "<run log>:3: field 'time' must be int",
            id="time-not-int",
        ),
        pytest.param(
            [HEADER, PROCESS, json.dumps({"record": "publish", "time": True, "event": event("x", "T1", {})})],
            "<run log>:3: field 'time' must be int",
            id="time-bool",
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(1), deliver_line(2, process="q")],
            "<run log>:4: delivery by undeclared process 'q'",
            id="undeclared-process",
        ),
        pytest.param(
            [HEADER, deliver_line(1), PROCESS],
            "<run log>:2: delivery by undeclared process 'p'",
            id="process-declared-too-late",
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(1, publisher=None)],
            "<run log>:3: event needs 'publisher' (str)",
            id="no-publisher",
        ),
        pytest.param([HEADER, PROCESS, publish_line(1, seq=None)], "<run log>:3: event needs 'seq' (int)", id="no-seq"),
        pytest.param([HEADER, PROCESS, publish_line(1, seq="0")], "<run log>:3: event needs 'seq' (int)", id="seq-str"),
        pytest.param(
            [HEADER, PROCESS, publish_line(1, seq=False)], "<run log>:3: event needs 'seq' (int)", id="seq-bool"
        ),
        pytest.param([HEADER, PROCESS, publish_line(1, id=None)], "<run log>:3: event needs 'id' (str)", id="no-id"),
        pytest.param(
            [HEADER, PROCESS, publish_line(1, type=None)], "<run log>:3: event needs 'type' (str)", id="no-type"
        ),
        pytest.param(
            [HEADER, PROCESS, json.dumps({"record": "publish", "time": 1})],
            "<run log>:3: field 'event' must be dict",
            id="no-event",
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(1), deliver_line(2, relation=["x", 1])],
            "<run log>:4: a relation is a list of event ids",
            id="relation-not-ids",
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(1), deliver_line(2, relation="x")],
            "<run log>:4: field 'relation' must be list",
            id="relation-not-list",
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(1), deliver_line(2, conjunction="0")],
            "<run log>:4: field 'conjunction' must be int",
            id="conjunction-not-int",
        ),
        pytest.param([HEADER, PROCESS, PROCESS], "<run log>:3: process 'p' declared twice", id="process-twice"),
        pytest.param(
            [HEADER, json.dumps({"record": "process", "process": "p", "subscription": "s", "joined": {"time": "1"}})],
            '<run log>:2: \'joined\' is {"time": int, "peer": process or null}',
            id="joined-time-not-int",
        ),
        pytest.param(
            [HEADER, json.dumps({"record": "process", "process": "p", "subscription": "s", "joined": [1]})],
            "<run log>:2: field 'joined' must be dict",
            id="joined-not-dict",
        ),
        pytest.param(
            [HEADER, json.dumps({"record": "process", "process": "p", "subscription": "s", "left": 1.5})],
            "<run log>:2: field 'left' must be int",
            id="left-not-int",
        ),
        pytest.param(
            [HEADER, PROCESS, json.dumps({"record": "notify", "time": 1, "process": "p", "event": 3})],
            "<run log>:3: field 'event' must be str",
            id="notify-event-not-str",
        ),
        pytest.param([HEADER, HEADER], "<run log>:2: unknown record kind 'header'", id="second-header"),
        pytest.param(
            [HEADER, json.dumps({"record": "process", "process": "p"})],
            "<run log>:2: field 'subscription' must be str",
            id="process-without-subscription",
        ),
        pytest.param(
            [HEADER, PROCESS, json.dumps({"record": "final", "process": "p", "queues": {}})],
            "<run log>:3: field 'queues' must be list",
            id="final-queues-not-list",
        ),
        pytest.param(
            [HEADER, PROCESS, json.dumps({"record": "snapshot", "time": 1})],
            "<run log>:3: unknown record kind 'snapshot'",
            id="unknown-kind",
        ),
    ],
)
def test_reader_errors(lines: list[str], message: str) -> None:
    with pytest.raises(RunLogError) as info:
        RunLog.read(lines)
    assert str(info.value).startswith(message), str(info.value)


def test_reader_error_names_the_file() -> None:
    with pytest.raises(RunLogError, match=r"^runs/a\.jsonl:2: unknown record kind 'x'$"):
        RunLog.read([HEADER, '{"record": "x"}'], "runs/a.jsonl")


# --- the recorder ------------------------------------------------------------------------------


def test_recorder_stamps_publisher_seq_and_one_clock() -> None:
    rec = RunRecorder(TYPES, {"p": "subscription P: T1 and T2"})
    first = rec.publish({"id": "x1", "type": "T1", "attrs": {"a": 1}})
    rec.deliver("p", 0, ["x1"])
    reaction = rec.publish({"id": "x2", "type": "T1", "attrs": {"a": 2}}, default_publisher="p")
    explicit = rec.publish({"id": "x3", "type": "T1", "attrs": {"a": 3}, "publisher": "src", "seq": 7})
    after = rec.publish({"id": "x4", "type": "T1", "attrs": {"a": 4}, "publisher": "src"})
    log = rec.finish({"p": [{"T1": ["x4"], "T2": []}]})
    assert (first["publisher"], first["seq"]) == ("publisher", 0)
    assert (reaction["publisher"], reaction["seq"]) == ("p", 0)
    assert (explicit["seq"], after["seq"]) == (7, 8)
    assert [p.time for p in log.published] == [1, 3, 4, 5]
    assert log.delivered == [Delivered(2, "p", 0, ("x1",))]
    assert log.final == {"p": [{"T1": ["x4"], "T2": []}]}
    assert read_text(log.dumps()) == log


# --- faidecs run --log, then faidecs verify ----------------------------------------------------


def record_stock(examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """``faidecs run`` on the stock example with ``--log``; returns the log's path."""
    log_path = tmp_path / "stock.runlog.jsonl"
    code = main(
        [
            "run",
            "--program",
            str(examples / "stock.fdc"),
            "--events",
            str(examples / "stock.jsonl"),
            "--out",
            str(tmp_path / "deliveries.jsonl"),
            "--log",
            str(log_path),
        ]
    )
    assert code == 0
    capsys.readouterr()
    return log_path


def test_run_log_of_the_stock_example(examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = RunLog.read(record_stock(examples, tmp_path, capsys).read_text(encoding="utf-8").splitlines())
    assert list(log.processes) == ["RisingAfterEarnings", "Jump"]
    assert [p.id for p in log.published] == ["q0", "er1", "q1", "q2", "q3", "q4", "q5", "q6"]
    assert all(p.publisher == "publisher" for p in log.published)
    assert [p.seq for p in log.published] == list(range(8))
    assert [(d.process, d.relation) for d in log.delivered] == [
        ("Jump", ("q3", "q0")),
        ("RisingAfterEarnings", ("er1", "q1", "q3", "q5")),
        ("Jump", ("q5", "q4")),
        ("Jump", ("q6", "q2")),
    ]
    assert log.final == {
        "RisingAfterEarnings": [{"EarningsReport": [], "StockQuote": ["q6"]}],
        "Jump": [{"StockQuote": ["q1"]}],
    }


def test_verify_stock_example(examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Jump (MR+I) delivers q3 (with q0) before q2 (with q6): Type FIFO Order, hence Type Causal
    Order, is violated; with --all (every property judged) the exit status is 1."""
    log_path = record_stock(examples, tmp_path, capsys)
    assert main(["verify", "--all", str(log_path)]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["property", "result"]
    width = max(len(name) for name in CHECKS)
    verdicts = {line[:width].strip(): line[width:].strip() for line in lines[1:] if line[:width].strip()}
    assert list(verdicts) == list(CHECKS)
    violated = [name for name, result in verdicts.items() if result == "VIOLATED"]
    assert violated == ["Type FIFO Order", "Type Causal Order"]
    assert "q2 was published before q3 by publisher, but Jump (conjunction 0) delivered q3 first" in out


def test_verify_stock_example_json(examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log_path = record_stock(examples, tmp_path, capsys)
    assert main(["verify", str(log_path), "--json", "--all"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert list(data) == list(CHECKS)
    for result in data.values():
        assert set(result) == {"holds", "violations"}
        assert result["holds"] is (not result["violations"])
        for v in result["violations"]:
            assert set(v) == {"explanation", "events", "processes", "deliveries"}
    assert [name for name, result in data.items() if not result["holds"]] == ["Type FIFO Order", "Type Causal Order"]
    fifo = data["Type FIFO Order"]["violations"]
    assert len(fifo) == 1
    assert fifo[0]["events"] == ["q2", "q3"]
    assert fifo[0]["processes"] == ["Jump"]
    assert fifo[0]["deliveries"] == [6, 12]
    assert data["Type Causal Order"]["violations"] == fifo


def test_verify_clean_log_from_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    log = run_processes(
        "type T1(a: int)\n", {"p": "subscription P: T1"}, [{"id": "x", "type": "T1", "attrs": {"a": 1}}]
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(log.dumps()))
    assert main(["verify", "-", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert all(result["holds"] is True and result["failed"] is False for result in data.values())
    assert data["No Duplication"]["promised_by"] == ["p"]


def test_verify_reports_a_bad_log_with_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(HEADER + "\n" + PROCESS + "\n" + deliver_line(1, process="q") + "\n", encoding="utf-8")
    assert main(["verify", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"faidecs: {path}:3: delivery by undeclared process 'q'\n"


# --- hostile and broken logs: a positioned error, never a traceback (issue 20) -------------------

FINAL = json.dumps({"record": "final", "process": "p", "queues": [{"T1": [], "T2": []}]})
PARTITIONED_TYPES = "type A(k: int)\ntype B(k: int)\n"
PARTITIONED_HEADER = json.dumps({"record": "header", "format": FORMAT, "types": PARTITIONED_TYPES})


def partitioned_final(queues: Any, covering: str = "") -> list[str]:
    """A log of one partitioned (or staged) process whose final record holds ``queues``."""
    sub = f"subscription S (partition by k{covering}): A and B"
    return [
        PARTITIONED_HEADER,
        json.dumps({"record": "process", "process": "S", "subscription": sub}),
        json.dumps({"record": "final", "process": "S", "queues": queues}),
    ]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        pytest.param([HEADER, "[" * 100_000], "<run log>:2: the record is nested too deeply", id="deep-nesting"),
        pytest.param(
            [HEADER, PROCESS, publish_line(1, attrs={"a": [[[[[[[[1]]]]]]]] * 50_000})],
            "<run log>:3: field 'event': ",
            id="deep-attribute",
        ),
        pytest.param(
            [HEADER, PROCESS.replace("}", ', "left": ' + "9" * 5000 + "}")],
            "<run log>:2: column 92: a number out of range (integers are 64-bit)",
            id="5000-digit-left",
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(1, attrs={"a": 1}).replace('"a": 1', '"a": ' + "7" * 5000)],
            "<run log>:3: column ",
            id="5000-digit-attribute",
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(1).replace('"time": 1', '"time": ' + "9" * 5000)],
            "<run log>:3: column 31: a number out of range",
            id="5000-digit-time",
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(1, attrs={"a": "x"})],
            "<run log>:3: field 'event': event 'x', type T1, attribute 'a'",
            id="event-does-not-fit-its-type",
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(1, type="T9")], "<run log>:3: field 'event': ", id="event-of-unknown-type"
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(1), publish_line(2)],
            "<run log>:4: event id 'x' published twice",
            id="event-published-twice",
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(1), deliver_line(2, conjunction=1)],
            "<run log>:4: field 'conjunction': process 'p' has no conjunction 1 (it has 1)",
            id="conjunction-out-of-range",
        ),
        pytest.param(
            [json.dumps({"record": "header", "format": FORMAT, "types": "type T1(a: nope)"})],
            "<run log>:1: field 'types': <types>:1:",
            id="types-do-not-compile",
        ),
        pytest.param(
            [HEADER, json.dumps({"record": "process", "process": "p", "subscription": "subscription P: T9"})],
            "<run log>:2: field 'subscription': <subscription>:1:",
            id="subscription-does-not-compile",
        ),
        pytest.param(
            [HEADER, json.dumps({"record": "process", "process": "p", "subscription": TYPES})],
            "<run log>:2: field 'subscription': expected exactly one subscription",
            id="no-subscription",
        ),
        pytest.param([HEADER, FINAL], "<run log>:2: final queues of undeclared process 'p'", id="final-undeclared"),
        pytest.param(
            [HEADER, PROCESS, FINAL.replace("[{", "[5, {")],
            "<run log>:3: field 'queues': 2 conjunctions, but the subscription of 'p' has 1",
            id="final-too-many-conjunctions",
        ),
        pytest.param(
            [HEADER, PROCESS, FINAL.replace('"T2": []', '"T2": [1]')],
            "<run log>:3: field 'queues[0].T2': a list of event ids",
            id="final-queue-not-ids",
        ),
        pytest.param(
            [HEADER, PROCESS, FINAL.replace('"T2"', '"T3"')],
            "<run log>:3: field 'queues[0]': 'T3' is not a type of conjunction",
            id="final-queue-of-another-type",
        ),
        pytest.param(
            partitioned_final([{"partitions": 5}]),
            "<run log>:3: field 'queues[0]': a partitioned conjunction's queues are",
            id="final-partitions-not-a-dict",
        ),
        pytest.param(
            partitioned_final([{"A": [], "B": []}]),
            "<run log>:3: field 'queues[0]': a partitioned conjunction's queues are",
            id="final-partitioned-without-partitions",
        ),
        pytest.param(
            partitioned_final([{"partitions": {"1": {"A": "a1"}}}]),
            "<run log>:3: field 'queues[0].partitions['1'].A': a list of event ids",
            id="final-partition-queue-not-a-list",
        ),
        pytest.param(
            partitioned_final([{"partitions": {"1": {"A": [], "B": [], "staged": [[5]]}}}], ", covering staged"),
            "<run log>:3: field 'queues[0].partitions['1'].staged[0][0]': a list of event ids",
            id="final-staged-relation-not-ids",
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(1)[:-7]],
            "<run log>:3: the run log is truncated: its last record is cut short",
            id="cut-mid-record",
        ),
        pytest.param(
            [HEADER, PROCESS, publish_line(1)[:-7], FINAL], "<run log>:3: invalid JSON: ", id="bad-record-not-last"
        ),
    ],
)
def test_reader_refuses_hostile_logs_with_a_position(lines: list[str], message: str) -> None:
    with pytest.raises(RunLogError) as info:
        RunLog.read(lines)
    assert str(info.value).startswith(message), str(info.value)
    assert len(str(info.value)) < 1000  # a huge bad value is not echoed whole


def test_a_log_is_complete_when_every_process_wrote_its_final_record() -> None:
    assert RunLog.read([HEADER]).incomplete() == "it declares no process"
    assert RunLog.read([HEADER, PROCESS, publish_line(1)]).incomplete() == "no final record of process 'p'"
    assert RunLog.read([HEADER, PROCESS, publish_line(1), FINAL]).incomplete() is None
    left = PROCESS.replace("}", ', "left": 1}')
    assert RunLog.read([HEADER, left, publish_line(1)]).incomplete() is None  # it left: no final owed


def test_verify_does_not_say_holds_on_a_truncated_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A log cut at a line boundary, or a header alone: the properties that need the whole run are
    not judged ("cannot judge"), the others are judged on what was recorded; exit status 1."""
    whole = run_processes(
        TYPES, {"p": "subscription P: T1 and T2"}, [{"id": "x", "type": "T1", "attrs": {"a": 1}}]
    ).dumps()
    for name, text in [("cut", "".join(whole.splitlines(keepends=True)[:-1])), ("header", HEADER + "\n")]:
        path = tmp_path / f"{name}.jsonl"
        path.write_text(text, encoding="utf-8")
        assert main(["verify", str(path), "--json"]) == 1
        captured = capsys.readouterr()
        data = json.loads(captured.out)
        undecided = [p for p, result in data.items() if result["holds"] is None]
        assert undecided == [
            "Conjunction Validity",
            "Event Validity",
            "Conjunction Agreement",
            "Covering Agreement",
            "Notification Validity",
        ]
        assert all("the run log is truncated" in data[p]["undecided"] for p in undecided)
        assert f"{path}: the run log is truncated" in captured.err
        assert main(["verify", str(path)]) == 1
        # A header alone declares no process, so nothing is promised, and nothing judged either.
        shown = "cannot judge" if name == "cut" else "not promised (cannot judge)"
        assert f"Conjunction Validity      {shown}\n" in capsys.readouterr().out
    path = tmp_path / "whole.jsonl"
    path.write_text(whole, encoding="utf-8")
    assert main(["verify", str(path)]) == 0
    assert "cannot judge" not in capsys.readouterr().out
