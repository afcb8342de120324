"""Seeded runs of the ordering layers of seeds 000 and 004 with joins and leaves, each checked by
the property checker on its run log: the layers' promise (Total Notification Order), what they hand
out (Notification Integrity and Validity), the engines' safety on top, zero stalls and nothing owed
left undelivered. ``FAIDECS_ORDERING_RUNS`` sets the number of runs per layer (default 1,000)."""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Callable

import pytest

from faidecs.ordering.atoms import AtomsLayer
from faidecs.ordering.generate import random_workload
from faidecs.ordering.harness import KEPT_ON_EVERY_LAYER, run_layer
from faidecs.ordering.layer import OrderingLayer
from faidecs.ordering.multistage import MultistageLayer
from faidecs.properties import check
from faidecs.runs.runlog import RunLog

pytestmark = pytest.mark.slow

RUNS = int(os.environ.get("FAIDECS_ORDERING_RUNS", "300"))

MUST_HOLD = list(KEPT_ON_EVERY_LAYER)

LAYERS: dict[str, Callable[[], OrderingLayer]] = {
    "multistage": MultistageLayer,
    "atoms": AtomsLayer,
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_seeded_runs_with_joins_and_leaves(name: str) -> None:
    outcomes: Counter[str] = Counter()
    for seed in range(RUNS):
        workload = random_workload(random.Random(seed))
        run = run_layer(LAYERS[name](), workload, seed=seed)
        assert not run.stalled, f"seed {seed}: {name} stalled holding {run.stalled}"
        assert not run.missing, f"seed {seed}: {name} owed but never handed {run.missing[:3]}"
        # the log goes through its text form, as `faidecs verify` reads it
        log = RunLog.read(run.log.dumps().splitlines(), f"<{name} seed {seed}>")
        report = check(log, MUST_HOLD)
        assert report.violated() == [], f"seed {seed}:\n{report.table()}"
        outcomes["notifications"] += run.notifications
        outcomes["joins"] += len(log.joined)
        outcomes["deliveries"] += len(log.delivered)
    # the runs exercise what they claim to: joins, notifications, engines delivering
    assert outcomes["joins"] == 2 * RUNS
    assert outcomes["notifications"] > 100 * RUNS
    assert outcomes["deliveries"] > 10 * RUNS
