"""Durability on OS processes (issue 22): SIGKILL every replica of a role, or every server, in the
middle of a run, start them again from their disks, and judge the merged run log: every property
the options keep holds (so no publication is lost, Event Validity), nothing is published or
delivered twice, and the subscribers of one subscription agree. Before this issue a role whose
replicas all restarted could not recover its order; now its replicas recover their logs and
their votes, and the publisher resends what no root acknowledged."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from overlay_harness import SESSION_MS, settled, verified, write_deployment

from faidecs.overlay.runtime.launcher import LocalDeployment

pytestmark = [pytest.mark.slow, pytest.mark.processes]


def _published(run: LocalDeployment, n: int, timeout: float = 30) -> None:
    run.wait_for(lambda s: s.get("p1", {}).get("published", 0) >= n, timeout, f"{n} publications")


def drained(run: LocalDeployment, timeout: float = 30) -> None:
    """The publisher is done and every publication acknowledged (one whose acknowledgement a kill
    lost is sent again after a while), then deliveries are quiet."""
    run.wait_for(lambda s: s.get("p1", {}).get("done") and s["p1"].get("unacked") == 0, timeout, "the outbox to drain")
    settled(run, quiet=1.5, timeout=60)


def _kill_and_restart(run: LocalDeployment, victims: list[str]) -> None:
    for name in victims:
        run.signal(name, signal.SIGKILL)
    for name in victims:
        run.procs[name].wait(10)
    time.sleep(SESSION_MS / 1000 + 0.3)  # their sessions go; the publisher's sends to them are lost
    for name in victims:
        run.start_process(name)
    run.wait_for(lambda s: all(s.get(n, {}).get("mergers") for n in victims), 30, "the servers to start again")


@pytest.mark.parametrize("what", ["servers"])  # "role": every replica of [A] only (a subset)
def test_sigkill_of_every_replica_then_restart_loses_nothing(tmp_path: Path, zookeeper: str, what: str) -> None:
    events = 400
    path = write_deployment(tmp_path, events, rate=200, seed=22)
    run = LocalDeployment(path, tmp_path / "run", zookeeper=zookeeper)
    try:
        run.start()
        _published(run, 120)
        d = run.deployment
        victims = list(d.placement(("A",))) if what == "role" else list(d.servers)
        _kill_and_restart(run, victims)
        drained(run)
        recovered = [
            m["log"] for n in victims for m in run.statuses()[n]["mergers"] if m["role"] == "[A]" and m["log"] > 0
        ]
    finally:
        run.stop()
    assert recovered, "no restarted replica of [A] holds a log"
    by = verified(run, events)
    assert by["s1"] == by["s2"] and by["s1"], "subscribers of one subscription disagree"
    assert by["s3"], "the three-type subscription delivered nothing"
    publisher = run.statuses()["p1"]
    assert publisher["unacked"] == 0, f"publications never acknowledged: {publisher['unacked']}"
    print(
        f"{what}: restarted replicas of [A] recovered logs of {recovered}; the publisher resent {publisher['resent']}"
    )


def kill_everything(run: LocalDeployment) -> None:
    """SIGKILL every process of the run and its ZooKeeper, as a power cut would stop them (the
    page cache survives here: `group` keeps what it acknowledged, docs/deploy.md)."""
    for proc in run.procs.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
    for proc in run.procs.values():
        proc.wait(10)
    assert run.server is not None and run.server.process is not None
    run.server.process.send_signal(signal.SIGKILL)
    run.server.process.wait(10)


def killed_and_restarted(
    path: Path, run_dir: Path, kills: list[int], timeout: float = 90
) -> tuple[LocalDeployment, dict[str, dict[str, Any]]]:
    """Run the deployment on ``run_dir`` with its own ZooKeeper; at each count of ``kills``
    publications SIGKILL everything and start it again on the same folder; the last run is left
    to drain and stopped. Returns it (for its merged run logs) and its last statuses."""
    for at in kills:
        run = LocalDeployment(path, run_dir)
        try:
            run.start()
            _published(run, at, timeout=60)
            kill_everything(run)
        finally:
            run.stop()
    run = LocalDeployment(path, run_dir)
    try:
        run.start()
        drained(run, timeout=timeout)
        statuses = run.statuses()
    finally:
        run.stop()
    return run, statuses


def test_sigkill_of_the_whole_deployment_then_overlay_up_again(tmp_path: Path) -> None:
    """Every process and ZooKeeper killed at once mid-run; the deployment started again on the
    same run folder (what `faidecs overlay up` does) goes on from its disks: the merged run logs
    of both runs verify, nothing is published or delivered twice, the subscribers of one
    subscription agree, and the restarted processes are new incarnations of the same ones."""
    events = 400
    path = write_deployment(tmp_path, events, rate=200, seed=23)
    again, statuses = killed_and_restarted(path, tmp_path / "run", [150])
    assert statuses["p1"]["unacked"] == 0 and statuses["p1"]["published"] == events
    assert (tmp_path / "run" / "logs" / "p1@1.runlog").exists()  # the publisher went on, a new incarnation
    by = verified(again, events)
    assert by["s1"] == by["s2"] and by["s1"], "subscribers of one subscription disagree"
    assert by["s3"], "the three-type subscription delivered nothing"


class _WithoutM1(LocalDeployment):
    """A run in which m1 may stop by itself at any moment (its disk fills): not an error here."""

    exited: int | None = None

    def check_alive(self) -> None:
        m1 = self.procs.get("m1")
        if m1 is not None and m1.poll() is not None:
            self.exited = self.procs.pop("m1").returncode
        super().check_alive()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_replica_whose_disk_fills_stops_cleanly_and_the_others_go_on(tmp_path: Path, zookeeper: str) -> None:
    """m1's state folder is a 128 KiB tmpfs: its replicas' logs fill it. m1 must stop with an
    error naming the folder and the cause, before it acknowledges what it could not keep, and the
    run must verify without it (every role keeps a majority)."""
    events = 400
    path = write_deployment(tmp_path, events, rate=200, seed=24)
    state = tmp_path / "run" / "state" / "m1"
    state.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(state)], check=True)
    try:
        run = _WithoutM1(path, tmp_path / "run", zookeeper=zookeeper)
        try:
            run.start()
            run.wait_for(lambda s: run.exited is not None, 60, "m1 to stop")
            settled(run, quiet=1.5, timeout=60)
        finally:
            run.stop()
    finally:
        subprocess.run(["umount", str(state)], check=True)
    assert run.exited == 1
    err = (tmp_path / "run" / "out" / "m1.err").read_text()
    assert "m1: cannot keep the log of" in err and "No space left on device" in err, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    by = verified(run, events)
    assert by["s1"] == by["s2"] and by["s1"] and by["s3"]


def test_a_torn_log_is_cut_and_a_corrupt_one_refused_on_restart(tmp_path: Path, zookeeper: str) -> None:
    """m1 killed mid-run; its log of [A] cut in the middle of its last record: restarted, it logs
    the cut and rejoins, and the run verifies. Killed again, a byte in the middle of that log
    flipped: it refuses to start, naming the file and the offset, and the others go on."""
    events = 400
    path = write_deployment(tmp_path, events, rate=200, seed=25)
    run = _WithoutM1(path, tmp_path / "run", zookeeper=zookeeper)
    folder = tmp_path / "run" / "state" / "m1" / "A"
    try:
        run.start()
        _published(run, 100)
        run.signal("m1", signal.SIGKILL)
        segment = max(folder.glob("*.seg"))
        with segment.open("r+b") as f:
            f.truncate(segment.stat().st_size - 3)  # as if the kill came in the middle of a write
        time.sleep(SESSION_MS / 1000 + 0.3)
        run.start_process("m1")
        run.wait_for(lambda s: bool(s.get("m1", {}).get("mergers")), 30, "m1 to start again")
        _published(run, 250)
        run.signal("m1", signal.SIGKILL)
        data = bytearray(segment.read_bytes())
        data[len(data) // 2] ^= 0xFF
        segment.write_bytes(bytes(data))
        time.sleep(SESSION_MS / 1000 + 0.3)
        run.exited = None
        run.start_process("m1")
        run.wait_for(lambda s: run.exited is not None, 30, "m1 to refuse its log")
        settled(run, quiet=1.5, timeout=60)
    finally:
        run.stop()
    err = (tmp_path / "run" / "out" / "m1.err").read_text()
    assert "cut a torn last record" in err, err[-3000:]
    assert f"{segment}: at byte offset" in err, err[-3000:]
    assert run.exited == 1
    by = verified(run, events)
    assert by["s1"] == by["s2"] and by["s1"] and by["s3"]
