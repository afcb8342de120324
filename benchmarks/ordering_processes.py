"""The ordering layers of seeds 000 and 004 as processes on loopback: throughput and latency.

    .venv/bin/python benchmarks/ordering_processes.py [--quick] [--events N] [--rate R] [--no-baseline]

Each layer runs with faidecs.ordering.loopback: three server processes hosting the topic managers
(multistage, by rank ranges) or the atoms (co-located, nodes round robin over the servers), one
process per subscriber (the layer's receiving logic and an embedded engine), one publisher
process; ZeroMQ with CurveZMQ between them, the host's wall clock for every time.

- throughput: the publisher sends every event unthrottled; events per second from the first
  publication until the last subscriber was notified of the last event it is owed;
- latency at ``--rate`` events/s: publication -> notification at each subscriber (every
  (subscriber, event) pair), and publication of a relation's last event -> its delivery (the
  definition of benchmarks/deployed.py);
- for reference, the overlay's single sequencer (``ordering = "sequencer"``, one replica, with
  ZooKeeper) on the same program and events, measured by benchmarks/deployed.py: throughput until
  the last event reached a subscriber's engine, delivery latency as above.

The workload: eight types, six subscribers with overlapping subscriptions (one to three types each,
two of them identical), events on uniformly random types, one publisher. Writes
results/ordering_processes.json and .md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deployed import measure, write_deployment  # noqa: E402
from run import machine  # noqa: E402

from faidecs.ordering.loopback import LoopbackRun, write_plan  # noqa: E402
from faidecs.runs.runlog import RunLog  # noqa: E402

TYPES = "".join(f"type T{k}(x: int)\n" for k in range(1, 9))
SUBSCRIPTIONS = {
    "p0": "subscription p0: T1 and T2",
    "p1": "subscription p1: T1 and T2",
    "p2": "subscription p2: T2 and T3.x = T4.x",
    "p3": "subscription p3: T1 and T3 and T5",
    "p4": "subscription p4: T5 and T6",
    "p5": "subscription p5: T6 and T7 and T8",
}


def events(n: int, seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {"id": f"e{k}", "type": f"T{rng.randint(1, 8)}", "attrs": {"x": rng.randrange(10)}, "publisher": "pub1"}
        for k in range(n)
    ]


def percentiles(values: list[float]) -> dict[str, float]:
    if len(values) < 2:
        return {}
    q = statistics.quantiles(values, n=100)
    return {"p50": round(statistics.median(values), 2), "p99": round(q[98], 2), "max": round(max(values), 2)}


def layer_run(layer: str, n: int, rate: float, timeout: float) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix=f"faidecs-ordproc-{layer}-"))
    write_plan(folder, layer, TYPES, SUBSCRIPTIONS, events(n), servers=3, rate=rate)
    run = LoopbackRun(folder)
    statuses = run.run(timeout=timeout)
    logs = run.logs()
    published: RunLog = logs.pop("pub")
    sent = {p.id: p.time for p in published.published}
    notify_ms = [(r.time - sent[r.event]) / 1e6 for log in logs.values() for r in log.notified]
    deliver_ms = [(d.time - max(sent[i] for i in d.relation)) / 1e6 for log in logs.values() for d in log.delivered]
    first = min(sent.values())
    end = max(s["done_at"] for name, s in statuses.items() if name in SUBSCRIPTIONS)
    seconds = (end - first) / 1e9
    return {
        "events": n,
        "notifications": len(notify_ms),
        "deliveries": len(deliver_ms),
        "seconds": round(seconds, 3),
        "events_per_s": round(n / seconds) if seconds > 0 else 0,
        "notify_latency_ms": percentiles(notify_ms),
        "deliver_latency_ms": percentiles(deliver_ms),
        "rejected": {name: s["rejected"] for name, s in statuses.items() if s.get("rejected")},
    }


def baseline_run(zookeeper: str, n: int, rate: float, port: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="faidecs-ordproc-sequencer-"))
    program = TYPES + "".join(s + "\n" for s in SUBSCRIPTIONS.values())
    evs = [{k: e[k] for k in ("id", "type", "attrs")} for e in events(n)]
    path = write_deployment(
        folder,
        program,
        evs,
        {f"sub{p}": p for p in SUBSCRIPTIONS},
        ordering="sequencer",
        replicas=1,
        servers=1,
        rate=rate,
        port=port,
    )
    figures = measure(zookeeper, path, quiet_s=1.0)
    figures["deliver_latency_ms"] = figures.pop("latency_ms")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small runs, under a minute in all")
    parser.add_argument("--events", type=int, help="events of the throughput runs (default 20,000; quick 3,000)")
    parser.add_argument("--rate", type=float, help="events/s of the latency runs (default 1,000; quick 500)")
    parser.add_argument("--seconds", type=float, help="length of the latency runs (default 10; quick 3)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the overlay's sequencer (needs Java)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    n = args.events or (3000 if args.quick else 20000)
    rate = args.rate or (500.0 if args.quick else 1000.0)
    latency_events = int(rate * (args.seconds or (3 if args.quick else 10)))
    started = time.monotonic()
    result: dict[str, Any] = {
        "machine": machine(),
        "workload": {"types": 8, "subscribers": len(SUBSCRIPTIONS), "servers": 3, "rate": rate},
    }
    for layer in ("multistage", "atoms"):
        result[layer] = {
            "throughput": layer_run(layer, n, 0.0, timeout=300),
            "latency": layer_run(layer, latency_events, rate, timeout=300),
        }
        print(layer, json.dumps(result[layer]), flush=True)
    if not args.no_baseline:
        from faidecs.net.zkserver import ZooKeeperServer
        from faidecs.overlay.runtime.launcher import LaunchError

        try:
            with ZooKeeperServer() as zk:
                result["sequencer"] = {
                    "throughput": baseline_run(zk.address, n, 0, 18700),
                    "latency": baseline_run(zk.address, latency_events, rate, 18900),
                }
            print("sequencer", json.dumps(result["sequencer"]), flush=True)
        except LaunchError as exc:  # the launcher waits 30 s for subscribers; a loaded host can miss it
            result["sequencer_failed"] = str(exc).splitlines()[0]
            print("sequencer baseline did not start:", result["sequencer_failed"], flush=True)
    result["wall_s"] = round(time.monotonic() - started, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ordering_processes.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "ordering_processes.md").write_text(markdown(result))
    print(markdown(result))


def markdown(r: dict[str, Any]) -> str:
    m, w = r["machine"], r["workload"]
    lines = [
        f"The ordering layers as processes on loopback ({m['cpu']}, {m['cores']} cores, shared with other work), "
        "CurveZMQ",
        "",
        f"{w['subscribers']} subscribers over {w['types']} types, one publisher, {w['servers']} servers for the "
        "ordering entities; the sequencer baseline is the overlay's (one replica, ZooKeeper).",
        "",
        f"| layer | throughput, unthrottled | notify latency at {w['rate']:,.0f}/s p50 / p99 "
        "| delivery latency p50 / p99 |",
        "|---|---|---|---|",
    ]
    for name in ("multistage", "atoms", "sequencer"):
        if name not in r:
            continue
        t, lat = r[name]["throughput"], r[name]["latency"]
        notify = lat.get("notify_latency_ms", {})
        deliver = lat.get("deliver_latency_ms", {})
        lines.append(
            f"| {name} | {t['events_per_s']:,} events/s ({t['events']:,} events) | "
            f"{notify.get('p50', '-')} / {notify.get('p99', '-')} ms | {deliver.get('p50')} / {deliver.get('p99')} ms |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
