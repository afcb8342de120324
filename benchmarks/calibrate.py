"""Calibrate the simulator's cost model on real processes, and validate it against them.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/calibrate.py [--out benchmarks/results] [--events 3000]

One command, a few minutes: it runs small loopback deployments of the real runtime with
``FAIDECS_PROFILE=1`` (faidecs/overlay/runtime/profile.py: thread CPU per message kind in each
process's status), each twice (an unthrottled publisher for throughput, a steady rate for
latency); fits the cost model's lines to the pooled profiles (:func:`fit`) and the message sizes
to the wire format (:func:`sizes`); then simulates the same deployments under the fitted model on
the machine's cores and prints the model's throughput and latency next to the measured ones, with
the error. Writes ``calibration.json`` (the model :mod:`evaluation` reads, the measured runs,
the validation) and ``calibration.md``.

The deployments: one root merger (a subscription to one type), ``T01 and T02`` (two roots and
their conjunction merger), and scenario C of the papers' workload with 6 subscribers on 4 servers
under the overlay, the single sequencer, the replicated sequencer and Raft. Raft's replicas run
pysyncobj on a thread of their own, which the loop's profile does not see: its CPU per event
beyond the loop's (``raft_extra_us``) is charged on each replica's handling of a publication.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deployed import _records, measure, scratch, write_deployment  # noqa: E402
from papers_workload import Workload  # noqa: E402
from run import machine  # noqa: E402

from faidecs.grammar import compile_program  # noqa: E402
from faidecs.matching.events import EventValidator  # noqa: E402
from faidecs.merging.filters import Filter  # noqa: E402
from faidecs.overlay.core.messages import (  # noqa: E402
    Ack,
    Commit,
    Connect,
    Decide,
    Decision,
    Entry,
    Forward,
    ForwardBatch,
    Holds,
    Message,
    Publish,
    Register,
)
from faidecs.overlay.sim.costmodel import CostModel, Line, ProcessCosts  # noqa: E402
from faidecs.overlay.sim.scenario import Scenario, SimConfig  # noqa: E402
from faidecs.overlay.sim.simulator import Simulation  # noqa: E402

CLASSES = ("server", "subscriber", "publisher")
RESULTS = Path(__file__).resolve().parent / "results"
#: The runtime's Timing defaults (faidecs/overlay/runtime/deployment.py), for the simulator.
TIMING = {"tick_every": 5, "heartbeat_every": 20, "retry_every": 200, "ack_every": 50, "session_timeout": 1000}
LOOPBACK_LATENCY_US = 30.0


@dataclass(frozen=True)
class Setup:
    """A deployment both run for real and simulated."""

    name: str
    program: str
    subscribers: dict[str, str]  # process -> subscription name
    events: list[dict[str, Any]]
    ordering: str = "overlay"  # overlay, sequencer, raft
    replicas: int = 3
    servers: int = 3

    @property
    def label(self) -> str:
        if self.ordering == "sequencer":
            return "sequencer" if self.replicas == 1 else "replicated sequencer"
        return "faidecs" if self.ordering == "overlay" else self.ordering


def papers_setup(scenario: str, subscribers: int, events: int, ordering: str, replicas: int, servers: int) -> Setup:
    w = Workload(scenario, subscribers=subscribers, seed=1)  # type: ignore[arg-type]
    return Setup(
        f"{scenario}{subscribers}",
        w.program(),
        {name: name for name in w.conjunctions},
        w.events(events),
        ordering,
        replicas,
        servers,
    )


def setups(events: int) -> list[Setup]:
    w = Workload("C", subscribers=1, seed=1)
    types = "".join(f"type {t}(a: int, b: int, c: int)\n" for t in w.type_names)
    one = [{**e, "type": "T01"} for e in w.events(events)]
    two = [{**e, "type": "T01" if k % 2 == 0 else "T02"} for k, e in enumerate(w.events(events))]
    out = [
        Setup("root", types + "subscription s1: T01\n", {"s1": "s1"}, one),
        Setup("AB", types + "subscription s1: T01 and T02 and T01.a + T02.a < 200\n", {"s1": "s1"}, two),
    ]
    c = events * 2 // 3
    out += [
        papers_setup("C", 6, c, "overlay", 3, 4),
        papers_setup("C", 6, c, "sequencer", 1, 4),
        papers_setup("C", 6, c, "sequencer", 3, 4),
        papers_setup("C", 6, c, "raft", 3, 4),
    ]
    return out


# --- the real runs -------------------------------------------------------------------------------


def run_real(zk: str, setup: Setup, rate: float, port: int) -> dict[str, Any]:
    """One loopback run of ``setup`` (profiled): the figures, and each process's status. A run
    whose processes did not start in time (a machine loaded by others) is tried once more."""
    from faidecs.overlay.runtime.launcher import LaunchError

    events = setup.events if not rate else setup.events[: int(rate * 3)]
    for attempt in range(2):
        path = write_deployment(
            scratch(),
            setup.program,
            events,
            setup.subscribers,
            ordering=setup.ordering,
            replicas=setup.replicas,
            servers=setup.servers,
            rate=rate,
            port=port + 1000 * attempt,
        )
        load = os.getloadavg()[0]
        try:
            figures = measure(zk, path)
            break
        except LaunchError as exc:
            print(f"{setup.name} {setup.label}: {exc}", flush=True)
            if attempt:
                raise
    statuses = {}
    for f in (path.parent / "run" / "status").glob("*.json"):
        statuses[f.stem] = json.loads(f.read_text())
    sent = {r["event"]["id"]: r["time"] for r in _records(path.parent / "run" / "logs" / "p1.runlog", "publish")}
    figures["publish_seconds"] = round((max(sent.values()) - min(sent.values())) / 1e9, 3) if sent else 0
    return {"figures": figures, "statuses": statuses, "load": round(load, 2)}


def process_class(name: str) -> str:
    return "server" if name.startswith("m") else "publisher" if name.startswith("p") else "subscriber"


# --- fitting -------------------------------------------------------------------------------------


def fit(sums: list[int]) -> Line:
    """The least-squares line (µs) through a profile key's points from its running sums; a line
    through the origin where the intercept comes out negative, a flat one where the slope does."""
    n, sx, sy, sxx, sxy = sums
    if n == 0:
        return Line()
    den = n * sxx - sx * sx
    b = (n * sxy - sx * sy) / den if den else 0.0
    a = (sy - b * sx) / n
    if b < 0:
        a, b = sy / n, 0.0
    elif a < 0:
        a, b = 0.0, sy / sx if sx else 0.0
    return Line(a=round(a / 1000, 3), b=round(b / 1000, 3))


def pooled(runs: list[dict[str, Any]], cls: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for run in runs:
        for name, status in run["statuses"].items():
            if process_class(name) != cls:
                continue
            for key, sums in status.get("profile", {}).items():
                acc = out.setdefault(key, [0, 0, 0, 0, 0])
                for k in range(5):
                    acc[k] += sums[k]
    return out


def unprofiled_us(runs: list[dict[str, Any]], cls: str) -> float:
    """CPU per message sent or received beyond the loop's profile (median over processes)."""
    per: list[float] = []
    for run in runs:
        for name, status in run["statuses"].items():
            if process_class(name) != cls or "profile" not in status:
                continue
            profiled = sum(s[2] for s in status["profile"].values()) / 1e9
            messages = status.get("sent", 0) + status.get("received", 0)
            if messages > 100:
                per.append(max(0.0, status["cpu_s"] - profiled) / messages * 1e6)
    return round(statistics.median(per), 3) if per else 0.0


def process_costs(runs: list[dict[str, Any]], cls: str) -> ProcessCosts:
    sums = pooled(runs, cls)
    handle = {k.split(":", 1)[1]: fit(v) for k, v in sums.items() if k.startswith("handle:")}
    total = [sum(v[k] for key, v in sums.items() if key.startswith("handle:")) for k in range(5)]
    tick = sums.get("tick", [0, 0, 0, 0, 0])
    return ProcessCosts(
        receive=fit(sums.get("receive", [0] * 5)),
        handle=handle,
        other=fit(total),
        tick=round(tick[2] / tick[0] / 1000, 3) if tick[0] else 0.0,
        after=fit(sums.get("pass", [0] * 5)),
        send=fit(sums.get("send", [0] * 5)),
        # The unprofiled CPU (cpu_s less the profile) is reported but not charged: it holds the
        # process's start (imports, the engines' compilation) and idle polls, which are not per
        # message; ZeroMQ's I/O thread is thus not in the model (docs/performance.md).
        io=0.0,
    )


def raft_extra_us(runs: list[dict[str, Any]]) -> float:
    """Raft's CPU per event at a replica beyond what the loop's profile holds (pysyncobj's thread):
    a Raft server's unprofiled CPU (whole CPU less the profile) less that of a replicated
    sequencer's server in the same deployment (which holds the same start, idle polls and ZeroMQ
    I/O), per event; the mean over the servers."""

    def unprofiled(label: str) -> tuple[float, int]:
        per: list[float] = []
        events = 0
        for run in runs:
            if run["label"] != label or run["rate"] or not run.get("figures"):
                continue
            events = run["figures"]["events"]
            for name, status in run["statuses"].items():
                if process_class(name) == "server" and "profile" in status:
                    per.append(status["cpu_s"] - sum(s[2] for s in status["profile"].values()) / 1e9)
        return (statistics.mean(per) if per else 0.0), events

    raft, events = unprofiled("raft")
    base, _ = unprofiled("replicated sequencer")
    return round(max(0.0, raft - base) / events * 1e6, 3) if events else 0.0


def sizes() -> tuple[dict[str, Line], float]:
    """Bytes per message kind from the wire format (``wire.encode``), ``a + b·positions``, for the
    papers' events (three integer attributes); and a frame's own bytes."""
    from faidecs.overlay.runtime import wire

    program = compile_program(
        "type T01(a: int, b: int, c: int)\ntype T02(a: int, b: int, c: int)\n"
        "subscription s001: T01 and T02 and T01.a + T02.a < 200\n"
    )
    validator = EventValidator(program.types)

    def event(k: int) -> Any:
        return validator.validate(
            {"id": f"e{k}", "type": "T01", "attrs": {"a": 517, "b": 90, "c": 333}, "publisher": "p1", "seq": k}
        )

    flt = Filter.of(program.subscriptions[0].conjunctions[0])
    role = ("T01", "T02")

    def decisions(n: int) -> tuple[Decision, ...]:
        return tuple(Decision(1000 + k, 3, 1_700_000_000_000, "event", "p1", 5000 + k) for k in range(n))

    def entries(n: int) -> tuple[Entry, ...]:
        return tuple(Entry(1000 + k, 1_700_000_000_000, "event", event(k)) for k in range(n))

    def line(make: Any) -> Line:
        one, many = len(wire.encode(make(1))), len(wire.encode(make(33)))
        b = (many - one) / 32
        return Line(a=round(one - b, 1), b=round(b, 1))

    out: dict[str, Line] = {
        "Publish": line(lambda n: Publish("p1", 5000, event(5000))),
        "Decide": line(lambda n: Decide(role, 3, decisions(n), 900)),
        "ForwardBatch": line(lambda n: ForwardBatch(role, "k-s001", entries(n))),
        "Forward": line(lambda n: Forward(role, 1000, 1_700_000_000_000, "event", event(1), "k-s001")),
    }
    small: dict[str, Message] = {
        "Holds": Holds(role, 3, "m1", 1000),
        "Commit": Commit(role, 3, 1000),
        "Ack": Ack(role, "k-s001", "s001", 1000),
        "Connect": Connect(role, "k-s001", "s001", 1000),
        "Register": Register(role, "k-s001", "s001", flt),
    }
    for name, msg in small.items():
        out[name] = Line(a=float(len(wire.encode(msg))))
    # 4 length bytes per message in a frame of several; CurveZMQ's box and ZMTP framing (~40),
    # TCP/IP and Ethernet headers (~66) per frame (a frame of a few KB is a few segments).
    return out, 110.0


# --- the model's runs ----------------------------------------------------------------------------


def scenario_of(setup: Setup, rate: float, seconds: float = 3.0) -> Scenario:
    program = compile_program(setup.program, "<setup>")
    lines = setup.program.splitlines()
    types = "".join(line + "\n" for line in lines if line.startswith("type "))
    by_name = {line.split()[1].rstrip(":"): line + "\n" for line in lines if line.startswith("subscription ")}
    del program
    subscribers = {
        p: by_name[s].replace(f"subscription {s}:", f"subscription {p}:") for p, s in setup.subscribers.items()
    }
    events = setup.events if not rate else setup.events[: int(rate * seconds)]
    pubs = [(0 if not rate else int(k * 1000 / rate), "p1", e) for k, e in enumerate(events)]
    return Scenario(types, subscribers, pubs, servers=setup.servers)


def simulate_setup(
    setup: Setup, model: CostModel, rate: float, raft_extra: float = 0.0, seconds: float = 3.0
) -> dict[str, Any]:
    """The model's figures for ``setup``, as :func:`deployed.measure` computes the measured ones."""
    if setup.ordering == "raft":
        # Raft's log replication stands in as the replicated sequencer's Decide/Holds/Commit per
        # batch, plus pysyncobj's CPU per event at each replica on top of a publication's handling.
        publish = model.server.handle.get("Publish", model.server.other)
        handle = {**model.server.handle, "Publish": Line(a=publish.a + raft_extra, b=publish.b)}
        model = model.model_copy(update={"server": model.server.model_copy(update={"handle": handle})})
    ordering = "overlay" if setup.ordering == "overlay" else "sequencer"
    config = SimConfig(seed=1, replicas=setup.replicas, cost=model, ordering=ordering, settle=60_000, **TIMING)
    scenario = scenario_of(setup, rate, seconds)
    started = time.monotonic()
    result = Simulation(scenario, config).run(quiet=1000.0)
    pub = result.published_clock
    if not pub:
        return {}
    first = min(pub.values())
    last_fed = max((t for _, t in result.fed.values()), default=first)
    last_delivery = max((t for _, t, _ in result.delivered_at), default=first)
    seconds = (max(last_fed, last_delivery) - first) / 1000
    latencies = [t - max(pub[i] for i in rel) for _, t, rel in result.delivered_at]
    n = len(pub)
    fed = [count for count, _ in result.fed.values()]
    out: dict[str, Any] = {
        "events": n,
        "deliveries": len(latencies),
        "seconds": round(seconds, 4),
        "events_per_s": round(n / seconds) if seconds > 0 else 0,
        "fed_per_subscriber": round(statistics.mean(fed), 1) if fed else 0,
        "latency_ms": percentiles(latencies),
        "messages_per_event": round(sum(result.messages.values()) / n, 2),
        "busiest": max(result.busy_us.items(), key=lambda kv: kv[1])[0] if result.busy_us else "",
        "busiest_cpu_share": round(max(result.busy_us.values()) / 1000 / (seconds * 1000), 3) if seconds else 0,
        "sim_seconds": round(time.monotonic() - started, 1),
    }
    return out


def percentiles(values: list[float]) -> dict[str, float]:
    if len(values) < 2:
        return {"p50": round(values[0], 3)} if values else {}
    q = statistics.quantiles(values, n=100)
    return {
        "mean": round(statistics.mean(values), 3),
        "p50": round(statistics.median(values), 3),
        "p99": round(q[98], 3),
        "max": round(max(values), 3),
    }


def error(model: float, measured: float) -> float | None:
    return round((model - measured) / measured * 100, 1) if measured else None


def build_model(runs: list[dict[str, Any]]) -> tuple[CostModel, float]:
    plain = [r for r in runs if r["ordering"] != "raft"]
    size, frame = sizes()
    model = CostModel(
        server=process_costs(plain, "server"),
        subscriber=process_costs(plain, "subscriber"),
        publisher=process_costs(plain, "publisher"),
        size=size,
        frame_bytes=frame,
        latency_us=LOOPBACK_LATENCY_US,
        cores=os.cpu_count() or 1,
        source=f"benchmarks/calibrate.py on {machine()['cpu']}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}",
    )
    return model, raft_extra_us(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=3000, help="events per throughput run")
    parser.add_argument("--rate", type=float, default=300, help="events/s of the latency runs (3 s each)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--validate-only", action="store_true", help="reuse calibration.json's runs; refit, resimulate")
    args = parser.parse_args()
    out_json = args.out / "calibration.json"
    all_setups = setups(args.events)
    if args.validate_only:
        runs = json.loads(out_json.read_text())["runs"]
    else:
        from faidecs.net.zkserver import ZooKeeperServer

        os.environ["FAIDECS_PROFILE"] = "1"  # the processes inherit it
        runs = []
        port = 31000 + os.getpid() % 50 * 400  # away from other sessions' runs on a shared machine
        with ZooKeeperServer() as zk:
            for setup in all_setups:
                for rate in (0.0, args.rate):
                    port += 250
                    got = run_real(zk.address, setup, rate, port)
                    runs.append(
                        {"setup": setup.name, "label": setup.label, "ordering": setup.ordering, "rate": rate, **got}
                    )
                    print(setup.name, setup.label, rate, json.dumps(got["figures"]), "load", got["load"], flush=True)
    model, raft_extra = build_model(runs)
    validation = []
    for setup in all_setups:
        for rate in (0.0, args.rate):
            real = next(r for r in runs if r["setup"] == setup.name and r["label"] == setup.label and r["rate"] == rate)
            sim = simulate_setup(setup, model, rate, raft_extra)
            m = real["figures"]
            row = {
                "setup": setup.name,
                "ordering": setup.label,
                "rate": rate,
                "load": real["load"],
                "measured_events_per_s": m["events_per_s"],
                "model_events_per_s": sim.get("events_per_s", 0),
                "measured_p50_ms": m["latency_ms"].get("p50"),
                "model_p50_ms": sim.get("latency_ms", {}).get("p50"),
                "model_busiest": sim.get("busiest"),
                "model_messages_per_event": sim.get("messages_per_event"),
            }
            row["throughput_error_pct"] = error(row["model_events_per_s"], row["measured_events_per_s"])
            if row["measured_p50_ms"] and row["model_p50_ms"] is not None:
                row["latency_error_pct"] = error(row["model_p50_ms"], row["measured_p50_ms"])
            validation.append(row)
            print(json.dumps(row), flush=True)
    slim_runs = [
        {
            **r,
            "statuses": {
                n: {k: s.get(k) for k in ("cpu_s", "sent", "received", "profile")} for n, s in r["statuses"].items()
            },
        }
        for r in runs
    ]
    result = {
        "machine": machine(),
        "events": args.events,
        "rate": args.rate,
        "model": model.model_dump(),
        "raft_extra_us": raft_extra,
        "unprofiled_us": {c: unprofiled_us([x for x in runs if x["ordering"] != "raft"], c) for c in CLASSES},
        "validation": validation,
        "runs": slim_runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "calibration.md").write_text(markdown(result))
    print(markdown(result))


def markdown(r: dict[str, Any]) -> str:
    m = r["machine"]
    model = CostModel.model_validate(r["model"])
    unprofiled = r.get("unprofiled_us", {})
    lines = [
        f"Calibration on {m['cpu']} ({m['cores']} cores), loopback; {model.source}.\n",
        "CPU per call + per stream position (µs), fitted to the runtime's profile:\n",
        "| process | key | a (µs) | b (µs/position) |",
        "|---|---|---|---|",
    ]
    for cls in ("server", "subscriber", "publisher"):
        c = model.costs(cls)  # type: ignore[arg-type]
        rows = [
            ("receive", c.receive),
            *((f"handle {k}", v) for k, v in sorted(c.handle.items())),
            ("after pass", c.after),
        ]
        rows.append(("send (frame)", c.send))
        for key, line in rows:
            if line.a or line.b:
                lines.append(f"| {cls} | {key} | {line.a} | {line.b} |")
        lines.append(f"| {cls} | tick | {c.tick} | |")
        lines.append(f"| {cls} | unprofiled (not charged), per message sent or received | {unprofiled[cls]} | |")
    lines.append(f"\nRaft: {r['raft_extra_us']} µs per event per replica beyond the loop (pysyncobj's thread).\n")
    lines += [
        "Validation: the model (same deployment, same events, the machine's cores shared) against the measured run.\n",
        "| setup | ordering | rate | load | measured events/s | model events/s | error | "
        "measured p50 ms | model p50 ms | error |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for v in r["validation"]:
        rate = "unthrottled" if not v["rate"] else f"{v['rate']:.0f}/s"
        lines.append(
            f"| {v['setup']} | {v['ordering']} | {rate} | {v['load']} | {v['measured_events_per_s']:,} | "
            f"{v['model_events_per_s']:,} | {v['throughput_error_pct']}% | {v['measured_p50_ms']} | "
            f"{v['model_p50_ms']} | {v.get('latency_error_pct', '')}% |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
