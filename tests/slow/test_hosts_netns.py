"""A deployment across network namespaces (benchmarks/hosts.py): two hosts on a bridge, the servers
on one and the clients on the other, every link with an emulated delay (the deployment's
``[emulation]``; this kernel has no netem). The subscribers deliver what the embedded engine
delivers, no delivery comes sooner than the delays on its path allow, and the namespaces are gone
afterwards. Needs root (``ip netns``): skipped, saying so, where that is not permitted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("kazoo")  # the `overlay` extra; CI installs it

from hosts import Hosts, netns_names, netns_permitted
from overlay_harness import PROGRAM, SUBSCRIBERS, embedded, verified

from faidecs.net.certificates import create_keys
from faidecs.net.zkserver import ZooKeeperMissing, ZooKeeperServer
from faidecs.overlay.runtime.launcher import LocalDeployment

pytestmark = [pytest.mark.slow, pytest.mark.processes]

DELAY_MS = 30
JITTER_MS = 10
EVENTS = 120


def _deployment(folder: Path, servers: str, clients: str) -> Path:
    import random

    rng = random.Random(5)
    (folder / "program.fdc").write_text(PROGRAM)
    lines = [
        json.dumps({"id": f"e{k}", "type": rng.choice("ABC"), "attrs": {"x": rng.randrange(10)}}) for k in range(EVENTS)
    ]
    (folder / "events.jsonl").write_text("\n".join(lines) + "\n")
    subscribers = "".join(
        f'[subscribers.{name}]\naddress = "tcp://{clients}:{7101 + k}"\nsubscription = "{sub}"\n'
        for k, (name, sub) in enumerate(SUBSCRIBERS.items())
    )
    (folder / "deployment.toml").write_text(
        'name = "netns"\nprogram = "program.fdc"\nreplicas = 2\nkeys = "keys"\nordering = "sequencer"\n\n'
        "[timing]\nsession_timeout = 2000\n\n"
        f"[emulation]\nlink_delay_ms = {DELAY_MS}\nlink_jitter_ms = {JITTER_MS}\n\n"
        f'[servers]\nm1 = "tcp://{servers}:7001"\nm2 = "tcp://{servers}:7002"\n\n{subscribers}\n'
        f'[publishers.p1]\naddress = "tcp://{clients}:7200"\nevents = "events.jsonl"\nrate = 100\n'
    )
    create_keys(folder / "keys", ["m1", "m2", *SUBSCRIBERS, "p1"])
    return folder / "deployment.toml"


def _records(path: Path, kind: str) -> list[dict[str, object]]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("record") == kind]


def test_a_deployment_across_two_namespaces_with_delay(tmp_path: Path) -> None:
    why = netns_permitted()
    if why is not None:
        pytest.skip(f"network namespaces are not permitted here: {why}")
    hosts = Hosts({"srv1": 1, "cli1": 2})
    with hosts:
        names = [hosts.netns("srv1"), hosts.netns("cli1")]
        assert set(names) <= set(netns_names())
        try:
            zk = ZooKeeperServer(host=hosts.bridge_address, data_dir=tmp_path / "zookeeper").start()
        except ZooKeeperMissing as exc:
            pytest.skip(str(exc))
        try:
            path = _deployment(tmp_path, hosts.addresses["srv1"], hosts.addresses["cli1"])
            host = {"m1": "srv1", "m2": "srv1"}
            run = LocalDeployment(
                path, tmp_path / "run", zookeeper=zk.address, prefix=lambda p: hosts.prefix(host.get(p, "cli1"))
            )
            try:
                run.start()
                from overlay_harness import settled

                settled(run, quiet=2.0, timeout=90)
            finally:
                run.stop()
        finally:
            zk.stop()
        # Each process ran in its host's namespace: its address is only there.
        pids = json.loads((tmp_path / "run" / "run.json").read_text())
        assert pids["deployment"] == str(path.resolve())
    assert not set(names) & set(netns_names()), "namespaces left behind"

    by = verified(run, EVENTS)
    expected = embedded(tmp_path)
    for name in SUBSCRIBERS:
        assert expected[name] and by[name] == expected[name], name

    # A delivery comes after the publication of its relation's last event, through at least the
    # publisher's link to the sequencer and the sequencer's link to the subscriber: two delays.
    logs = tmp_path / "run" / "logs"
    sent = {r["event"]["id"]: r["time"] for r in _records(logs / "p1.runlog", "publish")}  # type: ignore[index]
    latencies = [
        (int(r["time"]) - max(int(sent[i]) for i in r["relation"])) / 1e6  # type: ignore[arg-type, attr-defined]
        for name in SUBSCRIBERS
        for r in _records(logs / f"{name}.runlog", "deliver")
    ]
    assert latencies
    print(f"\nlatency over {len(latencies)} deliveries: min {min(latencies):.1f} ms, max {max(latencies):.1f} ms")
    assert min(latencies) >= 2 * DELAY_MS
