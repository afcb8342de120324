"""LoCaPS joins at a marker (docs/overlay.md, "Marker joins"): a covered joiner starts at a replica's
commit index without any decision, is fed exactly its merger's committed stream after the marker
(gapless), delivers what a fresh engine delivers on it, and delivers what an identical existing
subscriber delivers after the marker when that subscriber's queues were empty there. An uncovered
joiner registers and climbs as a fresh one does."""

from __future__ import annotations

import functools

import pytest

from faidecs.grammar import compile_program
from faidecs.matching.engine import Engine
from faidecs.merging.filters import Filter
from faidecs.overlay.sim.audit import expected_deliveries
from faidecs.overlay.sim.scenario import Joiner, Scenario
from faidecs.overlay.sim.simulator import SimResult
from tests.unit.test_overlay_sim import AB, LT, TYPES, assert_clean, delivered, publications, run

EVERY = "subscription {name} (matching FR, disposal PI): A and B"


def marker_run(joiner_source: str, subscribers: dict[str, str], at: int = 200, seed: int = 5, **config: object):
    scenario = Scenario(TYPES, subscribers, publications(60), joiners=[Joiner("J", joiner_source, at, mode="marker")])
    result = run(scenario, seed=seed, **config)
    assert_clean(scenario, result)
    return scenario, result


def test_covered_joiner_starts_at_a_marker_without_a_decision() -> None:
    _, result = marker_run(EVERY.format(name="SJ"), {"P1": EVERY.format(name="S1")})
    s = result.clients["J"].streams[AB]
    assert s.how == "marker" and s.start >= 0
    # no mark for J was logged anywhere: the marker is a committed position, not a decision
    for role in result.roles:
        assert not any(d.kind == "mark" and d.request == "J" for d in result.log_of(role))
    got = delivered(result, "J")
    assert got and got == expected_deliveries(result, "J")
    assert result.messages["MarkerRequest"] == 1 and result.messages["MarkerReply"] == 1


def test_marker_join_starts_sooner_than_a_fresh_join() -> None:
    times = {}
    for mode in ("marker", "register"):
        joiner = Joiner("J", EVERY.format(name="SJ"), 200, mode=mode)  # type: ignore[arg-type]
        result = run(Scenario(TYPES, {"P1": EVERY.format(name="S1")}, publications(60), joiners=[joiner]), seed=3)
        times[mode] = result.clients["J"].ready_at - result.joined_at["J"]  # type: ignore[operator]
    assert times["marker"] < times["register"]


def test_uncovered_joiner_registers_and_climbs() -> None:
    """P1 reads [A] only: ⊔[A,B] has no consumer, so it covers nothing; J registers there."""
    _, result = marker_run(EVERY.format(name="SJ"), {"P1": "subscription S1 (matching FR, disposal PI): A"})
    s = result.clients["J"].streams[AB]
    assert s.how == "mark"
    assert any(d.kind == "mark" and d.request == "J" for d in result.log_of(AB))
    assert delivered(result, "J") == expected_deliveries(result, "J")


def test_narrower_filter_is_covered_only_where_the_syntax_shows_it() -> None:
    """`A and B` (accept-all) covers `A.x > 3`; `A.x < B.x` has no unary predicate: also accept-all."""
    _, result = marker_run(LT.format(name="SJ").replace("A.x < B.x", "A.x > 3"), {"P1": EVERY.format(name="S1")})
    assert result.clients["J"].streams[AB].how == "marker"
    assert delivered(result, "J") == expected_deliveries(result, "J")
    # the link carried J's own filter: nothing with A.x <= 3 was fed to its engine
    fed = {i for _, i in result.clients["J"].streams[AB].fed}
    a_small = {e.id for e in result.root_events.values() if e.type == "A" and e.attrs["x"] <= 3}
    assert not fed & a_small


def test_covering_is_decided_on_committed_upmarks() -> None:
    _, result = marker_run(EVERY.format(name="SJ"), {"P1": LT.format(name="S1")})
    replica = result.replicas[result.placement[AB][0]][AB]
    wide = Filter.of(compile_program(TYPES + "subscription X: A and B and A.x > 100").subscriptions[0].conjunctions[0])
    assert replica.covers_at(wide, replica.log.commit)
    assert not replica.covers_at(wide, -1)  # before any upmark: nothing reaches ⊔[A,B]
    assert replica.marker_for(wide, heartbeats=False) == replica.log.commit


def _replay(result, process: str, upto: int) -> tuple[bool, list[tuple[int, tuple[str, ...]]]]:
    """Replay ``process``'s single stream: is its engine's state empty after position ``upto``,
    and what it delivers on the entries after ``upto``."""
    s = result.clients[process].streams[AB]
    engine, fresh = Engine(s.engine_program, matcher="reference"), Engine(s.engine_program, matcher="reference")
    events = {e.id: e for e in result.root_events.values()}
    empty, after = upto <= s.start, []
    for position, event_id in s.fed:
        out = engine.publish(events[event_id])
        if position > upto:
            after += [(s.conjunctions[d.conjunction], tuple(d.ids)) for d in out]
        elif position <= upto:
            empty = engine.state_json() == fresh.state_json()
    return empty, after


SEEDS = range(8)
# MR+PI: a delivery takes the newest A and drops the older ones, so queues are often empty
MR_PI = "subscription {name} (matching MR, disposal PI): A and B"


@functools.cache
def _marker_case(seed: int) -> tuple[SimResult, int, bool, list[tuple[int, tuple[str, ...]]]]:
    """One seeded marker join: the run, the marker, whether P1's queues were empty there, and
    what P1 delivered after it. Cached so that both tests below share the runs of one process
    without depending on each other's order."""
    _, result = marker_run(MR_PI.format(name="SJ"), {"P1": MR_PI.format(name="S1")}, at=150 + 20 * seed, seed=seed)
    marker = result.clients["J"].streams[AB].start
    empty, peer_after = _replay(result, "P1", marker)
    return result, marker, empty, peer_after


@pytest.mark.parametrize("seed", SEEDS)
def test_marker_joiner_equals_an_identical_subscriber_whose_queues_are_empty_at_the_marker(seed: int) -> None:
    """The equality statement: after the marker, J delivers exactly what identical P1 delivers
    from there on when P1's queues hold nothing at the marker; otherwise (in general) not."""
    result, marker, empty, peer_after = _marker_case(seed)
    if empty:
        assert delivered(result, "J") == peer_after
    else:
        # P1 held events from before the marker: J's relations never contain them
        before = {i for p, i in result.clients["P1"].streams[AB].fed if p <= marker}
        assert not any(set(rel) & before for _, rel in delivered(result, "J"))


def test_both_cases_of_the_equality_statement_ran() -> None:
    seen = [_marker_case(seed)[2] for seed in SEEDS]
    assert True in seen and False in seen, seen
