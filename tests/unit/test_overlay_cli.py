"""``faidecs overlay simulate`` and ``faidecs overlay topology``, in-process: reports, run logs that
``faidecs verify`` accepts, JSON, fault/join specs, bad input, and the merger graph as text,
Graphviz and PNG."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from faidecs.cli.main import main
from faidecs.overlay.core.placement import place
from faidecs.runs.runlog import RunLog

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

PROGRAM = """\
type A(x: int)
type B(x: int)
type C(x: int)
subscription S1 (matching FR, disposal PI): A and B and A.x < B.x
subscription S2 (matching FR, disposal PI): A and B
"""

COVERING = """\
type A(x: int)
type B(x: int)
type C(x: int)
subscription S1: A and B
subscription S2: A and B and C
subscription S3: (A and B) or (A and C)
"""

SERVERS = ["m1", "m2", "m3", "m4"]


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def simulate(tmp_path: Path, *extra: str, program: str = PROGRAM) -> list[str]:
    return [
        "overlay",
        "simulate",
        "--program",
        write(tmp_path / "prog.fdc", program),
        "--matcher",
        "reference",
        "--count",
        "30",
        *extra,
    ]


def events_file(tmp_path: Path, lines: list[str]) -> str:
    return write(tmp_path / "events.jsonl", "".join(line + "\n" for line in lines))


def ev(event_id: str, type_name: str, x: int, **more: Any) -> str:
    return json.dumps({"id": event_id, "type": type_name, "attrs": {"x": x}, **more})


# --- simulate -------------------------------------------------------------------------------------


def test_simulate_prints_the_report_and_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fault-free simulation exits 0 and its report ends with OK and names the mergers."""
    assert main(simulate(tmp_path, "--seed", "3")) == 0
    out = capsys.readouterr().out
    assert out.startswith("seed 3:")
    assert "⊔[A,B]" in out and "[A]" in out
    assert "stream audit: every subscriber stream fed exactly" in out
    assert "faults: none" in out
    assert out.rstrip().splitlines()[-1].startswith("OK")
    assert "publications committed 30" in out


def test_simulate_log_is_accepted_by_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--log writes a run log that `faidecs verify` reads and finds no property violated in."""
    log = tmp_path / "run.log"
    assert main(simulate(tmp_path, "--seed", "3", "--log", str(log))) == 0
    capsys.readouterr()
    with open(log, encoding="utf-8") as f:
        parsed = RunLog.read(f, str(log))
    assert set(parsed.processes) == {"S1", "S2"}
    assert len(parsed.published) == 30
    assert parsed.delivered, "the run delivers something, so verify has something to check"
    assert main(["verify", str(log)]) == 0
    table = capsys.readouterr().out
    assert "VIOLATED" not in table and "No Duplication" in table


def test_simulate_json_reports_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--json prints one JSON document with ok=true, the kept properties and the topology."""
    assert main(simulate(tmp_path, "--seed", "1", "--json")) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["violated"] == [] and report["gaps"] == []
    assert report["seed"] == 1
    assert report["publications"] == 30
    assert "No Duplication" in report["kept"] and "Covering Agreement" not in report["kept"]
    assert set(report["topology"]) == {"[A]", "[B]", "[C]", "⊔[A,B]"}
    assert report["topology"]["⊔[A,B]"]["replicas"] == list(place(("A", "B"), SERVERS, 3))


def test_simulate_leader_crash_changes_the_epoch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--crash of ⊔[A,B]'s first leader is reported and the role ends with a new leader, still OK."""
    leader = place(("A", "B"), SERVERS, 3)[0]
    assert main(simulate(tmp_path, "--seed", "2", "--json", "--crash", f"{leader}@60")) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    assert report["faults"] == [f"crash {leader} at 60 ms"]
    new_leader, epoch = report["topology"]["⊔[A,B]"]["leader"]
    assert epoch > 1 and new_leader != leader


def test_simulate_pause_partition_and_joiners(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--pause, --partition and --join (from a peer and fresh) all take effect and the run is OK."""
    args = simulate(
        tmp_path,
        "--seed",
        "4",
        "--json",
        "--pause",
        "m1@20+400",
        "--partition",
        "m2,m3@50+100",
        "--join",
        "S1@100",
        "--join",
        "S2@150:fresh",
        program=COVERING,
    )
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True, report["violated"] or report["gaps"]
    assert report["faults"] == ["pause m1 at 20 ms for 400 ms", "partition m2, m3 at 50 ms for 100 ms"]
    assert report["joined"]["S1_joiner1"]["peer"] == "S1"
    assert report["joined"]["S2_joiner2"]["peer"] is None
    # The times the command line gave, in its unit and from its origin (issue 23).
    assert report["joined"]["S1_joiner1"]["at_ms"] == 100
    assert report["joined"]["S2_joiner2"]["at_ms"] == 150
    assert set(report["topology"]) >= {"⊔[A,B]", "⊔[A,C]", "⊔[A,B,C]"}


def test_simulate_reports_every_time_in_the_command_lines_ms(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's `overlay simulate … --crash m1@120 --join Desk1@150` reported the joiner "at time
    9" (a run log's record clock) and "publications from 353 ms" (from the start of the run), while
    the crash and the join count from when the subscribers had started. Every time is now in ms on
    that clock, and the crash and the join fall while the publications are sent."""
    args = ["overlay", "simulate", "--program", str(EXAMPLES / "overlay.fdc"), "--seed", "7"]
    args += ["--crash", "m1@120", "--join", "Desk1@150", "--leave", "Desk2@300"]
    assert main(args) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    first, last, end = map(
        int,
        re.fullmatch(r"seed 7: 4 servers; publications sent from (\d+) to (\d+) ms, end (\d+) ms", lines[0]).groups(),
    )  # type: ignore[union-attr]
    assert first < 120 < 150 < 300 < last < end
    assert "crash m1 at 120 ms" in out
    assert "joined: Desk1_joiner1 at 150 ms (from Desk1)" in lines
    assert "left: Desk2 at 300 ms" in lines
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["publications_sent_ms"] == [first, last] and report["end_ms"] == end
    assert report["joined"]["Desk1_joiner1"]["at_ms"] == 150
    assert report["left"]["Desk2"]["at_ms"] == 300
    assert report["time_origin_ms"] > 0  # when the subscribers had started, into the run


def test_simulate_with_an_events_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--events replays the given events (times and publishers) and delivers the matching relation."""
    path = events_file(
        tmp_path,
        [ev("a1", "A", 1, time=0), ev("b1", "B", 5, time=10, publisher="p2"), "", ev("c1", "C", 0)],
    )
    log = tmp_path / "run.log"
    assert main(simulate(tmp_path, "--events", path, "--log", str(log), "--json")) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["publications"] == 3
    with open(log, encoding="utf-8") as f:
        parsed = RunLog.read(f)
    assert {p.id: p.publisher for p in parsed.published} == {"a1": "pub1", "b1": "p2", "c1": "pub1"}
    assert {(d.process, d.relation) for d in parsed.delivered} == {("S1", ("a1", "b1")), ("S2", ("a1", "b1"))}


def test_simulate_random_faults_are_seeded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--random-faults draws a schedule from the seed: the same seed prints the same report."""
    outputs = []
    for _ in range(2):
        assert main(simulate(tmp_path, "--seed", "7", "--random-faults", "--json")) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    assert outputs[0] == outputs[1]
    assert outputs[0]["faults"], "seed 7 draws at least one fault"


# --- bad specs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "words"),
    [
        (["--crash", "m9@1"], ["m9", "not a server"]),
        (["--pause", "m1@1"], ["--pause", "'m1@1'", "WHO@TIME+DURATION"]),
        (["--crash", "m1@1+5"], ["--crash", "WHO@TIME"]),
        (["--partition", "m1,m7@5+10"], ["m7", "not a server"]),
        (["--join", "NOPE@5"], ["NOPE", "not a subscription"]),
        (["--leave", "S9@5"], ["S9", "not a subscription"]),
        (["--servers", "2"], ["needs 3 replicas"]),
    ],
)
def test_simulate_rejects_bad_specs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str], words: list[str]
) -> None:
    """A fault, join, leave or membership that cannot be run exits 1 with a message naming it."""
    assert main(simulate(tmp_path, *option)) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("faidecs: ")
    for word in words:
        assert word in captured.err


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        ([ev("a1", "A", 1), "not json"], [":2:", "invalid JSON"]),
        ([ev("a1", "A", 1), "[1, 2]"], [":2:", "JSON object"]),
        ([ev("a1", "A", 1, time=-5)], [":1:", "'time'"]),
        ([ev("a1", "A", 1, publisher="")], [":1:", "'publisher'"]),
        ([ev("a1", "A", 1), ev("q1", "Q", 1)], ["q1", "'Q'"]),
        ([json.dumps({"id": "a1", "type": "A", "attrs": {"x": "one"}})], ["a1"]),
    ],
)
def test_simulate_rejects_a_bad_events_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], words: list[str]
) -> None:
    """An events file with a bad line exits 1 with a message naming the line or the event."""
    path = events_file(tmp_path, lines)
    assert main(simulate(tmp_path, "--events", path)) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    for word in words:
        assert word in captured.err, captured.err


def test_simulate_rejects_a_program_without_subscriptions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A program with only types has nothing to simulate: exit 1 saying so."""
    assert main(simulate(tmp_path, program="type A(x: int)\n")) == 1
    assert "no subscription" in capsys.readouterr().err


# --- bugs found while writing these tests (each test fails until fixed) ------------------------------


def test_simulate_missing_program_file_is_an_error_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A program or events file that does not exist exits 1 with a message (not a traceback)."""
    missing = str(tmp_path / "nope.fdc")
    assert main(["overlay", "simulate", "--program", missing, "--matcher", "reference"]) == 1
    assert "nope.fdc" in capsys.readouterr().err
    program = write(tmp_path / "prog.fdc", PROGRAM)
    missing_events = str(tmp_path / "nope.jsonl")
    assert (
        main(["overlay", "simulate", "--program", program, "--events", missing_events, "--matcher", "reference"]) == 1
    )
    assert "nope.jsonl" in capsys.readouterr().err
    assert main(["overlay", "topology", "--program", missing]) == 1
    assert "nope.fdc" in capsys.readouterr().err


def test_simulate_rejects_duplicate_event_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Duplicate ids in --events are bad input (as for `faidecs run`), not a protocol violation."""
    path = events_file(tmp_path, [ev("e1", "A", 1), ev("e1", "B", 2), ev("e2", "B", 3)])
    assert main(simulate(tmp_path, "--events", path)) == 1
    captured = capsys.readouterr()
    verdict = captured.out.rstrip().splitlines()[-1] if captured.out.strip() else ""
    assert "duplicate" in captured.err.lower(), (
        f"duplicate id e1 not rejected; the report blames the overlay: {verdict!r}"
    )


# --- topology ---------------------------------------------------------------------------------------


def test_topology_prints_every_merger(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`overlay topology` prints one line per merger with its replicas, inputs and subscribers."""
    program = write(tmp_path / "prog.fdc", COVERING)
    assert main(["overlay", "topology", "--program", program]) == 0
    lines = capsys.readouterr().out.splitlines()
    by_name = {line.split()[0]: line for line in lines}
    assert set(by_name) == {"[A]", "[B]", "[C]", "⊔[A,B]", "⊔[A,C]", "⊔[A,B,C]"}
    assert "reads publishers" in by_name["[A]"]
    assert "reads ⊔[A,B] + [C]" in by_name["⊔[A,B,C]"]
    assert "subscribers S1, S3" in by_name["⊔[A,B]"]
    assert "subscribers S3" in by_name["⊔[A,C]"]
    assert "replicas " + ", ".join(place(("A", "B", "C"), SERVERS, 3)) in by_name["⊔[A,B,C]"]


def test_topology_dot_is_a_digraph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--dot prints a Graphviz digraph with left (solid), right (dashed) and subscriber (dotted) edges."""
    program = write(tmp_path / "prog.fdc", COVERING)
    assert main(["overlay", "topology", "--program", program, "--dot", "--servers", "5", "--replicas", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digraph faidecs {") and out.rstrip().endswith("}")
    assert '"⊔[A,B]" -> "⊔[A,B,C]" [style=solid];' in out
    assert '"[C]" -> "⊔[A,B,C]" [style=dashed];' in out
    assert '"⊔[A,C]" -> "S3" [style=dotted];' in out
    assert " ".join(place(("A", "C"), [f"m{k}" for k in range(1, 6)], 2)) in out


def test_topology_png_writes_an_image(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--png draws the merger graph to a PNG file."""
    pytest.importorskip("matplotlib")
    program = write(tmp_path / "prog.fdc", COVERING)
    png = tmp_path / "graph.png"
    assert main(["overlay", "topology", "--program", program, "--png", str(png)]) == 0
    assert "⊔[A,B]" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 1000


def test_topology_rejects_more_replicas_than_servers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--replicas larger than --servers exits 1 naming both."""
    program = write(tmp_path / "prog.fdc", COVERING)
    assert main(["overlay", "topology", "--program", program, "--servers", "2"]) == 1
    err = capsys.readouterr().err
    assert "--replicas 3" in err and "--servers" in err
