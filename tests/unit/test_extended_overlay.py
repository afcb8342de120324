"""The extended language on the overlay: what mergers and filters need of it (negated types in the
merger's type set, no filtering on prev()/aggregate predicates, every event under a window), and
the stock-market examples of docs/dsl.md on the simulator delivering exactly what the embedded
engine delivers, a joiner from a peer included."""

from __future__ import annotations

import pytest

from faidecs import compile_program
from faidecs.matching.events import Event, EventValidator
from faidecs.merging.filters import ACCEPT_ALL, Filter
from faidecs.merging.roles import conjunction_role, merger_roles
from faidecs.overlay.core.keys import stream_filter, stream_key
from faidecs.overlay.sim.audit import expected_deliveries, stream_gaps
from faidecs.overlay.sim.scenario import Joiner, Scenario, SimConfig
from faidecs.overlay.sim.simulator import simulate
from tests.stock_extended import NAMES, TYPES_SOURCE, by_subscription, embedded, stream, subscriptions

TYPES = "type A(x: int, t: int)\ntype B(x: int, t: int)\ntype N(x: int, t: int)\n"


def _sub(condition: str, options: str = "") -> tuple[object, ...]:
    program = compile_program(TYPES + f"subscription S{options}: {condition}")
    sub = program.subscriptions[0]
    return sub, sub.conjunctions[0], EventValidator(program.types)


def _event(validator: EventValidator, type_name: str, x: int) -> Event:
    return validator.validate({"id": "e", "type": type_name, "attrs": {"x": x, "t": 0}})


def test_a_negated_type_is_in_the_merger_and_its_own_condition_filters_it() -> None:
    sub, conj, v = _sub("A and B and A.x > 1 and no N(N.x = 3 and N.x > A.x) between A and B")
    assert conjunction_role(conj) == ("A", "B", "N")
    assert ("A", "B", "N") in merger_roles(("A", "B", "N"), [sub])
    f = stream_filter(sub)
    assert f.passes(_event(v, "N", 3)) and not f.passes(_event(v, "N", 4))  # N.x > A.x is not N's alone
    assert f.passes(_event(v, "A", 2)) and not f.passes(_event(v, "A", 1))
    assert f.alternatives["B"] == ACCEPT_ALL


def test_prev_and_aggregate_predicates_filter_nothing() -> None:
    sub, conj, v = _sub("A+ and prev(A).x < A.x and count(A) >= 2 and A.x != 5 and B")
    assert [p.text for p in conj.unary(conj.signature[0])] == ["A.x != 5"]
    f = Filter.of(conj)
    assert f.passes(_event(v, "A", 1)) and not f.passes(_event(v, "A", 5))


def test_under_a_window_every_event_of_the_types_passes_because_each_moves_the_watermark() -> None:
    sub, conj, v = _sub("A and B and A.x > 1 and no N(N.x = 3) after A", " (within 10 on t)")
    f = stream_filter(sub)
    assert all(f.alternatives[t] == ACCEPT_ALL for t in ("A", "B", "N"))
    assert f.passes(_event(v, "A", 0)) and f.passes(_event(v, "N", 0))
    # The same conjunctions under another window (or none) are other consumers of the merger.
    other, _, _ = _sub("A and B and A.x > 1 and no N(N.x = 3) after A", " (within 20 on t)")
    assert stream_key(sub) != stream_key(other)


@pytest.mark.parametrize("seed", [4])
def test_the_stock_examples_on_the_simulator_deliver_what_the_embedded_engine_does(seed: int) -> None:
    """Publications 150 virtual ms apart (more than a decision takes), so each merger's order is
    the publication order: every subscriber delivers what the embedded engine delivers on the
    stream; a joiner from a peer (its engine's snapshot: queues, negation logs, watermark)
    delivers what its peer delivers after the join."""
    events = stream(seed, 160)
    want = by_subscription(embedded(events))
    assert all(want[name] for name in NAMES)  # each example delivers: the comparison is not vacuous
    subs = subscriptions()
    joiners = [Joiner(f"{name}J", subs[name], 12_000, peer=name) for name in NAMES]
    scenario = Scenario(TYPES_SOURCE, subs, [(150 * k, "pub", e) for k, e in enumerate(events)], joiners=joiners)
    result = simulate(scenario, SimConfig(seed=seed, matcher="reference"))
    got: dict[str, list[tuple[int, tuple[str, ...]]]] = {p: [] for p in [*NAMES, *(j.process for j in joiners)]}
    for d in result.log.delivered:
        got[d.process].append((d.conjunction, d.relation))
    for name in NAMES:
        assert got[name] == want[name], name
        tail = got[f"{name}J"]
        assert tail == want[name][len(want[name]) - len(tail) :], f"{name}J"
    assert any(got[f"{name}J"] for name in NAMES)  # some joiner delivers after its join
    assert stream_gaps(result) == []
    for process in NAMES:
        assert expected_deliveries(result, process, "reference") == got[process], process
