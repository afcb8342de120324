"""The overlay's protocol core (``faidecs/overlay``), driven by hand with no simulator.

Roles and placement are pure functions; filters are checked on validated events; merger replicas
and subscriber clients are state machines fed hand-made messages, whose outgoing ``(dest, msg)``
sends a small in-test pump routes (and may drop, to play lost messages or a crashed process).
The coordination service is the in-memory one the simulator uses. Run logs with ``joined`` and
``left`` are written by hand and judged by the property checker.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from faidecs.grammar import compile_program
from faidecs.grammar.model import Conjunction, Program
from faidecs.matching.engine import Engine
from faidecs.matching.events import Event, EventValidator
from faidecs.merging.filters import ACCEPT_ALL, Filter, union_all
from faidecs.merging.roles import Role, ancestry, conjunction_role, is_root, parents, role_name, role_of
from faidecs.overlay.core.coordination import SimulatedCoordination
from faidecs.overlay.core.keys import is_subscriber, merger_key, subscriber_key
from faidecs.overlay.core.messages import (
    Ack,
    Commit,
    Connect,
    Decide,
    Decision,
    Disconnect,
    Down,
    Forward,
    Holds,
    LeaderChange,
    Message,
    NewLog,
    Publish,
    Register,
    Send,
    Up,
)
from faidecs.overlay.core.placement import place
from faidecs.overlay.core.replica import MergerReplica, ProtocolError
from faidecs.overlay.core.subscriber import SubscriberClient
from faidecs.properties import check
from faidecs.runs.runlog import Delivered, Published, RunLog, RunLogError

TYPES = "type A(x: int)\ntype B(x: int)\ntype C(x: int)\n"
SERVERS = ["m1", "m2", "m3"]


def compiled(subscriptions: str) -> Program:
    return compile_program(TYPES + subscriptions)


def conj(condition: str) -> Conjunction:
    """The only conjunction of ``subscription S: condition``."""
    program = compiled(f"subscription S: {condition}")
    (only,) = program.subscriptions[0].conjunctions
    return only


VALIDATOR = EventValidator(compiled("").types)


def ev(event_id: str, type_name: str, x: int) -> Event:
    return VALIDATOR.validate({"id": event_id, "type": type_name, "attrs": {"x": x}})


def placement(role: Role) -> tuple[str, ...]:
    return place(role, SERVERS)


# --- roles -------------------------------------------------------------------------------------


def test_role_of_dedupes_and_sorts() -> None:
    """A role is the distinct types in name order; no types is no role."""
    assert role_of(["B", "A", "A"]) == ("A", "B")
    assert role_of(["C", "B", "A", "C"]) == ("A", "B", "C")
    assert role_of(["T"]) == ("T",)
    with pytest.raises(ValueError):
        role_of([])


def test_conjunction_role_is_the_type_set() -> None:
    """A conjunction's merger is named by its types, repeated instances counted once."""
    assert conjunction_role(conj("C and A[0] and A[1] and A[0].x > A[1].x")) == ("A", "C")


def test_parents_split_off_the_last_type() -> None:
    """``⊔[T1..Tk]`` merges ``⊔[T1..Tk-1]`` (left) with ``[Tk]`` (right); a root has none."""
    assert parents(("A", "B", "C")) == (("A", "B"), ("C",))
    assert parents(("A", "B")) == (("A",), ("B",))
    assert is_root(("A",)) and not is_root(("A", "B"))
    with pytest.raises(ValueError, match=r"\[A\] is a root merger"):
        parents(("A",))


def test_ancestry_lists_every_needed_merger() -> None:
    """Ancestry is the role and, transitively, both parents of every conjunction merger in it."""
    assert ancestry(("A",)) == [("A",)]
    assert ancestry(("A", "B", "C")) == [("A",), ("B",), ("C",), ("A", "B"), ("A", "B", "C")]
    for role in [("A", "B"), ("A", "B", "C"), ("A", "B", "C", "D", "E")]:
        needed = ancestry(role)
        assert role in needed
        assert len(needed) == len(set(needed))
        for r in needed:
            if not is_root(r):
                left, right = parents(r)
                assert left in needed and right in needed
        # roots first, then by length: a merger's parents come before it
        assert [len(r) for r in needed] == sorted(len(r) for r in needed)


def test_role_name() -> None:
    """Roots print as ``[T]``, conjunction mergers as ``⊔[T1,...]``."""
    assert role_name(("A",)) == "[A]"
    assert role_name(("A", "B")) == "⊔[A,B]"
    assert merger_key(("A", "B")) == "merger:⊔[A,B]"


def test_subscriber_keys() -> None:
    """Subscriber keys ignore conjunction order but not options; merger keys are not subscribers."""
    k = subscriber_key(["x", "y"], "FR+PI+plain")
    assert k == subscriber_key(["y", "x"], "FR+PI+plain")
    assert k != subscriber_key(["x", "y"], "MR+PI+plain")
    assert k != subscriber_key(["x"], "FR+PI+plain")
    assert is_subscriber(k) and not is_subscriber(merger_key(("A",)))


# --- placement ---------------------------------------------------------------------------------

MEMBERS = [f"s{k}" for k in range(10)]
MANY_ROLES: list[Role] = [(f"T{k}",) for k in range(150)] + [(f"T{k}", f"U{k}") for k in range(50)]


def test_place_is_deterministic_and_order_free() -> None:
    """The same membership, in any order and with repeats, gives the same ranked set."""
    for role in MANY_ROLES[:20]:
        first = place(role, MEMBERS)
        assert place(role, list(reversed(MEMBERS))) == first
        assert place(role, MEMBERS + MEMBERS[:3]) == first


def test_place_returns_distinct_members_of_the_requested_count() -> None:
    """Each role gets ``replicas`` distinct members of the membership; different roles differ."""
    sets = set()
    for role in MANY_ROLES:
        for n in (1, 3, 5):
            chosen = place(role, MEMBERS, n)
            assert len(chosen) == n == len(set(chosen))
            assert set(chosen) <= set(MEMBERS)
        sets.add(place(role, MEMBERS))
        # a prefix: asking for fewer replicas keeps the best ranked
        assert place(role, MEMBERS, 5)[:3] == place(role, MEMBERS, 3)
    assert len(sets) > 20  # hashing spreads roles over the members


def test_place_needs_enough_members() -> None:
    """Fewer distinct members than replicas (or no replica at all) is refused."""
    with pytest.raises(ValueError, match="needs 3 replicas; the membership has 2 members"):
        place(("A",), ["m1", "m2", "m2"])
    with pytest.raises(ValueError):
        place(("A",), ["m1"], 0)
    assert place(("A",), ["m1", "m2", "m3"]) == placement(("A",))


def test_adding_a_member_moves_only_the_roles_it_ranks_high_for() -> None:
    """Rendezvous: a role's set changes only if the newcomer enters it, and then only by it
    replacing the lowest ranked old member; that happens to a minority of roles."""
    grown = MEMBERS + ["new"]
    changed = 0
    for role in MANY_ROLES:
        before, after = place(role, MEMBERS), place(role, grown)
        if before == after:
            continue
        changed += 1
        assert "new" in after
        assert [m for m in after if m != "new"] == list(before[:-1])
    assert 0 < changed < len(MANY_ROLES) // 2


def test_removing_a_member_keeps_the_sets_without_it() -> None:
    """A role whose set lacks the removed member keeps its set and order; one that had it keeps
    its other members in order and takes the next ranked member last."""
    gone = MEMBERS[4]
    shrunk = [m for m in MEMBERS if m != gone]
    affected = 0
    for role in MANY_ROLES:
        before, after = place(role, MEMBERS), place(role, shrunk)
        if gone not in before:
            assert after == before
        else:
            affected += 1
            assert list(after[:-1]) == [m for m in before if m != gone]
            assert after[-1] == place(role, MEMBERS, 4)[3]
    assert affected > 0


# --- filters -----------------------------------------------------------------------------------

PAPER = "A and B and A.x > 2 and B.x < A.x"


def test_filter_of_takes_unary_predicates_per_slot() -> None:
    """Each type gets its slots' unary predicates; binary predicates are left to the mergers'
    engines; a slot with no unary predicate accepts every event of its type."""
    program = compile_program("type A(x: int)\ntype B(x: int)\nsubscription S: " + PAPER)
    f = Filter.of(program.subscriptions[0].conjunctions[0])
    assert set(f.alternatives) == {"A", "B"}
    assert f.alternatives["B"] == ACCEPT_ALL
    (alt,) = f.alternatives["A"]
    assert [p.text for p, _ in alt] == ["A[0].x > 2"]
    assert all(p.unary for alts in f.alternatives.values() for a in alts for p, _ in a)
    assert f.describe() == "A if (A[0].x > 2); B"

    v = EventValidator(program.types)
    assert f.passes(v.validate({"id": "a1", "type": "A", "attrs": {"x": 3}}))
    assert not f.passes(v.validate({"id": "a2", "type": "A", "attrs": {"x": 2}}))
    # B.x < A.x is binary: any B passes, however large
    assert f.passes(v.validate({"id": "b1", "type": "B", "attrs": {"x": 1000}}))


def test_filter_alternatives_per_instance_and_unlisted_types() -> None:
    """Two instances of one type are two alternatives; a type not listed passes nothing."""
    f = Filter.of(conj("A[0] and A[1] and A[0].x > 5 and A[1].x < 0"))
    assert len(f.alternatives["A"]) == 2
    assert f.passes(ev("a", "A", 6)) and f.passes(ev("b", "A", -1))
    assert not f.passes(ev("c", "A", 3))
    assert not f.passes(ev("d", "B", 6))
    assert not Filter.nothing().passes(ev("e", "A", 1))
    assert Filter.nothing().describe() == "nothing"


def test_union_passes_what_either_passes() -> None:
    """The union passes an event iff one of its parts does; accept-all absorbs predicates."""
    high, low = Filter.of(conj("A and A.x > 2")), Filter.of(conj("A and B and A.x < 0 and B.x = 1"))
    u = high.union(low)
    for x in range(-3, 6):
        a = ev(f"a{x}", "A", x)
        assert u.passes(a) == (high.passes(a) or low.passes(a))
        b = ev(f"b{x}", "B", x)
        assert u.passes(b) == (x == 1)
    assert union_all([high, low]) == u == low.union(high)
    everything = u.union(Filter.of(conj("A")))
    assert everything.alternatives["A"] == ACCEPT_ALL
    assert union_all([]) == Filter.nothing()


def test_covers() -> None:
    """Accept-all covers anything of its type; a union covers its parts; no filter covers a
    type it does not list; a narrower filter does not cover a wider one."""
    high, low, all_a = Filter.of(conj("A and A.x > 2")), Filter.of(conj("A and A.x < 0")), Filter.of(conj("A"))
    with_b = Filter.of(conj("A and B and A.x > 2"))
    assert all_a.covers(high) and all_a.covers(low) and all_a.covers(all_a)
    u = high.union(low)
    assert u.covers(high) and u.covers(low) and u.covers(u)
    assert not high.covers(low) and not high.covers(u) and not high.covers(all_a)
    assert not all_a.covers(with_b)  # B is missing
    assert with_b.covers(high) and not high.covers(with_b)
    assert all_a.covers(Filter.nothing()) and not Filter.nothing().covers(high)


def test_covers_is_sound() -> None:
    """Whenever ``f.covers(g)``, every event ``g`` passes, ``f`` passes too."""
    conditions = ["A", "A and A.x > 2", "A and A.x < 0", "A and B and A.x > 2", "B and B.x = 1", "A and B"]
    base = [Filter.of(conj(c)) for c in conditions]
    filters = base + [a.union(b) for a in base for b in base] + [f.restrict(["A"]) for f in base]
    events = [ev(f"{t}{x}", t, x) for t in "ABC" for x in range(-2, 5)]
    covered = 0
    for f in filters:
        for g in filters:
            if f.covers(g):
                covered += 1
                assert all(f.passes(e) for e in events if g.passes(e)), (f.describe(), g.describe())
    assert covered > len(filters)  # not only the reflexive pairs


def test_restrict() -> None:
    """Restricting keeps only the listed types' alternatives."""
    f = Filter.of(conj(PAPER))
    a_only = f.restrict(["A"])
    assert set(a_only.alternatives) == {"A"}
    assert a_only.alternatives["A"] == f.alternatives["A"]
    assert not a_only.passes(ev("b", "B", 0)) and a_only.passes(ev("a", "A", 9))
    assert f.restrict(["C"]) == Filter.nothing()
    assert f.restrict(("A", "B")) == f


# --- a message pump for replicas ---------------------------------------------------------------

Drop = Callable[[str, str, Message], bool]


@dataclass(repr=False)
class Pump:
    """Routes sends between hand-built replicas, FIFO, at one time; keeps what is addressed to
    anyone else (consumers, publishers); ``drop`` loses chosen messages."""

    replicas: dict[tuple[str, Role], MergerReplica]
    now: int = 0
    drop: Drop = lambda src, dest, msg: False
    queue: deque[tuple[str, str, Message]] = field(default_factory=deque)
    outbox: dict[str, list[Message]] = field(default_factory=dict)
    delivered: list[tuple[str, str, Message]] = field(default_factory=list)

    @staticmethod
    def _for(replica: MergerReplica, msg: Message) -> bool:
        """Dispatch as a server does: publications by event type, streams by consumer key,
        notifications to every replica, the rest by role."""
        if isinstance(msg, (Down, Up)):
            return True
        if isinstance(msg, Publish):
            return replica.role == role_of([msg.event.type])
        if isinstance(msg, Forward):
            return replica.key == msg.consumer
        return bool(replica.role == getattr(msg, "role", None))

    def tick(self) -> None:
        """Tick every replica (at the pump's time) and route what that sends."""
        for (p, _), replica in self.replicas.items():
            self.send(p, replica.tick(self.now))
        self.run()

    def send(self, src: str, sends: list[Send]) -> None:
        for dest, msg in sends:
            self.queue.append((src, dest, msg))

    def to(self, dest: str, msg: Message, src: str = "zk") -> None:
        self.queue.append((src, dest, msg))

    def run(self) -> None:
        while self.queue:
            src, dest, msg = self.queue.popleft()
            if self.drop(src, dest, msg):
                continue
            targets = [r for (p, role), r in self.replicas.items() if p == dest and self._for(r, msg)]
            if not targets:
                self.outbox.setdefault(dest, []).append(msg)
                continue
            for r in targets:
                self.delivered.append((src, dest, msg))
                self.send(dest, r.handle(src, msg, self.now))


def root_group(role: Role = ("A",), **kwargs: Any) -> tuple[Pump, tuple[str, ...]]:
    """The three replicas of a root role, epoch 1 under the placement's first server."""
    servers = placement(role)
    pump = Pump({(p, role): MergerReplica(role, p, placement, **kwargs) for p in servers})
    for p in servers:
        pump.to(p, LeaderChange(role, servers[0], 1))
    pump.run()
    return pump, servers


def publish(pump: Pump, role: Role, publisher: str, seq: int, event: Event) -> None:
    for p in placement(role):
        pump.to(p, Publish(publisher, seq, event), src=publisher)
    pump.run()


def rep(pump: Pump, process: str, role: Role = ("A",)) -> MergerReplica:
    return pump.replicas[(process, role)]


def test_replica_needs_to_be_placed() -> None:
    """A replica can only be built on a server of the role's placement."""
    with pytest.raises(ValueError, match="m9 is not a replica of"):
        MergerReplica(("A",), "m9", placement)


def test_first_epoch_installs_an_empty_log_everywhere() -> None:
    """After the first leader change every replica is in epoch 1 under the leader, with nothing
    committed."""
    pump, servers = root_group()
    leader = servers[0]
    for p in servers:
        r = rep(pump, p)
        assert (r.log.epoch, r.log.leader, r.log.status, r.log.commit, r.log.decisions) == (1, leader, "normal", -1, [])
    assert rep(pump, leader).is_leading()
    assert not any(rep(pump, p).is_leading() for p in servers[1:])


def test_publication_is_decided_by_the_leader_and_committed_by_a_majority() -> None:
    """Every replica receives the publication; only the leader decides; all end with the same
    committed log."""
    pump, servers = root_group()
    publish(pump, ("A",), "pub", 0, ev("a1", "A", 3))
    publish(pump, ("A",), "pub", 1, ev("a2", "A", 4))
    pump.tick()  # followers learn the commit index from the next Decide or the leader's tick
    logs = [rep(pump, p).committed() for p in servers]
    assert logs[0] == logs[1] == logs[2]
    assert [(d.position, d.epoch, d.kind, d.source, d.key) for d in logs[0]] == [
        (0, 1, "event", "pub", 0),
        (1, 1, "event", "pub", 1),
    ]
    decides = [m for s, _, m in pump.delivered if isinstance(m, Decide)]
    assert decides and all(s == servers[0] for s, _, m in pump.delivered if isinstance(m, Decide))
    # the same publication again (a publisher retrying) is not decided twice
    publish(pump, ("A",), "pub", 1, ev("a2", "A", 4))
    assert len(rep(pump, servers[0]).log.decisions) == 2


def test_commit_with_one_follower_holding() -> None:
    """A decision is committed with 2 of 3 replicas holding it: one follower's Holds lost."""
    pump, servers = root_group()
    leader, f1, f2 = servers
    pump.drop = lambda src, dest, msg: isinstance(msg, Holds) and src == f2
    publish(pump, ("A",), "pub", 0, ev("a1", "A", 3))
    assert rep(pump, leader).log.commit == 0
    pump.tick()
    assert [m for _, d, m in pump.delivered if d == f2 and isinstance(m, Commit)] == [Commit(("A",), 1, 0)]
    assert rep(pump, f1).log.commit == rep(pump, f2).log.commit == 0
    # the next tick has nothing new to tell
    pump.tick()
    assert len([m for _, _, m in pump.delivered if isinstance(m, Commit)]) == 2


def test_no_commit_without_a_majority() -> None:
    """With both followers' Holds lost the leader holds the decision alone: nothing commits, and
    a connected consumer gets nothing."""
    pump, servers = root_group()
    leader = servers[0]
    pump.drop = lambda src, dest, msg: isinstance(msg, Holds)
    key = subscriber_key(["A"], "o")
    pump.to(leader, Register(("A",), key, "c1", Filter.of(conj("A"))), src="c1")
    pump.to(leader, Connect(("A",), key, "c1", -1), src="c1")
    pump.run()
    publish(pump, ("A",), "pub", 0, ev("a1", "A", 3))
    pump.tick()
    assert len(rep(pump, leader).log.decisions) == 2  # the mark and the event
    assert all(rep(pump, p).log.commit == -1 for p in servers)
    assert all(len(rep(pump, p).log.decisions) == 2 for p in servers)  # followers hold them
    assert "c1" not in pump.outbox


def forwards(pump: Pump, process: str) -> list[tuple[int, str, str]]:
    """(position, kind, event id or request) of every Forward sent to ``process``."""
    out: list[tuple[int, str, str]] = []
    for m in pump.outbox.get(process, []):
        assert isinstance(m, Forward)
        out.append((m.position, m.kind, m.event.id if m.event is not None else m.request))
    return out


@pytest.mark.parametrize("reader", [0, 2])
def test_subscriber_consumer_gets_its_filtered_stream_after_its_mark(reader: int) -> None:
    """A registered consumer reads, from any replica, its mark then only the committed events
    after it that pass its filter."""
    pump, servers = root_group()
    publish(pump, ("A",), "pub", 0, ev("a0", "A", 10))  # before the mark: not for c1
    key = subscriber_key(["A and A.x > 2"], "o")
    f = Filter.of(conj("A and A.x > 2"))
    for p in servers:
        pump.to(p, Register(("A",), key, "c1", f), src="c1")
    pump.to(servers[reader], Connect(("A",), key, "c1", -1), src="c1")
    pump.run()
    for seq, x in enumerate([3, 1, 5, 2], start=1):
        publish(pump, ("A",), "pub", seq, ev(f"a{seq}", "A", x))
    pump.tick()
    assert forwards(pump, "c1") == [(1, "mark", "c1"), (2, "event", "a1"), (4, "event", "a3")]
    (mark, *_) = pump.outbox["c1"]
    assert isinstance(mark, Forward) and mark.consumer == key and mark.filter == f
    # a repeated registration by the same request is not logged again
    for p in servers:
        pump.to(p, Register(("A",), key, "c1", f), src="c1")
    pump.run()
    assert [d.kind for d in rep(pump, servers[0]).log.decisions].count("mark") == 1
    assert rep(pump, servers[reader]).filter_at(key, 0) is None
    assert rep(pump, servers[reader]).filter_at(key, 1) == f


def test_reconnecting_consumer_resumes_after_its_position() -> None:
    """Connect with ``after`` sends only what follows it; Disconnect stops the link."""
    pump, servers = root_group()
    key = subscriber_key(["A"], "o")
    for p in servers:
        pump.to(p, Register(("A",), key, "c1", Filter.of(conj("A"))), src="c1")
    pump.to(servers[1], Connect(("A",), key, "c1", -1), src="c1")
    pump.run()
    publish(pump, ("A",), "pub", 0, ev("a0", "A", 0))
    pump.tick()
    pump.to(servers[1], Disconnect(("A",), key, "c1"), src="c1")
    pump.run()
    publish(pump, ("A",), "pub", 1, ev("a1", "A", 1))
    publish(pump, ("A",), "pub", 2, ev("a2", "A", 2))
    pump.tick()
    assert forwards(pump, "c1") == [(0, "mark", "c1"), (1, "event", "a0")]
    pump.to(servers[2], Connect(("A",), key, "c1", 2), src="c1")
    pump.run()
    assert forwards(pump, "c1")[2:] == [(3, "event", "a2")]


def connect_subscriber(pump: Pump, name: str, condition: str, reader: str) -> str:
    """Register ``name`` (a subscriber to ``condition`` at [A]) with every replica and connect it
    to ``reader``; returns its consumer key."""
    key = subscriber_key([condition], name)
    for p in placement(("A",)):
        pump.to(p, Register(("A",), key, name, Filter.of(conj(condition))), src=name)
    pump.to(reader, Connect(("A",), key, name, -1), src=name)
    pump.run()
    return key


def ack_all(pump: Pump, key: str, name: str, position: int) -> None:
    for p in placement(("A",)):
        pump.to(p, Ack(("A",), key, name, position), src=name)
    pump.run()


def test_payloads_are_dropped_once_every_consumer_acknowledged_them() -> None:
    """With ``retain`` 0, a replica keeps only the payloads some consumer has not acknowledged."""
    pump, servers = root_group(retain=0)
    key = connect_subscriber(pump, "c1", "A", servers[0])
    for seq in range(10):
        publish(pump, ("A",), "pub", seq, ev(f"a{seq}", "A", seq))
    pump.tick()
    assert all(rep(pump, p).buffered() == 10 for p in servers)
    ack_all(pump, key, "c1", 5)  # the mark and a0..a4
    pump.tick()
    assert [rep(pump, p).buffered() for p in servers] == [5, 5, 5]


def test_a_leaver_does_not_hold_back_dropping_payloads() -> None:
    """BUG: a subscriber that left (Disconnect, as SubscriberClient.leave sends) keeps its last
    Ack in the replica's ``acks``, so the replica never drops a payload after that position
    again, however far the live consumers acknowledge (docs/overlay.md: dropped once every *live*
    consumer acknowledged it). Replicas that never got the Disconnect keep it too."""
    pump, servers = root_group(retain=0)
    reader = servers[0]
    k1 = connect_subscriber(pump, "c1", "A", reader)
    k2 = connect_subscriber(pump, "c2", "A and A.x >= 0", reader)
    publish(pump, ("A",), "pub", 0, ev("a0", "A", 0))
    pump.tick()
    ack_all(pump, k1, "c1", 2)
    pump.to(reader, Disconnect(("A",), k1, "c1"), src="c1")  # c1 leaves
    pump.run()
    for seq in range(1, 20):
        publish(pump, ("A",), "pub", seq, ev(f"a{seq}", "A", seq))
    pump.tick()
    ack_all(pump, k2, "c2", rep(pump, reader).log.commit)  # the only live consumer has everything
    pump.tick()
    assert rep(pump, reader).buffered() == 0, f"{rep(pump, reader).buffered()} payloads kept for c1, who left"


def test_a_selective_subscriber_sees_time_pass_while_the_merger_is_busy() -> None:
    """BUG: heartbeats are logged only when the leader has decided nothing for ``heartbeat_every``
    ms. A subscriber whose filter rejects a busy merger's events therefore receives nothing after
    its mark for as long as the traffic lasts: its stream's time stands still, and a disjunction
    client holds every other stream's entries back for that whole time."""
    pump, servers = root_group()
    connect_subscriber(pump, "wide", "A", servers[1])
    connect_subscriber(pump, "narrow", "A and A.x > 1000", servers[1])
    seq = 0
    for now in range(0, 1001, 10):  # one publication every 40 ms, heartbeat_every = 50
        pump.now = now
        if now % 40 == 0:
            publish(pump, ("A",), "pub", seq, ev(f"a{seq}", "A", 1))
            seq += 1
        pump.tick()
    assert max(m.ts for m in pump.outbox["wide"] if isinstance(m, Forward)) == 1000
    latest = max(m.ts for m in pump.outbox["narrow"] if isinstance(m, Forward))
    assert latest >= 1000 - 2 * 50, f"narrow's stream stopped at ts {latest} while the merger was busy until 1000"


def test_decide_of_an_older_epoch_is_rejected() -> None:
    """After a leader change to epoch 2, a Decide stamped epoch 1 is counted and ignored."""
    pump, servers = root_group()
    leader, f1, f2 = servers
    publish(pump, ("A",), "pub", 0, ev("a1", "A", 3))
    follower = rep(pump, f2)
    assert follower.handle(f1, LeaderChange(("A",), f1, 2), 0) == []
    stale = Decide(("A",), 1, (Decision(1, 1, 0, "event", "pub", 1),), 0)
    assert follower.handle(leader, stale, 0) == []
    assert follower.log.stale_rejected == 1
    assert len(follower.log.decisions) == 1
    # an older leader change is ignored too
    follower.handle("zk", LeaderChange(("A",), leader, 1), 0)
    assert (follower.log.epoch, follower.log.leader) == (2, f1)


def test_new_leader_recovers_the_committed_log_from_a_majority() -> None:
    """The old leader crashes with decisions committed by it and one follower only; the next
    leader, which never received them, adopts them from the majority and numbers on."""
    pump, servers = root_group()
    old, nxt, other = servers
    # nxt misses every Decide/Commit of epoch 1 (but receives the publications)
    pump.drop = lambda src, dest, msg: src == old and dest == nxt
    publish(pump, ("A",), "pub", 0, ev("a1", "A", 3))
    publish(pump, ("A",), "pub", 1, ev("a2", "A", 4))
    assert rep(pump, old).log.commit == 1
    assert len(rep(pump, other).log.decisions) == 2  # it may not know yet that both are committed
    assert rep(pump, nxt).log.decisions == []
    committed = rep(pump, old).committed()

    # the old leader crashes: nothing reaches it or leaves it
    pump.drop = lambda src, dest, msg: old in (src, dest)
    for p in servers:
        pump.to(p, LeaderChange(("A",), nxt, 2))
    pump.run()
    new = rep(pump, nxt)
    assert new.is_leading() and new.log.epoch == 2
    assert new.committed() == committed
    publish(pump, ("A",), "pub", 2, ev("a3", "A", 5))
    pump.tick()
    for p in (nxt, other):
        log = rep(pump, p).committed()
        assert log[:2] == committed
        assert [(d.position, d.epoch, d.key) for d in log[2:]] == [(2, 2, 2)]
    assert rep(pump, old).log.epoch == 1  # it heard nothing


def test_recovery_redecides_what_the_old_leader_did_not_commit() -> None:
    """A decision only the crashed leader held is lost; the new leader decides the same
    publication itself, once."""
    pump, servers = root_group()
    old, nxt, other = servers
    pump.drop = lambda src, dest, msg: src == old and isinstance(msg, Decide)
    publish(pump, ("A",), "pub", 0, ev("a1", "A", 3))
    assert len(rep(pump, old).log.decisions) == 1 and rep(pump, old).log.commit == -1
    pump.drop = lambda src, dest, msg: old in (src, dest)
    for p in servers:
        pump.to(p, LeaderChange(("A",), nxt, 2))
    pump.run()
    pump.tick()
    log = rep(pump, nxt).committed()
    assert [(d.position, d.epoch, d.source, d.key) for d in log] == [(0, 2, "pub", 0)]
    assert rep(pump, other).committed() == log


def test_new_log_that_rewrites_a_committed_decision_is_a_protocol_error() -> None:
    """A replica refuses a NewLog whose prefix differs from what it committed."""
    pump, servers = root_group()
    publish(pump, ("A",), "pub", 0, ev("a1", "A", 3))
    pump.tick()
    r = rep(pump, servers[2])
    assert r.log.commit == 0
    other = Decision(0, 2, 0, "event", "pub", 99)
    r.handle("coordinator", LeaderChange(("A",), servers[1], 2), 0)  # the service names servers[1] for epoch 2
    with pytest.raises(ProtocolError, match="rewrites committed decisions"):
        r.handle(servers[1], NewLog(("A",), 2, (other,), 0), 0)
    with pytest.raises(ProtocolError):
        r.handle(servers[1], NewLog(("A",), 2, (), -1), 0)
    # a NewLog that keeps the committed prefix and extends it is taken
    keep = tuple(r.committed()) + (Decision(1, 2, 0, "heartbeat"),)
    assert r.handle(servers[1], NewLog(("A",), 2, keep, 0), 0) == [(servers[1], Holds(("A",), 2, servers[2], 2))]
    assert (r.log.epoch, r.log.leader, r.log.status, len(r.log.decisions)) == (2, servers[1], "normal", 2)


def test_stale_new_log_is_rejected() -> None:
    """A NewLog of an epoch older than the replica's is counted and ignored."""
    pump, servers = root_group()
    r = rep(pump, servers[2])
    r.handle("zk", LeaderChange(("A",), servers[1], 3), 0)
    assert r.handle(servers[0], NewLog(("A",), 1, (), -1), 0) == []
    assert r.log.stale_rejected == 1 and r.log.epoch == 3


def test_unexpected_message_is_a_protocol_error() -> None:
    """A root merger has no upstream stream: a Forward to it is a protocol error."""
    r = MergerReplica(("A",), placement(("A",))[0], placement)
    with pytest.raises(ProtocolError, match="is no input"):
        r.handle("x", Forward(("B",), 0, 0, "event", ev("b", "B", 1)), 0)


def test_conjunction_merger_widens_its_parents_before_logging_a_mark() -> None:
    """A subscriber's Register at ⊔[A,B] makes the merger register with [A] and [B] first; its
    own mark is logged after both upmarks, and the merged stream carries both parents' events."""
    roles: list[Role] = [("A",), ("B",), ("A", "B")]
    pump = Pump({(p, r): MergerReplica(r, p, placement) for r in roles for p in placement(r)})
    for r in roles:
        for p in placement(r):
            pump.to(p, LeaderChange(r, placement(r)[0], 1))
    for (p, _), replica in pump.replicas.items():
        pump.send(p, replica.start(0))
    pump.run()
    key = subscriber_key(["A and B"], "o")
    f = Filter.of(conj("A and B and A.x > 2"))
    for p in placement(("A", "B")):
        pump.to(p, Register(("A", "B"), key, "c1", f), src="c1")
    pump.to(placement(("A", "B"))[0], Connect(("A", "B"), key, "c1", -1), src="c1")
    pump.run()
    pump.tick()
    merged = rep(pump, placement(("A", "B"))[0], ("A", "B"))
    kinds = [(d.kind, d.source) for d in merged.committed()]
    assert kinds == [("upmark", "L"), ("upmark", "R"), ("mark", "")] or kinds == [
        ("upmark", "R"),
        ("upmark", "L"),
        ("mark", ""),
    ]
    publish(pump, ("A",), "pa", 0, ev("a1", "A", 3))
    publish(pump, ("A",), "pa", 1, ev("a2", "A", 1))  # filtered out at [A]
    publish(pump, ("B",), "pb", 0, ev("b1", "B", 0))
    pump.tick()
    pump.tick()
    got = [(k, i) for _, k, i in forwards(pump, "c1")]
    assert got == [("mark", "c1"), ("event", "a1"), ("event", "b1")]
    root_a = rep(pump, placement(("A",))[0], ("A",))
    assert merged.key in root_a.consumers.marks and root_a.filter_at(merged.key, 10) == f.restrict(["A"])


# --- subscriber client -------------------------------------------------------------------------


@dataclass
class FakeObserver:
    deliveries: list[tuple[str, int, tuple[str, ...]]] = field(default_factory=list)
    joins: list[tuple[str, str | None, int | None]] = field(default_factory=list)

    def deliver(self, process: str, conjunction: int, relation: tuple[str, ...]) -> None:
        self.deliveries.append((process, conjunction, relation))

    def snapshot_taken(self, peer: str, joiner: str) -> int:
        return 42

    def joined(self, process: str, peer: str | None, marker: int | None) -> None:
        self.joins.append((process, peer, marker))


class RecordingEngine:
    """Wraps a stream's engine to record, across streams, the order events are fed."""

    def __init__(self, inner: Engine, role: Role, fed: list[tuple[Role, str]]):
        self.inner, self.role, self.fed = inner, role, fed

    def publish(self, event: Event) -> Any:
        self.fed.append((self.role, event.id))
        return self.inner.publish(event)


AB, AC = ("A", "B"), ("A", "C")


def client(name: str = "c1") -> tuple[SubscriberClient, FakeObserver, list[tuple[Role, str]]]:
    program = compiled("subscription S: (A and B) or (A and C)")
    obs = FakeObserver()
    c = SubscriberClient(name, program.subscriptions[0], dict(program.types), placement, obs)
    fed: list[tuple[Role, str]] = []
    for role, s in c.streams.items():
        s.engine = RecordingEngine(s.engine, role, fed)  # type: ignore[assignment]
    return c, obs, fed


def mark(c: SubscriberClient, role: Role, position: int, ts: int, request: str = "c1") -> Forward:
    return Forward(role, position, ts, "mark", None, c.streams[role].key, request, c.streams[role].filter)


def event_fw(c: SubscriberClient, role: Role, position: int, ts: int, event: Event) -> Forward:
    return Forward(role, position, ts, "event", event, c.streams[role].key)


def heartbeat(c: SubscriberClient, role: Role, position: int, ts: int) -> Forward:
    return Forward(role, position, ts, "heartbeat", None, c.streams[role].key)


def test_client_streams_and_start() -> None:
    """One stream per type set, ranked by role; start registers each with every replica and
    connects to the first."""
    c, _, _ = client()
    assert [(r, s.rank, s.conjunctions) for r, s in c.streams.items()] == [(AB, 0, [0]), (AC, 1, [1])]
    assert c.streams[AB].key != c.streams[AC].key
    sends = c.start(0)
    for role in (AB, AC):
        s = c.streams[role]
        regs = [d for d, m in sends if isinstance(m, Register) and m.role == role]
        assert regs == list(placement(role))
        assert all(
            m.consumer == s.key and m.request == "c1" and m.filter == s.filter
            for _, m in sends
            if isinstance(m, Register) and m.role == role
        )
        assert (placement(role)[0], Connect(role, s.key, "c1", -1)) in sends
    assert not c.started()


def test_client_releases_in_timestamp_then_rank_order() -> None:
    """Entries are released by (ts, stream rank, position), each only once every other stream has
    passed it; the engines deliver under the subscription's conjunction numbers."""
    c, obs, fed = client()
    c.start(0)
    assert c.handle(c.streams[AB].reading or "", mark(c, AB, 5, 10, request="someone-else"), 0) == []
    assert not c.streams[AB].started  # another client's mark does not start us
    c.handle(c.streams[AB].reading or "", event_fw(c, AB, 6, 11, ev("early", "B", 0)), 0)  # before our mark: ignored
    c.handle(c.streams[AB].reading or "", mark(c, AB, 7, 10), 0)
    assert obs.joins == []
    c.handle(c.streams[AC].reading or "", mark(c, AC, 2, 8), 0)
    assert obs.joins == [("c1", None, None)] and c.started()

    c.handle(c.streams[AB].reading or "", event_fw(c, AB, 8, 20, ev("b1", "B", 0)), 0)
    assert fed == []  # AC has only reached ts 8
    c.handle(c.streams[AC].reading or "", event_fw(c, AC, 3, 15, ev("c1", "C", 0)), 0)
    assert fed == [(AC, "c1")]  # ts 15 < AB's 20; b1 (ts 20) waits for AC
    c.handle(c.streams[AC].reading or "", heartbeat(c, AC, 4, 20), 0)
    assert fed == [(AC, "c1"), (AB, "b1")]  # AC reached 20 and ranks after AB
    c.handle(c.streams[AC].reading or "", event_fw(c, AC, 5, 20, ev("a2", "A", 0)), 0)
    assert fed[2:] == []  # AB, ranked first, could still send ts 20
    c.handle(c.streams[AB].reading or "", event_fw(c, AB, 9, 20, ev("a3", "A", 0)), 0)
    assert fed[2:] == [(AB, "a3")]  # same ts: rank 0 first, though it came later
    c.handle(c.streams[AB].reading or "", heartbeat(c, AB, 10, 21), 0)
    assert fed[2:] == [(AB, "a3"), (AC, "a2")]
    assert obs.deliveries == [("c1", 0, ("a3", "b1")), ("c1", 1, ("a2", "c1"))]
    assert c.streams[AB].fed == [(8, "b1"), (9, "a3")] and c.streams[AC].released == 5


def test_client_ignores_duplicates() -> None:
    """A position at or below the last received (a copy after failover) is dropped."""
    c, obs, fed = client()
    c.start(0)
    c.handle(c.streams[AB].reading or "", mark(c, AB, 0, 1), 0)
    c.handle(c.streams[AC].reading or "", mark(c, AC, 0, 1), 0)
    c.handle(c.streams[AB].reading or "", event_fw(c, AB, 1, 5, ev("a1", "A", 0)), 0)
    c.handle(c.streams[AC].reading or "", heartbeat(c, AC, 1, 9), 0)
    assert fed == [(AB, "a1")]
    c.handle(c.streams[AB].reading or "", event_fw(c, AB, 1, 5, ev("a1", "A", 0)), 0)
    c.handle(c.streams[AB].reading or "", event_fw(c, AB, 0, 5, ev("zz", "B", 0)), 0)
    c.handle(c.streams[AB].reading or "", heartbeat(c, AB, 1, 100), 0)
    assert fed == [(AB, "a1")]
    assert (c.streams[AB].position, c.streams[AB].progress) == (1, 5)
    c.handle(c.streams[AB].reading or "", event_fw(c, AB, 2, 6, ev("b1", "B", 0)), 0)
    assert fed == [(AB, "a1"), (AB, "b1")] and obs.deliveries == [("c1", 0, ("a1", "b1"))]


def test_client_acks_what_it_released() -> None:
    """tick acknowledges to every replica the positions before the first entry still buffered."""
    c, _, _ = client()
    c.start(0)
    c.handle(c.streams[AB].reading or "", mark(c, AB, 3, 1), 0)
    c.handle(c.streams[AC].reading or "", mark(c, AC, 0, 1), 0)
    c.handle(c.streams[AB].reading or "", event_fw(c, AB, 4, 5, ev("a1", "A", 0)), 0)
    c.handle(c.streams[AB].reading or "", event_fw(c, AB, 6, 7, ev("a2", "A", 0)), 0)  # both wait for AC
    acks = [(d, m.role, m.position) for d, m in c.tick(100) if isinstance(m, Ack) and m.role == AB]
    assert acks == [(p, AB, 3) for p in placement(AB)]
    c.handle(c.streams[AC].reading or "", heartbeat(c, AC, 1, 10), 0)
    later = [(d, m.position) for d, m in c.tick(200) if isinstance(m, Ack) and m.role == AB]
    assert later == [(p, 6) for p in placement(AB)]
    assert c.tick(300) == []


def test_client_leave_disconnects_and_stops() -> None:
    """leave sends Disconnect for every stream to every replica (each holds its acknowledgements);
    afterwards nothing is handled."""
    c, _, fed = client()
    c.start(0)
    c.handle(c.streams[AB].reading or "", mark(c, AB, 0, 1), 0)
    c.handle(c.streams[AC].reading or "", mark(c, AC, 0, 1), 0)
    sends = c.leave()
    assert sorted(sends, key=str) == sorted(
        [(p, Disconnect(AB, c.streams[AB].key, "c1")) for p in placement(AB)]
        + [(p, Disconnect(AC, c.streams[AC].key, "c1")) for p in placement(AC)],
        key=str,
    )
    assert c.handle(c.streams[AB].reading or "", event_fw(c, AB, 1, 5, ev("a1", "A", 0)), 0) == []
    assert c.handle("m", Down(placement(AB)[0]), 0) == []
    assert c.tick(10_000) == []
    assert c.streams[AB].position == 0 and fed == []


def test_client_fails_over_when_its_replica_goes_down() -> None:
    """Down of the replica a stream reads reconnects to the next live one, after its position."""
    c, _, _ = client()
    c.start(0)
    c.handle(c.streams[AB].reading or "", mark(c, AB, 4, 1), 0)
    first, second = placement(AB)[:2]
    assert c.handle("zk", Down(first), 0) == [(second, Connect(AB, c.streams[AB].key, "c1", 4))]
    assert c.handle("zk", Up(first), 0) == []
    assert c.streams[AB].reading == second


# --- coordination ------------------------------------------------------------------------------

PROCESSES = ["m1", "m2", "m3", "sub"]


def test_coordination_elects_placement_order_first() -> None:
    """At start each role's first placed replica leads epoch 1, and every replica is told."""
    roles: list[Role] = [("A",), ("B",), ("A", "B")]
    zk = SimulatedCoordination(roles, placement, PROCESSES)
    notes = zk.start()
    for role in roles:
        assert zk.leadership()[role] == (placement(role)[0], 1)
        assert [(p, m) for p, m in notes if isinstance(m, LeaderChange) and m.role == role] == [
            (p, LeaderChange(role, placement(role)[0], 1)) for p in placement(role)
        ]


def test_coordination_fails_over_to_the_next_live_replica() -> None:
    """The leader's lost session: Down to every other process, and the next replica in
    placement order leads with epoch + 1, told to all replicas. A non-leader's loss elects
    nobody; a second loss of the same session is no news."""
    role: Role = ("A",)
    first, second, third = placement(role)
    zk = SimulatedCoordination([role], placement, PROCESSES)
    zk.start()
    notes = zk.session_lost(first)
    assert [(p, m) for p, m in notes if isinstance(m, Down)] == [(p, Down(first)) for p in PROCESSES if p != first]
    assert [(p, m) for p, m in notes if isinstance(m, LeaderChange)] == [
        (p, LeaderChange(role, second, 2)) for p in placement(role)
    ]
    assert zk.leadership()[role] == (second, 2)
    assert zk.session_lost(first) == []
    notes = zk.session_lost(third)
    assert not any(isinstance(m, LeaderChange) for _, m in notes)
    assert zk.leadership()[role] == (second, 2)


def test_coordination_session_back() -> None:
    """A returning session is announced to every process, itself included; a role left without
    a live leader is taken by the returning replica with a higher epoch."""
    role: Role = ("A",)
    first, second, third = placement(role)
    zk = SimulatedCoordination([role], placement, PROCESSES)
    zk.start()
    zk.session_lost(first)
    notes = zk.session_back(first)
    assert notes == [(p, Up(first)) for p in PROCESSES]  # the leader (second) is alive: no election
    assert zk.session_back(first) == []
    zk.session_lost(second)
    assert zk.leadership()[role] == (first, 3)  # first is back, and ranks first
    zk.session_lost(third)
    assert not any(isinstance(m, LeaderChange) for _, m in zk.session_lost(first))  # nobody left to elect
    assert zk.leadership()[role] == (first, 3)
    notes = zk.session_back(second)
    assert [(p, m) for p, m in notes if isinstance(m, Up)] == [(p, Up(second)) for p in PROCESSES]
    assert [(p, m) for p, m in notes if isinstance(m, LeaderChange)] == [
        (p, LeaderChange(role, second, 4)) for p in placement(role)
    ]
    assert zk.leadership()[role] == (second, 4)


# --- run logs: joined and left -----------------------------------------------------------------

LOG_TYPES = "type T1(a: int)\ntype T2(a: int)\n"
SUB = "subscription S: T1 and T2"


def published(time: int, event_id: str, type_name: str) -> Published:
    return Published(time, {"id": event_id, "type": type_name, "attrs": {"a": 1}, "publisher": "src", "seq": time})


def test_joined_and_left_round_trip() -> None:
    """``joined`` (with and without a peer) and ``left`` survive writing and reading."""
    log = RunLog(
        LOG_TYPES,
        {"p": SUB, "j": SUB, "f": SUB, "l": SUB},
        [published(1, "x1", "T1"), published(2, "y1", "T2")],
        [Delivered(3, "p", 0, ("x1", "y1"))],
        joined={"j": (2, "p"), "f": (1, None), "l": (0, "p")},
        left={"l": 3},
    )
    text = log.dumps()
    records = [json.loads(line) for line in text.splitlines()]
    assert {"record": "process", "process": "j", "subscription": SUB, "joined": {"time": 2, "peer": "p"}} in records
    assert {"record": "process", "process": "f", "subscription": SUB, "joined": {"time": 1, "peer": None}} in records
    assert [r.get("left") for r in records if r.get("process") == "l" and r["record"] == "process"] == [3]
    back = RunLog.read(text.splitlines())
    assert back == log
    assert back.joined == {"j": (2, "p"), "f": (1, None), "l": (0, "p")} and back.left == {"l": 3}
    assert back.dumps() == text


@pytest.mark.parametrize(
    ("field_", "value", "message"),
    [
        ("joined", {"time": "2", "peer": "p"}, "'joined' is"),
        ("joined", {"time": True, "peer": "p"}, "'joined' is"),
        ("joined", {"time": 2, "peer": 7}, "'joined' is"),
        ("joined", {"peer": "p"}, "'joined' is"),
        ("joined", [2, "p"], "field 'joined' must be dict"),
        ("left", "3", "field 'left' must be int"),
        ("left", True, "field 'left' must be int"),
    ],
)
def test_bad_joined_or_left_is_rejected_with_its_line(field_: str, value: Any, message: str) -> None:
    """A malformed ``joined`` or ``left`` field is a RunLogError naming the process line."""
    lines = [
        json.dumps({"record": "header", "format": "faidecs.runs.runlog/1", "types": LOG_TYPES}),
        json.dumps({"record": "process", "process": "p", "subscription": SUB}),
        json.dumps({"record": "process", "process": "j", "subscription": SUB, field_: value}),
    ]
    with pytest.raises(RunLogError, match=rf"^x\.log:3: .*{message}"):
        RunLog.read(lines, "x.log")


def agreement(
    delivered: list[Delivered],
    joined: dict[str, tuple[int, str | None]] | None = None,
    left: dict[str, int] | None = None,
    processes: tuple[str, ...] = ("p", "j"),
) -> list[str]:
    """The processes named by the Conjunction Agreement violation of a hand-built log (empty
    when it holds). Published: x1 (T1) at 1, y1 (T2) at 2, x2 (T1) at 5, y2 (T2) at 6."""
    log = RunLog(
        LOG_TYPES,
        {p: SUB for p in processes},
        [published(1, "x1", "T1"), published(2, "y1", "T2"), published(5, "x2", "T1"), published(6, "y2", "T2")],
        delivered,
        joined=dict(joined or {}),
        left=dict(left or {}),
    )
    log = RunLog.read(log.dumps().splitlines())  # well formed
    found = check(log, ["Conjunction Agreement"]).results["Conjunction Agreement"]
    return list(found[0].processes) if found else []


def test_joiner_owes_its_peers_later_deliveries() -> None:
    """A joiner from p that misses a relation p delivered after the join violates agreement."""
    base = [Delivered(3, "p", 0, ("x1", "y1")), Delivered(7, "p", 0, ("x2", "y2"))]
    assert agreement(base, joined={"j": (4, "p")}) == ["p", "j"]
    assert agreement(base + [Delivered(8, "j", 0, ("x2", "y2"))], joined={"j": (4, "p")}) == []


def test_joiner_does_not_owe_what_its_peer_delivered_before_the_join() -> None:
    """Relations p delivered at or before the join time are not owed by the joiner."""
    base = [Delivered(3, "p", 0, ("x1", "y1"))]
    assert agreement(base, joined={"j": (4, "p")}) == []
    assert agreement(base, joined={"j": (3, "p")}) == []
    assert agreement(base, joined={"j": (2, "p")}) == ["p", "j"]
    # without the join, j owes everything
    assert agreement(base) == ["p", "j"]


def test_joiner_deliveries_are_owed_by_processes_present_from_the_start() -> None:
    """What a joiner delivers, every process present from the start must deliver too."""
    extra = [Delivered(8, "j", 0, ("x2", "y2"))]
    assert agreement(extra, joined={"j": (4, "p")}) == ["j", "p"]
    assert agreement(extra, joined={"j": (4, "p")}, processes=("p", "j", "q")) == ["j", "p"]


def test_joiner_owes_nothing_to_a_process_other_than_its_peer() -> None:
    """j joined from p after p delivered a relation that q delivers only later: j is judged
    against p, whose delivery came before the join, not against q."""
    dl = [Delivered(3, "p", 0, ("x1", "y1")), Delivered(7, "q", 0, ("x1", "y1"))]
    assert agreement(dl, joined={"j": (4, "p")}, processes=("p", "j", "q")) == []
    assert agreement(dl, joined={"j": (4, "q")}, processes=("p", "j", "q")) == ["q", "j"]


def test_fresh_joiner_is_not_compared() -> None:
    """A joiner with empty queues (no peer) is judged against no one, either way."""
    assert agreement([Delivered(7, "p", 0, ("x2", "y2"))], joined={"j": (4, None)}) == []
    assert agreement([Delivered(7, "j", 0, ("x2", "y2"))], joined={"j": (4, None)}) == []


def test_total_orders_skip_a_fresh_joiner_but_not_a_peer_joiner() -> None:
    """Two relations delivered in opposite orders: a violation of the total orders between two
    processes present from the start, or with a joiner from a peer; none with a fresh joiner,
    whose queues started from another state."""
    opposite = [
        Delivered(3, "p", 0, ("x1", "y1")),
        Delivered(7, "p", 0, ("x2", "y2")),
        Delivered(8, "j", 0, ("x2", "y2")),
        Delivered(9, "j", 0, ("x1", "y1")),
    ]
    orders = ["Type Total Order", "Disjunction Total Order"]

    def violated(joined: dict[str, tuple[int, str | None]]) -> list[str]:
        log = RunLog(
            LOG_TYPES,
            {q: SUB for q in ("p", "j")},
            [published(1, "x1", "T1"), published(2, "y1", "T2"), published(5, "x2", "T1"), published(6, "y2", "T2")],
            opposite,
            joined=joined,
        )
        return check(log, orders).violated()

    assert violated({}) == ["Type Total Order"]  # one conjunction each: no disjunction to compare
    assert violated({"j": (2, "p")}) == ["Type Total Order"]
    assert violated({"j": (2, None)}) == []


def test_leaver_owes_nothing_but_is_owed_what_it_delivered() -> None:
    """A leaver's missing relations are no violation; what it delivered the others owe."""
    later = [Delivered(3, "p", 0, ("x1", "y1")), Delivered(7, "p", 0, ("x2", "y2"))]
    assert agreement(later, left={"j": 4}) == []
    assert agreement([Delivered(3, "j", 0, ("x1", "y1"))], left={"j": 4}) == ["j", "p"]


def test_validity_spares_joiners_and_leavers() -> None:
    """Conjunction and Event Validity do not blame a fresh joiner for events before its join, nor
    a leaver for events after it left; the same log without them is a violation."""

    def violated(joined: dict[str, tuple[int, str | None]], left: dict[str, int]) -> list[str]:
        log = RunLog(
            LOG_TYPES,
            {"p": SUB, "j": SUB},
            [published(1, "x1", "T1"), published(2, "y1", "T2"), published(5, "x2", "T1")],
            [Delivered(3, "p", 0, ("x1", "y1"))],
            {"j": [{"T1": [], "T2": []}]},  # j no longer holds x1
            joined=joined,
            left=left,
        )
        return check(log, ["Conjunction Validity", "Event Validity"]).violated()

    assert violated({}, {}) == ["Conjunction Validity", "Event Validity"]
    assert violated({"j": (4, None)}, {}) == []
    assert violated({}, {"j": 0}) == []
