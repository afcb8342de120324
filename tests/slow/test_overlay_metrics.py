"""Every overlay process serves Prometheus metrics (docs/deploy.md, "Metrics"): a small
deployment of OS processes with `--metrics-port`, each process scraped over HTTP and parsed with
prometheus-client's parser; the counters agree with each other and with the run's merged log."""

from __future__ import annotations

import json
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from overlay_harness import SUBSCRIBERS, settled, verified, write_deployment

from faidecs.overlay.runtime.launcher import LocalDeployment

pytest.importorskip("prometheus_client", reason="the metrics extra: pip install 'faidecs[metrics]'")
from prometheus_client.parser import text_string_to_metric_families

pytestmark = [pytest.mark.slow, pytest.mark.processes]

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
EVENTS = 200


def _scrape(host: str, port: int) -> Samples:
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _by_role(scraped: dict[str, Samples], name: str) -> dict[str, dict[str, float]]:
    """role -> process -> value of metric ``name``."""
    out: dict[str, dict[str, float]] = {}
    for process, samples in scraped.items():
        for (metric, labels), value in samples.items():
            if metric == name:
                out.setdefault(dict(labels)["role"], {})[process] = value
    return out


def _one(samples: Samples, name: str) -> float:
    values = [v for (metric, _), v in samples.items() if metric == name]
    assert len(values) == 1, (name, values)
    return values[0]


def test_every_process_serves_consistent_metrics(tmp_path: Path, zookeeper: str) -> None:
    path = write_deployment(tmp_path, EVENTS, rate=800)
    first_port = int(path.read_text().split('m1 = "tcp://127.0.0.1:', 1)[1].split('"', 1)[0])
    # The harness's block of 40 ports: servers +0..3, subscribers +9..11, publisher +18 from m1's.
    run = LocalDeployment(path, tmp_path / "run", zookeeper=zookeeper, metrics_port=first_port + 29)
    assert run.metrics["m1"] == ("127.0.0.1", first_port + 29)
    assert run.metrics["p1"] == ("127.0.0.1", first_port + 29 + 7)
    try:
        run.start()
        settled(run)
        # The scrapes read the status the processes hand over twice a second: wait for the one
        # after the last acknowledgement (a wait, not a time limit: the deadline only ends a hang).
        deadline = time.monotonic() + 30
        while True:
            scraped = {name: _scrape(*where) for name, where in run.metrics.items()}
            p1 = scraped["p1"]
            if _one(p1, "faidecs_overlay_publications_acknowledged_total") == EVENTS or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        statuses = run.statuses()
    finally:
        run.stop()
    by = verified(run, EVENTS)

    # The publisher: every event published once and acknowledged, each acknowledgement timed.
    assert _one(p1, "faidecs_overlay_publications_sent_total") == EVENTS
    assert _one(p1, "faidecs_overlay_publications_acknowledged_total") == EVENTS
    assert _one(p1, "faidecs_overlay_unacknowledged_publications") == 0
    assert _one(p1, "faidecs_overlay_publisher_done") == 1
    assert _one(p1, "faidecs_overlay_acknowledgement_latency_seconds_count") == EVENTS

    # Each role: exactly one leader, the one the status files name; a root's replicas all
    # committed the same positions, and each timed the commit of every event of its type once.
    leaders = _by_role(scraped, "faidecs_overlay_leader")
    assert leaders, "no replica exported a leader gauge"
    for role, gauges in leaders.items():
        assert len(gauges) == 3, (role, gauges)  # replicas = 3
        assert sorted(gauges.values()) == [0, 0, 1], (role, gauges)
        leader = next(p for p, v in gauges.items() if v == 1)
        named = {m["leader"] for s in statuses.values() for m in s.get("mergers", []) if m["role"] == role}
        assert named == {leader}, (role, named, leader)
    per_type = Counter(json.loads(line)["type"] for line in (tmp_path / "events.jsonl").read_text().splitlines())
    commits = _by_role(scraped, "faidecs_overlay_commits_total")
    events = _by_role(scraped, "faidecs_overlay_committed_events_total")
    timed = _by_role(scraped, "faidecs_overlay_commit_latency_seconds_count")
    for type_name, count in per_type.items():
        root = f"[{type_name}]"
        assert len(set(commits[root].values())) == 1, (root, commits[root])
        assert min(commits[root].values()) >= count, (root, commits[root])
        assert set(events[root].values()) == {count}, (root, events[root])
        assert set(timed[root].values()) == {count}, (root, timed[root])
    for role, values in commits.items():  # the mergers above the roots committed too, at every replica
        assert len(values) == 3 and min(values.values()) > 0, (role, values)

    # Subscribers: the deliveries the run's merged log holds, each timed once.
    for name, subscription in SUBSCRIBERS.items():
        samples = scraped[name]
        delivered = _one(samples, "faidecs_overlay_deliveries_total")
        assert delivered == len(by[name]) > 0, (name, delivered, len(by[name]))
        labels = {dict(k[1]).get("subscription") for k in samples if k[0] == "faidecs_overlay_deliveries_total"}
        assert labels == {subscription}
        assert _one(samples, "faidecs_overlay_delivery_latency_seconds_count") == delivered
        assert _one(samples, "faidecs_overlay_subscriber_started") == 1

    # Every process: its messages, no rejection, and the process collector's CPU time.
    for name, samples in scraped.items():
        assert _one(samples, "faidecs_overlay_messages_sent_total") > 0, name
        assert _one(samples, "faidecs_overlay_messages_received_total") > 0, name
        assert not [k for k in samples if k[0] == "faidecs_overlay_rejected_messages_total"], name
        assert _one(samples, "process_cpu_seconds_total") > 0, name
