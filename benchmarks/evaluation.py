"""The papers' evaluation (seed 001, section 4.5, Figure 4.9), modelled and measured.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/evaluation.py [--counts 10,50,100,250,500]
        [--scenarios A,B,C] [--events 1000] [--out benchmarks/results]

The modelled sweep: the papers' workload (benchmarks/papers_workload.py) for each scenario and
subscriber count, under faidecs (3 replicas per merger), the single sequencer, the replicated
sequencer (3) and Raft (3), on ``--servers`` server hosts, simulated with the cost model that
``benchmarks/calibrate.py`` fitted (calibration.json): every process on a host of its own, host
links of ``--gbps`` Gb/s, ``--latency-us`` of propagation. Throughput: an unthrottled publisher,
events per second from the first publication until the last event reached a subscriber's engines,
and per subscriber the events its engines were fed per second (the papers' metric). Latency: at a
steady rate, half the single sequencer's modelled throughput at that point, from the publication of
a relation's last event to its delivery (mean, as the papers average).

Measured points: ``hosts.json`` (the namespace deployments, when it exists) and the loopback
validation of calibration.json, side by side with the model's. Writes evaluation.json,
evaluation.md and evaluation.png (the layout of Figure 4.9: throughput per subscriber and latency
against the number of subscribers, one line per ordering, one column per scenario).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate import RESULTS, Setup, papers_setup, simulate_setup  # noqa: E402
from run import machine  # noqa: E402

from faidecs.overlay.sim.costmodel import CostModel  # noqa: E402

ORDERINGS: list[tuple[str, str, int]] = [
    ("sequencer", "sequencer", 1),
    ("faidecs", "overlay", 3),
    ("replicated sequencer", "sequencer", 3),
    ("raft", "raft", 3),
]
#: Figure 4.9's claims (the dissertation's text; the figure itself is not in the extraction)
PAPERS = {
    "A": "faidecs 1.84x to 4.82x the sequencer's throughput (A and B)",
    "B": "faidecs 1.84x to 4.82x the sequencer's throughput (A and B)",
    "C": "faidecs 1.59x to 4.12x the sequencer's throughput",
}


def sweep(
    args: argparse.Namespace, model: CostModel, raft_extra: float, done: Callable[[list[dict[str, Any]]], object]
) -> list[dict[str, Any]]:
    """The modelled rows; ``done`` gets the rows so far after each (a long sweep's partial results)."""
    rows: list[dict[str, Any]] = []
    for scenario in args.scenarios:
        for count in args.counts:
            rate = 0.0
            for label, ordering, replicas in ORDERINGS:
                setup: Setup = papers_setup(scenario, count, args.events, ordering, replicas, args.servers)
                started = time.monotonic()
                thr = simulate_setup(setup, model, 0.0, raft_extra)
                if label == "sequencer":  # the latency runs' common rate
                    rate = max(50.0, round(thr["events_per_s"] / 2, -1))
                steady = papers_setup(
                    scenario, count, int(rate * args.latency_seconds) + 1, ordering, replicas, args.servers
                )
                lat = simulate_setup(steady, model, rate, raft_extra, seconds=args.latency_seconds)
                row = {
                    "scenario": scenario,
                    "subscribers": count,
                    "ordering": label,
                    "events_per_s": thr["events_per_s"],
                    "per_subscriber": round(thr["fed_per_subscriber"] / thr["seconds"], 1) if thr["seconds"] else 0,
                    "busiest": thr["busiest"],
                    "messages_per_event": thr["messages_per_event"],
                    "latency_rate": rate,
                    "latency_ms": lat.get("latency_ms", {}),
                    "sim_seconds": round(time.monotonic() - started, 1),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
                done(rows)
    return rows


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per scenario and count: faidecs' throughput and latency against each baseline."""
    out = []
    keyed = {(r["scenario"], r["subscribers"], r["ordering"]): r for r in rows}
    for (scenario, count, ordering), r in keyed.items():
        if ordering != "faidecs":
            continue
        for base in ("sequencer", "replicated sequencer", "raft"):
            b = keyed.get((scenario, count, base))
            if b is None or not b["events_per_s"]:
                continue
            lat_f, lat_b = r["latency_ms"].get("mean"), b["latency_ms"].get("mean")
            out.append(
                {
                    "scenario": scenario,
                    "subscribers": count,
                    "against": base,
                    "throughput": round(r["events_per_s"] / b["events_per_s"], 2),
                    "latency_lower": round(lat_b / lat_f, 2) if lat_f and lat_b else None,
                }
            )
    return out


def markdown(result: dict[str, Any]) -> str:
    m = result["model"]
    lines = [
        f"Modelled (benchmarks/evaluation.py): {result['servers']} server hosts, one host per process, "
        f"{result['gbps']} Gb/s links, {result['latency_us']} µs propagation, {result['events']:,} events per "
        f"throughput run; costs from {m['source']}.\n",
        "| scenario | subscribers | ordering | events/s | per subscriber (events/s) | busiest process | "
        "messages/event | latency mean / p99 (ms) at rate |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lat = r["latency_ms"]
        lines.append(
            f"| {r['scenario']} | {r['subscribers']} | {r['ordering']} | {r['events_per_s']:,} | "
            f"{r['per_subscriber']:,} | {r['busiest']} | {r['messages_per_event']} | "
            f"{lat.get('mean')} / {lat.get('p99')} at {r['latency_rate']:,.0f}/s |"
        )
    lines += [
        "\nfaidecs against each baseline (throughput ratio; latency: how many times lower faidecs' mean is):\n",
        "| scenario | subscribers | against | throughput | latency lower |",
        "|---|---|---|---|---|",
    ]
    for x in result["ratios"]:
        lines.append(
            f"| {x['scenario']} | {x['subscribers']} | {x['against']} | {x['throughput']}x | {x['latency_lower']}x |"
        )
    lines.append("\nThe papers (Figure 4.9): " + "; ".join(f"{k}: {v}" for k, v in PAPERS.items() if k != "B") + ".\n")
    measured = result.get("measured", [])
    if measured:
        lines += [
            "\nMeasured next to modelled (same deployments):\n",
            "| source | setup | ordering | measured events/s | model events/s | measured p50 ms | model p50 ms |",
            "|---|---|---|---|---|---|---|",
        ]
        for v in measured:
            lines.append(
                f"| {v['source']} | {v['setup']} | {v['ordering']} | {v.get('measured_events_per_s')} | "
                f"{v.get('model_events_per_s')} | {v.get('measured_p50_ms')} | {v.get('model_p50_ms')} |"
            )
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    scenarios = sorted({r["scenario"] for r in rows})
    fig, axes = plt.subplots(2, len(scenarios), figsize=(4.2 * len(scenarios), 6.4), squeeze=False)
    for col, scenario in enumerate(scenarios):
        for label, _, _ in ORDERINGS:
            pts = sorted((r["subscribers"], r) for r in rows if r["scenario"] == scenario and r["ordering"] == label)
            xs = [p[0] for p in pts]
            axes[0][col].plot(xs, [p[1]["per_subscriber"] for p in pts], marker="o", label=f"{label} (model)")
            axes[1][col].plot(xs, [p[1]["latency_ms"].get("mean") for p in pts], marker="o", label=f"{label} (model)")
        for m in result.get("measured", []):
            if m.get("scenario") == scenario and m.get("per_subscriber"):
                axes[0][col].scatter([m["subscribers"]], [m["per_subscriber"]], marker="x", color="black")
        axes[0][col].set_title(f"scenario {scenario}: throughput per subscriber")
        axes[1][col].set_title(f"scenario {scenario}: latency")
        axes[1][col].set_xlabel("subscribers")
        axes[0][col].set_yscale("log")
        axes[1][col].set_yscale("log")
    axes[0][0].set_ylabel("events/s per subscriber")
    axes[1][0].set_ylabel("mean latency (ms)")
    axes[0][-1].legend(fontsize="x-small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def measured_points(out: Path, calibration: dict[str, Any]) -> list[dict[str, Any]]:
    """Measured figures next to the model's: the namespace deployments (hosts.json, written by
    benchmarks/hosts.py) when they exist, and the loopback validation of the calibration."""
    points = [{"source": "loopback (calibration)", **v} for v in calibration.get("validation", [])]
    for name in ("hosts.json", "hosts-quick.json"):
        path = out / name
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        for r in data.get("rows", []):
            throughput, latency = r.get("throughput") or {}, r.get("latency") or {}
            fed = throughput.get("per_subscriber", {}).get("fed_per_s_mean", throughput.get("fed_per_s_mean"))
            points.append(
                {
                    "source": name,
                    "setup": f"{data['scenario']}, {data['subscribers']} subscribers, {data['servers']} server hosts",
                    "scenario": data["scenario"],
                    "subscribers": data["subscribers"],
                    "ordering": r["ordering"],
                    "measured_events_per_s": throughput.get("events_per_s"),
                    "per_subscriber": fed,
                    "measured_p50_ms": latency.get("latency_ms", {}).get("p50"),
                }
            )
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="10,50,100,250,500")
    parser.add_argument("--scenarios", default="A,B,C")
    parser.add_argument("--events", type=int, default=1000, help="events per throughput run")
    parser.add_argument("--latency-seconds", type=float, default=0.5, help="virtual seconds of each latency run")
    parser.add_argument("--servers", type=int, default=25)
    parser.add_argument("--gbps", type=float, default=1.0)
    parser.add_argument("--latency-us", type=float, default=100.0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    args.counts = [int(c) for c in args.counts.split(",")]
    args.scenarios = args.scenarios.split(",")
    calibration = json.loads((args.out / "calibration.json").read_text())
    model = CostModel.model_validate(calibration["model"]).scaled(
        cores=0, bandwidth=args.gbps * 1e9 / 8, latency_us=args.latency_us
    )

    def write(rows: list[dict[str, Any]]) -> dict[str, Any]:
        result = {
            "machine": machine(),
            "servers": args.servers,
            "gbps": args.gbps,
            "latency_us": args.latency_us,
            "events": args.events,
            "model": model.model_dump(),
            "raft_extra_us": calibration["raft_extra_us"],
            "rows": rows,
            "ratios": ratios(rows),
            "measured": measured_points(args.out, calibration),
        }
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "evaluation.json").write_text(json.dumps(result, indent=1) + "\n")
        (args.out / "evaluation.md").write_text(markdown(result))
        plot(result, args.out / "evaluation.png")
        return result

    print(markdown(write(sweep(args, model, calibration["raft_extra_us"], write))))


if __name__ == "__main__":
    main()
