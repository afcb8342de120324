"""The overlay as processes on loopback: throughput of one 3-replica merger and latency per hop.

    .venv/bin/python benchmarks/deploy.py [--events 20000] [--out benchmarks/results]

Each figure is a real deployment started with faidecs.overlay.launcher (ZeroMQ with CurveZMQ,
ZooKeeper, one OS process per server, subscriber and publisher), timed by the host's wall clock:

- throughput: one publisher sends ``--events`` events of one type as fast as the links take them
  to the three replicas of the root merger [A]; one subscriber to ``A`` delivers each. Events per
  second from the first publication to the last delivery.
- latency: the same at a steady rate below saturation, and through the conjunction merger
  ⊔[A,B] (two merger hops): publication to delivery, per event, from the run logs.

Writes deploy.json and deploy.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import machine  # noqa: E402

from faidecs.overlay.certificates import create_keys  # noqa: E402
from faidecs.overlay.launcher import LocalDeployment  # noqa: E402
from faidecs.overlay.zkserver import ZooKeeperServer  # noqa: E402

PROGRAM = "type A(x: int)\ntype B(x: int)\nsubscription OneA: A\nsubscription Pair: A and B and A.x = B.x\n"


def deployment(folder: Path, events: int, rate: float, types: str, subscription: str, port: int) -> Path:
    (folder / "program.fdc").write_text(PROGRAM)
    with (folder / "events.jsonl").open("w") as f:
        for k in range(events):
            # Consecutive A and B events share x: each pair is a relation of A and B and A.x = B.x.
            f.write(json.dumps({"id": f"e{k}", "type": types[k % len(types)], "attrs": {"x": k // 2 % 100}}) + "\n")
    servers = "".join(f'm{k} = "tcp://127.0.0.1:{port + k}"\n' for k in range(1, 4))
    (folder / "deployment.toml").write_text(
        f'name = "bench{port}"\nprogram = "program.fdc"\nreplicas = 3\nkeys = "keys"\n\n'
        f"[servers]\n{servers}\n"
        f'[subscribers.s1]\naddress = "tcp://127.0.0.1:{port + 10}"\nsubscription = "{subscription}"\n\n'
        f'[publishers.p1]\naddress = "tcp://127.0.0.1:{port + 11}"\nevents = "events.jsonl"\nrate = {rate}\n'
    )
    create_keys(folder / "keys", ["m1", "m2", "m3", "s1", "p1"])
    return folder / "deployment.toml"


def run_once(zookeeper: str, events: int, rate: float, types: str, subscription: str, port: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="faidecs-deploy-bench-"))
    run = LocalDeployment(deployment(folder, events, rate, types, subscription, port), folder / "run", zookeeper=zookeeper)
    expected = events if subscription == "OneA" else None
    try:
        run.start()
        run.wait_for(lambda s: s.get("p1", {}).get("done", False), 600, "the publisher")
        last, quiet = -1, time.monotonic()
        while time.monotonic() - quiet < 2.0:
            got = run.statuses().get("s1", {}).get("delivered", 0)
            if got != last:
                last, quiet = got, time.monotonic()
            if expected is not None and got >= expected:
                break
            time.sleep(0.05)
    finally:
        run.stop()
    log = run.runlog()
    published = {p.id: p.time for p in log.published}
    # The merged log's times are renumbered: take the processes' own clocks (ns) from the files.
    sent = _times(folder / "run" / "logs" / "p1.runlog", "publish")
    delivered = _times(folder / "run" / "logs" / "s1.runlog", "deliver")
    latencies = [(t - sent[ids[-1]]) / 1e6 for ids, t in delivered.items()]
    first, last_delivery = min(sent.values()), max(delivered.values()) if delivered else 0
    return {
        "events": len(published),
        "deliveries": len(delivered),
        "seconds": round((last_delivery - first) / 1e9, 3),
        "events_per_s": round(len(published) / ((last_delivery - first) / 1e9)) if delivered else 0,
        "latency_ms": {
            "p50": round(statistics.median(latencies), 2),
            "p99": round(statistics.quantiles(latencies, n=100)[98], 2),
            "max": round(max(latencies), 2),
        }
        if len(latencies) > 1
        else {},
        "rejected": {n: s.get("rejected") for n, s in run.statuses().items() if s.get("rejected")},
    }


def _times(path: Path, kind: str) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("record") != kind:
            continue
        if kind == "publish":
            out[record["event"]["id"]] = record["time"]
        else:
            out[tuple(record["relation"])] = record["time"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--rate", type=float, default=1000, help="events/s for the latency runs")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    with ZooKeeperServer() as zk:
        result = {
            "machine": machine(),
            "throughput_one_merger": run_once(zk.address, args.events, 0, "A", "OneA", 18100),
            "latency_one_hop": run_once(zk.address, int(args.rate * 5), args.rate, "A", "OneA", 18200),
            "latency_two_hops": run_once(zk.address, int(args.rate * 5), args.rate, "AB", "Pair", 18300),
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
        f"| throughput, one 3-replica merger, publisher unthrottled | {t['events_per_s']:,} events/s ({t['events']:,} events) |\n"
        f"| latency at {rate:,.0f} events/s, one merger hop: p50 / p99 | {one['latency_ms'].get('p50')} / {one['latency_ms'].get('p99')} ms |\n"
        f"| latency at {rate:,.0f} events/s, two merger hops (A and B): p50 / p99 | {two['latency_ms'].get('p50')} / {two['latency_ms'].get('p99')} ms |\n"
    )


if __name__ == "__main__":
    main()
