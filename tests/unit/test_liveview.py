"""The live view's state, built from hand-made run folders: the graph from the deployment, rates
from successive status files, the leader of each role, and every way a process or a file can be
wrong, each shown as such rather than raised."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from faidecs.overlay.runtime.deployment import load_deployment
from faidecs.overlay.runtime.liveview import LiveView, check_status, role_from_name
from faidecs.overlay.runtime.liveview_server import LiveViewServer

PROGRAM = """\
type A(x: int)
type B(x: int)
type C(x: int)
subscription Pairs: A and B
subscription Triples: A and B and C
"""

DEPLOYMENT = """\
name = "hand"
program = "program.fdc"
replicas = 2
insecure = true

[servers]
m1 = "tcp://127.0.0.1:7001"
m2 = "tcp://127.0.0.1:7002"
m3 = "tcp://127.0.0.1:7003"

[subscribers.s1]
address = "tcp://127.0.0.1:7011"
subscription = "Pairs"

[subscribers.s2]
address = "tcp://127.0.0.1:7012"
subscription = "Triples"

[publishers.p1]
address = "tcp://127.0.0.1:7019"
events = "events.jsonl"
"""

PIDS = {"m1": 11, "m2": 12, "m3": 13, "s1": 21, "s2": 22, "p1": 31}


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class RunDir:
    """A run folder as `overlay up` leaves it, written by hand: run.json, the deployment, status files."""

    def __init__(self, tmp: Path, *, pids: dict[str, int] | None = None) -> None:
        (tmp / "program.fdc").write_text(PROGRAM)
        (tmp / "deployment.toml").write_text(DEPLOYMENT)
        self.deployment = load_deployment(tmp / "deployment.toml")
        self.run = tmp / "run"
        (self.run / "status").mkdir(parents=True)
        (self.run / "run.json").write_text(
            json.dumps({"deployment": str(tmp / "deployment.toml"), "pids": PIDS if pids is None else pids})
        )

    def placement(self) -> dict[str, list[str]]:
        from faidecs.merging.roles import role_name

        return {role_name(r): list(self.deployment.placement(r)) for r in self.deployment.roles}

    def server(self, name: str, time: float, commit: int, *, epoch: int = 1, leaders: dict[str, str] | None = None,
               events: bool = True, **extra: Any) -> None:  # fmt: skip
        """Its replicas' status at commit position ``commit``, half of it events (``events``: with
        the count of committed events, as a status file has it since that count came)."""
        mergers = [
            {
                "role": role,
                "leader": (leaders or {}).get(role, replicas[0]),
                "epoch": epoch,
                "status": "normal",
                "commit": commit,
                "buffered": 0,
                **({"events_committed": commit // 2} if events else {}),
            }
            for role, replicas in self.placement().items()
            if name in replicas
        ]
        self.write(name, {"process": name, "time": time, "mergers": mergers, **extra})

    def write(self, name: str, status: dict[str, Any]) -> None:
        (self.run / "status" / f"{name}.json").write_text(json.dumps(status))


def view(run: RunDir, clock: Clock, alive: set[int] | None = None) -> LiveView:
    live = set(PIDS.values()) if alive is None else alive
    return LiveView(run.run, clock=clock, alive=lambda pid: pid in live)


def replica(state: dict[str, Any], role: str, process: str) -> dict[str, Any]:
    r = next(r for r in state["roles"] if r["role"] == role)
    return dict(next(x for x in r["replicas"] if x["process"] == process))


def test_the_graph_is_the_deployments(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    state = view(run, Clock(1000.0)).sample()
    assert state["deployment"] == "hand"
    assert [r["role"] for r in state["roles"]] == ["[A]", "[B]", "[C]", "⊔[A,B]", "⊔[A,B,C]"]
    by_role = {r["role"]: r for r in state["roles"]}
    assert by_role["⊔[A,B]"]["inputs"] == ["[A]", "[B]"]
    assert by_role["⊔[A,B,C]"]["inputs"] == ["⊔[A,B]", "[C]"]
    assert by_role["[A]"]["root"] and by_role["[A]"]["inputs"] == []
    for role, replicas in run.placement().items():
        assert [x["process"] for x in by_role[role]["replicas"]] == replicas
        assert all(x["state"] == "missing" for x in by_role[role]["replicas"])
    assert {s["name"]: s["reads"] for s in state["subscribers"]} == {"s1": ["⊔[A,B]"], "s2": ["⊔[A,B,C]"]}
    assert [p["name"] for p in state["publishers"]] == ["p1"]
    assert state["problems"] == [f"{run.run / 'status'}: no status files yet"]
    run.write("x9", {"time": 1000.0})
    assert view(run, Clock(1000.0)).sample()["problems"] == ["x9: has a status file but is not in the deployment"]


def test_rates_come_from_successive_status_files(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    clock = Clock(1000.0)
    live = view(run, clock)
    for name in ("m1", "m2", "m3"):
        run.server(name, 1000.0, 10)
    run.write("s1", {"time": 1000.0, "delivered": 4, "started": True})
    run.write("p1", {"time": 1000.0, "published": 100, "done": False})
    first = live.sample()
    assert replica(first, "[A]", run.placement()["[A]"][0])["rate"] is None  # one sample: no rate yet
    clock.now = 1002.0
    for name in ("m1", "m2", "m3"):
        run.server(name, 1002.0, 110)
    run.write("s1", {"time": 1002.0, "delivered": 10, "started": True})
    run.write("p1", {"time": 1002.0, "published": 300, "done": False})
    state = live.sample()
    for role in state["roles"]:
        assert [x["rate"] for x in role["replicas"]] == [25.0, 25.0], role["role"]  # events: 5 -> 55 in 2 s
        assert [(x["events"], x["commit"]) for x in role["replicas"]] == [(55, 110), (55, 110)]
    s1 = next(s for s in state["subscribers"] if s["name"] == "s1")
    assert (s1["delivered"], s1["rate"], s1["state"]) == (10, 3.0, "up")
    assert (state["publishers"][0]["published"], state["publishers"][0]["rate"]) == (300, 100.0)
    # A sample of a file not rewritten since keeps the rate; a restarted process starts over.
    clock.now = 1002.4
    assert replica(live.sample(), "[A]", run.placement()["[A]"][0])["rate"] == 25.0
    first_a = run.placement()["[A]"][0]
    run.server(first_a, 1002.5, 3)
    assert replica(live.sample(), "[A]", first_a)["rate"] is None


def test_without_an_events_count_the_rate_is_of_commit_positions(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    clock = Clock(1000.0)
    live = view(run, clock)
    run.server("m1", 1000.0, 10, events=False)
    live.sample()
    clock.now = 1002.0
    run.server("m1", 1002.0, 110, events=False)
    state = live.sample()
    assert {x["rate"] for r in state["roles"] for x in r["replicas"] if x["process"] == "m1"} == {50.0}
    assert {x["events"] for r in state["roles"] for x in r["replicas"]} == {None}


def test_the_leader_is_the_one_of_the_highest_epoch_a_live_replica_reports(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    a, b = run.placement()["[A]"]
    run.server(a, 1000.0, 5, epoch=3, leaders={"[A]": b})
    run.server(b, 1000.0, 5, epoch=2, leaders={"[A]": a})
    state = view(run, Clock(1000.5)).sample()
    role = next(r for r in state["roles"] if r["role"] == "[A]")
    assert role["leader"] == {"process": b, "epoch": 3}
    assert [x["is_leader"] for x in role["replicas"]] == [False, True]
    # What a dead replica believed does not count while a live one reports a leader.
    state = view(run, Clock(1000.5), alive={PIDS[b]}).sample()
    role = next(r for r in state["roles"] if r["role"] == "[A]")
    assert role["leader"] == {"process": a, "epoch": 2}
    assert replica(state, "[A]", a)["state"] == "dead"


def test_process_states(tmp_path: Path) -> None:
    run = RunDir(tmp_path, pids={"m1": 11, "m2": 12, "s1": 21, "s2": 22})
    run.server("m1", 1000.0, 7)  # up
    run.server("m2", 990.0, 7)  # no rewrite for 10 s
    run.server("m3", 999.0, 7, stopped=True)  # wrote its final status
    run.write("s1", {"time": 1000.0, "delivered": 1, "started": True})
    (run.run / "status" / "s2.json").write_text('{"time": 1000.0, "deliv')  # never whole
    state = view(run, Clock(1000.0), alive={11, 12}).sample()
    states = {x["process"]: x["state"] for r in state["roles"] for x in r["replicas"]}
    assert states == {"m1": "up", "m2": "stale", "m3": "stopped"}
    clients = {c["name"]: c["state"] for c in state["subscribers"] + state["publishers"]}
    assert clients == {"s1": "dead", "s2": "unreadable", "p1": "missing"}  # s1's pid 21 is gone
    assert any(p.startswith(f"{run.run / 'status' / 's2.json'}: cannot read it") for p in state["problems"])
    assert all(x["rate"] is None for r in state["roles"] for x in r["replicas"] if x["process"] != "m1")


def test_a_file_caught_half_written_keeps_the_last_status(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.write("s1", {"time": 1000.0, "delivered": 8, "started": True})
    live = view(run, Clock(1000.0))
    live.sample()
    (run.run / "status" / "s1.json").write_text('{"time": 10')
    state = live.sample()
    s1 = next(s for s in state["subscribers"] if s["name"] == "s1")
    assert (s1["delivered"], s1["state"]) == (8, "up")
    assert s1["error"] and "s1.json: cannot read it" in s1["error"]
    assert any(p.endswith("showing its last status") for p in state["problems"])


@pytest.mark.parametrize(
    ("status", "why"),
    [
        ([1, 2], "not a JSON object"),
        ({"delivered": 3}, "no finite numeric 'time'"),
        ({"time": float("nan")}, "no finite numeric 'time'"),
        ({"time": 1.0, "mergers": {}}, "'mergers' is not a list"),
        ({"time": 1.0, "mergers": [{"commit": 1}]}, "mergers[0] has no 'role'"),
        ({"time": 1.0, "mergers": [{"role": "[A]", "commit": "9", "epoch": 1}]}, "must be integers"),
        ({"time": 1.0, "mergers": [{"role": "[A]", "commit": 9, "epoch": 1, "leader": 4}]}, "'leader' must be"),
        (
            {"time": 1.0, "mergers": [{"role": "[A]", "commit": 9, "epoch": 1, "events_committed": 1.5}]},
            "must be an int",
        ),
        ({"time": 1.0, "delivered": True}, "'delivered' is not an integer"),
    ],
)
def test_what_is_not_a_status_says_why(tmp_path: Path, status: Any, why: str) -> None:
    problem = check_status(status)
    assert problem is not None and why in problem
    run = RunDir(tmp_path)
    run.write("s1", status)
    state = view(run, Clock(1000.0)).sample()
    s1 = next(s for s in state["subscribers"] if s["name"] == "s1")
    assert s1["state"] == "unreadable" and why in s1["error"]


def test_a_folder_without_anything_is_shown_empty_with_its_problems(tmp_path: Path) -> None:
    state = LiveView(tmp_path / "nowhere").sample()
    assert (state["roles"], state["subscribers"], state["publishers"]) == ([], [], [])
    assert state["problems"] == [
        f"{tmp_path / 'nowhere' / 'run.json'}: missing (not a folder of faidecs overlay up?): no pids, no deployment",
        f"{tmp_path / 'nowhere' / 'status'}: no such folder (no process has written a status)",
    ]


def test_without_a_deployment_the_graph_comes_from_the_status_files(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    (run.run / "run.json").write_text(json.dumps({"deployment": str(tmp_path / "gone.toml"), "pids": PIDS}))
    for name in ("m1", "m2", "m3"):
        run.server(name, 1000.0, 4)
    run.write("m9", {"time": 1000.0, "mergers": [{"role": "[A", "commit": 1, "epoch": 1, "leader": None}]})
    run.write("s1", {"time": 1000.0, "delivered": 2})
    state = view(run, Clock(1000.0)).sample()
    assert state["deployment"] is None
    assert any(p.startswith(f"deployment {tmp_path / 'gone.toml'}: ") for p in state["problems"])
    assert "m9: merger role '[A' is not a role's name" in state["problems"]
    named = {r["role"]: [x["process"] for x in r["replicas"]] for r in state["roles"]}
    assert named == {role: sorted(ps) for role, ps in run.placement().items()}
    by_role = {r["role"]: r for r in state["roles"]}
    assert by_role["⊔[A,B]"]["inputs"] == ["[A]", "[B]"]
    assert by_role["⊔[A,B,C]"]["inputs"] == ["⊔[A,B]", "[C]"]
    assert "m9: has a status file but is not in the deployment" not in state["problems"]  # no deployment to be in
    assert [s["name"] for s in state["subscribers"]] == ["s1"]


def test_role_names_read_back() -> None:
    assert role_from_name("[A]") == ("A",)
    assert role_from_name("⊔[A,B,C]") == ("A", "B", "C")
    for bad in ("A", "[A", "⊔[A]", "[A,B]", "⊔[]", ""):
        assert role_from_name(bad) is None, bad


def test_the_server_serves_the_page_and_the_state(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.write("s1", {"time": 1000.0, "delivered": 5, "started": True})
    server = LiveViewServer(run.run, port=0).start()
    try:
        with urllib.request.urlopen(server.url) as answer:
            page = answer.read().decode()
            assert answer.headers["Content-Type"].startswith("text/html")
        assert (
            "<svg" in page
            and 'fetch("/state"' in page
            and "http://"
            not in page.replace('xmlns="http://www.w3.org/2000/svg"', "").replace('"http://www.w3.org/2000/svg"', "")
        )  # nothing fetched from elsewhere
        with urllib.request.urlopen(server.url + "state") as answer:
            state = json.loads(answer.read())
        assert state["format"] == "faidecs.liveview/1" and state["deployment"] == "hand"
        assert next(s for s in state["subscribers"] if s["name"] == "s1")["delivered"] == 5
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(server.url + "nothing")
        assert missing.value.code == 404

        def broken() -> dict[str, Any]:
            raise RuntimeError("a disk error")

        server.view.sample = broken  # type: ignore[method-assign]
        server._sample()
        with urllib.request.urlopen(server.url + "state") as answer:
            state = json.loads(answer.read())
        assert state["problems"] == ["reading the run folder failed: RuntimeError: a disk error"]
        with urllib.request.urlopen(server.url) as answer:
            assert answer.status == 200  # still serving
    finally:
        server.stop()


def test_dashboard_of_a_folder_that_is_not_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from faidecs.cli.main import main

    assert main(["dashboard", str(tmp_path / "nope"), "--port", "0"]) == 1
    assert f"faidecs: {tmp_path / 'nope'}: no such folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["dashboard", str(tmp_path), "--port", "70000"])


def test_the_view_needs_no_extra(tmp_path: Path) -> None:
    """It only reads files: a machine without the overlay extra can watch a run folder."""
    run = RunDir(tmp_path)
    run.write("s1", {"time": 1000.0, "delivered": 5, "started": True})
    code = (
        "import sys, json\n"
        "for name in ('zmq', 'kazoo', 'cryptography', 'pysyncobj'): sys.modules[name] = None\n"
        "from pathlib import Path\n"
        "from faidecs.overlay.runtime.liveview_server import LiveViewServer\n"
        "server = LiveViewServer(Path(sys.argv[1]))\n"
        "print(json.loads(server.state())['subscribers'][0]['delivered'])\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code, str(run.run)],
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (0, "5\n"), done.stderr
