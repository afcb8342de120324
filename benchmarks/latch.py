"""Latch-time FIFO (seed 002, Malekpour, Carzaniga, Toffetti Carughi, Pedone, USI TR 2011-2):
out-of-order deliveries removed and delay added, as functions of P_t and of the number of hops, on
the simulated best-effort path of faidecs.ordering.latch.path, next to the paper's figures.

    PYTHONPATH=. .venv/bin/python benchmarks/latch.py [--quick] [--out benchmarks/results]

One publisher → a chain of brokers → one subscriber; each broker processes each message on its own
for an Exp(5 ms) time (parallel matching: the paper's model and the digest's Appendix Z), links
50 ms. Poisson publications in three phases: 25 msg/s, 1200 msg/s, 25 msg/s. q = 25, β over |Q|,
late messages delivered so that they can be counted (under the default drop policy the same
messages are dropped instead). Every variant sees the same arrivals in a run; the out-of-order
counts are the property checker's (Notification FIFO Order) on the run log. Virtual time: the
figures are ratios and virtual milliseconds, not a machine's speed.

Writes latch.json and latch.md (latch-quick.* with --quick).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import machine

from faidecs.ordering.latch import LatchConfig, LatePolicy, record_overhead
from faidecs.ordering.latch.path import PathConfig, simulate
from faidecs.properties.notification_fifo import fifo_violations_by_pair
from faidecs.properties.view import RunView

PAPER = [
    ("8 brokers (diameter 3), 400 receivers, P_t = 0.05", "> 99% of almost 173,000 out-of-order receptions removed"),
    ("8 brokers, P_t = 0.2", "about 91% removed"),
    (
        "46 brokers (diameter 15), P_t = 0.05",
        "99.5% of more than 115,000 removed; up to 960 ms average extra delay (basic mode)",
    ),
    ("introduction / conclusion", "more than 95% / up to 99.5%"),
]


def measure(config: PathConfig, p_values: list[float], seeds: int, *, literal: bool = True) -> dict[str, Any]:
    """Out-of-order receptions without ordering and with a latch per P_t (joined and literal late
    rules), summed over ``seeds`` runs; delays are means per received message (virtual ms)."""
    variants: dict[str, LatchConfig | None] = {"none": None}
    for p in p_values:
        variants[f"P-{p:g}"] = LatchConfig(p, late=LatePolicy.DELIVER)
        if literal:
            variants[f"P-{p:g}-literal"] = LatchConfig(p, late=LatePolicy.DELIVER, late_joins_latch=False)
    found: Counter[str] = Counter()
    assigned: Counter[str] = Counter()
    held: Counter[str] = Counter()
    expected: Counter[str] = Counter()
    received = 0
    for seed in range(seeds):
        run = simulate(config, variants, seed=seed)
        for (process, _), n in fifo_violations_by_pair(RunView(run.log)).items():
            found[process.split(".", 1)[1]] += n
        received += sum(run.arrived.values())
        for (_, v, _), stats in run.stats.items():
            cfg = variants[v]
            assert cfg is not None
            assigned[v] += stats.assigned_delay
            held[v] += stats.held_delay
            expected[v] += stats.expected_violations(cfg.p_t)
    none = found["none"]
    rows = []
    for v, cfg in variants.items():
        if cfg is None:
            continue
        rows.append(
            {
                "variant": v,
                "p_t": cfg.p_t,
                "late_rule": "joins latch" if cfg.late_joins_latch else "literal",
                "residual": found[v],
                "removed_pct": round(100 * (1 - found[v] / none), 1) if none else None,
                "model_residual": round(expected[v]),
                "assigned_ms": round(assigned[v] / received, 3),
                "held_ms": round(held[v] / received, 3),
            }
        )
    return {"received": received, "out_of_order": none, "rows": rows}


def stream(args: argparse.Namespace, **kw: Any) -> PathConfig:
    low, high = (300, 3000) if args.quick else (1000, 10000)
    return PathConfig(
        publishers=1, subscribers=1, link=50.0, hop_mean=5.0, phases=((low, 0.025), (high, 1.2), (low, 0.025)), **kw
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="shorter streams and fewer points (under a minute)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    seeds = 1 if args.quick else 3
    p_values = [0.02, 0.05, 0.2] if args.quick else [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5]
    hops = [1, 3, 8] if args.quick else [1, 2, 3, 4, 6, 8, 12, 16]
    started = time.perf_counter()
    result: dict[str, Any] = {"machine": machine(), "quick": args.quick, "seeds": seeds}
    cfg = stream(args, hops=3)
    result["setup"] = {"hops": 3, "hop_mean_ms": cfg.hop_mean, "link_ms": cfg.link, "phases": cfg.phases, "q": 25}
    t = time.perf_counter()
    result["by_p_t"] = measure(cfg, p_values, seeds)
    print(f"by P_t: {time.perf_counter() - t:.1f} s", flush=True)
    t = time.perf_counter()
    result["by_hops"] = {h: measure(stream(args, hops=h), [0.05, 0.2], seeds, literal=False) for h in hops}
    print(f"by hops: {time.perf_counter() - t:.1f} s", flush=True)
    t = time.perf_counter()
    result["spiky"] = {
        h: measure(stream(args, hops=h, hop_model="spiky", slow_share=0.05), [0.05, 0.2], seeds, literal=False)
        for h in ([3] if args.quick else [3, 8])
    }
    print(f"spiky: {time.perf_counter() - t:.1f} s", flush=True)
    t = time.perf_counter()
    result["record"] = {
        y: measure(stream(args, hops=3, topics=10, match=0.3, record=y), [0.05], seeds, literal=False)
        for y in (0, 5, 25)
    }
    print(f"record: {time.perf_counter() - t:.1f} s", flush=True)
    result["runtime_s"] = round(time.perf_counter() - started, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "-quick" if args.quick else ""
    (args.out / f"latch{suffix}.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    (args.out / f"latch{suffix}.md").write_text(markdown(result))
    print(markdown(result))


def _table(measured: dict[str, Any]) -> list[str]:
    out = [
        "| variant | late rule | residual | removed | model residual | assigned τ / msg (ms) | held / msg (ms) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in measured["rows"]:
        out.append(
            f"| {r['variant']} | {r['late_rule']} | {r['residual']:,} | {r['removed_pct']}% | {r['model_residual']:,} "
            f"| {r['assigned_ms']} | {r['held_ms']} |"
        )
    return out


def markdown(r: dict[str, Any]) -> str:
    m, s, byp = r["machine"], r["setup"], r["by_p_t"]
    out = [
        "# Latch-time FIFO (seed 002): out-of-order receptions removed and delay added\n",
        (
            f"`benchmarks/latch.py{' --quick' if r['quick'] else ''}`, {r['runtime_s']} s on {m['cpu']} "
            f"({m['cores']} cores), Python {m['python']}; {r['seeds']} seeded run(s) per point, virtual milliseconds.\n"
        ),
        "## Setup\n",
        (
            f"One publisher, one subscriber, a chain of brokers each processing each message for an independent "
            f"Exp({s['hop_mean_ms']:g} ms) time (parallel matching), links {s['link_ms']:g} ms, no loss. Poisson "
            "publications: " + ", ".join(f"{n:,} at {rate * 1000:g} msg/s" for n, rate in s["phases"]) + ". "
            f"q = {s['q']}, β over |Q|, basic mode. *Residual*: out-of-order notifications after the latch (the "
            "property checker's Notification FIFO Order count; under the default drop policy these are the messages "
            "dropped). *Model residual*: Σ over holes of min(P_t, 1 − F(δ)) / (1 − F(δ)), what the 2-Laplace model "
            "predicts if every hole were one isolated swap. *Assigned τ*: the paper's extra-delay metric (Σ τ over "
            "received messages); *held*: the time messages actually waited (a hole that fills early ends the wait, "
            "head-of-line waiting adds to it).\n"
        ),
        (
            f"## As a function of P_t ({s['hops']} hops, {byp['out_of_order']:,} out-of-order receptions of "
            f"{byp['received']:,} without ordering)\n"
        ),
        *_table(byp),
        "",
        "## As a function of the number of hops (brokers on the path)\n",
        "| hops | out-of-order (none) | P-0.05 removed | P-0.05 assigned / held (ms) "
        "| P-0.2 removed | P-0.2 assigned / held (ms) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for h, meas in r["by_hops"].items():
        rows = {row["variant"]: row for row in meas["rows"]}
        a, b = rows["P-0.05"], rows["P-0.2"]
        out.append(
            f"| {h} | {meas['out_of_order']:,} | {a['removed_pct']}% | {a['assigned_ms']} / {a['held_ms']} "
            f"| {b['removed_pct']}% | {b['assigned_ms']} / {b['held_ms']} |"
        )
    out += [
        "",
        "## Sensitivity: a spiky per-hop delay (same mean, 5% of messages 10× slower)\n",
        "| hops | out-of-order (none) | P-0.05 removed | P-0.2 removed |",
        "|---:|---:|---:|---:|",
    ]
    for h, meas in r["spiky"].items():
        rows = {row["variant"]: row for row in meas["rows"]}
        out.append(
            f"| {h} | {meas['out_of_order']:,} | {rows['P-0.05']['removed_pct']}% | {rows['P-0.2']['removed_pct']}% |"
        )
    out += [
        "",
        "## Enhanced mode: a publication record of y entries (3 hops, 10 types, the subscriber takes 3)\n",
        "| y | record bytes | out-of-order (none) | P-0.05 residual | removed "
        "| assigned τ / msg (ms) | held / msg (ms) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for y, meas in r["record"].items():
        row = meas["rows"][0]
        out.append(
            f"| {y} | {record_overhead(int(y))} | {meas['out_of_order']:,} | {row['residual']:,} "
            f"| {row['removed_pct']}% "
            f"| {row['assigned_ms']} | {row['held_ms']} |"
        )
    out += ["", "## Next to the paper's figures\n", "| the paper's setting | reported |", "|---|---|"]
    out += [f"| {a} | {b} |" for a, b in PAPER]
    out += ["", EXPLANATION]
    return "\n".join(out) + "\n"


EXPLANATION = """\
**Against the digest's reference simulation.** The P_t table's setting is the digest's Appendix Z
(3 hops of Exp(5 ms), 25 / 1200 / 25 msg/s, q = 25, β over |Q|). It reported 23,399 out-of-order
receptions without ordering, 63.2% removed at P_t = 0.05 with the listing's late rule and 84.9% when
a late message joins the pending latch, 38.6% / 52.6% at P_t = 0.2, and an average extra delay of
3.56 ms (P-0.05) and 1.49 ms (P-0.2); the rows above land within a few points of each.

**Why the simulation removes less than the paper.** With idealised i.i.d. exponential hops the
2-Laplace model is nearly exact (T-002-15), so the latch does what the model says and no more: a
back-to-back pair is swapped with probability about 0.47, and the latch lets through about
Pr[D > F⁻¹(1 − P_t)] ≈ P_t of all pairs, i.e. about 0.05 / 0.47 ≈ 10% of the swaps at P_t = 0.05, a
reduction of 85-90% (the digest's calibration warning). The residual is above the per-hole model
column at 1200 msg/s; our reading (not verified separately): many later messages arrive within one
latch, and what protects a missing message is the latch of the first of them to arrive, the
fastest, which is not the isolated pair the model describes. At low rates, where holes are single
swaps, the slow test measures the residual at 1.1-1.2 times the model's. The paper's > 99% (and
~91% at P_t = 0.2) comes from B-DRP's measured delays: differences with a sharp spike at 0 and
heavy queuing tails (Fig. 2c), with β estimated from samples that include queuing variations, so
the fitted 2-Laplace was far more conservative than the reordering it guarded against: its cost, up
to 960 ms average extra delay on 46 brokers, is two orders of magnitude above what this path needs.
A per-hop shape change alone (the spiky rows) does not reproduce it, and the paper's traces are not
available, so the tests assert model-relative bounds (T-002-16) rather than the paper's
percentages. The trends the paper reports hold: a smaller P_t removes more and costs more delay; β
follows the hop count (the latch grows with the path, so no single static latch fits every pair);
a record lowers the delay and lets a few more violations through (erratum E10).
"""


if __name__ == "__main__":
    main()
