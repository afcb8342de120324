"""The overlay keeps, on thousands of seeded simulated deployments with faults and joins, every
property the lab's table says the subscriptions' options keep, feeds every subscriber stream
exactly its merger's committed stream, and delivers what the embedded engine delivers on that
stream. Each failure names the seed that reproduces it (`faidecs.overlay.generate`)."""

from __future__ import annotations

import os
import random
from concurrent.futures import ProcessPoolExecutor

import pytest

from faidecs.overlay.audit import expected_deliveries
from faidecs.overlay.generate import COMBINATIONS, random_deployment
from faidecs.overlay.report import kept_properties
from faidecs.overlay.scenario import SimConfig
from faidecs.overlay.simulator import Simulation
from faidecs.properties import check

RUNS = int(os.environ.get("FAIDECS_OVERLAY_RUNS", "2000"))
CHUNKS = 16


def _problems(seed: int) -> list[str]:
    combination = COMBINATIONS[seed % len(COMBINATIONS)]
    staged = seed % 5 == 4
    scenario = random_deployment(random.Random(f"overlay:{seed}"), combination, staged=staged)
    simulation = Simulation(scenario, SimConfig(seed=seed, matcher="reference"))
    result = simulation.run()
    where = (
        f"seed {seed} ({combination}{', staged' if staged else ''}; faults: {[f.describe() for f in scenario.faults]})"
    )
    problems = [f"{where}: {g.describe()}" for g in result.gaps]
    kept = kept_properties(simulation.subscriptions.values())
    problems += [f"{where}: {p} violated" for p in check(result.log, kept).violated()]
    for name, client in result.clients.items():
        got = [(d.conjunction, d.relation) for d in result.log.delivered if d.process == name]
        if client.joined_from is not None:
            time = result.log.joined[name][0]
            want = [
                (d.conjunction, d.relation)
                for d in result.log.delivered
                if d.process == client.joined_from and d.time > time
            ]
        else:
            want = expected_deliveries(result, name)
        # A leaver stops early; a joiner whose peer left continues after it.
        if name in result.log.left:
            want = want[: len(got)]
        if client.joined_from in result.log.left:
            got = got[: len(want)]
        if got != want:
            problems.append(f"{where}: {name} delivered {len(got)} relations, the engine on its stream {len(want)}")
    return problems


def _chunk(seeds: range) -> list[str]:
    out: list[str] = []
    for seed in seeds:
        out += _problems(seed)
    return out


@pytest.mark.slow
def test_seeded_deployments_keep_every_property() -> None:
    chunks = [range(k, RUNS, CHUNKS) for k in range(CHUNKS)]
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        problems = [p for found in pool.map(_chunk, chunks) for p in found]
    assert problems == [], "\n".join(problems[:20])
