"""Leadership, epochs and sessions from a real ZooKeeper (faidecs.overlay.runtime.zkcoordination).

One standalone server for the module (tick 100 ms: sessions of 0.2 to 2 s), one deployment name per
test. Members run in this process, and in child processes where a test kills (SIGKILL) or pauses
(SIGSTOP) one: their notifications come back as JSON lines on stdout.

The properties, as SimulatedCoordination has them: the first registered replica leads; when the
leader goes the next live one leads with a higher epoch; a replica that joins or comes back queues
at the back; Down/Up reach everyone, Up(self) the process whose session was lost; no two members
ever pair an epoch with different leaders, and no member's epochs go down.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

kazoo = pytest.importorskip("kazoo")  # the `overlay` extra; CI installs it

from kazoo.client import KazooClient

from faidecs.merging.roles import Role
from faidecs.net.zkserver import ZooKeeperMissing, ZooKeeperServer, ZooKeeperStartError, find_zookeeper
from faidecs.overlay.core.messages import Down, LeaderChange, Message, Up
from faidecs.overlay.runtime.zkcoordination import Candidate, ZooKeeperMember, path_key, role_key

# OS processes on ZooKeeper sessions of about a second: they run alone (scripts/test), not beside
# other tests that would starve them of CPU past a session timeout.
pytestmark = [pytest.mark.slow, pytest.mark.processes]

ROOT = Path(__file__).resolve().parents[2]
ROLE: Role = ("A",)
SESSION = 1.0  # seconds; the server grants 0.2 to 2
WAIT = 8.0  # the most any step waits for: a failure shows as a timeout, never a hang


@pytest.fixture(scope="module")
def zk() -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer(tick_ms=100) as server:
        yield server


@pytest.fixture
def deployment(request: pytest.FixtureRequest) -> str:
    return f"{request.node.name}-{uuid.uuid4().hex[:8]}"


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> float:
    """Poll ``condition`` until it holds; the time it held at (``time.monotonic``)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.005)
    return time.monotonic()


class Recorder:
    """A member's ``notify``: every notification with the time it came."""

    def __init__(self) -> None:
        self.got: list[tuple[float, Message]] = []
        self._lock = threading.Lock()
        self._inside = False
        self.overlapped = False

    def __call__(self, message: Message) -> None:
        with self._lock:
            if self._inside:  # notify must never run concurrently for one member
                self.overlapped = True
            self._inside = True
        time.sleep(0.001)  # widen the window an overlap would show in
        with self._lock:
            self.got.append((time.monotonic(), message))
            self._inside = False

    @property
    def messages(self) -> list[Message]:
        with self._lock:
            return [m for _, m in self.got]

    def leaders(self) -> list[tuple[str, int]]:
        return [(m.leader, m.epoch) for m in self.messages if isinstance(m, LeaderChange)]

    def heard_leader(self, name: str) -> bool:
        return any(leader == name for leader, _ in self.leaders())

    def when(self, message: Message) -> float | None:
        with self._lock:
            return next((t for t, m in self.got if m == message), None)


class Members:
    """In-process members of one deployment, stopped at the end of the test."""

    def __init__(self, zk: ZooKeeperServer, deployment: str) -> None:
        self.zk, self.deployment = zk, deployment
        self.members: dict[str, ZooKeeperMember] = {}
        self.recorders: dict[str, Recorder] = {}
        self.all_recorders: list[Recorder] = []  # stopped ones too

    def start(self, name: str, placement: tuple[str, ...] | None = ("a", "b", "c", "d")) -> ZooKeeperMember:
        recorder = Recorder()
        replicas = {ROLE: placement} if placement else {}
        member = ZooKeeperMember(self.zk.address, self.deployment, name, replicas, recorder, session_timeout=SESSION)
        member.start()
        self.members[name], self.recorders[name] = member, recorder
        self.all_recorders.append(recorder)
        return member

    def stop(self, name: str) -> None:
        self.members.pop(name).stop()
        del self.recorders[name]  # all_recorders keeps it

    def close(self) -> None:
        for member in self.members.values():
            member.stop()


@pytest.fixture
def members(zk: ZooKeeperServer, deployment: str) -> Iterator[Members]:
    m = Members(zk, deployment)
    yield m
    m.close()


def assert_consistent(recorders: list[Recorder], others: tuple[list[tuple[str, int]], ...] = ()) -> None:
    """No member's epochs go down or repeat; no two members pair an epoch with two leaders."""
    seen: dict[int, str] = {}
    for pairs in [r.leaders() for r in recorders] + list(others):
        epochs = [e for _, e in pairs]
        assert epochs == sorted(set(epochs)), f"epochs not strictly increasing: {pairs}"
        for leader, epoch in pairs:
            assert seen.setdefault(epoch, leader) == leader, f"epoch {epoch}: {seen[epoch]} and {leader}"
    assert not any(r.overlapped for r in recorders), "notify ran concurrently for one member"


# --- members in child processes -------------------------------------------------------------------

CHILD = """
import json, sys, time
from faidecs.overlay.core.messages import LeaderChange
from faidecs.overlay.runtime.zkcoordination import ZooKeeperMember

hosts, deployment, name, placement, timeout = sys.argv[1:]

def notify(m):
    fields = {"leader": m.leader, "epoch": m.epoch} if isinstance(m, LeaderChange) else {"process": m.process}
    print(json.dumps({"type": type(m).__name__, **fields}), flush=True)

member = ZooKeeperMember(hosts, deployment, name, {("A",): placement.split(",")}, notify, float(timeout))
member.start()
print(json.dumps({"type": "started"}), flush=True)
sys.stdin.read()  # until the test closes our stdin, kills or pauses us
member.stop()
"""


class Child:
    """A member in its own OS process, its notifications read by a thread as they come."""

    def __init__(self, zk: ZooKeeperServer, deployment: str, name: str, placement: tuple[str, ...], log: Path) -> None:
        self.name = name
        self.log = log  # its stderr (kazoo's warnings): a file, so that a full pipe never blocks it
        with open(log, "w") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-c", CHILD, zk.address, deployment, name, ",".join(placement), str(SESSION)],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.got: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))

    def messages(self) -> list[dict[str, Any]]:
        while True:
            try:
                self.got.append(self.lines.get_nowait())
            except queue.Empty:
                return self.got

    def wait_started(self) -> None:
        try:
            wait_until(lambda: {"type": "started"} in self.messages(), f"{self.name} to start", timeout=20)
        except AssertionError:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"{self.name} did not start:\n{self.log.read_text()}") from None

    def leaders(self) -> list[tuple[str, int]]:
        return [(m["leader"], m["epoch"]) for m in self.messages() if m["type"] == "LeaderChange"]

    def close(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)
            self.process.kill()
        self.process.wait()


@pytest.fixture
def spawn(zk: ZooKeeperServer, deployment: str, tmp_path: Path) -> Iterator[Callable[[str], Child]]:
    children: list[Child] = []

    def start(name: str) -> Child:
        child = Child(zk, deployment, name, ("a", "b", "c", "d", name), tmp_path / f"{name}.stderr")
        children.append(child)
        child.wait_started()
        return child

    yield start
    for child in children:
        child.close()


def candidates(zk: ZooKeeperServer, deployment: str) -> list[Candidate]:
    """The role's live candidates, first in line first, read by a client of the test's own."""
    client = KazooClient(zk.address)
    client.start(timeout=WAIT)
    try:
        names = client.get_children(f"/faidecs/{path_key(deployment)}/roles/{role_key(ROLE)}")
    finally:
        client.stop()
        client.close()
    return sorted(c for c in map(Candidate.parse, names) if c is not None)


# --- the tests ------------------------------------------------------------------------------------


def test_first_registered_leads_and_the_next_takes_over(members: Members) -> None:
    a, b = members.start("a"), members.start("b")
    members.start("c")
    sub = members.start("sub", placement=None)  # a client: no role, but sessions all the same
    (_, e1) = a.leadership()[ROLE]
    assert e1 >= 1
    for name in "abc":
        # start() returns once the current leader is notified: no waiting needed
        assert members.members[name].leadership() == {ROLE: ("a", e1)}
        assert members.recorders[name].messages == [LeaderChange(ROLE, "a", e1)]
    assert members.recorders["sub"].messages == [] and sub.leadership() == {}

    d = members.start("d")  # joins later: queues at the back
    assert d.leadership() == {ROLE: ("a", e1)}
    assert members.recorders["d"].messages == [LeaderChange(ROLE, "a", e1)]

    members.stop("a")
    wait_until(lambda: all(members.recorders[n].heard_leader("b") for n in "bcd"), "b, c and d to hear b leads")
    (_, e2) = b.leadership()[ROLE]
    assert e2 > e1
    wait_until(lambda: all(Down("a") in members.recorders[n].messages for n in ("b", "c", "d", "sub")), "Down(a)")
    for name in "bcd":
        got = members.recorders[name].messages
        assert [m for m in got if isinstance(m, LeaderChange)] == [
            LeaderChange(ROLE, "a", e1),
            LeaderChange(ROLE, "b", e2),
        ], name
        assert [m for m in got if not isinstance(m, LeaderChange)] == [Down("a")], name
    assert members.recorders["sub"].messages == [Down("a")]

    # a comes back (a new process, same name): the others hear Up(a), and a queues behind d
    a2 = members.start("a")
    assert a2.leadership() == {ROLE: ("b", e2)}
    assert members.recorders["a"].messages == [LeaderChange(ROLE, "b", e2)]
    wait_until(lambda: all(Up("a") in members.recorders[n].messages for n in ("b", "c", "d", "sub")), "Up(a)")

    members.stop("b")
    members.stop("c")
    wait_until(lambda: all(members.recorders[n].heard_leader("d") for n in "da"), "d and a to hear d leads")
    assert members.members["d"].leadership() == members.members["a"].leadership()
    assert members.members["d"].leadership()[ROLE][1] > e2
    assert_consistent(members.all_recorders)


def test_a_killed_leader_is_replaced_within_the_session_timeout(
    zk: ZooKeeperServer, deployment: str, members: Members, spawn: Callable[[str], Child]
) -> None:
    k = spawn("k")
    wait_until(lambda: len(k.leaders()) == 1, "k to hear who leads")
    b, c = members.start("b"), members.start("c")
    [(leader, e1)] = k.leaders()
    assert leader == "k" and b.leadership() == c.leadership() == {ROLE: ("k", e1)}

    killed = time.monotonic()
    k.process.send_signal(signal.SIGKILL)
    wait_until(lambda: all(members.recorders[n].heard_leader("b") for n in "bc"), "b and c to hear b leads")
    wait_until(lambda: all(Down("k") in members.recorders[n].messages for n in "bc"), "b and c to hear Down(k)")
    (_, e2) = b.leadership()[ROLE]
    assert e2 > e1 and c.leadership() == {ROLE: ("b", e2)}
    down = max(members.recorders[n].when(Down("k")) or 0 for n in "bc") - killed
    failover = max(members.recorders[n].when(LeaderChange(ROLE, "b", e2)) or 0 for n in "bc") - killed
    print(f"\nSIGKILL of the leader: Down after {down:.3f} s, new leader after {failover:.3f} s (session {SESSION} s)")
    # A closed connection does not end a session: only its expiry does, a timeout after the last ping.
    assert 0.5 * SESSION < failover < SESSION + 1.0
    assert_consistent(members.all_recorders, (k.leaders(),))


def test_a_paused_leader_loses_its_session_and_comes_back_behind(
    zk: ZooKeeperServer, deployment: str, members: Members, spawn: Callable[[str], Child]
) -> None:
    s = spawn("s")
    wait_until(lambda: len(s.leaders()) == 1, "s to hear who leads")
    b, c = members.start("b"), members.start("c")
    [(leader, e1)] = s.leaders()
    assert leader == "s"

    paused = time.monotonic()
    s.process.send_signal(signal.SIGSTOP)
    wait_until(lambda: all(members.recorders[n].heard_leader("b") for n in "bc"), "b and c to hear b leads")
    wait_until(lambda: all(Down("s") in members.recorders[n].messages for n in "bc"), "b and c to hear Down(s)")
    failover = time.monotonic() - paused
    (_, e2) = b.leadership()[ROLE]
    assert e2 > e1

    resumed = time.monotonic()
    s.process.send_signal(signal.SIGCONT)
    wait_until(lambda: len(s.messages()) >= 4, "s to hear it lost its session and who leads now")
    back = time.monotonic() - resumed
    print(f"\nSIGSTOP of the leader: new leader after {failover:.3f} s; resumed, it knew in {back:.3f} s")
    # Up(self) first (the others dropped its links), then the new leader: never its old epoch again.
    assert s.messages() == [
        {"type": "LeaderChange", "leader": "s", "epoch": e1},
        {"type": "started"},
        {"type": "Up", "process": "s"},
        {"type": "LeaderChange", "leader": "b", "epoch": e2},
    ]
    wait_until(lambda: all(Up("s") in members.recorders[n].messages for n in "bc"), "b and c to hear Up(s)")
    # A new candidate in a new session, at the back.
    line = candidates(zk, deployment)
    assert [x.process for x in line] == ["b", "c", "s"]
    assert line[-1].epoch > e2
    assert b.leadership() == c.leadership() == {ROLE: ("b", e2)}
    time.sleep(0.2)  # nothing else follows
    assert len(s.messages()) == 4
    assert_consistent(members.all_recorders, (s.leaders(),))


def test_a_restarted_process_waits_for_its_old_session(
    zk: ZooKeeperServer, deployment: str, members: Members, spawn: Callable[[str], Child]
) -> None:
    """A process that restarts before its old session expired must not inherit its old
    incarnation's leadership: it registers only once that session is gone."""
    k = spawn("k")
    b = members.start("b")
    wait_until(lambda: k.leaders() != [], "k to lead")
    [(_, e1)] = k.leaders()
    k.process.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    k2 = members.start("k", placement=("b", "k"))  # blocks until the old session expires
    waited = time.monotonic() - killed
    assert waited > 0.5 * SESSION
    wait_until(lambda: members.recorders["b"].heard_leader("b"), "b to hear it leads")
    (_, e2) = b.leadership()[ROLE]
    assert e2 > e1
    # Never told that k leads (its predecessor's epoch), nor Up(k): it is a new process.
    assert k2.leadership() == {ROLE: ("b", e2)}
    assert members.recorders["k"].messages == [LeaderChange(ROLE, "b", e2)]
    wait_until(lambda: Up("k") in members.recorders["b"].messages, "b to hear Up(k)")
    assert [m for m in members.recorders["b"].messages if not isinstance(m, LeaderChange)] == [Down("k"), Up("k")]
    assert_consistent(members.all_recorders, (k.leaders(),))


def test_members_agree_on_every_epoch_under_churn(members: Members) -> None:
    """Leaders stopped and replicas started back to back, without waiting: a member may skip a
    leader it never saw, but no two members disagree, and every Down reaches everyone."""
    placement = tuple(f"p{i}" for i in range(12)) + ("x", "y")
    for name in ("p0", "p1", "p2", "p3", "p4", "p5", "x", "y"):
        members.start(name, placement)
    for i in range(6):  # p0 .. p5 lead in turn; the new ones queue behind x and y
        members.stop(f"p{i}")
        members.start(f"p{i + 6}", placement)
    live = list(members.members.values())
    wait_until(lambda: all(members.recorders[n].heard_leader("x") for n in members.members), "everyone to hear x")
    assert len({m.leadership()[ROLE] for m in live}) == 1
    x, y = members.recorders["x"], members.recorders["y"]
    wait_until(lambda: all(Down(f"p{i}") in r.messages for r in (x, y) for i in range(6)), "every Down")
    assert x.leaders()[0][0] == y.leaders()[0][0] == "p0" and x.leaders()[-1] == y.leaders()[-1]
    print(f"\nx heard {len(x.leaders())} leaders, y {len(y.leaders())} (7 without skipping)")
    assert_consistent(members.all_recorders)


def test_find_zookeeper_and_start_errors(zk: ZooKeeperServer, tmp_path: Path) -> None:
    with pytest.raises(ZooKeeperMissing, match="scripts/services"):
        find_zookeeper(tmp_path)
    with pytest.raises(ZooKeeperStartError, match="already in use"):
        ZooKeeperServer(port=zk.port, data_dir=tmp_path / "taken").start()
    # ZooKeeper refuses this configuration and exits: the error ends with its log.
    bad = ZooKeeperServer(data_dir=tmp_path / "bad", min_session_ms=2000, max_session_ms=1000)
    with pytest.raises(ZooKeeperStartError) as failure:
        bad.start()
    assert "exited with status" in str(failure.value) and "minSessionTimeout" in str(failure.value)
    assert not bad.running and zk.command("ruok") == "imok"
