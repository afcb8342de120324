"""The overlay as processes on loopback: throughput of one 3-replica merger and latency per hop.

    .venv/bin/python benchmarks/deploy.py [--events 20000] [--rate 1000] [--out benchmarks/results]

Each figure is a real deployment started with faidecs.overlay.runtime.launcher (ZeroMQ with CurveZMQ,
ZooKeeper, one OS process per server, subscriber and publisher), timed by the host's wall clock:

- throughput: one publisher sends ``--events`` events of one type as fast as the links take them
  to the three replicas of the root merger [A]; one subscriber to ``A`` delivers each. Events per
  second from the first publication until the last event reached the subscriber's engine.
- latency: the same at ``--rate`` events/s, and through the conjunction merger ⊔[A,B] (two merger
  hops): from the publication of a relation's last event to its delivery, from the run logs.

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--rate", type=float, default=1000, help="events/s for the latency runs")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    latency_events = int(args.rate * 5)
    with ZooKeeperServer() as zk:

        def one(n: int, rate: float, types: str, subscription: str, port: int) -> dict[str, Any]:
            path = write_deployment(scratch(), PROGRAM, events(n, types), {"s1": subscription}, rate=rate, port=port)
            return measure(zk.address, path)

        result = {
            "machine": machine(),
            "throughput_one_merger": one(args.events, 0, "A", "OneA", 18100),
            "latency_one_hop": one(latency_events, args.rate, "A", "OneA", 18300),
            "latency_two_hops": one(latency_events, args.rate, "AB", "Pair", 18500),
        }
    print(json.dumps(result, indent=2))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "deploy.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "deploy.md").write_text(markdown(result, args.rate))


def markdown(r: dict[str, Any], rate: float) -> str:
    m = r["machine"]
    t, one, two = r["throughput_one_merger"], r["latency_one_hop"], r["latency_two_hops"]
    return (
        f"The overlay as processes on loopback ({m['cpu']}, {m['cores']} cores), CurveZMQ, ZooKeeper\n\n"
        "| figure | value |\n|---|---|\n"
        f"| throughput, one 3-replica merger, publisher unthrottled "
        f"| {t['events_per_s']:,} events/s ({t['events']:,} events) |\n"
        f"| latency at {rate:,.0f} events/s, one merger hop: p50 / p99 "
        f"| {one['latency_ms'].get('p50')} / {one['latency_ms'].get('p99')} ms |\n"
        f"| latency at {rate:,.0f} events/s, two merger hops (A and B): p50 / p99 "
        f"| {two['latency_ms'].get('p50')} / {two['latency_ms'].get('p99')} ms |\n"
    )


if __name__ == "__main__":
    main()
