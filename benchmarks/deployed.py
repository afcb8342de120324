"""Shared by the benchmarks of real deployments: write a deployment, run it on loopback, and take
throughput and latency from the processes' own run logs (host clock, nanoseconds)."""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from faidecs.net.certificates import create_keys
from faidecs.overlay.runtime.launcher import LocalDeployment


def write_deployment(
    folder: Path,
    program: str,
    events: list[dict[str, Any]],
    subscribers: dict[str, str],
    *,
    ordering: str = "overlay",
    replicas: int = 3,
    servers: int = 3,
    rate: float = 0,
    port: int = 18000,
    timing: dict[str, Any] | None = None,
    durability: dict[str, Any] | None = None,
) -> Path:
    """``timing``: settings of the deployment's ``[timing]`` table (``batching``, ``max_batch``, ...);
    ``durability``: of its ``[durability]`` table (``sync``, ``group_ms``, ...)."""
    (folder / "program.fdc").write_text(program)
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    names = [f"m{k}" for k in range(1, servers + 1)]
    lines = [
        f'name = "bench{port}"',
        'program = "program.fdc"',
        f"replicas = {replicas}",
        'keys = "keys"',
        f'ordering = "{ordering}"',
        "",
        "[servers]",
        *(f'{n} = "tcp://127.0.0.1:{port + k}"' for k, n in enumerate(names, start=1)),
        "",
    ]
    for k, (name, subscription) in enumerate(subscribers.items()):
        lines += [
            f"[subscribers.{name}]",
            f'address = "tcp://127.0.0.1:{port + 100 + k}"',
            f'subscription = "{subscription}"',
            "",
        ]
    lines += [
        "[publishers.p1]",
        f'address = "tcp://127.0.0.1:{port + 99}"',
        'events = "events.jsonl"',
        f"rate = {rate}",
    ]
    if timing:
        lines += ["", "[timing]", *(f"{k} = {json.dumps(v)}" for k, v in timing.items())]
    if durability:
        lines += ["", "[durability]", *(f"{k} = {json.dumps(v)}" for k, v in durability.items())]
    (folder / "deployment.toml").write_text("\n".join(lines) + "\n")
    create_keys(folder / "keys", [*names, *subscribers, "p1"])
    return folder / "deployment.toml"


def measure(
    zookeeper: str,
    path: Path,
    quiet_s: float = 2.0,
    timeout: float = 600,
    *,
    expect_fed: int | None = None,
    prefix: Callable[[str], Sequence[str]] | None = None,
    start: Callable[[LocalDeployment], None] | None = None,
) -> dict[str, Any]:
    """Run the deployment until the publisher is done and deliveries stop; the figures.
    ``expect_fed``: the events each subscriber's engines are fed in all; until then a quiet
    spell of ``quiet_s`` does not end the run (a busy machine may stall the pipeline that long).
    ``prefix``: LocalDeployment's; ``start``: starts the run's processes (default:
    LocalDeployment.start; benchmarks/hosts.py starts them in stages)."""
    run = LocalDeployment(path, path.parent / "run", zookeeper=zookeeper, prefix=prefix)
    try:
        if start is None:
            run.start()
        else:
            start(run)
        run.wait_for(lambda s: s.get("p1", {}).get("done", False), timeout, "the publisher")
        last: dict[str, int] = {}
        quiet = time.monotonic()
        deadline = time.monotonic() + timeout
        while time.monotonic() - quiet < quiet_s or (
            expect_fed is not None and min(last.values(), default=0) < expect_fed and time.monotonic() < deadline
        ):
            got = {n: s.get("fed", 0) for n, s in run.statuses().items() if "delivered" in s}
            if got != last:
                last, quiet = got, time.monotonic()
            time.sleep(0.05)
        statuses = run.statuses()
        fed_at = max(s.get("fed_at", 0.0) for s in statuses.values() if "delivered" in s)
    finally:
        run.stop()
    logs = path.parent / "run" / "logs"
    sent = {r["event"]["id"]: r["time"] for r in _records(logs / "p1.runlog", "publish")}
    delivered: list[tuple[str, list[str], int]] = []
    for f in sorted(logs.glob("*.runlog")):
        delivered += [(f.stem, r["relation"], r["time"]) for r in _records(f, "deliver")]
    # A relation's latency: from the publication of its last event to its delivery.
    latencies = [(t - max(sent[i] for i in ids)) / 1e6 for _, ids, t in delivered]
    first = min(sent.values())
    # The end: when the last event reached a subscriber's engines (not the last delivery: a
    # selective subscription may deliver its last relation long before the stream is through).
    end = max(int(fed_at * 1e9), max([t for _, _, t in delivered], default=first))
    seconds = (end - first) / 1e9
    return {
        "events": len(sent),
        "deliveries": len(delivered),
        "seconds": round(seconds, 3),
        "events_per_s": round(len(sent) / seconds) if seconds > 0 else 0,
        "latency_ms": _percentiles(latencies),
        "rejected": {n: s.get("rejected") for n, s in statuses.items() if s.get("rejected")},
        # Every message every process sent (a frame may hold several), per event published.
        "messages_per_event": round(sum(s.get("sent", 0) for s in statuses.values()) / max(1, len(sent)), 2),
        # Each process's CPU seconds over the run, start-up included.
        "cpu_s": {n: s.get("cpu_s") for n, s in sorted(statuses.items())},
    }


def _percentiles(values: list[float]) -> dict[str, float]:
    if len(values) < 2:
        return {}
    q = statistics.quantiles(values, n=100)
    return {"p50": round(statistics.median(values), 2), "p99": round(q[98], 2), "max": round(max(values), 2)}


def _records(path: Path, kind: str) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("record") == kind:
            out.append(record)
    return out


def scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="faidecs-bench-"))
