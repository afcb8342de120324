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


def notified_log(path: Path, ordering: str | None) -> Path:
    """Two events of one publisher on two topics, handed to p in the reverse of their publication
    order: Notification FIFO Order broken, as an ordering layer's topic paths may break it."""
    header: dict[str, object] = {"record": "header", "format": FORMAT, "types": "type T(a: int)\ntype U(a: int)\n"}
    if ordering is not None:
        header["ordering"] = ordering
    records: list[dict[str, object]] = [
        header,
        {"record": "process", "process": "p", "subscription": "subscription P (matching MR, disposal I): T and U"},
        {
            "record": "publish",
            "time": 1,
            "event": {"id": "t", "type": "T", "attrs": {"a": 1}, "publisher": "s", "seq": 0},
        },
        {
            "record": "publish",
            "time": 2,
            "event": {"id": "u", "type": "U", "attrs": {"a": 1}, "publisher": "s", "seq": 1},
        },
        {"record": "notify", "time": 3, "process": "p", "event": "u"},
        {"record": "notify", "time": 4, "process": "p", "event": "t"},
        {"record": "deliver", "time": 5, "process": "p", "conjunction": 0, "relation": ["t", "u"]},
        {"record": "final", "process": "p", "queues": [{"T": [], "U": []}]},
    ]
    path.write_text("".join(json.dumps(r) + os.linesep for r in records), encoding="utf-8")
    return path


def test_an_ordering_layer_run_is_held_to_what_its_layer_promises(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The atoms layer does not keep publication order across topics (docs/ordering.md): its run
    passes with Notification FIFO Order "not promised"; the same log without the layer fails."""
    assert main(["verify", str(notified_log(tmp_path / "atoms.jsonl", "atoms"))]) == 0
    out = capsys.readouterr().out
    assert verdicts(out)["Notification FIFO Order"] == "not promised (violated)"
    assert verdicts(out)["Total Notification Order"] == "holds"
    assert "the atoms ordering layer does not promise: Notification FIFO Order" in out
    assert main(["verify", str(notified_log(tmp_path / "one-order.jsonl", None))]) == 1
    assert verdicts(capsys.readouterr().out)["Notification FIFO Order"] == "VIOLATED"


def test_an_unknown_ordering_layer_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = notified_log(tmp_path / "odd.jsonl", "pigeons")
    assert main(["verify", str(log)]) != 0
    err = capsys.readouterr().err
    assert "ordering layer 'pigeons'" in err and "known layers: atoms, multistage" in err and "odd.jsonl" in err


def test_ordering_simulate_logs_name_their_layer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["ordering", "simulate", "--layer", "atoms", "--runs", "2", "--events", "40", "--log", str(tmp_path)]
    assert main(args) == 0
    capsys.readouterr()
    for log in sorted(tmp_path.glob("atoms-*.jsonl")):
        assert json.loads(log.read_text().splitlines()[0])["ordering"] == "atoms"
        assert main(["verify", str(log)]) == 0, capsys.readouterr().out
        capsys.readouterr()
