"""What a replica and a subscriber do with messages an honest peer never sends (issue 19): the
protocol core's half of the insider rules. The roles' half is in test_overlay_authority.py; the
attacks on real processes in tests/slow/test_overlay_attacks.py."""

from __future__ import annotations

import logging

import pytest
from test_overlay_core import (
    AB,
    client,
    connect_subscriber,
    ev,
    event_fw,
    mark,
    placement,
    publish,
    rep,
    root_group,
)

from faidecs.overlay.core.messages import (
    Ack,
    Commit,
    Decide,
    Decision,
    EpochQuery,
    EpochState,
    Fetch,
    Forward,
    Holds,
    LeaderChange,
    NewLog,
    Publish,
)
from faidecs.overlay.core.replica import MergerReplica
from faidecs.overlay.runtime.anomalies import Anomalies

A = ("A",)


def test_an_epoch_query_is_answered_only_once_the_service_names_its_sender() -> None:
    """A query of an epoch the coordination service has not named yet is held, not adopted: it is
    answered when the service names its sender leader of that epoch, never otherwise."""
    pump, (leader, f1, f2) = root_group()
    follower = rep(pump, f2)
    assert follower.handle(f1, EpochQuery(A, 2, f1), 0) == []  # early: held
    assert (follower.log.epoch, follower.log.leader) == (1, leader)
    out = follower.handle("zk", LeaderChange(A, f1, 2), 0)
    assert [(dst, type(m)) for dst, m in out] == [(f1, EpochState)]
    # a query for an epoch the service gives someone else is never answered
    assert follower.handle(f1, EpochQuery(A, 3, f1), 0) == []
    assert follower.handle("zk", LeaderChange(A, leader, 3), 0) == []
    assert follower.log.unconfirmed == 1
    assert (follower.log.epoch, follower.log.leader) == (3, leader)


def test_a_self_chosen_epoch_never_takes_a_role_over() -> None:
    """A replica (or anyone) claiming epoch 10**12: nothing changes, and the role keeps ordering
    under the epochs the service gives."""
    pump, (leader, f1, f2) = root_group()
    for p in (leader, f2):
        pump.to(p, EpochQuery(A, 10**12, f1), src=f1)
        pump.to(p, NewLog(A, 10**12, (), -1), src=f1)
    pump.run()
    publish(pump, A, "pub", 0, ev("a1", "A", 3))
    pump.tick()  # the followers learn the commit point
    assert all(rep(pump, p).log.epoch == 1 and rep(pump, p).log.commit == 0 for p in (leader, f2))


def test_decisions_and_commits_only_from_the_leader() -> None:
    """A Decide, Commit or NewLog of the current epoch from a replica that does not lead it is
    counted and ignored."""
    pump, (leader, f1, f2) = root_group()
    follower = rep(pump, f2)
    forged = Decision(0, 1, 0, "event", "pub", 7)
    assert follower.handle(f1, Decide(A, 1, (forged,), 0), 0) == []
    assert follower.handle(f1, Commit(A, 1, 0), 0) == []
    assert follower.handle(f1, NewLog(A, 1, (forged,), 0), 0) == []
    assert follower.log.decisions == [] and follower.log.commit == -1
    assert follower.log.unconfirmed == 3


def test_early_decisions_are_taken_in_order_once_confirmed() -> None:
    """A new leader's log and decisions that reach a follower before the service's news are
    applied, in the order sent, when it arrives."""
    pump, (leader, f1, f2) = root_group()
    follower = rep(pump, f2)
    d0 = Decision(0, 2, 5, "event", "pub", 0)
    assert follower.handle(f1, NewLog(A, 2, (), -1), 0) == []
    assert follower.handle(f1, Decide(A, 2, (d0,), -1), 0) == []
    assert follower.log.decisions == []
    out = follower.handle("zk", LeaderChange(A, f1, 2), 0)
    assert follower.log.decisions == [d0] and follower.log.status == "normal"
    assert out[-1] == (f1, Holds(A, 2, f2, 1))


def test_a_follower_claiming_more_than_was_decided_is_cut_down() -> None:
    """Holds beyond the leader's log is counted and cannot commit what was never decided."""
    pump, (leader, f1, f2) = root_group()
    pump.drop = lambda src, dest, msg: dest == f2
    publish(pump, A, "pub", 0, ev("a1", "A", 3))
    lead = rep(pump, leader)
    lead.handle(f1, Holds(A, 1, f1, 10**9), 0)
    assert lead.log.overclaimed == 1
    assert lead.log.holds[f1] == len(lead.log.decisions) == 1


def test_an_ack_beyond_what_the_link_was_sent_is_cut_down() -> None:
    """A subscriber acknowledging positions it never received cannot make the replica drop
    payloads its link, or another subscriber's, still needs."""
    pump, servers = root_group(retain=0)
    key = connect_subscriber(pump, "c1", "A", servers[0])
    reader = rep(pump, servers[0])
    link = reader.consumers.links[(key, "c1")]
    reader.handle("c1", Ack(A, key, "c1", 2**62), 0)
    assert reader.consumers.bad_acks == 1 and reader.consumers.acks[(key, "c1")] == link.sent
    for seq in range(5):
        publish(pump, A, "pub", seq, ev(f"a{seq}", "A", seq))
    pump.tick()
    got = [m for m in pump.outbox.get("c1", []) if getattr(m, "kind", None) == "event"]
    assert [m.event.id for m in got] == [f"a{k}" for k in range(5)]  # type: ignore[attr-defined]


def test_a_publication_repeated_with_other_content_is_counted() -> None:
    pump, servers = root_group()
    publish(pump, A, "pub", 0, ev("a1", "A", 3))
    publish(pump, A, "pub", 0, ev("a1", "A", 4))
    publish(pump, A, "pub", 0, ev("a1", "A", 3))  # the same again: a harmless duplicate
    for p in servers:
        inputs = rep(pump, p).inputs
        assert (inputs.conflicting, inputs.last_conflict) == (1, ("pub", 0))
    assert all(len(rep(pump, p).log.decisions) == 1 for p in servers)


def test_a_publication_that_reached_the_leader_only_is_fetched() -> None:
    """A publisher that crashed mid-send reached the leader alone: the followers fetch the
    payload from it, hold the decision, and it commits; nothing waits for ever."""
    pump, (leader, f1, f2) = root_group(lossy_inputs=True)
    pump.to(leader, Publish("pub", 0, ev("a1", "A", 3)), src="pub")
    pump.run()
    lead = rep(pump, leader)
    assert len(lead.log.decisions) == 1 and lead.log.commit == -1  # decided, not held by a majority
    pump.now = 1000
    pump.tick()
    assert any(isinstance(m, Fetch) for _, _, m in pump.delivered)
    pump.tick()  # the followers learn the commit point
    assert all(rep(pump, p).log.commit == 0 and rep(pump, p).held() == 1 for p in (leader, f1, f2))


def test_a_subscriber_takes_a_stream_only_from_the_replica_it_reads() -> None:
    """Forwards from any other process (another replica of the role, or a forger) are counted
    and ignored: a forged position far ahead would make it skip the real stream."""
    c, _, fed = client()
    c.start(0)
    reading = c.streams[AB].reading or ""
    other = next(p for p in placement(AB) if p != reading)
    c.handle(reading, mark(c, AB, 0, 1), 0)
    assert c.handle(other, event_fw(c, AB, 2**62, 5, ev("forged", "A", 0)), 0) == []
    assert c.foreign == 1 and c.streams[AB].position == 0


def test_a_merger_takes_a_parent_stream_only_from_the_replica_it_reads() -> None:
    me = placement(AB)[0]
    merger = MergerReplica(AB, me, placement)
    merger.start(0)
    reading = merger.upstream.reading["L"]
    other = next(p for p in placement(A) if p != reading)
    forged = Forward(A, 2**62, 5, "event", ev("forged", "A", 0), merger.key)
    assert merger.handle(other, forged, 0) == []
    assert merger.upstream.foreign == 1 and merger.upstream.received["L"] == -1
    assert merger.handle(reading or "", Forward(A, 0, 5, "event", ev("a1", "A", 0), merger.key), 0) == []
    assert merger.upstream.received["L"] == 0


def test_a_servers_anomalies_are_logged_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    """A flood of conflicting publications is one log line per role per interval, saying how many."""
    log = Anomalies("m1")
    with caplog.at_level(logging.WARNING, "faidecs.overlay.runtime.anomalies"):
        log.report(A, {"conflicting": 1, "unconfirmed": 0}, 0)
        for n in range(2, 1000):
            log.report(A, {"conflicting": n, "unconfirmed": 0}, 5)
        log.report(A, {"conflicting": 1000, "unconfirmed": 3}, 10_001)
        log.report(A, {"conflicting": 1000, "unconfirmed": 3}, 30_000)  # nothing new
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["m1: [A] turned away 1 conflicting (docs/deploy.md, Threat model)"] + [
        "m1: [A] turned away 999 conflicting, 3 unconfirmed (docs/deploy.md, Threat model)"
    ]
