"""The latch-time FIFO stage (seed 002) on the overlay's inputs, in the simulator: publishers send
over an unordered, lossy path (per-hop exponential delays, seeded loss), and each root merger
replica takes them through a latch receiver per publisher (docs/ordering-latch-stage.md).

Per seed, one random deployment (covering and disjunctive subscriptions, joiners, reactions, and
crashes, pauses and partitions on a share of the seeds) with a denser publication stream, run
four ways on the same path: no latch (the raw reordered stream), the latch with the default drop
policy, the latch delivering late messages, and a path that does not reorder. The root mergers'
input is judged by the property checker on its own run log (:meth:`SimResult.input_log`: Notification
FIFO Order counts per-publisher FIFO violations, Notification Integrity that nothing was ordered
twice or made up); the run log of the deployment by every property its subscriptions keep.
``FAIDECS_LATCH_STAGE_RUNS`` sets the number of seeds (default 125, four simulations each, 500 runs,
~37 s on two cores; 250 gives 1,000
runs)."""

from __future__ import annotations

import os
import random
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import pytest

from faidecs.merging.roles import is_root
from faidecs.overlay.sim.audit import expected_deliveries
from faidecs.overlay.sim.generate import BY_MATCHING, random_deployment
from faidecs.overlay.sim.report import kept_properties
from faidecs.overlay.sim.scenario import InputPath, LatchSpec, Scenario, SimConfig
from faidecs.overlay.sim.simulator import SimResult, Simulation
from faidecs.properties import Property, check
from faidecs.properties.notification_fifo import fifo_violations_by_pair
from faidecs.properties.view import RunView

pytestmark = pytest.mark.slow

RUNS = int(os.environ.get("FAIDECS_LATCH_STAGE_RUNS", "60"))
CHUNKS = 8
#: what a reordered input may break: the order of one publisher's events, nothing else
FIFO_ONLY = {Property.TYPE_FIFO_ORDER, Property.TYPE_CAUSAL_ORDER}

VARIANTS: dict[str, tuple[float, LatchSpec | None]] = {
    "raw": (10.0, None),
    "drop": (10.0, LatchSpec(p_t=0.05)),
    "deliver": (10.0, LatchSpec(p_t=0.05, late="deliver")),
    "still": (0.0, None),  # mean hop delay 0: the path loses but does not reorder
}


def scenario(seed: int) -> Scenario:
    rng = random.Random(f"latch-stage:{seed}")
    s = random_deployment(rng, BY_MATCHING[seed % len(BY_MATCHING)], staged=seed % 5 == 4)
    if seed % 3:
        s.faults = []  # two seeds in three without faults: their counts are compared exactly
    types = sorted({e["type"] for _, _, e in s.publications})
    publishers = sorted({p for _, p, _ in s.publications})
    time, out = 0, []
    for k in range(rng.randint(30, 60)):
        time += rng.randint(0, 8)
        out.append(
            (
                time,
                rng.choice(publishers),
                {"id": f"e{k + 1}", "type": rng.choice(types), "attrs": {"a": rng.randrange(4)}},
            )
        )
    s.publications = out
    return s


def one(seed: int) -> tuple[list[str], Counter[str]]:
    s = scenario(seed)
    problems: list[str] = []
    counts: Counter[str] = Counter()
    loss = random.Random(seed).choice([0.0, 0.0, 0.02, 0.1])
    for variant, (mean, latch) in VARIANTS.items():
        path = InputPath(hops=3, mean_hop_delay=mean, loss=loss, latch=latch)
        sim = Simulation(s, SimConfig(seed=seed, matcher="reference", input_path=path))
        result = sim.run()
        where = f"seed {seed} {variant} (loss {loss}, faults {[f.describe() for f in s.faults]})"
        inputs = result.input_log()
        report = check(inputs, [Property.NOTIFICATION_FIFO_ORDER, Property.NOTIFICATION_INTEGRITY])
        assert Property.NOTIFICATION_INTEGRITY not in report.violated(), f"{where}\n{report.table()}"
        found = sum(fifo_violations_by_pair(RunView(inputs)).values())
        counts[f"{variant} violations"] += found
        counts[f"{variant} sent"] += len(result.sent)
        counts[f"{variant} ordered"] += len(result.log.published)
        counts[f"{variant} copies lost"] += result.lost_on_path
        if s.faults:
            counts[f"{variant} runs with faults"] += 1
        # what was ordered keeps every property the overlay keeps (a reordered input only breaks
        # the order of a publisher's events), and every stream is its merger's committed stream
        kept = kept_properties(sim.subscriptions.values())
        broken = set(check(result.log, kept).violated())
        # without the latch's drop policy (whose roots never decide below a decided seq) a leader
        # change can order late what the old leader never received: a path that does not
        # reorder keeps FIFO only while the leaders stay
        reorders = variant in ("raw", "deliver") or (variant == "still" and bool(s.faults))
        allowed = FIFO_ONLY if reorders else set()
        if broken - allowed:
            problems.append(f"{where}: {sorted(broken - allowed)} violated")
        problems += [f"{where}: {g.describe()}" for g in result.gaps]
        problems += _audit(result, where)
        if not reorders and found:
            problems.append(f"{where}: {found} FIFO violations at the roots' input")
        if not s.faults and variant in ("drop", "deliver"):
            # one leader per root for the whole run: its latch stage's count is the checker's
            own = 0
            for role in result.roles:
                if is_root(role):
                    leader = result.placement[role][0]
                    own += sum(
                        st.late_delivered for (srv, r, _), st in result.latch.items() if srv == leader and r == role
                    )
                    stats = [st for (srv, r, _), st in result.latch.items() if srv == leader and r == role]
                    counts[f"{variant} holes"] += sum(len(st.holes) for st in stats)
                    counts[f"{variant} expected x1000"] += round(
                        1000 * sum(st.expected_violations(0.05) for st in stats)
                    )
                    counts[f"{variant} late dropped"] += sum(st.late_dropped for st in stats)
            if own != found:
                problems.append(f"{where}: the checker counts {found} violations, the leaders' latch stages {own}")
            counts[f"{variant} fault-free violations"] += found
        if not s.faults and variant in ("raw", "still"):
            counts[f"{variant} fault-free violations"] += found
    return problems, counts


def _audit(result: SimResult, where: str) -> list[str]:
    out = []
    for name, client in result.clients.items():
        if client.joined_from is not None or name in result.log.left or name in result.log.joined:
            continue
        got = [(d.conjunction, d.relation) for d in result.log.delivered if d.process == name]
        if got != expected_deliveries(result, name):
            out.append(f"{where}: {name} did not deliver what the engine delivers on its stream")
    return out


def _chunk(seeds: range) -> tuple[list[str], Counter[str]]:
    problems: list[str] = []
    counts: Counter[str] = Counter()
    for seed in seeds:
        p, c = one(seed)
        problems += p
        counts += c
    return problems, counts


def test_latch_stage_in_front_of_the_root_mergers() -> None:
    chunks = [range(k, RUNS, CHUNKS) for k in range(CHUNKS)]
    problems: list[str] = []
    counts: Counter[str] = Counter()
    with ProcessPoolExecutor(max_workers=min(CHUNKS, os.cpu_count() or 1)) as pool:
        for p, c in pool.map(_chunk, chunks):
            problems += p
            counts += c
    print(dict(sorted(counts.items())))
    assert problems == [], "\n".join(problems[:20])
    # the raw reordered stream breaks per-publisher FIFO often; the latch removes a good part of
    # it even on these short channels (a few to 20 messages per publisher and root, so β starts
    # from few samples: see test_long_stream for a converged estimate)
    assert counts["raw violations"] > 0.1 * counts["raw ordered"]
    assert counts["deliver violations"] < 0.7 * counts["raw violations"]
    # the default policy and a path that does not reorder: none at all
    assert counts["drop violations"] == 0 and counts["still fault-free violations"] == 0
    # the default policy pays for it in events never ordered (late ones dropped)
    assert counts["drop ordered"] < counts["deliver ordered"] <= counts["deliver sent"]


def long_stream(latch: LatchSpec | None, *, mean: float = 5.0) -> tuple[SimResult, list[str]]:
    """Two publishers, 800 events each of one type, about one every 2 ms each, over 3 hops of
    Exp(``mean`` ms): the latch's β estimate converges, as in the latch layer's own benchmark."""
    rng = random.Random(7)
    publications = []
    for p in ("p1", "p2"):
        time = 0.0
        for k in range(800):
            time += rng.expovariate(0.5)
            publications.append((int(time), p, {"id": f"{p}e{k}", "type": "A", "attrs": {"a": k % 4}}))
    s = Scenario("type A(a: int)\n", {"s1": "subscription S: A"}, publications)
    sim = Simulation(s, SimConfig(seed=7, matcher="reference", input_path=InputPath(mean_hop_delay=mean, latch=latch)))
    return sim.run(), kept_properties(sim.subscriptions.values())


def test_long_stream_against_the_model() -> None:
    found, expected = {}, {}
    for name, latch in {
        "raw": None,
        "P-0.2": LatchSpec(p_t=0.2, late="deliver"),
        "P-0.05": LatchSpec(p_t=0.05, late="deliver"),
        "drop": LatchSpec(p_t=0.05),
    }.items():
        result, kept = long_stream(latch)
        broken = set(check(result.log, kept).violated())
        assert broken <= (FIFO_ONLY if latch is None or latch.late == "deliver" else set()), (name, broken)
        found[name] = sum(fifo_violations_by_pair(RunView(result.input_log())).values())
        leader = result.placement[("A",)][0]
        stats = [st for (srv, _, _), st in result.latch.items() if srv == leader]
        expected[name] = sum(st.expected_violations(latch.p_t) for st in stats) if latch else 0.0
        if latch is not None:  # the checker and the leader's latch stage count the same
            assert sum(st.late_delivered for st in stats) == found[name], name
    print(found, {k: round(v, 1) for k, v in expected.items()})
    assert found["raw"] > 300
    assert found["P-0.05"] < found["P-0.2"] < found["raw"]
    assert 1 - found["P-0.05"] / found["raw"] >= 0.7
    assert found["drop"] == 0
    print("ratios", {n: round(found[n] / expected[n], 2) for n in ("P-0.05", "P-0.2")})
    # the model's per-hole expectation Σ min(P_t, 1 − F(δ)) / (1 − F(δ)): measured 2.4 times it here, where
    # holes overlap at 500 msg/s per publisher (the latch layer's own test measured 1.1-1.4 on isolated swaps)
    for name in ("P-0.05", "P-0.2"):
        assert found[name] <= 3.0 * expected[name], (name, found[name], expected[name])
