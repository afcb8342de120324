"""``faidecs verify`` judges what each process's options promise; ``--all`` judges everything.

Why (issue 23): the README's ``faidecs run … --log run.jsonl`` then ``faidecs verify run.jsonl``
exited 1 because ``Jump`` (MR, I) does not keep Type FIFO Order, which its options never promised.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from faidecs.cli.main import main
from faidecs.runs.runlog_records import FORMAT

TYPES = "type T(a: int)\n"


def run_readme_commands(examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The README's ``faidecs run --program examples/stock.fdc --events examples/stock.jsonl --log run.jsonl``."""
    log = tmp_path / "run.jsonl"
    args = ["run", "--program", str(examples / "stock.fdc"), "--events", str(examples / "stock.jsonl")]
    assert main([*args, "--log", str(log)]) == 0
    capsys.readouterr()
    return log


def verdicts(out: str) -> dict[str, str]:
    lines = out.splitlines()
    assert lines[0].split() == ["property", "result"]
    width = lines[0].index("result")
    return {line[:width].strip(): line[width:].strip() for line in lines[1:] if line[:width].strip() and line[width:]}


def test_the_readme_run_verifies(examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = run_readme_commands(examples, tmp_path, capsys)
    assert main(["verify", str(log)]) == 0
    out = capsys.readouterr().out
    found = verdicts(out)
    # RisingAfterEarnings (FR, PI) promises Type FIFO Order and keeps it; Jump (MR, I) breaks it
    # without having promised it.
    assert found["Type FIFO Order"] == "holds where promised (violated by Jump, whose options do not promise it)"
    assert found["Covering Agreement"] == "not promised (holds)"
    assert found["No Duplication"] == "holds"
    assert "VIOLATED" not in out
    assert "q2 was published before q3 by publisher, but Jump (conjunction 0) delivered q3 first (not promised)" in out
    assert (
        "Jump's options do not promise: Event Validity, Covering Agreement, Type Total Order, "
        "Conjunction Total Order, Type FIFO Order, Type Causal Order"
    ) in out


def test_all_reproduces_the_old_exit_status(examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = run_readme_commands(examples, tmp_path, capsys)
    assert main(["verify", "--all", str(log)]) == 1
    found = verdicts(capsys.readouterr().out)
    assert [name for name, verdict in found.items() if verdict == "VIOLATED"] == [
        "Type FIFO Order",
        "Type Causal Order",
    ]


def test_the_readme_run_verifies_in_json(examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = run_readme_commands(examples, tmp_path, capsys)
    assert main(["verify", "--json", str(log)]) == 0
    data = json.loads(capsys.readouterr().out)
    fifo = data["Type FIFO Order"]
    assert fifo["holds"] is False and fifo["failed"] is False
    assert fifo["promised_by"] == ["RisingAfterEarnings"]
    assert data["Covering Agreement"]["promised_by"] == []
    assert not any(result["failed"] for result in data.values())


def write_log(path: Path, options: str, deliveries: list[list[str]]) -> Path:
    """One process ``p`` with ``options``, events x and y of type T, and the given deliveries."""
    records: list[dict[str, object]] = [
        {"record": "header", "format": FORMAT, "types": TYPES},
        {"record": "process", "process": "p", "subscription": f"subscription P{options}: T"},
    ]
    for time, name in enumerate(["x", "y"], start=1):
        event = {"id": name, "type": "T", "attrs": {"a": 1}, "publisher": "src", "seq": time - 1}
        records.append({"record": "publish", "time": time, "event": event})
    for time, relation in enumerate(deliveries, start=10):
        records.append({"record": "deliver", "time": time, "process": "p", "conjunction": 0, "relation": relation})
    records.append({"record": "final", "process": "p", "queues": [{"T": []}]})
    path.write_text("".join(json.dumps(r) + os.linesep for r in records), encoding="utf-8")
    return path


def test_a_broken_promise_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """FR+PI promises Type FIFO Order: y delivered before x (both of publisher src) is a failure."""
    log = write_log(tmp_path / "fifo.jsonl", "", [["y"], ["x"]])
    assert main(["verify", str(log)]) == 1
    found = verdicts(capsys.readouterr().out)
    assert found["Type FIFO Order"] == "VIOLATED"
    assert found["Type Causal Order"] == "VIOLATED"


def test_the_same_break_is_not_promised_under_mr_i(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = write_log(tmp_path / "fifo.jsonl", " (matching MR, disposal I)", [["y"], ["x"]])
    assert main(["verify", str(log)]) == 0
    found = verdicts(capsys.readouterr().out)
    assert found["Type FIFO Order"] == "not promised (violated)"
    assert main(["verify", "--all", str(log)]) == 1
    capsys.readouterr()


def test_a_promise_kept_by_every_option_fails_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No Creation is promised by every option: a delivered id never published is a failure even
    under MR+I."""
    log = write_log(tmp_path / "made-up.jsonl", " (matching MR, disposal I)", [["x"], ["z"]])
    assert main(["verify", str(log)]) == 1
    assert verdicts(capsys.readouterr().out)["No Creation"] == "VIOLATED"
