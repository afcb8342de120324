"""The generator of the dissertation's workload (benchmarks/papers_workload.py): the scenarios'
shapes as section 4.5.1 defines them, equal selectivity across levels, seeded."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from papers_workload import MAX_TYPES, TYPES, VALUES, Workload, irwin_hall_cdf, sum_threshold

from faidecs.grammar import compile_program
from faidecs.matching.engine import Engine
from faidecs.merging.filters import ACCEPT_ALL, Filter


@pytest.mark.parametrize("scenario", ["A", "B", "C"])
@pytest.mark.parametrize("subscribers", [10, 500])
def test_every_program_compiles_with_one_subscription_per_subscriber(scenario: str, subscribers: int) -> None:
    w = Workload(scenario, subscribers, seed=3)  # type: ignore[arg-type]
    program = compile_program(w.program())
    assert len(program.types) == TYPES
    assert [s.name for s in program.subscriptions] == list(w.conjunctions)
    for sub in program.subscriptions:
        (conj,) = sub.conjunctions
        assert 2 <= len(conj.signature) <= MAX_TYPES
        assert sorted(s.type_name for s in conj.signature) == sorted(w.conjunctions[sub.name])


def test_a_and_b_spread_subscribers_evenly_over_the_chain() -> None:
    for scenario in ("A", "B"):
        w = Workload(scenario, 50)  # type: ignore[arg-type]
        levels = Counter(len(types) for types in w.conjunctions.values())
        assert levels == {2: 10, 3: 10, 4: 10, 5: 10, 6: 10}
        assert all(types == tuple(w.type_names[: len(types)]) for types in w.conjunctions.values())


def test_a_filters_at_the_subscribers_only_and_b_at_the_mergers() -> None:
    for scenario, pushed in (("A", False), ("B", True)):
        program = compile_program(Workload(scenario, 10).program())  # type: ignore[arg-type]
        for sub in program.subscriptions:
            f = Filter.of(sub.conjunctions[0])
            assert all((alts != ACCEPT_ALL) == pushed for alts in f.alternatives.values()), (scenario, sub.name)


def test_c_draws_type_sets_uniformly_over_all_types() -> None:
    w = Workload("C", 500, seed=1)
    sets = list(w.conjunctions.values())
    assert len(set(sets)) > 450  # almost every subscriber its own combination
    used = Counter(t for types in sets for t in types)
    assert set(used) == set(w.type_names)
    mean = sum(used.values()) / TYPES
    assert all(0.6 * mean < n < 1.4 * mean for n in used.values())
    assert Workload("C", 500, seed=1).program() == w.program()
    assert Workload("C", 500, seed=2).program() != w.program()


@pytest.mark.parametrize("k", range(1, 7))
def test_the_sum_threshold_passes_the_selectivity_at_every_level(k: int) -> None:
    assert irwin_hall_cdf(k / 2, k) == pytest.approx(0.5)
    theta = sum_threshold(k, 0.1)
    rng = random.Random(k)
    hits = sum(sum(rng.randint(0, VALUES) for _ in range(k)) < theta for _ in range(20_000))
    assert hits / 20_000 == pytest.approx(0.1, abs=0.01)


def test_events_are_seeded_and_of_the_scenarios_types() -> None:
    for scenario, types in (("A", MAX_TYPES), ("C", TYPES)):
        w = Workload(scenario, 10, seed=5)  # type: ignore[arg-type]
        events = w.events(3000)
        assert events == w.events(3000)
        assert {e["type"] for e in events} == set(w.type_names[:types])
        assert all(0 <= v <= VALUES for e in events for v in e["attrs"].values())


def test_every_level_of_a_delivers() -> None:
    """The predicates are satisfiable: on A's events every level delivers something."""
    w = Workload("A", 5)
    engine = Engine.from_source(w.program())
    delivered = Counter(d.subscription for e in w.events(3000) for d in engine.publish(e))
    assert set(delivered) == set(w.conjunctions)


def test_bad_parameters_are_refused() -> None:
    for kwargs in ({"scenario": "D"}, {"max_types": 1}, {"selectivity": 0}, {"subscribers": 0}):
        with pytest.raises(ValueError):
            Workload(**{"scenario": "A", "subscribers": 10, **kwargs})  # type: ignore[arg-type]
