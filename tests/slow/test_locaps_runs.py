"""Seeded LoCaPS runs (seed 003): random broker trees, static subscriptions some of which cover
joiners' (proxy markers), subscribers that also publish (causality across publishers), joiners at
random times. Every run log is judged by the property checker: Gapless FIFO and Gapless Causal
Delivery for every process, Notification Integrity, zero stalls, nothing owed after a starting
marker left undelivered. ``FAIDECS_LOCAPS_RUNS`` sets the number of runs (default 1,000)."""

from __future__ import annotations

import os
import random
from collections import Counter

import pytest

from faidecs.ordering.harness import run_layer
from faidecs.ordering.locaps import LocapsLayer
from faidecs.ordering.locaps.generate import random_scenario
from faidecs.properties import Property, check
from faidecs.runs.runlog import RunLog

pytestmark = pytest.mark.slow

RUNS = int(os.environ.get("FAIDECS_LOCAPS_RUNS", "400"))

MUST_HOLD = [
    Property.GAPLESS_FIFO_DELIVERY,
    Property.GAPLESS_CAUSAL_DELIVERY,
    Property.NOTIFICATION_INTEGRITY,
    Property.NO_CREATION,
]


def test_seeded_locaps_runs() -> None:
    seen: Counter[str] = Counter()
    for seed in range(RUNS):
        scenario = random_scenario(random.Random(seed))
        layer = LocapsLayer(scenario.graph, scenario.attach, publishers=scenario.publishers)
        run = run_layer(layer, scenario.workload, seed=seed)
        assert not run.stalled, f"seed {seed}: stalled {run.stalled}"
        assert not run.missing, f"seed {seed}: owed but never handed {run.missing[:3]}"
        log = RunLog.read(run.log.dumps().splitlines(), f"<locaps seed {seed}>")
        report = check(log, MUST_HOLD)
        assert report.violated() == [], f"seed {seed}:\n{report.table()}"
        for joiner in log.joined:  # every joiner got a marker from every publisher
            assert all((p, joiner) in layer.marked_at for p in scenario.publishers), (seed, joiner)
        seen["joins"] += len(log.joined)
        seen["notifications"] += len(log.notified)
        seen["proxy"] += layer.stats.proxy_markers
        seen["discarded"] += layer.stats.discarded
        seen["reacting"] += len(scenario.publishers & set(scenario.workload.subscriptions))
    # the runs exercise what they claim to
    assert seen["joins"] == 3 * RUNS
    assert seen["proxy"] > RUNS // 2 and seen["discarded"] > RUNS // 4 and seen["reacting"] > RUNS
    assert seen["notifications"] > 20 * RUNS
