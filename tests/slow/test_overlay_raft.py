"""The Raft baseline (``ordering = "raft"``) as OS processes on loopback: every publication is
ordered by a Raft log (pysyncobj) among three servers, and each subscriber reads that one stream
with the unchanged subscriber client. After each run the processes' run logs are merged and
checked as for the other orderings; with one publisher, whose links are FIFO, every subscriber
must deliver exactly what the embedded engine delivers on the events file, even when the Raft
leader is killed mid-stream. The failover time is printed (``-s``)."""

from __future__ import annotations

import pickle
import signal
import socket
import struct
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pysyncobj")
pytest.importorskip("cryptography")  # pysyncobj's password (encryption) needs it

from overlay_harness import SUBSCRIBERS, embedded, settled, verified, write_deployment  # noqa: E402

from faidecs.overlay.runtime.launcher import LocalDeployment  # noqa: E402

# OS processes on ZooKeeper sessions of about a second: they run alone (scripts/test), not beside
# other tests that would starve them of CPU past a session timeout.
pytestmark = [pytest.mark.slow, pytest.mark.processes]

SERVERS = ("m1", "m2", "m3")
ROLE = "[A]"  # the sequencer's group is named after the first type


def _raft_leader(statuses: dict[str, dict[str, Any]]) -> tuple[str, int] | None:
    """The leader and term that every live replica agrees on, if they do."""
    seen = {(m["leader"], m["epoch"]) for st in statuses.values() for m in st.get("mergers", []) if m["role"] == ROLE}
    if len(seen) == 1:
        leader, term = seen.pop()
        if leader:
            return leader, term
    return None


def _listening(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp writes them) listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            address, hexport = local.rsplit(":", 1)
            if state == "0A" and int(hexport, 16) == port:
                found.add(address)
    return found


class _Opens:
    """Unpickled, opens (creates) a file: what a stranger could make pysyncobj run if its
    traffic were not authenticated."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.path), "w"))


def _stranger_sends_a_pickle(raft_address: str, marker: Path) -> None:
    """A frame as pysyncobj writes one without a password: length, then zlib of a pickle."""
    host, port = raft_address.rsplit(":", 1)
    data = zlib.compress(pickle.dumps(_Opens(marker)))
    with socket.create_connection((host, int(port)), timeout=2) as conn:
        conn.sendall(struct.pack("i", len(data)) + data)
        time.sleep(0.3)


def test_raft_baseline_delivers_what_the_embedded_engine_delivers(tmp_path: Path, zookeeper: str) -> None:
    path = write_deployment(tmp_path, 250, rate=800, servers=3, extra='ordering = "raft"')
    run = LocalDeployment(path, tmp_path / "run", zookeeper=zookeeper)
    try:
        run.start()
        d = run.deployment
        for server in SERVERS:  # pysyncobj listens on the server's own host, not on every interface
            port = int(d.raft_address(server).rsplit(":", 1)[1])
            assert _listening(port) == {"0100007F"}, (server, port, _listening(port))
        marker = tmp_path / "a stranger's code ran"
        _stranger_sends_a_pickle(d.raft_address(SERVERS[0]), marker)
        settled(run)
        statuses = run.statuses()
    finally:
        run.stop()
    assert not marker.exists(), "the Raft endpoint unpickled a stranger's frame: no password?"
    by = verified(run, 250)
    expected = embedded(tmp_path)
    for name in SUBSCRIBERS:
        assert expected[name] and by[name] == expected[name], name
    mergers = [m for st in statuses.values() for m in st.get("mergers", [])]
    assert {m["role"] for m in mergers} == {ROLE} and len(mergers) == len(SERVERS)
    assert _raft_leader(statuses) is not None, "the replicas do not agree on Raft's leader and term"
    assert all(m["commit"] == m["log"] - 1 and m["commit"] >= 250 for m in mergers), mergers


def test_sigkill_of_the_raft_leader_mid_stream(tmp_path: Path, zookeeper: str) -> None:
    """Killed, the Raft leader takes with it what it had submitted but Raft had not committed;
    the new leader submits what it has not seen applied, and applying skips what is decided
    already, so nothing is lost, nothing is delivered twice and the file's order stands."""
    path = write_deployment(tmp_path, 400, rate=400, servers=3, extra='ordering = "raft"')
    run = LocalDeployment(path, tmp_path / "run", zookeeper=zookeeper)
    try:
        run.start()
        run.wait_for(lambda s: s.get("p1", {}).get("published", 0) > 100, 30, "a quarter of the events")
        run.wait_for(lambda s: _raft_leader(s) is not None, 10, "the replicas to agree on a leader")
        found = _raft_leader(run.statuses())
        assert found is not None
        leader, term = found
        killed_at = time.time()
        run.signal(leader, signal.SIGKILL)

        def new_leader_applies(s: dict[str, dict[str, Any]]) -> bool:
            return any(
                m["role"] == ROLE and m["leader"] == n and m["epoch"] > term and m.get("first_commit_at")
                for n, st in s.items()
                if n != leader
                for m in st.get("mergers", [])
            )

        run.wait_for(new_leader_applies, 20, "a new Raft leader to apply entries")
        first = min(
            m["first_commit_at"]
            for n, st in run.statuses().items()
            if n != leader
            for m in st.get("mergers", [])
            if m["role"] == ROLE and m["leader"] == n and m["epoch"] > term and m.get("first_commit_at")
        )
        print(
            f"Raft failover after SIGKILL of the leader {leader} (term {term}): "
            f"new leader applies after {first - killed_at:.3f} s"
        )
        settled(run)
    finally:
        run.stop()
    by = verified(run, 400)
    assert by["s1"] == by["s2"] and by["s1"], "subscribers of one subscription disagree"
    expected = embedded(tmp_path)
    for name in SUBSCRIBERS:
        assert by[name] == expected[name], f"{name}: an event lost, repeated or out of order"
