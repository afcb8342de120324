"""Throughput of the embedded engine with the reference matcher.

Prints events/s for
- the stock program of examples/ on a generated quote stream (validation included, and with
  events validated beforehand, to show what pydantic at the boundary costs),
- each of the 16 matching x disposal combinations on a two-type equality join.

Usage: python benchmarks/bench_reference.py [--events N] [--seed S]
"""

from __future__ import annotations

import argparse
import platform
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from faidecs import Engine

ROOT = Path(__file__).resolve().parent.parent


def stock_stream(n: int, rng: random.Random) -> list[dict[str, Any]]:
    symbols = ["ACME", "XYZ", "FOO", "BAR"]
    price = {s: 100.0 for s in symbols}
    out: list[dict[str, Any]] = []
    for i in range(n):
        sym = rng.choice(symbols)
        if rng.random() < 0.02:
            out.append({"id": f"r{i}", "type": "EarningsReport", "attrs": {"symbol": sym, "eps": 1.0, "time": i}})
        else:
            price[sym] *= 1 + rng.uniform(-0.03, 0.031)
            out.append({"id": f"q{i}", "type": "StockQuote", "attrs": {"symbol": sym, "value": price[sym], "time": i}})
    return out


def join_stream(n: int, rng: random.Random) -> list[dict[str, Any]]:
    return [
        {"id": f"e{i}", "type": rng.choice(("A", "B")), "attrs": {"k": rng.randrange(16), "v": rng.randrange(100)}}
        for i in range(n)
    ]


def timed(fn: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    deliveries = fn()
    return time.perf_counter() - start, deliveries


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=3_000)
    parser.add_argument("--join-events", type=int, default=1_000, help="events per option combination")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"python {platform.python_version()} on {platform.machine()}, {args.events} events per run")

    program = (ROOT / "examples" / "stock.fdc").read_text()
    stream = stock_stream(args.events, rng)

    def with_validation() -> int:
        engine = Engine.from_source(program, matcher="reference")
        return sum(len(engine.publish(e)) for e in stream)

    checker = Engine.from_source(program, matcher="reference")
    validated = [checker.validate(e) for e in stream]

    def prevalidated() -> int:
        engine = Engine.from_source(program, matcher="reference")
        return sum(len(engine.publish(e)) for e in validated)

    def validation_only() -> int:
        engine = Engine.from_source(program, matcher="reference")
        for e in stream:
            engine.validate(e)
        return 0

    t_val, _ = timed(validation_only)
    t_full, n_full = timed(with_validation)
    t_pre, n_pre = timed(prevalidated)
    assert n_full == n_pre
    print(
        f"stock program: {args.events / t_full:>10,.0f} events/s with validation, "
        f"{args.events / t_pre:>10,.0f} events/s pre-validated, {n_full} deliveries"
    )
    print(f"  validation alone: {args.events / t_val:,.0f} events/s ({t_val / t_full:.0%} of the full run)")

    join = join_stream(args.join_events, rng)
    print("two-type join `A.k = B.k and A[1].v > A[0].v` (events/s, deliveries):")
    for matching in ("FR", "FRC", "MR", "MRC"):
        cells = []
        for disposal in ("I", "PI", "IP", "FP"):
            text = (
                "type A(k: int, v: int)\ntype B(k: int, v: int)\n"
                f"subscription S (matching {matching}, disposal {disposal}): A.k = B.k and A[1].v > A[0].v"
            )
            engine = Engine.from_source(text, matcher="reference")
            events = [engine.validate(e) for e in join]

            def go(engine: Engine = engine, events: list[Any] = events) -> int:
                return sum(len(engine.publish(e)) for e in events)

            t, n = timed(go)
            cells.append(f"{disposal}: {len(join) / t:>9,.0f} ({n})")
        print(f"  {matching:<3} " + "  ".join(cells))


if __name__ == "__main__":
    main()
