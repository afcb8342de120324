"""The overlay in the simulator: latency by merger depth, failover stalls, replication traffic,
filtering, and the simulator's own speed.

    .venv/bin/python benchmarks/overlay.py [--quick] [--out benchmarks/results]

Times are *virtual* milliseconds of the deterministic simulator (links delay 1-20 ms, uniformly,
seeded), so they show the protocol's costs in units of link delays and timeouts, not a machine's
speed; the real runtime's figures come with the multi-process overlay. Wall-clock figures (the
simulator's speed) are real. Writes overlay.json and overlay.md next to the suite's results.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import machine  # noqa: E402

from faidecs.merging.roles import role_of  # noqa: E402
from faidecs.overlay.sim.scenario import Fault, Scenario, SimConfig  # noqa: E402
from faidecs.overlay.sim.simulator import SimResult, simulate  # noqa: E402

TYPES = ["A", "B", "C", "D", "E"]
TYPES_SOURCE = "".join(f"type {t}(x: int)\n" for t in TYPES)


def stream(types: list[str], events: int, every: int, publishers: int = 2) -> list[tuple[int, str, dict[str, Any]]]:
    """A steady round-robin stream over ``types``, ``every`` ms apart, from ``publishers``."""
    return [
        (k * every, f"pub{k % publishers + 1}", {"id": f"e{k}", "type": types[k % len(types)], "attrs": {"x": k % 10}})
        for k in range(events)
    ]


def latencies(result: SimResult, process: str) -> list[int]:
    """Virtual ms from each event's publication to its being fed to ``process``'s engine."""
    out: list[int] = []
    for s in result.clients[process].streams.values():
        for (_, event_id), at in zip(s.fed, s.fed_at):
            out.append(at - result.published_at[event_id])
    return out


def pct(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))]) if ordered else float("nan")


def by_depth(args: argparse.Namespace) -> list[dict[str, Any]]:
    """End-to-end latency for a conjunction of k types: k-1 conjunction mergers below the roots."""
    rows = []
    for k in range(1, 6):
        types = TYPES[:k]
        condition = " and ".join(types)
        scenario = Scenario(TYPES_SOURCE, {"s": f"subscription S: {condition}"}, stream(types, args.events, 5))
        lat = []
        for seed in range(args.seeds):
            lat += latencies(simulate(scenario, SimConfig(seed=seed, matcher="reference")), "s")
        rows.append({"types": k, "mergers_on_path": k, "p50": pct(lat, 0.5), "p99": pct(lat, 0.99), "max": max(lat)})
        print(f"  depth k={k}: latency p50 {rows[-1]['p50']:.0f} ms, p99 {rows[-1]['p99']:.0f} ms (virtual)")
    return rows


def failover(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Crash the leader of ⊔[A,B] mid-stream. Failover: from the crash to the new leader's first
    commit. Stall: the longest publication-to-engine latency, less the fault-free run's median."""
    from faidecs.overlay.core.placement import place

    rows = []
    servers = [f"m{k}" for k in range(1, 5)]
    role = role_of(["A", "B"])
    leader = place(role, servers, 3)[0]
    crash_at = args.events * 5 // 2
    for timeout in (50, 150, 300, 600):
        failovers, stalls = [], []
        for seed in range(args.seeds):
            publications = stream(["A", "B"], args.events, 5)
            config = SimConfig(seed=seed, matcher="reference", session_timeout=timeout)
            calm = simulate(Scenario(TYPES_SOURCE, {"s": "subscription S: A and B"}, publications), config)
            scenario = Scenario(
                TYPES_SOURCE,
                {"s": "subscription S: A and B"},
                publications,
                faults=[Fault("crash", crash_at, (leader,))],
            )
            result = simulate(scenario, config)
            assert not result.gaps, [g.describe() for g in result.gaps]
            new_leader, epoch = result.leadership[role]
            replica = result.replicas[new_leader][role]
            first = next(d.position for d in replica.log.decisions if d.epoch == epoch)
            failovers.append(replica.log.committed_at[first] - (result.gate + crash_at))
            stalls.append(max(latencies(result, "s")) - statistics.median(latencies(calm, "s")))
        rows.append(
            {
                "session_timeout": timeout,
                "failover_median": statistics.median(failovers),
                "failover_max": max(failovers),
                "stall_median": statistics.median(stalls),
                "stall_max": max(stalls),
            }
        )
        r = rows[-1]
        print(
            f"  session timeout {timeout} ms: failover {r['failover_median']:.0f} ms (max {r['failover_max']:.0f}),"
            f" longest extra wait {r['stall_median']:.0f} ms (max {r['stall_max']:.0f})"
        )
    return rows


def traffic(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Messages per published event, by kind: replication (Decide, Holds, Commit), streams
    (Forward), acknowledgements, with and without selective unary predicates."""
    rows = []
    for label, sub in (
        ("A and B (no filter)", "subscription S: A and B"),
        ("A and B, A.x > 7 (80% of A filtered)", "subscription S: A and B and A.x > 7"),
    ):
        scenario = Scenario(TYPES_SOURCE, {"s": sub}, stream(["A", "B"], args.events, 5))
        result = simulate(scenario, SimConfig(seed=0, matcher="reference"))
        per = {k: round(v / args.events, 2) for k, v in sorted(result.messages.items())}
        merged = result.log_of(role_of(["A", "B"]))
        rows.append(
            {
                "subscription": label,
                "per_event": per,
                "total": round(sum(result.messages.values()) / args.events, 1),
                "events_in_conjunction_merger": sum(1 for d in merged if d.kind == "event"),
            }
        )
        merged_events = rows[-1]["events_in_conjunction_merger"]
        print(
            f"  {label}: {rows[-1]['total']} messages per event; ⊔[A,B] merged {merged_events} of {args.events} events"
        )
    return rows


def speed(args: argparse.Namespace) -> dict[str, Any]:
    import random

    from faidecs.overlay.sim.generate import random_deployment

    start = time.perf_counter()
    events = messages = 0
    runs = args.runs
    for seed in range(runs):
        scenario = random_deployment(random.Random(seed))
        result = simulate(scenario, SimConfig(seed=seed, matcher="reference"))
        events += len(result.log.published)
        messages += sum(result.messages.values())
    wall = time.perf_counter() - start
    out = {"runs": runs, "runs_per_s": runs / wall, "messages_per_s": messages / wall, "events": events}
    print(f"  random deployments: {out['runs_per_s']:.1f} runs/s, {out['messages_per_s']:.0f} simulated messages/s")
    return out


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}. Times in virtual ms unless said.", ""]
    lines += ["| types k | p50 latency | p99 latency | max |", "|---|---|---|---|"]
    lines += [f"| {r['types']} | {r['p50']:.0f} | {r['p99']:.0f} | {r['max']} |" for r in result["depth"]]
    lines += ["", "| session timeout | failover (median) | failover (max) | longest extra wait (median) | (max) |"]
    lines += ["|---|---|---|---|---|"]
    lines += [
        f"| {r['session_timeout']} | {r['failover_median']:.0f} | {r['failover_max']:.0f} | {r['stall_median']:.0f} |"
        f" {r['stall_max']:.0f} |"
        for r in result["failover"]
    ]
    lines += ["", "| subscription | messages per event | events merged at ⊔[A,B] | by kind |", "|---|---|---|---|"]
    for r in result["traffic"]:
        kinds = ", ".join(f"{k} {v}" for k, v in r["per_event"].items())
        lines.append(f"| {r['subscription']} | {r['total']} | {r['events_in_conjunction_merger']} | {kinds} |")
    s = result["speed"]
    lines += [
        "",
        f"Simulator: {s['runs_per_s']:.1f} random deployments/s, {s['messages_per_s']:.0f} messages/s (wall clock).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer events and seeds")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args()
    args.events, args.seeds, args.runs = (200, 3, 50) if args.quick else (1000, 10, 300)
    result: dict[str, Any] = {"machine": machine()}
    print("latency by depth:")
    result["depth"] = by_depth(args)
    print("failover (leader of ⊔[A,B] crashes mid-stream):")
    result["failover"] = failover(args)
    print("traffic:")
    result["traffic"] = traffic(args)
    print("simulator speed:")
    result["speed"] = speed(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "overlay.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "overlay.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
