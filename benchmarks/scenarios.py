"""The papers' scenarios on real processes: faidecs' merging overlay against total-order baselines
in the same runtime (ZeroMQ with CurveZMQ, ZooKeeper, one OS process each), measured in one run.

    .venv/bin/python benchmarks/scenarios.py [--quick] [--out benchmarks/results]

Scenarios (Middleware 2011 Sec. 3.5, ToIT 2013 Sec. 4.5), four types A-D with integer
attributes x and y, events round robin over the types:

- A: filtering at subscribers: conjunctions of k = 2, 3, 4 types joined on x, no unary predicate.
- B: unary filtering at mergers: pairs with selective thresholds on x (pushed to the mergers).
- C: all 6 pairwise conjunctions of the 4 types.
- D: disjunctions of two pairs.

Orderings, each feeding the same subscriber engines: ``overlay`` (faidecs), ``sequencer`` with one
replica (a single sequencer) and with three (a replicated sequencer, majority commit), and
``raft`` (a Raft log from pysyncobj) where the runtime has it. Subscribers are spread over the
scenario's subscriptions; their number grows. Throughput: an unthrottled publisher, events per
second from the first publication until the last event reached a subscriber's engines. \
Latency: at a steady rate, from the
publication of a relation's last event to its delivery (p50, p99). Writes scenarios.json,
scenarios.md and scenarios.png.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deployed import measure, scratch, write_deployment  # noqa: E402
from run import machine  # noqa: E402

from faidecs.net.zkserver import ZooKeeperServer  # noqa: E402
from faidecs.overlay.runtime.deployment import Deployment  # noqa: E402

TYPES = "ABCD"
DECLS = "".join(f"type {t}(x: int, y: int)\n" for t in TYPES)


def _join(types: str) -> str:
    return " and ".join(types) + " and " + " and ".join(f"{a}.x = {b}.x" for a, b in zip(types, types[1:]))


SCENARIOS: dict[str, dict[str, str]] = {
    "A": {"K2": _join("AB"), "K3": _join("ABC"), "K4": _join("ABCD")},
    "B": {f"F{a}{b}": f"{a} and {b} and {a}.x < 10 and {b}.x < 10 and {a}.y = {b}.y" for a, b in ("AB", "CD", "AC")},
    "C": {f"P{a}{b}": _join(a + b) for a, b in ("AB", "AC", "AD", "BC", "BD", "CD")},
    "D": {"D1": f"({_join('AB')}) or ({_join('CD')})", "D2": f"({_join('AC')}) or ({_join('BD')})"},
}


def orderings() -> list[tuple[str, str, int]]:
    """(label, ordering, replicas) of the orderings this runtime has."""
    out = [("faidecs", "overlay", 3), ("sequencer", "sequencer", 1), ("replicated sequencer", "sequencer", 3)]
    if "raft" in str(Deployment.model_fields["ordering"].annotation):
        out.append(("raft", "raft", 3))
    return out


def program(scenario: str) -> str:
    return DECLS + "".join(f"subscription {n}: {c}\n" for n, c in SCENARIOS[scenario].items())


def events(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {"id": f"e{k}", "type": TYPES[k % 4], "attrs": {"x": rng.randrange(100), "y": rng.randrange(20)}}
        for k in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer events and subscriber counts")
    parser.add_argument("--events", type=int, default=4000, help="events per throughput run")
    parser.add_argument("--rate", type=float, default=400, help="events/s for the latency runs")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    counts = [2, 6] if args.quick else [2, 4, 8]
    n = 1500 if args.quick else args.events
    rows: list[dict[str, Any]] = []
    port = 20000
    with ZooKeeperServer() as zk:
        for scenario in SCENARIOS:
            names = list(SCENARIOS[scenario])
            for count in counts:
                subscribers = {f"s{k}": names[k % len(names)] for k in range(count)}
                for label, ordering, replicas in orderings():
                    row: dict[str, Any] = {"scenario": scenario, "subscribers": count, "ordering": label}
                    port += 200
                    path = write_deployment(
                        scratch(),
                        program(scenario),
                        events(n, 1),
                        subscribers,
                        ordering=ordering,
                        replicas=replicas,
                        rate=0,
                        port=port,
                    )
                    row["throughput"] = measure(zk.address, path)
                    if count == counts[len(counts) // 2]:
                        port += 200
                        path = write_deployment(
                            scratch(),
                            program(scenario),
                            events(int(args.rate * 4), 2),
                            subscribers,
                            ordering=ordering,
                            replicas=replicas,
                            rate=args.rate,
                            port=port,
                        )
                        row["latency"] = measure(zk.address, path)
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    result = {"machine": machine(), "events": n, "rate": args.rate, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scenarios.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "scenarios.md").write_text(markdown(result))
    plot(result, args.out / "scenarios.png")
    print(markdown(result))


def markdown(r: dict[str, Any]) -> str:
    m = r["machine"]
    lines = [
        f"Scenarios on real processes, loopback, {m['cpu']} ({m['cores']} cores); throughput with an unthrottled "
        f"publisher ({r['events']:,} events), latency at {r['rate']:,.0f} events/s.\n",
        "| scenario | subscribers | ordering | events/s | vs faidecs | latency p50 / p99 (ms) |",
        "|---|---|---|---|---|---|",
    ]
    base = {
        (x["scenario"], x["subscribers"]): x["throughput"]["events_per_s"]
        for x in r["rows"]
        if x["ordering"] == "faidecs"
    }
    for x in r["rows"]:
        rate = x["throughput"]["events_per_s"]
        ratio = base.get((x["scenario"], x["subscribers"]), 0) / rate if rate else 0
        lat = x.get("latency", {}).get("latency_ms", {})
        latency = f"{lat.get('p50')} / {lat.get('p99')}" if lat else ""
        lines.append(
            f"| {x['scenario']} | {x['subscribers']} | {x['ordering']} | {rate:,} | "
            f"{'' if x['ordering'] == 'faidecs' else f'faidecs {ratio:.2f}x'} | {latency} |"
        )
    return "\n".join(lines) + "\n"


def plot(r: dict[str, Any], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    scenarios = sorted({x["scenario"] for x in r["rows"]})
    fig, axes = plt.subplots(1, len(scenarios), figsize=(4 * len(scenarios), 3.2), sharey=True)
    for ax, scenario in zip(axes, scenarios):
        for label in dict.fromkeys(x["ordering"] for x in r["rows"]):
            pts = [
                (x["subscribers"], x["throughput"]["events_per_s"])
                for x in r["rows"]
                if x["scenario"] == scenario and x["ordering"] == label
            ]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        ax.set_title(f"scenario {scenario}")
        ax.set_xlabel("subscribers")
    axes[0].set_ylabel("events/s")
    axes[-1].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
