"""The overlay keeps, on thousands of seeded simulated deployments with faults and joins, every
property the lab's table says the subscriptions' options keep, feeds every subscriber stream
exactly its merger's committed stream, and delivers what the embedded engine delivers on that
stream. Each failure names the seed that reproduces it (`faidecs.overlay.sim.generate`)."""

from __future__ import annotations

import os
import random
from concurrent.futures import ProcessPoolExecutor

import pytest
from simulated_runs import judged

from faidecs.overlay.sim.generate import BY_MATCHING, random_deployment

# 450 in the suite (FAIDECS_OVERLAY_RUNS for more): cut from 2,000 when issue 23's connector, example
# and live-view tests came, and from 1,500 for issue 24's, to keep the suite under 15 minutes.
RUNS = int(os.environ.get("FAIDECS_OVERLAY_RUNS", "450"))
CHUNKS = 16


def _problems(seed: int) -> list[str]:
    combination = BY_MATCHING[seed % len(BY_MATCHING)]
    staged = seed % 5 == 4
    scenario = random_deployment(random.Random(f"overlay:{seed}"), combination, staged=staged)
    return judged(scenario, seed, f"{combination}{', staged' if staged else ''}")[1]


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
