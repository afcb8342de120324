"""Random workloads for the ordering layers: a few types, processes subscribing to conjunctions of
one to three of them (so that topics overlap), two publishers, joiners and leavers."""

from __future__ import annotations

import random

from faidecs.ordering.harness import Publication, Workload

MATCHING = ("FR", "MR", "FRC", "MRC")
DISPOSAL = ("I", "PI", "IP", "FP")


def _condition(rng: random.Random, chosen: list[str]) -> str:
    if len(chosen) == 1:
        return chosen[0]
    if rng.random() < 0.5:
        return " and ".join(chosen)
    return " and ".join(f"{a}.x = {b}.x" for a, b in zip(chosen, chosen[1:]))


def random_workload(
    rng: random.Random,
    *,
    types: int = 5,
    processes: int = 5,
    joiners: int = 2,
    leavers: int = 1,
    events: int = 120,
    horizon: float = 100.0,
) -> Workload:
    names = [f"T{k}" for k in range(1, types + 1)]
    types_source = "".join(f"type {n}(x: int)\n" for n in names)
    subscriptions: dict[str, str] = {}
    for k in range(processes + joiners):
        chosen = sorted(rng.sample(names, rng.choice((1, 2, 2, 3))))
        options = f"matching {rng.choice(MATCHING)}, disposal {rng.choice(DISPOSAL)}"
        subscriptions[f"p{k}"] = f"subscription p{k} ({options}): {_condition(rng, chosen)}"
    initial = frozenset(f"p{k}" for k in range(processes))
    publications = tuple(
        Publication(
            rng.uniform(0, horizon),
            rng.choice(("pubA", "pubB")),
            {"id": f"e{k}", "type": rng.choice(names), "attrs": {"x": rng.randrange(3)}},
        )
        for k in range(events)
    )
    joins = tuple((rng.uniform(0.1, 0.8) * horizon, f"p{k}") for k in range(processes, processes + joiners))
    leaves = tuple((rng.uniform(0.2, 0.9) * horizon, f"p{k}") for k in rng.sample(range(processes), leavers))
    return Workload(types_source, subscriptions, initial, publications, joins, leaves)
