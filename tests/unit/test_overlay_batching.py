"""Batched decisions and streams (issue 21): a leader decides what arrived since its last flush
and sends it to each peer as one Decide, pipelined; a follower answers a batch with one Holds; a
replica sends each link what was committed since as one ForwardBatch. Driven by hand, as in
test_overlay_core, and through the simulator with ``batch_ms``."""

from __future__ import annotations

import random

import pytest

from faidecs.grammar import compile_program
from faidecs.matching.events import Event, EventValidator
from faidecs.merging.filters import ACCEPT_ALL, Filter
from faidecs.overlay.core.messages import (
    Connect,
    Decide,
    Decision,
    EpochState,
    Forward,
    ForwardBatch,
    Holds,
    LeaderChange,
    Message,
    NewLog,
    Publish,
    Register,
    Send,
)
from faidecs.overlay.core.replica import MergerReplica, ProtocolError
from faidecs.overlay.sim.generate import BY_MATCHING, random_deployment
from faidecs.overlay.sim.report import kept_properties
from faidecs.overlay.sim.scenario import SimConfig
from faidecs.overlay.sim.simulator import Simulation
from faidecs.properties import check

A = ("A",)
REPLICAS = ("m1", "m2", "m3")
TYPES = compile_program("type A(x: int)\n").types
VALIDATOR = EventValidator(TYPES)
KEY = "s:S"  # a subscriber's consumer key
EVERY_A = Filter({"A": ACCEPT_ALL})


def ev(k: int) -> Event:
    return VALIDATOR.validate({"id": f"e{k}", "type": "A", "attrs": {"x": k}})


def pub(k: int) -> Publish:
    return Publish("p1", k, ev(k))


def placement(role: tuple[str, ...]) -> tuple[str, ...]:
    return REPLICAS


def of_kind(sends: list[Send], kind: type) -> list[tuple[str, Message]]:
    return [(dst, m) for dst, m in sends if isinstance(m, kind)]


def leader(max_batch: int = 128) -> MergerReplica:
    """m1, leading epoch 1 of [A] with an empty log (m2 answered its query), batching."""
    r = MergerReplica(A, "m1", placement, batching=True, max_batch=max_batch, heartbeat_every=10**9)
    r.handle("coordinator", LeaderChange(A, "m1", 1), 0)
    r.handle("m2", EpochState(A, 1, "m2", 0, (), -1), 0)
    assert r.is_leading()
    r.flush(0)
    return r


def follower() -> MergerReplica:
    """m2, following m1 in epoch 1 of [A], with m1's empty log, batching."""
    r = MergerReplica(A, "m2", placement, batching=True)
    r.handle("coordinator", LeaderChange(A, "m1", 1), 0)
    r.handle("m1", NewLog(A, 1, (), -1), 0)
    return r


def test_a_batch_is_decided_at_the_flush_and_sent_once_per_peer() -> None:
    r = leader()
    held = [m for k in range(5) for m in r.handle("p1", pub(k), 1)]
    assert held == []  # nothing is decided or sent before the flush
    assert r.log.decisions == []
    out = r.flush(1)
    decides = of_kind(out, Decide)
    assert sorted(dst for dst, _ in decides) == ["m2", "m3"]
    for _, d in decides:
        assert isinstance(d, Decide)
        assert [(x.position, x.source, x.key) for x in d.decisions] == [(k, "p1", k) for k in range(5)]
    assert r.flush(1) == []  # nothing new: nothing sent


def test_batches_are_pipelined_and_commit_with_the_majority() -> None:
    r = leader()
    for k in range(3):
        r.handle("p1", pub(k), 1)
    first = r.flush(1)
    for k in range(3, 7):
        r.handle("p1", pub(k), 2)
    second = r.flush(2)  # sent before the first batch has its majority
    assert [len(m.decisions) for _, m in of_kind(first + second, Decide) if _ == "m2"] == [3, 4]
    assert r.log.commit == -1
    r.handle("m3", Holds(A, 1, "m3", 3), 3)
    assert r.log.commit == 2  # the first batch, with the leader's own copy
    r.handle("m2", Holds(A, 1, "m2", 7), 4)
    assert r.log.commit == 6


def test_max_batch_cuts_a_batch_and_a_mark_ends_one() -> None:
    r = leader(max_batch=3)
    for k in range(4):
        r.handle("p1", pub(k), 1)
    r.handle("s1", Register(A, KEY, "s1", EVERY_A), 1)  # a mark, decided after the four events
    for k in range(4, 6):
        r.handle("p1", pub(k), 1)
    batches = [m.decisions for dst, m in of_kind(r.flush(1), Decide) if dst == "m2"]
    kinds = [[d.kind for d in b] for b in batches]
    assert kinds == [["event"] * 3, ["event", "mark"], ["event"] * 2]
    assert all(sum(d.filter is not None for d in b) <= 1 for b in batches)
    assert all(len(b) <= 3 for b in batches)
    assert [d.position for b in batches for d in b] == list(range(len(r.log.decisions)))


def decisions(n: int, start: int = 0) -> tuple[Decision, ...]:
    return tuple(Decision(p, 1, p, "event", "p1", p) for p in range(start, start + n))


def test_a_follower_answers_a_batch_with_one_holds() -> None:
    r = follower()
    out = r.handle("m1", Decide(A, 1, decisions(4), 1), 1)
    assert out == [("m1", Holds(A, 1, "m2", 4))]
    assert len(r.log.decisions) == 4 and r.log.commit == 1
    assert of_kind(r.flush(1), Decide) == []  # a follower never sends decisions


def test_a_follower_takes_the_new_part_of_an_overlapping_batch_and_reports_a_gap() -> None:
    r = MergerReplica(A, "m2", placement)
    r.handle("coordinator", LeaderChange(A, "m1", 1), 0)
    r.handle("m1", NewLog(A, 1, (), -1), 0)
    assert r.handle("m1", Decide(A, 1, decisions(3), -1), 1) == [("m1", Holds(A, 1, "m2", 3))]
    # positions 1..4: 1 and 2 it holds, 3 and 4 are new
    assert r.handle("m1", Decide(A, 1, decisions(4, start=1), 0), 2) == [("m1", Holds(A, 1, "m2", 5))]
    assert [d.position for d in r.log.decisions] == [0, 1, 2, 3, 4]
    assert r.log.commit == 0
    # a batch beyond its log: it says what it holds, and appends nothing
    assert r.handle("m1", Decide(A, 1, decisions(2, start=7), 4), 3) == [("m1", Holds(A, 1, "m2", 5))]
    assert len(r.log.decisions) == 5
    # a batch whose positions do not follow on is refused
    broken = (Decision(5, 1, 5, "event", "p1", 5), Decision(9, 1, 9, "event", "p1", 9))
    with pytest.raises(ProtocolError, match="decision 9 after 6"):
        r.handle("m1", Decide(A, 1, broken, 4), 4)


def test_the_leader_resends_a_gap_in_batches() -> None:
    r = leader(max_batch=2)
    for k in range(5):
        r.handle("p1", pub(k), 1)
    r.flush(1)
    # m3 holds nothing and says so again after the retry interval: it gets the rest, batched
    r.handle("m3", Holds(A, 1, "m3", 0), 1)
    resent = r.handle("m3", Holds(A, 1, "m3", 0), 1 + r.retry_every)
    batches = [m.decisions for dst, m in of_kind(resent, Decide) if dst == "m3"]
    assert [[d.position for d in b] for b in batches] == [[0, 1], [2, 3], [4]]


def test_a_link_gets_what_was_committed_as_one_forward_batch() -> None:
    r = leader()
    r.handle("s1", Register(A, KEY, "s1", EVERY_A), 0)
    r.handle("s1", Connect(A, KEY, "s1", -1), 0)
    r.flush(0)
    r.handle("m2", Holds(A, 1, "m2", 1), 0)
    first = r.flush(0)
    assert [type(m) for _, m in first] == [Forward]  # the mark alone
    for k in range(6):
        r.handle("p1", pub(k), 1)
    out = r.flush(1)
    assert of_kind(out, ForwardBatch) == []  # decided, not committed: nothing goes downstream
    r.handle("m2", Holds(A, 1, "m2", 7), 2)
    (batch,) = [m for dst, m in r.flush(2) if dst == "s1"]
    assert isinstance(batch, ForwardBatch) and batch.role == A and batch.consumer == KEY
    assert [(e.position, e.kind, e.event.id if e.event else None) for e in batch.entries] == [
        (p, "event", f"e{p - 1}") for p in range(1, 7)
    ]
    assert [f.position for f in batch.forwards()] == list(range(1, 7))


def test_without_batching_every_message_is_answered_at_once() -> None:
    r = MergerReplica(A, "m1", placement)
    r.handle("coordinator", LeaderChange(A, "m1", 1), 0)
    r.handle("m2", EpochState(A, 1, "m2", 0, (), -1), 0)
    out = r.handle("p1", pub(0), 1)
    assert [(dst, len(m.decisions)) for dst, m in of_kind(out, Decide)] == [("m2", 1), ("m3", 1)]


@pytest.mark.parametrize(("batch_ms", "max_batch"), [(1, 2), (5, 128)])
def test_simulated_deployments_batch_and_keep_their_properties(batch_ms: int, max_batch: int) -> None:
    """Batches form (fewer Decides than decisions), and every run keeps what its options keep,
    with no stream gap."""
    problems: list[str] = []
    decides = decided = 0
    for seed in range(12):
        scenario = random_deployment(random.Random(f"batching:{seed}"), BY_MATCHING[seed % len(BY_MATCHING)])
        config = SimConfig(seed=seed, matcher="reference", batch_ms=batch_ms, max_batch=max_batch)
        simulation = Simulation(scenario, config)
        result = simulation.run()
        kept = kept_properties(simulation.subscriptions.values())
        problems += [f"seed {seed}: {p} violated" for p in check(result.log, kept).violated()]
        problems += [f"seed {seed}: {g.describe()}" for g in result.gaps]
        decides += result.batches["Decide"]
        decided += result.batches["decisions"]
    assert problems == [], "\n".join(problems[:10])
    assert 0 < decides < decided
