"""A subscriber SIGKILLed mid-run and restarted resumes from its checkpoint (OS processes on
loopback, ZooKeeper, CurveZMQ; docs/overlay.md, "Subscriber checkpoints and delivery ids").

s2 checkpoints every few deliveries, so a kill mid-stream almost always lands between a delivery
and the checkpoint that would reflect it. Restarted under the same name, it reads each stream
again from its checkpoint, re-produces the relations since with the same ids, and its run logs
(one per incarnation) merge into one process: the merged log keeps every property, and s2's
deliveries are exactly those of s1, the subscriber of the same subscription that ran throughout."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from overlay_harness import settled, write_deployment

from faidecs.overlay.runtime.launcher import LocalDeployment
from faidecs.overlay.sim.report import kept_properties
from faidecs.properties import check

pytestmark = [pytest.mark.slow, pytest.mark.processes]

DURABILITY = '[durability]\nsync = "group"\ncheckpoint_every = 5\ncheckpoint_ms = 200\n'


def test_sigkill_and_restart_of_a_subscriber(tmp_path: Path, zookeeper: str) -> None:
    path = write_deployment(tmp_path, 300, rate=100, extra=DURABILITY)
    run = LocalDeployment(path, tmp_path / "run", zookeeper=zookeeper)
    try:
        run.start()
        run.wait_for(lambda s: s.get("s2", {}).get("checkpoints", 0) >= 3, 30, "s2 to checkpoint")
        run.wait_for(lambda s: s.get("p1", {}).get("published", 0) >= 100, 30, "100 publications")
        run.signal("s2", signal.SIGKILL)
        time.sleep(0.2)
        run.start_process("s2")
        run.wait_for(lambda s: s.get("s2", {}).get("resumed", False), 30, "s2 to resume")
        settled(run, quiet=1.5, timeout=60)
        restarted = run.statuses()["s2"]
    finally:
        run.stop()
    logs = sorted(p.name for p in (run.run_dir / "logs").glob("s2*.runlog"))
    assert logs == ["s2.runlog", "s2@1.runlog"]
    print(f"restarted s2: {restarted['skipped']} deliveries its predecessor had logged since its checkpoint")
    log = run.runlog()
    assert set(log.final) >= {"s1", "s2", "s3"} and not log.left
    report = check(log, kept_properties(log.subscriptions().values()))
    assert not report.violated(), report.table()
    assert len({p.id for p in log.published}) == len(log.published) == 300
    by: dict[str, list[tuple[int, tuple[str, ...]]]] = {n: [] for n in log.processes}
    for d in log.delivered:
        by[d.process].append((d.conjunction, d.relation))
    assert by["s1"], "s1 delivered nothing"
    assert by["s2"] == by["s1"], "the restarted s2 does not deliver exactly what s1 delivers"
    ids = [d.id for d in log.delivered if d.process == "s2"]
    assert None not in ids and len(set(ids)) == len(ids)
