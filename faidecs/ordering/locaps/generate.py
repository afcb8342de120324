"""Random LoCaPS runs: a random broker tree, publishers and subscribers on random brokers, some
subscribers that also publish (causality across publishers), static subscriptions that cover
some joiners' (proxy markers), and joiners subscribing at random times."""

from __future__ import annotations

import random
from dataclasses import dataclass

from faidecs.ordering.harness import Publication, Workload
from faidecs.ordering.locaps.topology import BrokerGraph, random_tree


@dataclass(frozen=True, slots=True)
class LocapsScenario:
    graph: BrokerGraph
    attach: dict[str, str]
    publishers: frozenset[str]
    workload: Workload


def random_scenario(
    rng: random.Random,
    *,
    brokers: int = 8,
    types: int = 3,
    static: int = 3,
    joiners: int = 3,
    events: int = 40,
    horizon: float = 60.0,
) -> LocapsScenario:
    graph = random_tree(rng, rng.randint(2, brokers))
    names = [f"T{k}" for k in range(1, types + 1)]
    types_source = "".join(f"type {n}(x: int)\n" for n in names)
    processes = [f"p{k}" for k in range(static + joiners)]
    chosen: dict[str, list[str]] = {}
    for k, name in enumerate(processes):
        if k >= static and rng.random() < 0.5:  # a joiner covered by a static subscription
            cover = chosen[processes[rng.randrange(static)]]
            chosen[name] = sorted(rng.sample(cover, rng.randint(1, len(cover))))
        else:
            chosen[name] = sorted(rng.sample(names, rng.randint(1, types)))
    subscriptions = {n: f"subscription {n}: " + " and ".join(chosen[n]) for n in processes}
    pure = [f"pub{k}" for k in range(rng.randint(1, 2))]
    reacting = [n for n in processes if rng.random() < 0.5]  # subscribers that publish too
    publishers = frozenset(pure + reacting)
    attach = {c: rng.choice(graph.brokers) for c in [*processes, *pure]}
    publications = tuple(
        Publication(
            rng.uniform(0, horizon),
            rng.choice(sorted(publishers)),
            {"id": f"e{k}", "type": rng.choice(names), "attrs": {"x": rng.randrange(3)}},
        )
        for k in range(events)
    )
    joins = tuple((rng.uniform(0.0, 0.7) * horizon, n) for n in processes[static:])
    workload = Workload(types_source, subscriptions, frozenset(processes[:static]), publications, joins)
    return LocapsScenario(graph, attach, publishers, workload)
