"""The simulator's cost model (faidecs/overlay/sim/costmodel.py): a process handles one pass at a
time, host links take time per byte, batches grow with load, and without the model every seeded
run is exactly what it was before the model existed."""

from __future__ import annotations

import hashlib
import random

import pytest

from faidecs.overlay.core.messages import Ack, Commit, Holds
from faidecs.overlay.sim.costmodel import CostModel, Line, ProcessCosts, frames
from faidecs.overlay.sim.generate import random_deployment
from faidecs.overlay.sim.scenario import Scenario, SimConfig
from faidecs.overlay.sim.simulator import SimResult, Simulation, simulate

TYPES = "type A(x: int)\ntype B(x: int)\n"
TIMING = {"tick_every": 5, "heartbeat_every": 20, "settle": 200}


def costed(handle_us: float = 0.0, **model: object) -> CostModel:
    """Servers take ``handle_us`` per publication they handle; nothing else costs CPU."""
    server = ProcessCosts(handle={"Publish": Line(a=handle_us)})
    return CostModel(server=server, latency_us=0.0, **model)  # type: ignore[arg-type]


def run(
    publications: list[tuple[int, str, dict[str, object]]], model: CostModel, subscription: str = "A", **config: object
) -> SimResult:
    scenario = Scenario(TYPES, {"s1": f"subscription s1: {subscription}\n"}, publications, servers=1)
    return Simulation(scenario, SimConfig(seed=3, replicas=1, cost=model, **TIMING, **config)).run()  # type: ignore[arg-type]


def latencies(r: SimResult) -> list[float]:
    return [t - max(r.published_clock[i] for i in rel) for _, t, rel in r.delivered_at]


def event(k: int, type_name: str = "A") -> dict[str, object]:
    return {"id": f"e{k}", "type": type_name, "attrs": {"x": k}}


def test_a_busy_process_delays_the_next_message() -> None:
    alone = latencies(run([(0, "p1", event(1))], costed(handle_us=2000)))
    assert len(alone) == 1 and 2.0 <= alone[0] < 3.0
    # Two publications at once: the server handles one after the other, and the pass's replies
    # leave when both are handled.
    both = latencies(run([(0, "p1", event(1)), (0, "p1", event(2))], costed(handle_us=2000)))
    assert len(both) == 2 and min(both) >= 4.0


def test_the_host_link_takes_time_per_byte() -> None:
    free = latencies(run([(0, "p1", event(1))], costed()))
    size = {"Publish": Line(a=1000.0), "Forward": Line(a=1000.0), "ForwardBatch": Line(a=500.0, b=500.0)}
    slow = latencies(run([(0, "p1", event(1))], costed(bandwidth=100_000.0, size=size)))  # 100 KB/s
    # The publication's 1,000 bytes take 10 ms on the publisher's link, the stream's 1,000 take
    # 10 ms on the server's: at least 20 ms more than on free links.
    assert slow[0] - free[0] >= 20.0


def test_batches_grow_with_load() -> None:
    def decisions_per_batch(gap_ms: int) -> float:
        pubs = [(k * gap_ms, "p1", event(k)) for k in range(60)]
        scenario = Scenario(TYPES, {"s1": "subscription s1: A\n"}, pubs, servers=3)
        r = simulate(scenario, SimConfig(seed=3, replicas=3, cost=costed(handle_us=300), **TIMING))  # type: ignore[arg-type]
        assert len(r.delivered_at) == 60
        return r.batches["decisions"] / r.batches["Decide"]

    light, heavy = decisions_per_batch(5), decisions_per_batch(0)
    assert light < 1.5  # one publication per pass: one decision per Decide
    assert heavy > 3 * light


def test_the_model_is_deterministic() -> None:
    pubs = [(k % 7, "p1", event(k, "AB"[k % 2])) for k in range(40)]
    model = costed(handle_us=150, bandwidth=1e6)
    a = run(pubs, model, "A and B and A.x < B.x")
    b = run(pubs, model, "A and B and A.x < B.x")
    assert a.delivered_at == b.delivered_at and a.delivered_at
    assert a.messages == b.messages and a.busy_us == b.busy_us


def test_the_sequencer_orders_every_type_in_one_group() -> None:
    pubs = [(k, "p1", event(k, "AB"[k % 2])) for k in range(20)]
    scenario = Scenario(TYPES, {"s1": "subscription s1: A and B\n"}, pubs, servers=4)
    r = simulate(scenario, SimConfig(seed=1, ordering="sequencer", replicas=3, cost=costed(), **TIMING))  # type: ignore[arg-type]
    assert len(r.roles) == 1 and len(r.delivered_at) == 10  # pairs, each event used once
    assert not r.gaps


#: Run logs of seeded runs on the tree before the cost model (83d8662), batch_ms 0 and 3. With the
#: model off (the default) they must not change; a deliberate change of the core's behaviour that
#: changes them needs these regenerated, with the reason in its commit.
BEFORE = {
    (0, 0): "f13b6af2041c9190",
    (0, 3): "bf3fe5033905476f",
    (1, 0): "44f4849d5c1c5ba5",
    (1, 3): "96d0d1fa9631a30a",
    (2, 0): "af5ee293f4f2366c",
    (2, 3): "019597618b337a8c",
    (3, 0): "54ddc28741ae055e",
    (3, 3): "984db932965cd960",
}


@pytest.mark.parametrize(("seed", "batch"), sorted(BEFORE))
def test_without_the_model_runs_are_as_before(seed: int, batch: int) -> None:
    scenario = random_deployment(random.Random(seed), faults=seed % 2 == 0)
    r = simulate(scenario, SimConfig(seed=seed, batch_ms=batch))
    assert hashlib.sha256(r.log.dumps().encode()).hexdigest()[:16] == BEFORE[(seed, batch)]
    assert not r.delivered_at and not r.busy_us


def test_frames_coalesce_as_the_runtime_does() -> None:
    from faidecs.overlay.runtime.node import coalesce

    role = ("A",)
    msgs = [Holds(role, 1, "m1", 3), Commit(role, 1, 2), Holds(role, 1, "m1", 5), Ack(role, "k", "s1", 4)]
    msgs += [Commit(role, 1, 4), Ack(role, "k", "s1", 9), Holds(role, 2, "m1", 1)]
    got = frames([("m2", m) for m in msgs] + [("m3", msgs[0])])
    assert got["m2"] == coalesce(list(msgs))
    assert got["m3"] == [msgs[0]]
