"""The overlay as OS processes on loopback: ZeroMQ with CurveZMQ, ZooKeeper for leadership, real
SIGKILL and SIGSTOP. After each run the processes' run logs are merged and checked: every property
the subscriptions' options keep holds, subscribers of one subscription deliver the same relations
in the same order, and no event is lost or delivered twice. Failover times are printed."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
from overlay_harness import SUBSCRIBERS, embedded, settled, verified, write_deployment

from faidecs.overlay.runtime.launcher import LocalDeployment

# OS processes on ZooKeeper sessions of about a second: they run alone (scripts/test), not beside
# other tests that would starve them of CPU past a session timeout.
pytestmark = [pytest.mark.slow, pytest.mark.processes]


def _leader_of(run: LocalDeployment, role: str) -> tuple[str, int]:
    for status in run.statuses().values():
        for m in status.get("mergers", []):
            if m["role"] == role and m["leader"]:
                return m["leader"], m["epoch"]
    raise AssertionError(f"no leader known for {role}")


def test_processes_deliver_in_agreement(tmp_path: Path, zookeeper: str) -> None:
    path = write_deployment(tmp_path, 300, rate=600)
    run = LocalDeployment(path, tmp_path / "run", zookeeper=zookeeper)
    try:
        run.start()
        settled(run)
    finally:
        run.stop()
    by = verified(run, 300)
    assert by["s1"] == by["s2"] and by["s1"], "subscribers of one subscription disagree"
    assert by["s3"], "the three-type subscription delivered nothing"
    rejected = {n: s.get("rejected") for n, s in run.statuses().items() if s.get("rejected")}
    assert not rejected, rejected


@pytest.mark.parametrize("replicas", [1, 3])
def test_sequencer_baseline_delivers_what_the_embedded_engine_delivers(
    tmp_path: Path, zookeeper: str, replicas: int
) -> None:
    """The baseline orders every publication at one sequencer (replicated or not): with one
    publisher, whose link is FIFO, the order is the file's, so each subscriber must deliver
    exactly what the embedded engine delivers on the file."""
    path = write_deployment(tmp_path, 250, rate=800, extra='ordering = "sequencer"', replicas=replicas)
    run = LocalDeployment(path, tmp_path / "run", zookeeper=zookeeper)
    try:
        run.start()
        settled(run)
    finally:
        run.stop()
    by = verified(run, 250)
    expected = embedded(tmp_path)
    for name in SUBSCRIBERS:
        assert expected[name] and by[name] == expected[name], name
    assert {m["role"] for st in run.statuses().values() for m in st.get("mergers", [])} == {"[A]"}


@pytest.mark.parametrize("victim", ["leader", "follower"])
def test_sigkill_of_a_merger_replica(tmp_path: Path, zookeeper: str, victim: str) -> None:
    path = write_deployment(tmp_path, 400, rate=400)
    run = LocalDeployment(path, tmp_path / "run", zookeeper=zookeeper)
    try:
        run.start()
        run.wait_for(lambda s: s.get("p1", {}).get("published", 0) > 100, 30, "a quarter of the events")
        leader, epoch = _leader_of(run, "⊔[A,B]")
        replicas = [n for n, s in run.statuses().items() for m in s.get("mergers", []) if m["role"] == "⊔[A,B]"]
        target = leader if victim == "leader" else next(r for r in replicas if r != leader)
        killed_at = time.time()
        run.signal(target, signal.SIGKILL)
        if victim == "leader":
            run.wait_for(
                lambda s: any(
                    m["role"] == "⊔[A,B]" and m["epoch"] > epoch and m["leader"] != target and m.get("first_commit_at")
                    for n, st in s.items()
                    if n != target
                    for m in st.get("mergers", [])
                ),
                20,
                "a new leader of A⊔B to commit",
            )
            first = min(
                m["first_commit_at"]
                for n, st in run.statuses().items()
                if n != target
                for m in st.get("mergers", [])
                if m["role"] == "⊔[A,B]" and m["epoch"] > epoch and m.get("first_commit_at")
            )
            print(f"failover of A⊔B after SIGKILL of its leader {target}: {first - killed_at:.3f} s")
        settled(run)
    finally:
        run.stop()
    by = verified(run, 400)
    assert by["s1"] == by["s2"] and by["s1"]


def test_sigstop_of_the_leader_then_resume(tmp_path: Path, zookeeper: str) -> None:
    """A paused leader is deposed when its session expires; resumed, it must not corrupt the
    order with decisions of its old epoch."""
    path = write_deployment(tmp_path, 300, rate=300)
    run = LocalDeployment(path, tmp_path / "run", zookeeper=zookeeper)
    try:
        run.start()
        run.wait_for(lambda s: s.get("p1", {}).get("published", 0) > 60, 30, "some events")
        leader, epoch = _leader_of(run, "[A]")
        run.signal(leader, signal.SIGSTOP)
        time.sleep(1.5)
        run.signal(leader, signal.SIGCONT)
        settled(run)
        statuses: dict[str, Any] = run.statuses()
        assert any(
            m["role"] == "[A]" and m["epoch"] > epoch for st in statuses.values() for m in st.get("mergers", [])
        ), "the paused leader was not replaced"
    finally:
        run.stop()
    by = verified(run, 300)
    assert by["s1"] == by["s2"] and by["s1"]
