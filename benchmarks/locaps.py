"""LoCaPS (seed 003): time from subscribe to first delivery, markers vs waiting for the whole system.

Binary broker trees, 50 ms per link, processing time 0, subscribers on leaves (Sec. VII). LoCaPS
is *run* (the layer on the discrete-event network; a publisher publishes every ``gap`` ms, so the
first delivery comes at most ``gap`` after the starting cut). The baselines are the digest's
latency models: Delta / Cond. 1 with acks aggregated over the whole system (2 × the subscriber
broker's eccentricity × 50 ms) and Gryphon (publisher at the root: 2 × depth × 50 ms); the f curve
(partial markers on the augmented tree) is the model 2 × (d_pivot + f) × 50 ms, since the runtime
has no cyclic substrate.

    python -m benchmarks.locaps [--quick]     # JSON + Markdown into benchmarks/results/
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from faidecs.ordering.harness import Publication, Workload, run_layer
from faidecs.ordering.locaps import LocapsLayer, binary_tree

HOP = 50.0
RESULTS = Path(__file__).parent / "results"


def _leaf(depth: int, k: int = 0) -> str:
    return f"b{2**depth + k}"


def _ancestor(broker: str, up: int) -> str:
    return f"b{int(broker[1:]) >> up}"


def run_join(depth: int, publisher_at: str, covered: bool, *, gap: float = 5.0, proxy: bool = True) -> float:
    """Run one join at the first leaf; returns subscribe-to-first-delivery in ms."""
    graph = binary_tree(depth)
    leaf = _leaf(depth)
    attach = {"pub": publisher_at, "new": leaf, "old": _leaf(depth, 1)}  # old: the sibling leaf
    join = depth * HOP + 100  # after the stream has filled the tree
    horizon = join + 2 * depth * HOP + 200
    events = tuple(
        Publication(t * gap, "pub", {"id": f"e{t}", "type": "A", "attrs": {"x": 0}}) for t in range(int(horizon / gap))
    )
    workload = Workload(
        "type A(x: int)\ntype B(x: int)\n",
        {"new": "subscription new: A", "old": "subscription old: A and B" if covered else "subscription old: B"},
        frozenset({"old"}),
        events,
        ((join, "new"),),
    )
    layer = LocapsLayer(graph, attach, link_delay=HOP, publishers=frozenset({"pub"}), proxy=proxy)
    run_layer(layer, workload, seed=1)
    return layer.first_delivery["new"] - layer.subscribed_at["new"]


def delta_ms(depth: int) -> float:
    return 2 * (2 * depth) * HOP  # a leaf's eccentricity in a complete binary tree is 2·depth


def diameter_curve(*, depths: tuple[int, ...], distance: int, measured: bool = False) -> list[dict[str, Any]]:
    """Fig. 5(a): the publisher ``distance`` hops above the subscriber; the tree grows deeper."""
    out = []
    for d in depths:
        row: dict[str, Any] = {"depth": d, "diameter": 2 * d, "locaps_ms": 2 * distance * HOP, "delta_ms": delta_ms(d)}
        if measured:
            row["locaps_run_ms"] = run_join(d, _ancestor(_leaf(d), distance), covered=False)
        out.append(row)
    return out


def coverage_curve(
    *, depth: int, probabilities: tuple[float, ...], samples: int, f: int = 1, measured: bool = False, seed: int = 3
) -> list[dict[str, Any]]:
    """Fig. 5(c)/(d): publisher at the root; with probability p a sibling leaf's subscription
    covers the new one (pivot: the parent, one hop up)."""
    out = []
    for p in probabilities:
        rng = random.Random(seed)
        model, runs = [], []
        for _ in range(samples):
            covered = rng.random() < p
            model.append(2 * ((1 + f) if covered else depth) * HOP)
            if measured:
                runs.append(run_join(depth, "b1", covered))
        row: dict[str, Any] = {
            "depth": depth,
            "p_covered": p,
            "locaps_ms": sum(model) / samples,
            "delta_ms": delta_ms(depth),
            "gryphon_ms": 2 * depth * HOP,
        }
        if measured:
            row["locaps_run_ms"] = sum(runs) / len(runs)
        out.append(row)
    return out


def f_curve(*, fs: tuple[int, ...], depth: int) -> list[dict[str, Any]]:
    """Fig. 5(e)/(f): every new subscription covered, pivot one hop up; f + 1 partial markers."""
    return [{"f": f, "depth": depth, "locaps_ms": 2 * (1 + f) * HOP, "delta_ms": delta_ms(depth)} for f in fs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    depths = (5, 6, 7) if args.quick else (5, 6, 7, 8, 9)
    samples = 4 if args.quick else 10
    result = {
        "hop_ms": HOP,
        "diameter": diameter_curve(depths=depths, distance=5, measured=True),
        "distance": [
            {"distance": k, **diameter_curve(depths=(depths[-1],), distance=k, measured=True)[0]}
            for k in range(1, depths[-1] + 1)
        ],
        "coverage": [
            row
            for d in depths
            for row in coverage_curve(
                depth=d, probabilities=(0.0, 0.25, 0.5, 0.75, 1.0), samples=samples, measured=True
            )
        ],
        "f": f_curve(fs=(1, 2, 3, 4), depth=depths[-1]),
    }
    result["seconds"] = round(time.perf_counter() - started, 1)
    RESULTS.mkdir(exist_ok=True)
    name = "locaps-quick" if args.quick else "locaps"
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# LoCaPS: subscribe to first delivery (ms), 50 ms per link, binary trees",
        "",
        "`locaps_run_ms`: the layer run (first event at most 5 ms after the starting cut); `locaps_ms`: the model;",
        "`delta_ms`: Cond. 1 / whole-system ack aggregation (2 × eccentricity × 50 ms); "
        "`gryphon_ms`: 2 × depth × 50 ms.",
        "",
    ]
    for key, rows in result.items():
        if not isinstance(rows, list):
            continue
        cols = list(rows[0])
        lines += [f"## {key}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += [
            "| " + " | ".join(f"{r[c]:.1f}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |"
            for r in rows
        ]
        lines.append("")
    lines.append(f"{result['seconds']} s")
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
