"""The ``faidecs`` command line: ``check`` and ``run``, in-process and as a real executable."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from faidecs.cli.main import main
from faidecs.matching.guarantees import COMBINATIONS, PROPERTIES


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def jsonl(events: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


def ev(event_id: str, type_name: str, **attrs: Any) -> dict[str, Any]:
    return {"id": event_id, "type": type_name, "attrs": attrs}


def delivery(sub: str, relation: list[str], conjunction: int = 0) -> str:
    """One output line, exactly as ``faidecs run`` writes it."""
    return json.dumps({"subscription": sub, "conjunction": conjunction, "relation": relation})


def faidecs_command() -> list[str]:
    """The installed ``faidecs`` executable (next to the interpreter), else ``python -m faidecs``."""
    exe = Path(sys.executable).with_name("faidecs")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "faidecs"]


# --- the worked examples of the semantics file -----------------------------------------------

EX1_TYPES = "type T1(a: int)\ntype T2(a: int)\n"
EX1_EVENTS = [ev("x1", "T1", a=1), ev("x2", "T1", a=2), ev("y1", "T2", a=3)]
EX2_EVENTS = [ev("a", "T", v=5), ev("b", "T", v=3), ev("c", "T", v=4)]
EX3_EVENTS = [
    ev("e1", "T1", k=1),
    ev("e2", "T1", k=7),
    ev("e3", "T1", k=3),
    ev("e4", "T1", k=8),
    ev("e5", "T1", k=5),
    ev("ea", "T2", k=11),
    ev("eb", "T2", k=7),
    ev("ec", "T2", k=8),
]
EX3_PROGRAM = (
    "type T1(k: int)\ntype T2(k: int)\n"
    "subscription S (matching FR, disposal {}): T1[0].k = T2[0].k and T1[1].k = T2[1].k\n"
)

WORKED_EXAMPLES = [
    pytest.param(
        EX1_TYPES + "subscription S: T1 and T2\n",
        EX1_EVENTS,
        [["x1", "y1"]],
        {"S": [{"T1": ["x2"], "T2": []}]},
        id="ex1-FR-PI",
    ),
    pytest.param(
        EX1_TYPES + "subscription S (matching MR, disposal I): T1 and T2\n",
        EX1_EVENTS,
        [["x2", "y1"]],
        {"S": [{"T1": ["x1"], "T2": []}]},
        id="ex1-MR-I",
    ),
    pytest.param(
        "type T(v: int)\nsubscription S: T[0].v > T[1].v\n",
        EX2_EVENTS,
        [["a", "b"]],
        {"S": [{"T": ["c"]}]},
        id="ex2-FR-PI",
    ),
    pytest.param(
        "type T(v: int)\nsubscription S (matching MR, disposal PI): T[0].v > T[1].v\n",
        EX2_EVENTS,
        [["c", "b"]],
        {"S": [{"T": []}]},
        id="ex2-MR-PI",
    ),
    pytest.param(
        EX3_PROGRAM.format("PI"), EX3_EVENTS, [["e2", "e4", "eb", "ec"]], {"S": [{"T1": ["e5"], "T2": []}]}, id="ex3-PI"
    ),
    pytest.param(
        EX3_PROGRAM.format("I"),
        EX3_EVENTS,
        [["e2", "e4", "eb", "ec"]],
        {"S": [{"T1": ["e1", "e3", "e5"], "T2": ["ea"]}]},
        id="ex3-I",
    ),
    pytest.param(
        EX3_PROGRAM.format("IP"),
        EX3_EVENTS,
        [["e2", "e4", "eb", "ec"]],
        {"S": [{"T1": ["e1"], "T2": ["ea"]}]},
        id="ex3-IP",
    ),
    pytest.param(
        EX3_PROGRAM.format("FP"),
        EX3_EVENTS,
        [["e2", "e4", "eb", "ec"]],
        {"S": [{"T1": ["e3", "e4", "e5"], "T2": ["ec"]}]},
        id="ex3-FP",
    ),
]


@pytest.mark.parametrize(("program", "events", "relations", "state"), WORKED_EXAMPLES)
def test_worked_examples(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    program: str,
    events: list[dict[str, Any]],
    relations: list[list[str]],
    state: dict[str, Any],
) -> None:
    """Each worked example through ``faidecs run``: exact output lines and queues afterwards."""
    prog = write(tmp_path / "p.fdc", program)
    evs = write(tmp_path / "e.jsonl", jsonl(events))
    out, state_out = tmp_path / "out.jsonl", tmp_path / "state.json"
    rc = main(["run", "--program", prog, "--events", evs, "--out", str(out), "--state-out", str(state_out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert captured.out == ""
    assert out.read_text().splitlines() == [delivery("S", r) for r in relations]
    assert json.loads(state_out.read_text()) == state
    assert state_out.read_text().count("\n") == 1


def test_worked_example_3_delivered_only_at_ec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing is delivered before `ec`: stopping the stream at `eb` delivers nothing."""
    prog = write(tmp_path / "p.fdc", EX3_PROGRAM.format("PI"))
    evs = write(tmp_path / "e.jsonl", jsonl(EX3_EVENTS[:-1]))
    assert main(["run", "--program", prog, "--events", evs, "--state-out", "-"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [json.dumps({"S": [{"T1": ["e1", "e2", "e3", "e4", "e5"], "T2": ["ea", "eb"]}]})]


# --- the stock example -----------------------------------------------------------------------

STOCK_OUT = [
    delivery("Jump", ["q3", "q0"]),
    delivery("RisingAfterEarnings", ["er1", "q1", "q3", "q5"]),
    delivery("Jump", ["q5", "q4"]),
    delivery("Jump", ["q6", "q2"]),
]


def test_run_stock_example(examples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Deliveries in delivery order (subscriptions in declaration order within one arrival)."""
    rc = main(
        ["run", "--program", str(examples / "stock.fdc"), "--events", str(examples / "stock.jsonl"), "--state-out", "-"]
    )
    captured = capsys.readouterr()
    assert rc == 0 and captured.err == ""
    lines = captured.out.splitlines()
    assert lines[:-1] == STOCK_OUT
    assert json.loads(lines[-1]) == {
        "RisingAfterEarnings": [{"EarningsReport": [], "StockQuote": ["q6"]}],
        "Jump": [{"StockQuote": ["q1"]}],
    }


LAB = "the lab, not in the paper's table"


def test_check_stock_example(examples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(examples / "stock.fdc")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "type EarningsReport(symbol: str, eps: float, time: int)" in lines
    assert "type StockQuote(symbol: str, value: float, time: int)" in lines
    assert "subscription RisingAfterEarnings (matching FR, disposal PI)" in lines
    assert "subscription Jump (matching MR, disposal I)" in lines
    assert "    signature: [EarningsReport[0], StockQuote[0], StockQuote[1], StockQuote[2]]" in lines
    assert "    signature: [StockQuote[0], StockQuote[1]]" in lines
    assert "    binary: StockQuote[0].value < StockQuote[1].value" in lines
    assert "    binary: StockQuote[2].time - EarningsReport[0].time <= 300" in lines
    assert "    binary: StockQuote[0].value > StockQuote[1].value * 1.05" in lines
    keeps = [line for line in lines if line.startswith("  keeps: ")]
    assert len(keeps) == 2 and "Type FIFO Order" in keeps[0] and "Type FIFO Order" not in keeps[1]
    loses = [line for line in lines if line.startswith("  loses: ")]
    assert loses == [
        f"  loses: Event Validity ({LAB}); Covering Agreement ({LAB})",
        "  loses: Event Validity (Thm. 1); Covering Agreement (Thm. 2); Type Total Order (Thm. 6); "
        f"Conjunction Total Order ({LAB}); Type FIFO Order (Thm. 3, 6); Type Causal Order (Thm. 4, 6)",
    ]
    # Jump (MR, I): the lab's counterexample wins over the paper's table, so Conjunction Total
    # Order is lost, never "kept" and "violated" at once.
    assert "Conjunction Total Order" not in keeps[1]
    assert "conjunction 0: " in out


@pytest.mark.parametrize("covering", ["", ", covering staged"])
@pytest.mark.parametrize("combination", [c.name for c in COMBINATIONS])
def test_check_never_says_kept_and_lost_of_one_property(
    combination: str, covering: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23: `faidecs check` listed Conjunction Total Order under "keeps" for MR+I and then
    "the lab finds violated: Conjunction Total Order". Both lists now come from the lab's table,
    the one `faidecs verify` and `faidecs overlay simulate` judge."""
    matching, disposal = combination.split("+")
    prog = write(
        tmp_path / "p.fdc", f"type T(a: int)\nsubscription S (matching {matching}, disposal {disposal}{covering}): T\n"
    )
    assert main(["check", prog]) == 0
    lines = capsys.readouterr().out.splitlines()
    (keeps,) = [line.removeprefix("  keeps: ") for line in lines if line.startswith("  keeps: ")]
    (loses,) = [line.removeprefix("  loses: ") for line in lines if line.startswith("  loses: ")]
    kept = set(keeps.split(", "))
    lost = {item.split(" (")[0] for item in loses.split("; ")} - {"none"}
    assert kept.isdisjoint(lost)
    assert kept | lost == set(PROPERTIES)
    assert main(["check", "--json", prog]) == 0
    (sub,) = json.loads(capsys.readouterr().out)["subscriptions"]
    assert set(sub["keeps"]).isdisjoint(sub["loses"]) and set(sub["keeps"]) == kept


def test_check_prints_unary_predicates_and_evaluation_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(
        tmp_path / "p.fdc",
        "type T1(a: float)\ntype T2(a: int)\n"
        "subscription S (matching FRC, disposal IP): 3 > T1.a and T2[1] or T2.a = 1 or T1\n",
    )
    assert main(["check", prog]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "subscription S (matching FRC, disposal IP)" in lines
    assert "  conjunction 0: T2[1] and T1[0].a < 3" in lines
    assert "    signature: [T1[0], T2[0], T2[1]]" in lines
    assert "    unary  T1[0]: T1[0].a < 3" in lines
    assert "  conjunction 1: T2[0].a = 1" in lines
    assert "    unary  T2[0]: T2[0].a = 1" in lines
    assert "  conjunction 2: T1[0]" in lines
    assert "  evaluation order: 0, 2, 1" in lines
    assert any(line.startswith("  loses: Conjunction Validity (Thm. 5); Event Validity (Thm. 5, 7)") for line in lines)


def test_check_json(examples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--json", str(examples / "stock.fdc")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["types"] == {
        "EarningsReport": {"symbol": "str", "eps": "float", "time": "int"},
        "StockQuote": {"symbol": "str", "value": "float", "time": "int"},
    }
    rising, jump = data["subscriptions"]
    assert (rising["name"], rising["matching"], rising["disposal"]) == ("RisingAfterEarnings", "FR", "PI")
    assert (jump["name"], jump["matching"], jump["disposal"]) == ("Jump", "MR", "I")
    (conj,) = rising["conjunctions"]
    assert conj["index"] == 0
    assert conj["signature"] == ["EarningsReport[0]", "StockQuote[0]", "StockQuote[1]", "StockQuote[2]"]
    assert conj["unary"] == {}
    assert len(conj["binary"]) == 7
    assert conj["canonical"].startswith("[EarningsReport[0], StockQuote[0], StockQuote[1], StockQuote[2]] ")
    assert rising["evaluation_order"] == [0]
    assert rising["paper_loses"] == {} and "Type FIFO Order" in rising["keeps"]
    assert rising["loses"] == {"Event Validity": [], "Covering Agreement": []}
    assert jump["loses"]["Type FIFO Order"] == [3, 6] and jump["loses"]["Conjunction Total Order"] == []
    assert "Type FIFO Order" not in jump["keeps"] and "Conjunction Total Order" not in jump["keeps"]
    assert jump["paper_loses"]["Type FIFO Order"] == [3, 6]


def test_check_json_unary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(tmp_path / "p.fdc", "type T(a: int)\nsubscription S: T.a > 1 and T[1].a < T.a or T[2]\n")
    assert main(["check", "--json", prog]) == 0
    (sub,) = json.loads(capsys.readouterr().out)["subscriptions"]
    c0, c1 = sub["conjunctions"]
    assert c0["unary"] == {"T[0]": ["T[0].a > 1"]}
    assert c0["binary"] == ["T[0].a > T[1].a"]
    assert c1 == {
        "index": 1,
        "signature": ["T[0]", "T[1]", "T[2]"],
        "unary": {},
        "binary": [],
        "canonical": "[T[0], T[1], T[2]]",
    }


def test_check_issue_forms_from_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    program = (
        "# comment\n"
        "type T1(a1: int, a2: float, name: str, flag: bool)\n"
        "type T2(a1: int)\ntype T3(a1: int)\n"
        "subscription S1: T1[0].a1 < T2[0].a1 and T3.a1 < 20\n"
        "subscription S2 (matching MR, disposal IP): T1 and T2[1]\n"
        'subscription S3: T1.a1 = 5 or T1.name = "x" and T3\n'
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO(program))
    assert main(["check", "-"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  conjunction 0: T1[0].a1 < T2[0].a1 and T3[0].a1 < 20" in lines
    assert "    binary: T1[0].a1 < T2[0].a1" in lines
    assert "    unary  T3[0]: T3[0].a1 < 20" in lines
    assert "subscription S2 (matching MR, disposal IP)" in lines
    assert "  conjunction 0: T1[0] and T2[1]" in lines
    assert '  conjunction 1: T3[0] and T1[0].name = "x"' in lines


def test_check_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(tmp_path / "bad.fdc", "type T(a: int, s: str)\nsubscription S: T.s < 3\n  and V.a > 1\n")
    assert main(["check", prog]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.splitlines()
    assert err[0] == f"{prog}:2:17: error: cannot compare str with int"
    assert err[1] == "    subscription S: T.s < 3"
    assert err[2] == "                    ^^^^^^^"
    assert f"{prog}:3:7: error: unknown event type 'V'" in err
    i = err.index(f"{prog}:3:7: error: unknown event type 'V'")
    assert err[i + 1 : i + 3] == ["      and V.a > 1", "          ^"]


def test_check_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(tmp_path / "bad.fdc", "type T(a: int)\nsubscription S: T.a <> 3\n")
    assert main(["check", prog]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{prog}:2:22: error: unexpected '>'; expected ")
    assert "a name" in err and "an integer" in err


def test_check_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nope.fdc")
    assert main(["check", missing]) == 1
    assert capsys.readouterr().err.strip() == f"faidecs: cannot read {missing}: No such file or directory"


# --- run: errors in the input ----------------------------------------------------------------

PROGRAM = "type T1(a: int)\ntype T2(a: int)\nsubscription S: T1 and T2\n"


def test_run_missing_program_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    evs = write(tmp_path / "e.jsonl", jsonl(EX1_EVENTS))
    missing = str(tmp_path / "missing.fdc")
    assert main(["run", "--program", missing, "--events", evs]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == f"faidecs: cannot read {missing}: No such file or directory"


def test_run_missing_events_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(tmp_path / "p.fdc", PROGRAM)
    missing = str(tmp_path / "missing.jsonl")
    assert main(["run", "--program", prog, "--events", missing]) == 1
    assert f"cannot read {missing}" in capsys.readouterr().err


def test_run_program_with_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(tmp_path / "p.fdc", "type T(a: int)\nsubscription S: T.b > 1\n")
    evs = write(tmp_path / "e.jsonl", "")
    assert main(["run", "--program", prog, "--events", evs]) == 1
    assert capsys.readouterr().err.startswith(f"{prog}:2:19: error: type T has no attribute 'b'")


def test_run_stops_at_bad_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 1 with the line number; deliveries before the bad line were written."""
    prog = write(tmp_path / "p.fdc", PROGRAM)
    evs = write(
        tmp_path / "e.jsonl",
        jsonl([ev("x1", "T1", a=1), ev("y1", "T2", a=2)])
        + '{"id": "x2", "type": "T1", "attrs": {"a": "two"}}\n'
        + jsonl([ev("x3", "T1", a=3), ev("y3", "T2", a=3)]),
    )
    out = tmp_path / "out.jsonl"
    rc = main(["run", "--program", prog, "--events", evs, "--out", str(out), "--state-out", str(tmp_path / "st")])
    captured = capsys.readouterr()
    assert rc == 1
    assert out.read_text().splitlines() == [delivery("S", ["x1", "y1"])]
    err = captured.err.splitlines()
    assert err[0].startswith(f"{evs}:line 3, event 'x2', type T1, attribute 'a': expected an integer")
    assert "--on-error skip" in err[1]


def test_run_stops_at_invalid_json_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(tmp_path / "p.fdc", PROGRAM)
    evs = write(tmp_path / "e.jsonl", jsonl([ev("x1", "T1", a=1), ev("y1", "T2", a=2)]) + "{oops\n")
    assert main(["run", "--program", prog, "--events", evs]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [delivery("S", ["x1", "y1"])]
    assert f"{evs}:line 3, column 2: invalid JSON" in captured.err


def test_run_skip_bad_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--on-error skip: bad lines go to the rejects file, the rest is processed, summary on stderr."""
    prog = write(tmp_path / "p.fdc", PROGRAM)
    bad_type = '{"id": "z", "type": "T9", "attrs": {"a": 1}}'
    bad_attr = '{"id": "x2", "type": "T1", "attrs": {"a": 1, "b": 2}}'
    evs = write(
        tmp_path / "e.jsonl",
        json.dumps(ev("x1", "T1", a=1))
        + "\n"
        + bad_type
        + "\n"
        + "not json\n"
        + "\n"
        + json.dumps(ev("y1", "T2", a=1))
        + "\n"
        + bad_attr
        + "\n"
        + json.dumps(ev("x3", "T1", a=1))
        + "\n"
        + json.dumps(ev("y3", "T2", a=1))
        + "\n",
    )
    rc = main(["run", "--program", prog, "--events", evs, "--on-error", "skip", "--state-out", "-"])
    captured = capsys.readouterr()
    assert rc == 0
    assert captured.out.splitlines() == [
        delivery("S", ["x1", "y1"]),
        delivery("S", ["x3", "y3"]),
        json.dumps({"S": [{"T1": [], "T2": []}]}),
    ]
    rejects = [json.loads(line) for line in Path(evs + ".rejects.jsonl").read_text().splitlines()]
    assert [(r["line"], r["input"]) for r in rejects] == [(2, bad_type), (3, "not json"), (6, bad_attr)]
    assert "unknown event type 'T9'" in rejects[0]["error"]
    assert rejects[1]["error"].startswith("invalid JSON")
    assert rejects[2]["error"].startswith("unknown attribute")
    err = captured.err.splitlines()
    assert f"{evs}:line 2, event 'z': unknown event type 'T9' (declared types: T1, T2)" in err
    assert any(line.startswith(f"{evs}:line 3, column 1: invalid JSON") for line in err)
    assert any(line.startswith(f"{evs}:line 6, event 'x2', type T1, attribute 'b'") for line in err)
    assert err[-1] == f"faidecs: 4 events, 2 deliveries, 3 rejected (written to {evs}.rejects.jsonl)"


def test_run_skip_with_explicit_rejects_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(tmp_path / "p.fdc", PROGRAM)
    evs = write(tmp_path / "e.jsonl", "[1, 2]\n" + jsonl(EX1_EVENTS))
    rejects = tmp_path / "rej.jsonl"
    rc = main(["run", "--program", prog, "--events", evs, "--on-error", "skip", "--rejects", str(rejects)])
    captured = capsys.readouterr()
    assert rc == 0
    assert captured.out.splitlines() == [delivery("S", ["x1", "y1"])]
    assert [json.loads(line) for line in rejects.read_text().splitlines()] == [
        {"line": 1, "error": "an event must be a JSON object, not a list", "input": "[1, 2]"}
    ]
    assert captured.err.splitlines()[-1] == f"faidecs: 3 events, 1 deliveries, 1 rejected (written to {rejects})"


def test_run_skip_without_bad_lines_reports_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(tmp_path / "p.fdc", PROGRAM)
    evs = write(tmp_path / "e.jsonl", jsonl(EX1_EVENTS))
    assert main(["run", "--program", prog, "--events", evs, "--on-error", "skip"]) == 0
    assert "3 events, 1 deliveries, 0 rejected" in capsys.readouterr().err
    assert Path(evs + ".rejects.jsonl").read_text() == ""


def test_rejects_needs_skip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(tmp_path / "p.fdc", PROGRAM)
    evs = write(tmp_path / "e.jsonl", jsonl(EX1_EVENTS))
    assert main(["run", "--program", prog, "--events", evs, "--rejects", str(tmp_path / "r")]) == 1
    assert "--rejects needs --on-error skip" in capsys.readouterr().err


def test_default_ids_are_line_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without an id an event is named by its 1-based line number; blank lines count as lines."""
    prog = write(tmp_path / "p.fdc", PROGRAM)
    lines = [
        '{"type": "T1", "attrs": {"a": 1}}',
        "",
        '{"type": "T2", "attrs": {"a": 1}}',
        "   ",
        '{"type": "T1", "attrs": {"a": 1}}',
        '{"id": "named", "type": "T2", "attrs": {"a": 1}}',
    ]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines) + "\n"))
    assert main(["run", "--program", prog, "--events", "-"]) == 0
    assert capsys.readouterr().out.splitlines() == [delivery("S", ["1", "3"]), delivery("S", ["5", "named"])]


def test_duplicate_ids_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(tmp_path / "p.fdc", PROGRAM)
    evs = write(tmp_path / "e.jsonl", jsonl([ev("x", "T1", a=1), ev("x", "T2", a=1)]))
    assert main(["run", "--program", prog, "--events", evs]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{evs}:line 2, event 'x': duplicate event id" in captured.err


def test_duplicate_of_default_id_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An explicit id equal to an earlier default id (a line number) is a duplicate too."""
    prog = write(tmp_path / "p.fdc", PROGRAM)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        sys, "stdin", io.StringIO('{"type": "T1", "attrs": {"a": 1}}\n{"id": "1", "type": "T2", "attrs": {"a": 1}}\n')
    )
    assert main(["run", "--program", prog, "--events", "-", "--on-error", "skip"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "<stdin>:line 2, event '1': duplicate event id" in captured.err
    rejects = (tmp_path / "stdin.rejects.jsonl").read_text().splitlines()
    assert [json.loads(r)["line"] for r in rejects] == [2]


def test_with_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(tmp_path / "p.fdc", PROGRAM)
    evs = write(
        tmp_path / "e.jsonl",
        jsonl([ev("x1", "T1", a=1), {"id": "y1", "type": "T2", "attrs": {"a": 2}, "publisher": "p", "seq": 4}]),
    )
    assert main(["run", "--program", prog, "--events", evs, "--with-events"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line) == {
        "subscription": "S",
        "conjunction": 0,
        "relation": ["x1", "y1"],
        "events": [
            {"id": "x1", "type": "T1", "attrs": {"a": 1}},
            {"id": "y1", "type": "T2", "attrs": {"a": 2}, "publisher": "p", "seq": 4},
        ],
    }


def test_format_text(examples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        ["run", "--program", str(examples / "stock.fdc"), "--events", str(examples / "stock.jsonl"), "--format", "text"]
    )
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    # Each delivery says what it answers (the conjunction's condition) and, for a type with several
    # instances, which is the newest: the demo's four deliveries explain themselves (issue 23).
    assert lines[:4] == [
        "Jump (conjunction 0): StockQuote[0].symbol = StockQuote[1].symbol"
        " and StockQuote[0].value > StockQuote[1].value * 1.05",
        "  matching MR: StockQuote[0] is the newest StockQuote of the relation, StockQuote[1] the older one",
        "    StockQuote[0]        q3  symbol='ACME', value=10.5, time=120",
        "    StockQuote[1]        q0  symbol='ACME', value=9.8, time=90",
    ]
    assert lines[4].startswith("RisingAfterEarnings (conjunction 0): EarningsReport[0].symbol = StockQuote[0].symbol")
    assert lines[5] == (
        "  matching FR: StockQuote[0] is the oldest StockQuote of the relation, StockQuote[1] the next newer"
    )
    assert lines[6] == "    EarningsReport[0]    er1  symbol='ACME', eps=1.32, time=100"
    assert sum(1 for line in lines if not line.startswith(" ")) == 4


def test_format_text_of_one_instance_per_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No order line when each type has one instance; the second conjunction is named by its index."""
    prog = write(tmp_path / "p.fdc", "type A(v: int)\ntype B(v: int)\nsubscription S: A.v > 5 or A.v = B.v\n")
    evs = write(tmp_path / "e.jsonl", jsonl([ev("a1", "A", v=1), ev("b1", "B", v=1)]))
    assert main(["run", "--program", prog, "--events", evs, "--format", "text"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "S (conjunction 1): A[0].v = B[0].v",
        "    A[0]                 a1  v=1",
        "    B[0]                 b1  v=1",
    ]


def test_disjunction_conjunction_index_in_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The output names the conjunction by its index as written (duplicates removed)."""
    prog = write(tmp_path / "p.fdc", "type A(v: int)\ntype B(v: int)\nsubscription S: A.v > 5 or A.v > 5 or B\n")
    evs = write(tmp_path / "e.jsonl", jsonl([ev("a1", "A", v=1), ev("b1", "B", v=1), ev("a2", "A", v=9)]))
    assert main(["run", "--program", prog, "--events", evs]) == 0
    assert capsys.readouterr().out.splitlines() == [delivery("S", ["b1"], 1), delivery("S", ["a2"], 0)]


# --- the real executable ---------------------------------------------------------------------


def test_executable_run_stdin_to_stdout(examples: Path) -> None:
    proc = subprocess.run(
        [*faidecs_command(), "run", "--program", str(examples / "stock.fdc"), "--events", "-", "--out", "-"],
        input=(examples / "stock.jsonl").read_text(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == STOCK_OUT
    assert proc.stderr == ""


def test_executable_bad_line_exit_status(tmp_path: Path) -> None:
    prog = write(tmp_path / "p.fdc", PROGRAM)
    events = jsonl([ev("x1", "T1", a=1), ev("y1", "T2", a=1)]) + '{"id": "x2", "type": "T1", "attrs": {}}\n'
    proc = subprocess.run(
        [*faidecs_command(), "run", "--program", prog, "--events", "-", "--state-out", "-"],
        input=events,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [delivery("S", ["x1", "y1"])]
    assert "<stdin>:line 3, event 'x2', type T1, attribute 'a': missing attribute" in proc.stderr


def test_executable_check_stdin(tmp_path: Path) -> None:
    good = subprocess.run(
        [*faidecs_command(), "check", "-"],
        input="type T(a: int)\nsubscription S: 1 < T.a\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert good.returncode == 0, good.stderr
    assert "  conjunction 0: T[0].a > 1" in good.stdout.splitlines()
    bad = subprocess.run(
        [*faidecs_command(), "check", "-"],
        input="type T(a: int)\nsubscription S: T.a < T.a\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1
    assert bad.stdout == ""
    assert bad.stderr.splitlines()[:3] == [
        "-:2:17: error: pointless predicate: both sides are T[0].a",
        "    subscription S: T.a < T.a",
        "                    ^^^^^^^^^",
    ]


def test_progress_bar_on_stderr_for_large_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--progress auto` shows a bar only for inputs of PROGRESS_MIN_BYTES or more on a terminal;
    `always` forces it; the deliveries on stdout are the same either way."""
    import faidecs.cli.main as cli

    prog = write(tmp_path / "p.fdc", PROGRAM)
    evs = write(tmp_path / "e.jsonl", jsonl(EX1_EVENTS))
    assert main(["run", "--program", prog, "--events", evs, "--progress", "always"]) == 0
    forced = capsys.readouterr()
    assert "events" in forced.err and "100%" in forced.err
    assert forced.out == delivery("S", ["x1", "y1"]) + "\n"

    monkeypatch.setattr(cli, "PROGRESS_MIN_BYTES", 10)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["run", "--program", prog, "--events", evs]) == 0
    assert "100%" in capsys.readouterr().err

    monkeypatch.setattr(cli, "PROGRESS_MIN_BYTES", 10**9)
    assert main(["run", "--program", prog, "--events", evs]) == 0
    assert capsys.readouterr().err == ""


def test_run_with_the_reference_matcher_gives_the_same_output(
    examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "--program", str(examples / "stock.fdc"), "--events", str(examples / "stock.jsonl")]
    assert main([*args, "--matcher", "reference"]) == 0
    reference = capsys.readouterr().out
    assert main(args) == 0
    assert capsys.readouterr().out == reference
    assert reference.splitlines() == STOCK_OUT


def test_run_with_a_queue_bound_drops_the_oldest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--max-queue 1`: x1 is dropped when x2 arrives, so y1 pairs with x2."""
    prog = write(tmp_path / "p.fdc", PROGRAM)
    evs = write(tmp_path / "e.jsonl", jsonl([ev("x1", "T1", a=1), ev("x2", "T1", a=2), ev("y1", "T2", a=3)]))
    assert main(["run", "--program", prog, "--events", evs, "--max-queue", "1", "--state-out", "-"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == delivery("S", ["x2", "y1"])
    assert json.loads(lines[1]) == {"S": [{"T1": [], "T2": []}]}


def test_run_with_overflow_error_stops_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(tmp_path / "p.fdc", PROGRAM)
    evs = write(tmp_path / "e.jsonl", jsonl([ev("x1", "T1", a=1), ev("x2", "T1", a=2), ev("y1", "T2", a=3)]))
    rc = main(["run", "--program", prog, "--events", evs, "--max-queue", "1", "--overflow", "error"])
    captured = capsys.readouterr()
    assert rc == 1 and captured.out == ""
    assert "subscription S, conjunction 0: queue T1 is full (1 events) when event 'x2' arrives" in captured.err


def test_run_rejects_overflow_without_a_queue_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = write(tmp_path / "p.fdc", PROGRAM)
    evs = write(tmp_path / "e.jsonl", jsonl([ev("x1", "T1", a=1)]))
    assert main(["run", "--program", prog, "--events", evs, "--overflow", "error"]) == 1
    assert "--overflow needs --max-queue" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--max-queue", "0"], "expected a positive integer, got 0"),
        (["--max-age", "x"], "expected a positive integer, got 'x'"),
    ],
)
def test_run_rejects_bad_bound_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    prog = write(tmp_path / "p.fdc", PROGRAM)
    evs = write(tmp_path / "e.jsonl", jsonl([ev("x1", "T1", a=1)]))
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--program", prog, "--events", evs, *extra])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
