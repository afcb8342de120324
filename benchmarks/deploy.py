"""The overlay as processes on loopback: throughput of one 3-replica merger and latency per hop.

    .venv/bin/python benchmarks/deploy.py [--events 20000] [--rate 1000] [--rounds 2] [--out benchmarks/results]

Each figure is a real deployment started with faidecs.overlay.runtime.launcher (ZeroMQ with CurveZMQ,
ZooKeeper, one OS process per server, subscriber and publisher), timed by the host's wall clock:

- throughput: one publisher sends ``--events`` events of one type as fast as the links take them
  to the three replicas of the root merger [A]; one subscriber to ``A`` delivers each. Events per
  second from the first publication until the last event reached the subscriber's engine.
- latency: the same at ``--rate`` events/s, and through the conjunction merger ⊔[A,B] (two merger
  hops): from the publication of a relation's last event to its delivery, from the run logs.

Each figure is measured with decisions and streams batched (the default) and unbatched, alternating
(``--rounds`` each), and with the messages every process sent per event published.

Writes deploy.json and deploy.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deployed import measure, scratch, write_deployment  # noqa: E402
from run import machine  # noqa: E402

from faidecs.net.zkserver import ZooKeeperServer  # noqa: E402

PROGRAM = "type A(x: int)\ntype B(x: int)\nsubscription OneA: A\nsubscription Pair: A and B and A.x = B.x\n"


def events(n: int, types: str) -> list[dict[str, Any]]:
    # Consecutive A and B events share x: each pair is a relation of A and B and A.x = B.x.
    return [{"id": f"e{k}", "type": types[k % len(types)], "attrs": {"x": k // 2 % 100}} for k in range(n)]


#: The deployment settings compared: decisions and streams in batches (the default since
#: issue 21), and one message per decision and position as before.
MODES: dict[str, dict[str, Any]] = {"batched": {"batching": True}, "unbatched": {"batching": False}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--rate", type=float, default=1000, help="events/s for the latency runs")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each figure, the modes alternating")
    parser.add_argument("--port", type=int, default=18100, help="first of the ports the runs use")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    latency_events = int(args.rate * 5)
    figures = {
        "throughput_one_merger": (args.events, 0, "A", "OneA"),
        "throughput_two_hops": (args.events, 0, "AB", "Pair"),
        "latency_one_hop": (latency_events, args.rate, "A", "OneA"),
        "latency_two_hops": (latency_events, args.rate, "AB", "Pair"),
    }
    result: dict[str, Any] = {"machine": machine(), "rounds": args.rounds}
    with ZooKeeperServer() as zk:
        port = args.port
        for figure, (n, rate, types, subscription) in figures.items():
            runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
            for _ in range(args.rounds):
                for mode, timing in MODES.items():
                    port += 200  # a fresh set of ports: the last run's may linger in TIME_WAIT
                    folder = scratch()
                    path = write_deployment(
                        folder, PROGRAM, events(n, types), {"s1": subscription}, rate=rate, port=port, timing=timing
                    )
                    runs[mode].append(measure(zk.address, path, expect_fed=n))  # every event passes
                    print(figure, mode, json.dumps(runs[mode][-1]), flush=True)
            result[figure] = runs
    print(json.dumps(result, indent=2))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "deploy.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "deploy.md").write_text(markdown(result, args.rate))


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the highest throughput (the least disturbed by the machine's other work)."""
    return max(runs, key=lambda r: r["events_per_s"])


def markdown(r: dict[str, Any], rate: float) -> str:
    m = r["machine"]
    lines = [
        f"The overlay as processes on loopback ({m['cpu']}, {m['cores']} cores), CurveZMQ, ZooKeeper, "
        f"3 replicas per merger, {r['rounds']} run(s) of each figure, batched and unbatched alternating\n",
        "| figure | batched | unbatched | batched / unbatched |",
        "|---|---|---|---|",
    ]
    for figure, label in (("throughput_one_merger", "one root merger [A]"), ("throughput_two_hops", "A and B")):
        b, u = best(r[figure]["batched"]), best(r[figure]["unbatched"])
        all_b = " / ".join(f"{x['events_per_s']:,}" for x in r[figure]["batched"])
        all_u = " / ".join(f"{x['events_per_s']:,}" for x in r[figure]["unbatched"])
        lines.append(
            f"| throughput through {label}, events/s (each run) | {all_b} | {all_u} | "
            f"{b['events_per_s'] / max(1, u['events_per_s']):.2f}× (best) |"
        )
        lines.append(
            f"| messages sent per event, {label} | {b['messages_per_event']} | {u['messages_per_event']} | "
            f"{b['messages_per_event'] / max(0.01, u['messages_per_event']):.2f}× |"
        )
    for figure, label in (("latency_one_hop", "one merger hop"), ("latency_two_hops", "two merger hops (A and B)")):
        cells = []
        for mode in MODES:
            p = [x["latency_ms"] for x in r[figure][mode]]
            cells.append(" ; ".join(f"{x.get('p50')} / {x.get('p99')}" for x in p))
        lines.append(f"| latency at {rate:,.0f} events/s, {label}: p50 / p99 ms | {cells[0]} | {cells[1]} | |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
