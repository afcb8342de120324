"""Judging one seeded simulated deployment, shared by the seeded-run tests of the overlay
(test_overlay_runs, test_overlay_marker_joins): the stream audit, the properties the options keep,
and per subscriber the deliveries its stream owes it (a peer's after the join, else the embedded
engine's on its stream)."""

from __future__ import annotations

from faidecs.overlay.sim.audit import expected_deliveries
from faidecs.overlay.sim.report import kept_properties
from faidecs.overlay.sim.scenario import Scenario, SimConfig
from faidecs.overlay.sim.simulator import SimResult, Simulation
from faidecs.properties import check

#: (batch_ms, max_batch) by seed: unbatched, or batches closed 1, 2 or 5 virtual ms after they open,
#: of 2 to 128 decisions. Seven settings, prime to the 16 combinations of options, so that every
#: combination meets every setting.
BATCHING = [(0, 128), (1, 2), (5, 128), (0, 128), (1, 128), (5, 3), (2, 16)]


def judged(scenario: Scenario, seed: int, label: str) -> tuple[SimResult, list[str]]:
    """Run ``scenario`` with ``seed``; the result and every problem found, each naming the run."""
    # Five runs in seven batch their decisions and streams (issue 21).
    batch_ms, max_batch = BATCHING[seed % len(BATCHING)]
    config = SimConfig(seed=seed, matcher="reference", batch_ms=batch_ms, max_batch=max_batch)
    simulation = Simulation(scenario, config)
    result = simulation.run()
    batching = f"batch_ms={batch_ms}, max_batch={max_batch}" if batch_ms else "unbatched"
    where = f"seed {seed} ({label}; {batching}; faults: {[f.describe() for f in scenario.faults]})"
    problems = [f"{where}: {g.describe()}" for g in result.gaps]
    if result.unacked:  # restarts: a publication no root ordered is lost
        problems.append(f"{where}: publications never ordered: {result.unacked[:5]}")
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
    return result, problems
