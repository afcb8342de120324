"""The overlay as OS processes on loopback: ZeroMQ with CurveZMQ, ZooKeeper for leadership, real
SIGKILL and SIGSTOP. After each run the processes' run logs are merged and checked: every property
the subscriptions' options keep holds, subscribers of one subscription deliver the same relations
in the same order, and no event is lost or delivered twice. Failover times are printed."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from overlay_harness import SUBSCRIBERS, embedded, settled, verified, write_deployment

from faidecs.net.certificates import create_keys
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


def test_the_extended_stock_examples_deliver_what_the_embedded_engine_delivers(tmp_path: Path, zookeeper: str) -> None:
    """The three stock-market examples of the extended language (docs/dsl.md), one subscriber
    each, on a seeded stream published slowly enough (30 events a second) that every merger orders
    it as published: each subscriber's run log holds exactly the embedded engine's deliveries
    (negated News in the jump's merger, groups, absences decided by later events)."""
    from faidecs.runs.runlog import RunLog
    from tests import stock_extended

    base = 16900  # a port block below overlay_harness's (17100..)
    events = stock_extended.stream(4, 60)
    (tmp_path / "program.fdc").write_text(stock_extended.PROGRAM)
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    names = ["m1", "m2", "m3"]
    subs = list(stock_extended.NAMES)
    text = (
        # The reference matcher: kernels compiling in the background would take CPU from the
        # processes' ZooKeeper sessions (the compiled path runs these examples in the unit tests).
        f'name = "d{base}"\nprogram = "program.fdc"\nreplicas = 3\nkeys = "keys"\nraft_port_offset = 25\n'
        'matcher = "reference"\n\n'
        "[timing]\nsession_timeout = 400\n\n[servers]\n"
        + "".join(f'{n} = "tcp://127.0.0.1:{base + k}"\n' for k, n in enumerate(names, start=1))
        + "".join(
            f'\n[subscribers.{s}]\naddress = "tcp://127.0.0.1:{base + 10 + k}"\nsubscription = "{s}"\n'
            for k, s in enumerate(subs)
        )
        + f'\n[publishers.p1]\naddress = "tcp://127.0.0.1:{base + 19}"\nevents = "events.jsonl"\nrate = 30\n'
    )
    (tmp_path / "deployment.toml").write_text(text)
    create_keys(tmp_path / "keys", [*names, *subs, "p1"])
    run = LocalDeployment(tmp_path / "deployment.toml", tmp_path / "run", zookeeper=zookeeper)
    try:
        run.start()
        run.wait_for(lambda s: s.get("p1", {}).get("done", False), 60, "the publisher to finish")
        expected = stock_extended.by_subscription(stock_extended.embedded(events))
        run.wait_for(
            lambda s: all(s.get(n, {}).get("delivered", 0) >= len(expected[n]) for n in subs), 30, "the deliveries"
        )
        time.sleep(0.5)  # anything more than expected would show up now
    finally:
        run.stop()
    log: RunLog = run.runlog()
    got: dict[str, list[tuple[int, tuple[str, ...]]]] = {n: [] for n in subs}
    for d in log.delivered:
        got[d.process].append((d.conjunction, d.relation))
    assert all(expected[n] for n in subs)  # each example delivers: the comparison is not vacuous
    assert got == expected
