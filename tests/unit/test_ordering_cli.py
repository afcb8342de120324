"""``faidecs ordering simulate``: seeded runs, their logs, and its exit status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faidecs.cli.main import main


def test_simulate_writes_logs_that_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["ordering", "simulate", "--layer", "atoms", "--runs", "3", "--events", "40", "--log", str(tmp_path)]) == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["layer"] == "atoms" and summary["runs"] == 3 and summary["stalled runs"] == 0
    assert summary["notifications"] > 0
    logs = sorted(p.name for p in tmp_path.iterdir())
    assert logs == ["atoms-0.jsonl", "atoms-1.jsonl", "atoms-2.jsonl"]
    main(["verify", str(tmp_path / "atoms-1.jsonl")])
    table = capsys.readouterr().out
    assert "Total Notification Order  holds" in table and "Notification Validity     holds" in table


def test_literal_rules_stall_and_fail(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ordering", "simulate", "--layer", "multistage", "--profile", "literal", "--runs", "3"]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["stalled runs"] > 0


def test_unknown_profile_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ordering", "simulate", "--layer", "multistage", "--profile", "skip"]) == 1
    assert "fixed and literal, not 'skip'" in capsys.readouterr().err
