"""Attacks by an insider on the overlay as OS processes (loopback, ZooKeeper, CurveZMQ).

An insider holds ONE legitimate key of the deployment (publisher p1's, subscriber s1's, a
server's; :class:`insider.Insider`) and sends forged messages to the servers and subscribers while
p1 publishes. Each attack is a test on one shared run (a module-scoped deployment of four servers,
three replicas per role); each asserts that the counter of its kind moved (the processes' status
files: ``rejected`` by kind, ``rejected_from`` by sender, the replicas' ``unconfirmed``,
``conflicting``, ``fetches``, ``bad_acks``, a subscriber's ``foreign``) and that the overlay kept
delivering. The last test stops the run and judges all of it: every honest process stayed up,
the merged run log keeps every property the subscriptions' options keep, s1 and s2 deliver the
same sequence, as long as the embedded engine's on what was published.

The tests depend on their order (pytest runs them as written): the attack on a root's leader
alone runs after p1 is done, and the judge runs last."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from insider import Insider
from overlay_harness import SUBSCRIBERS, embedded, settled, verified, write_deployment

from faidecs.grammar.model import Attribute, EventType, Kind
from faidecs.matching.events import Event, EventValidator
from faidecs.net.transport import MANY
from faidecs.overlay.core.messages import Ack, Decide, Decision, EpochQuery, Forward, Holds, Publish
from faidecs.overlay.core.subscriber import SubscriberClient
from faidecs.overlay.runtime.deployment import Deployment, load_deployment
from faidecs.overlay.runtime.launcher import LocalDeployment

pytestmark = [pytest.mark.slow, pytest.mark.processes]

EVENTS = 700
RATE = 50  # publications per second: p1 publishes for 14 s, while the attacks run
SERVERS = 4
ROOT_A, ROOT_B, PAIRS = ("A",), ("B",), ("A", "B")
RSS_BUDGET_KB = 1 << 20  # 1 GiB
STATUS_WAIT = 5.0  # status files are rewritten twice a second

Statuses = dict[str, dict[str, Any]]


@dataclass
class Attack:
    """The shared run, the insiders (one per key) and what the insiders published legitimately."""

    folder: Path
    run: LocalDeployment
    deployment: Deployment
    validator: EventValidator
    events: list[dict[str, Any]]
    insiders: dict[str, Insider] = field(default_factory=dict)
    extra: list[dict[str, Any]] = field(default_factory=list)  # published by an insider as p2
    forged_ids: set[str] = field(default_factory=set)  # events that must never be delivered
    stopped: bool = False
    stalled: dict[str, int] = field(default_factory=dict)  # subscriber -> its deliveries when it stalled

    def insider(self, key: str) -> Insider:
        if key not in self.insiders:
            self.insiders[key] = Insider(self.folder / "keys", key, self.deployment)
        return self.insiders[key]

    def event(self, id_: str, type_: str, x: int, publisher: str, seq: int) -> Event:
        return self.validator.validate(
            {"id": id_, "type": type_, "attrs": {"x": x}, "publisher": publisher, "seq": seq}
        )

    def placement(self, role: tuple[str, ...]) -> tuple[str, ...]:
        return self.deployment.placement(role)


def _with_p2(path: Path) -> None:
    """Add a second publisher, p2, that publishes nothing itself: its key is the insider's for
    publications that are legitimate but sent only to some replicas."""
    folder = path.parent
    p1 = load_deployment(path).publishers["p1"].address
    base = int(p1.rsplit(":", 1)[1]) - 19
    (folder / "p2.jsonl").write_text("")
    with path.open("a") as f:
        f.write(f'\n[publishers.p2]\naddress = "tcp://127.0.0.1:{base + 20}"\nevents = "p2.jsonl"\n')
    from faidecs.net.certificates import create_keys

    create_keys(folder / "keys", ["p2"])


@pytest.fixture(scope="module")
def attack(tmp_path_factory: pytest.TempPathFactory, zookeeper: str) -> Iterator[Attack]:
    folder = tmp_path_factory.mktemp("attacks")
    path = write_deployment(folder, EVENTS, rate=RATE, servers=SERVERS, replicas=3)
    _with_p2(path)
    run = LocalDeployment(path, folder / "run", zookeeper=zookeeper)
    d = run.deployment
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    a = Attack(folder, run, d, EventValidator(d.types), events)
    try:
        run.start()
        run.wait_for(lambda s: s.get("s1", {}).get("delivered", 0) > 0, 30, "s1 to deliver")
        yield a
    finally:
        for insider in a.insiders.values():
            insider.close(wait=0)
        if not a.stopped:
            run.stop()


# --- reading the run ---------------------------------------------------------------------------


def _rejected(s: Statuses, names: tuple[str, ...] | list[str], *kinds: str) -> int:
    return sum(s.get(n, {}).get("rejected", {}).get(k, 0) for n in names for k in kinds)


def _rejected_from(s: Statuses, names: tuple[str, ...] | list[str], sender: str) -> int:
    return sum(sum(s.get(n, {}).get("rejected_from", {}).get(sender, {}).values()) for n in names)


def _merger(s: Statuses, names: tuple[str, ...] | list[str], role: tuple[str, ...], key: str) -> int:
    name = f"[{role[0]}]" if len(role) == 1 else "⊔[" + ",".join(role) + "]"
    return sum(m.get(key, 0) for n in names for m in s.get(n, {}).get("mergers", []) if m["role"] == name)


def _leader(s: Statuses, role: tuple[str, ...]) -> tuple[str, int]:
    name = f"[{role[0]}]" if len(role) == 1 else "⊔[" + ",".join(role) + "]"
    known = [(m["epoch"], m["leader"]) for st in s.values() for m in st.get("mergers", []) if m["role"] == name]
    epoch, leader = max((e, ld) for e, ld in known if ld)
    return leader, epoch


def _moved(run: LocalDeployment, count: Callable[[Statuses], int], before: int, what: str) -> int:
    """Wait until ``count`` of the statuses exceeds ``before``; its value, or an AssertionError."""
    deadline = time.monotonic() + STATUS_WAIT
    now = before
    while time.monotonic() < deadline:
        run.check_alive()
        now = count(run.statuses())
        if now > before:
            return now
        time.sleep(0.1)
    raise AssertionError(f"{what}: the counter stayed at {now} (it was {before} before the attack)")


def _still_delivering(attack: Attack, timeout: float = 6) -> None:
    """s1 and s2 both deliver more while p1 publishes (nothing to check once p1 is done). One that
    an earlier attack stalled is left out until it delivers again, so that each test answers for
    its own attack."""
    run = attack.run
    s = run.statuses()
    for n, at in list(attack.stalled.items()):
        if s[n]["delivered"] > at:
            del attack.stalled[n]
    watched = [n for n in ("s1", "s2") if n not in attack.stalled]
    if s.get("p1", {}).get("done") or not watched:
        return
    before = {n: s[n]["delivered"] for n in watched}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.check_alive()
        s = run.statuses()
        if all(s[n]["delivered"] > before[n] for n in watched) or s.get("p1", {}).get("done", False):
            return
        time.sleep(0.1)
    stuck = {n: s[n]["delivered"] for n in watched if s[n]["delivered"] <= before[n]}
    attack.stalled.update(stuck)
    raise AssertionError(
        f"{sorted(stuck)} delivered nothing for {timeout} s after the attack while p1 published: {stuck}"
    )


def _published(run: LocalDeployment) -> int:
    return int(run.statuses().get("p1", {}).get("published", 0))


def _vm(pid: int, field_: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_ + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field_} for pid {pid}")


def _pid(run: LocalDeployment, name: str) -> int:
    return int(json.loads((run.run_dir / "run.json").read_text())["pids"][name])


def _stream_key(d: Deployment, subscriber: str, role: tuple[str, ...]) -> str:
    """The consumer key of ``subscriber``'s stream of ``role``, as its client computes it."""
    client = SubscriberClient(
        subscriber,
        d.subscription(subscriber),
        d.types,
        d.placement,
        None,
        split=d.streams,  # type: ignore[arg-type]
    )
    return client.streams[role].key


# --- the attacks -------------------------------------------------------------------------------


def test_01_deeply_nested_bytes(attack: Attack) -> None:
    """``[1, <a list nested 1,011 deep>]`` to a server (a RecursionError used to kill it)."""
    run, target = attack.run, "m1"
    before = _rejected(run.statuses(), [target], "malformed")
    attack.insider("p1").send_raw(target, b"\x92\x01" + b"\x91" * 1010 + b"\x90")
    _moved(run, lambda s: _rejected(s, [target], "malformed"), before, f"{target}'s malformed")
    run.check_alive()
    _still_delivering(attack)


def test_02_huge_frames(attack: Attack) -> None:
    """A 50 MiB frame (one msgpack array of empty arrays) and a 1 MiB frame of 200,000 one-byte
    bad messages in the transport's multi-message framing, to one server: it stays up, under
    1 GiB resident at its peak, and does not log a line per bad message."""
    run, target = attack.run, "m2"
    kinds = ("malformed", "oversized")
    before = _rejected(run.statuses(), [target], *kinds)
    n = 50 * (1 << 20) - 5
    insider = attack.insider("p1")
    insider.send_raw(target, b"\xdd" + n.to_bytes(4, "big") + b"\x90" * n)
    insider.send_raw(target, MANY + b"\x00\x00\x00\x01\xc1" * 200_000)
    pid = _pid(run, target)
    deadline = time.monotonic() + 2 * STATUS_WAIT
    while _rejected(run.statuses(), [target], *kinds) < before + 2 and time.monotonic() < deadline:
        run.check_alive()
        time.sleep(0.1)
    run.check_alive()
    peak, now = _vm(pid, "VmHWM"), _vm(pid, "VmRSS")
    assert peak < RSS_BUDGET_KB, f"{target} peaked at {peak >> 10} MiB resident ({now >> 10} MiB now)"
    assert _rejected(run.statuses(), [target], *kinds) >= before + 2, "both frames must be counted as rejected"
    lines = (run.run_dir / "out" / f"{target}.err").read_text(errors="replace").count("\n")
    assert lines < 10_000, f"{target} logged {lines} lines"
    _still_delivering(attack)


def test_03_a_type_of_50000_attributes(attack: Attack) -> None:
    """A Publish of p1 whose event declares its type A with 50,000 attributes."""
    run, replicas = attack.run, attack.placement(ROOT_A)
    kinds = ("inconsistent", "oversized", "malformed")
    before = _rejected(run.statuses(), replicas, *kinds)
    big = EventType("A", tuple(Attribute(f"a{i}", Kind.INT) for i in range(50_000)))
    seq = 10**6
    event = Event("huge", big, (0,) * 50_000, "p1", seq)
    attack.forged_ids.add("huge")
    attack.insider("p1").send_to(replicas, Publish("p1", seq, event))
    _still_delivering(attack)
    _moved(run, lambda s: _rejected(s, replicas, *kinds), before, "rejections of the 50,000-attribute type")
    for name in replicas:  # a rejection is logged in a line, not with the whole declaration
        longest = max(map(len, (run.run_dir / "out" / f"{name}.err").read_text(errors="replace").splitlines()))
        assert longest < 10_000, f"{name} logged a line of {longest} characters"


def test_04_a_subscriber_publishes_in_its_own_name(attack: Attack) -> None:
    """With s1's key, a Publish with publisher s1 to the replicas of [A]: s1 is no publisher, so
    it must not be ordered (no subscriber delivers it; No Creation holds)."""
    run, replicas = attack.run, attack.placement(ROOT_A)
    before = _rejected(run.statuses(), replicas, "unauthorised")
    event = attack.event("forged-s1", "A", 3, "s1", 0)
    attack.forged_ids.add("forged-s1")
    attack.insider("s1").send_to(replicas, Publish("s1", 0, event))
    _still_delivering(attack)
    _moved(run, lambda s: _rejected(s, replicas, "unauthorised"), before, "[A]'s unauthorised")
    assert _rejected_from(run.statuses(), replicas, "s1") > 0, "the rejections are not attributed to s1"


def test_05_a_forward_far_ahead_to_a_subscriber(attack: Attack) -> None:
    """With p1's key, a Forward of A⊔B at position 2**62 straight to s1: s1 must not take it
    (it would drop every later position) and keeps agreeing with s2."""
    run = attack.run

    def count(s: Statuses) -> int:
        return s.get("s1", {}).get("foreign", 0) + _rejected(s, ["s1"], "unauthorised")

    before = count(run.statuses())
    attack.insider("p1").send("s1", Forward(PAIRS, 2**62, 0, "heartbeat"))
    _still_delivering(attack)
    _moved(run, count, before, "s1's foreign/unauthorised")


def test_06_an_epoch_query_from_a_publisher(attack: Attack) -> None:
    """With p1's key, EpochQuery(B, epoch 10**12, leader p1) to the replicas of [B]: [B] must keep
    ordering under the epoch the coordination service gave."""
    run, replicas = attack.run, attack.placement(ROOT_B)

    def count(s: Statuses) -> int:
        return _rejected(s, replicas, "unauthorised", "impersonation") + _merger(s, replicas, ROOT_B, "unconfirmed")

    before = count(run.statuses())
    attack.insider("p1").send_to(replicas, EpochQuery(ROOT_B, 10**12, "p1"))
    time.sleep(1)  # the status files are a half second old at most
    leader, epoch = _leader(run.statuses(), ROOT_B)
    assert leader != "p1" and epoch < 10**12, f"[B]'s replicas took p1 as their leader: {leader}, epoch {epoch}"
    _still_delivering(attack)
    _moved(run, count, before, "[B]'s unauthorised/unconfirmed")


def test_08_a_publication_repeated_with_other_content(attack: Attack) -> None:
    """With p1's key, a Publish repeating a (p1, seq) already published, with other content."""
    run = attack.run
    published = _published(run)
    seq = next(k for k in range(max(0, published - 30), -1, -1) if attack.events[k]["type"] == "A")
    original = attack.events[seq]
    replicas = attack.placement(ROOT_A)
    before = _merger(run.statuses(), replicas, ROOT_A, "conflicting")
    other = attack.event(f"e{seq}", "A", (original["attrs"]["x"] + 1) % 10, "p1", seq)
    attack.insider("p1").send_to(replicas, Publish("p1", seq, other))
    _still_delivering(attack)
    _moved(run, lambda s: _merger(s, replicas, ROOT_A, "conflicting"), before, "[A]'s conflicting")


def test_09_replays(attack: Attack) -> None:
    """Old messages sent again: (a) a Decide of [A] with p1's key to [A]'s replicas, (b) a Forward
    of A⊔B at an old position with p1's key to s1 (neither may send these); (c) the same Forward
    with the key of a replica of A⊔B, which may (it must be ignored as old)."""
    run = attack.run
    s = run.statuses()
    replicas = attack.placement(ROOT_A)
    _, epoch = _leader(s, ROOT_A)
    first_a = next(k for k, e in enumerate(attack.events) if e["type"] == "A")
    decide = Decide(ROOT_A, epoch, (Decision(0, epoch, 1, "event", "p1", first_a),), 0)
    before = _rejected(s, replicas, "unauthorised")
    attack.insider("p1").send_to(replicas, decide)
    _moved(run, lambda s: _rejected(s, replicas, "unauthorised"), before, "[A]'s unauthorised for a Decide from p1")

    def at_s1(s: Statuses) -> int:
        return s.get("s1", {}).get("foreign", 0) + _rejected(s, ["s1"], "unauthorised")

    before = at_s1(run.statuses())
    old = Forward(PAIRS, 1, 1, "heartbeat")
    attack.insider("p1").send("s1", old)
    _moved(run, at_s1, before, "s1's foreign/unauthorised for a Forward from p1")
    pairs_replica = attack.placement(PAIRS)[0]
    attack.insider(pairs_replica).send("s1", old)
    _still_delivering(attack)


def test_10_an_ack_far_ahead(attack: Attack) -> None:
    """With s1's key, an Ack of A⊔B far beyond what s1 received, to every replica of A⊔B: s2
    (same consumer key) must keep receiving everything."""
    run, replicas = attack.run, attack.placement(PAIRS)
    key = _stream_key(attack.deployment, "s1", PAIRS)
    before = _merger(run.statuses(), replicas, PAIRS, "bad_acks")
    attack.insider("s1").send_to(replicas, Ack(PAIRS, key, "s1", 2**62))
    _still_delivering(attack)
    _moved(run, lambda s: _merger(s, replicas, PAIRS, "bad_acks"), before, "A⊔B's bad_acks")


def test_11_a_replica_that_lies_about_its_log(attack: Attack) -> None:
    """With the key of a follower of [A], Holds claiming 10**9 decisions to [A]'s leader: it is
    cut down to the leader's log (counted), so nothing commits that a majority does not hold.
    (A replica is trusted with its role's order; this bounds what a lie about a length does.)"""
    run = attack.run
    s = run.statuses()
    leader, epoch = _leader(s, ROOT_A)
    follower = next(p for p in attack.placement(ROOT_A) if p != leader)
    before = _merger(s, [leader], ROOT_A, "overclaimed")
    attack.insider(follower).send(leader, Holds(ROOT_A, epoch, follower, 10**9))
    _still_delivering(attack)
    _moved(run, lambda s: _merger(s, [leader], ROOT_A, "overclaimed"), before, "[A]'s overclaimed")


def test_07_a_publication_to_the_leader_alone(attack: Attack) -> None:
    """With the key of publisher p2 (in the deployment, publishing nothing itself), once p1 is
    done: a Publish of an A sent ONLY to the leader of [A], then a B, an A and a B to all their
    replicas. [A] must not stall on the first (its followers never got it): s1 and s2 deliver
    what the embedded engine delivers with these four appended. (Last of the attacks: it needs
    p1 done, to know where its publications fall in the order.)"""
    run = attack.run
    settled(run, quiet=1.0, timeout=40)
    p2 = attack.insider("p2")
    s = run.statuses()
    leader, _ = _leader(s, ROOT_A)
    before = _merger(s, attack.placement(ROOT_A), ROOT_A, "fetches")
    plan = [("A", 5, (leader,)), ("B", 7, attack.placement(ROOT_B)), ("A", 2, attack.placement(ROOT_A))]
    plan.append(("B", 9, attack.placement(ROOT_B)))
    for seq, (type_, x, targets) in enumerate(plan):
        event = attack.event(f"p2-{seq}", type_, x, "p2", seq)
        p2.log_publication(run.run_dir, event)
        p2.send_to(targets, Publish("p2", seq, event))
        attack.extra.append({"id": event.id, "type": type_, "attrs": {"x": x}})
        time.sleep(0.3)
    expected = _expected(attack)
    assert len(expected["s1"]) > len(embedded(attack.folder)["s1"]), "p2's publications add no delivery"
    want = len(expected["s1"])
    try:
        run.wait_for(lambda s: all(s[n]["delivered"] >= want for n in ("s1", "s2")), 15, f"s1 and s2 to deliver {want}")
    except Exception as exc:
        got = {n: st.get("delivered") for n, st in run.statuses().items() if n in SUBSCRIBERS}
        # One of s1 and s2 short alone is an earlier attack's harm to that subscriber, not [A]'s stall.
        raise AssertionError(f"s1 or s2 short after a publication to [A]'s leader alone: {got}, want {want}") from exc
    assert _merger(run.statuses(), attack.placement(ROOT_A), ROOT_A, "fetches") > before, "no replica fetched it"


def _expected(attack: Attack) -> dict[str, list[tuple[int, tuple[str, ...]]]]:
    """The embedded engine's deliveries on the events file with p2's publications appended."""
    folder = attack.folder / "expected"
    folder.mkdir(exist_ok=True)
    lines = [json.dumps(e) for e in [*attack.events, *attack.extra]]
    (folder / "events.jsonl").write_text("\n".join(lines) + "\n")
    return embedded(folder)


def test_the_run_verifies(attack: Attack) -> None:
    """The whole run, judged: every honest process stayed up, the merged run log keeps every
    property, s1 and s2 deliver identical sequences, as many as the embedded engine, and no
    forged event was delivered."""
    run = attack.run
    run.check_alive()
    settled(run, quiet=1.0, timeout=30)
    run.check_alive()
    for insider in attack.insiders.values():
        insider.close(wait=0.1)
    attack.insiders.clear()
    attack.stopped = True
    run.stop()
    by = verified(run, EVENTS + len(attack.extra))
    delivered = {e for got in by.values() for _, relation in got for e in relation}
    assert not delivered & attack.forged_ids, f"forged events delivered: {delivered & attack.forged_ids}"
    assert by["s1"] == by["s2"], "s1 and s2 disagree"
    expected = _expected(attack)
    assert len(by["s1"]) == len(expected["s1"]), f"s1 delivered {len(by['s1'])}, the engine {len(expected['s1'])}"
