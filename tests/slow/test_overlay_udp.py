"""A UDP publisher on loopback (docs/ordering-latch-stage.md): sealed datagrams to the root
replicas, some dropped and some reordered on purpose at the sender, the latch stage in front of
the root replicas. What was ordered keeps every property; what was lost or dropped late is never
ordered and nothing is invented; a datagram sealed with a stranger's key is rejected and counted."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
from overlay_harness import SUBSCRIBERS, settled, write_deployment

from faidecs.matching.events import EventValidator
from faidecs.ordering.latch.stamp import Stamp
from faidecs.overlay.core.messages import Publish
from faidecs.overlay.runtime.deployment import load_deployment
from faidecs.overlay.runtime.launcher import LocalDeployment
from faidecs.overlay.runtime.udp import seal
from faidecs.overlay.sim.report import kept_properties
from faidecs.properties import check

# OS processes on ZooKeeper sessions of about a second: they run alone (scripts/test), not beside
# other tests that would starve them of CPU past a session timeout.
pytestmark = [pytest.mark.slow, pytest.mark.processes]

EVENTS = 300


def test_udp_publisher_with_the_latch_stage(tmp_path: Path, zookeeper: str) -> None:
    path = write_deployment(
        tmp_path, EVENTS, rate=600, extra='udp_port_offset = 30\n[latch]\np_t = 0.05\nlate = "drop"'
    )
    with path.open("a") as f:  # [publishers.p1] is the file's last table
        f.write('transport = "udp"\nudp_test_loss = 0.05\nudp_test_swap = 0.1\n')
    d = load_deployment(path)
    run = LocalDeployment(path, tmp_path / "run", zookeeper=zookeeper)
    try:
        run.start()
        settled(run)
        # A datagram sealed with a stranger's key, claiming to come from p1, to every server.
        event = EventValidator(d.types).validate(
            {"id": "forged", "type": "A", "attrs": {"x": 1}, "publisher": "p1", "seq": EVENTS}
        )
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for server in d.servers:
                data = seal(
                    os.urandom(32),
                    d.name,
                    "p1",
                    server,
                    Stamp("p1", EVENTS, 1.0, 0.5),
                    Publish("p1", EVENTS, event),
                    1 << 90,
                )
                sock.sendto(data, d.udp_address(server))
        run.wait_for(
            lambda s: (
                sum(st.get("rejected", {}).get("udp-auth", 0) for n, st in s.items() if n in d.servers)
                == len(d.servers)
            ),
            10,
            "each server to reject the forged datagram",
        )
        time.sleep(0.6)  # the subscribers' logs: nothing more may come
    finally:
        run.stop()
    statuses = run.statuses()
    log = run.runlog()
    report = check(log, kept_properties(log.subscriptions().values()))
    assert not report.violated(), report.table()

    sent = [json.loads(line)["event"] for line in (tmp_path / "run" / "logs" / "p1.sent").read_text().splitlines()[1:]]
    assert len(sent) == EVENTS
    by_id = {e["id"]: e for e in sent}
    ordered = [p.event for p in log.published]
    assert len({e["id"] for e in ordered}) == len(ordered), "a publication ordered twice"
    assert all(by_id.get(e["id"]) == e for e in ordered), "an ordered publication that was never sent"
    assert "forged" not in {e["id"] for e in ordered}
    udp = {n: st["udp"] for n, st in statuses.items() if "udp" in st}
    print(f"ordered {len(ordered)} of {EVENTS} sent; UDP: {udp}")
    assert EVENTS * 0.6 <= len(ordered) < EVENTS, "the leaders lost nothing on purpose: the test tests nothing"
    assert udp["p1"]["lost_on_purpose"] > 0 and udp["p1"]["swapped"] > 0
    latch = [st["latch"] for n, st in udp.items() if n in d.servers]
    assert sum(x["holes"] for x in latch) > 0, "no hole was latched"
    # Per publisher, the roots ordered its events in its own order (Type FIFO at the input).
    for server in d.servers:
        rej = statuses[server].get("rejected", {})
        assert rej == {"udp-auth": 1}, (server, rej)

    by: dict[str, list[tuple[int, tuple[str, ...]]]] = {n: [] for n in SUBSCRIBERS}
    for dl in log.delivered:
        by[dl.process].append((dl.conjunction, dl.relation))
    for name, got in by.items():
        assert len(got) == len(set(got)), f"{name} delivered a relation twice"
    assert by["s1"] == by["s2"] and by["s1"], "subscribers of one subscription disagree"
    assert by["s3"], "the three-type subscription delivered nothing"
    ids = {e["id"] for e in ordered}
    assert all(i in ids for _, rel in by["s1"] + by["s3"] for i in rel), "a delivery of an event never ordered"
