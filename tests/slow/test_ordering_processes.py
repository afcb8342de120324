"""Both ordering layers as OS processes on loopback (``faidecs/ordering/loopback.py``): ZeroMQ with
CurveZMQ between servers hosting the topic managers or atoms, subscriber processes with embedded
engines, and one publisher process; the merged run log is judged by the property checker and
compared with the simulator's run of the same workload.

One publisher address, so every topic's events reach their first ordering entity in publication
order in both runtimes: each process is notified of each topic's events in publication order, of
exactly the events the simulator notifies it of, and processes with one subscription agree on
everything. Subscriptions are static (no joins or leaves on processes)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from faidecs.ordering.atoms import AtomsLayer
from faidecs.ordering.harness import KEPT_ON_EVERY_LAYER, Publication, Workload, run_layer
from faidecs.ordering.layer import OrderingLayer
from faidecs.ordering.loopback import LoopbackRun, write_plan
from faidecs.ordering.multistage import MultistageLayer
from faidecs.properties import check
from faidecs.runs.runlog import RunLog

# OS processes on ZooKeeper sessions of about a second: they run alone (scripts/test), not beside
# other tests that would starve them of CPU past a session timeout.
pytestmark = [pytest.mark.slow, pytest.mark.processes]

MUST_HOLD = list(KEPT_ON_EVERY_LAYER)
TYPES = "".join(f"type T{k}(x: int)\n" for k in range(1, 7))
SUBSCRIPTIONS = {
    "p0": "subscription p0 (matching MR, disposal FP): T1 and T2",
    "p1": "subscription p1 (matching MR, disposal FP): T1 and T2",  # p0's twin
    "p2": "subscription p2: T2 and T3.x = T4.x",
    "p3": "subscription p3 (matching FRC, disposal I): T1 and T3 and T4",
    "p4": "subscription p4: T5",
    "p5": "subscription p5: T4 and T5 and T6",
    "p6": "subscription p6: T6",
}
EVENTS = 400


def events() -> list[dict[str, Any]]:
    rng = random.Random(4)
    return [
        {"id": f"e{k}", "type": f"T{rng.randint(1, 6)}", "attrs": {"x": rng.randrange(3)}, "publisher": "pub1"}
        for k in range(EVENTS)
    ]


def simulated(layer: OrderingLayer, evs: list[dict[str, Any]]) -> RunLog:
    publications = tuple(
        Publication(float(k), e["publisher"], {x: e[x] for x in ("id", "type", "attrs")}) for k, e in enumerate(evs)
    )
    workload = Workload(TYPES, SUBSCRIPTIONS, frozenset(SUBSCRIPTIONS), publications)
    run = run_layer(layer, workload, seed=1)
    assert not run.stalled and not run.missing
    return run.log


def per_process(log: RunLog) -> tuple[dict[str, list[str]], dict[str, list[tuple[int, tuple[str, ...]]]]]:
    notified: dict[str, list[str]] = {p: [] for p in log.processes}
    delivered: dict[str, list[tuple[int, tuple[str, ...]]]] = {p: [] for p in log.processes}
    for n in log.notified:
        notified[n.process].append(n.event)
    for d in log.delivered:
        delivered[d.process].append((d.conjunction, d.relation))
    return notified, delivered


@pytest.mark.parametrize("layer", ["multistage", "atoms"])
def test_layer_on_loopback_processes(layer: str, tmp_path: Path) -> None:
    evs = events()
    write_plan(tmp_path, layer, TYPES, SUBSCRIPTIONS, evs, servers=3)
    run = LoopbackRun(tmp_path)
    statuses = run.run(timeout=40)
    assert {n: s["rejected"] for n, s in statuses.items() if s["rejected"]} == {}
    log = run.merged()
    assert [p.id for p in log.published] == [e["id"] for e in evs]
    report = check(log, MUST_HOLD)
    assert report.violated() == [], report.table()

    notified, delivered = per_process(log)
    sim_notified, sim_delivered = per_process(
        simulated(MultistageLayer() if layer == "multistage" else AtomsLayer(), evs)
    )
    order = {e["id"]: k for k, e in enumerate(evs)}
    type_of = {e["id"]: e["type"] for e in evs}
    for process in SUBSCRIPTIONS:
        assert sorted(notified[process]) == sorted(sim_notified[process]), process
        for topic in {type_of[e] for e in notified[process]}:
            mine = [order[e] for e in notified[process] if type_of[e] == topic]
            assert mine == sorted(mine), f"{process} got {topic} out of publication order"
    # twins agree on everything; single-type subscriptions deliver as in the simulator
    assert notified["p0"] == notified["p1"] and delivered["p0"] == delivered["p1"]
    assert delivered["p0"], "the twins' engines delivered nothing: the check would be empty"
    for process in ("p4", "p6"):
        assert delivered[process] == sim_delivered[process] and delivered[process]
