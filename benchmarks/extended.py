"""The extended language (issue 24): the compiled extended matcher against the reference one.

Prints per-event ``publish()`` throughput (events validated beforehand, so the figures are the
matching) of both matchers on the same seeded stream, the speed-up, and whether both delivered
the same relations, for
- a windowed ALL + NONE join (every pair within the window, nothing disposed),
- a negation between two instances (a price jump with no news in between),
- an absence (a report with no quote of its symbol within the window), heartbeats included,
- a group ``T+`` with ``prev()`` and ``count``.

Usage: python benchmarks/extended.py [--events N] [--seed S]
Kernels are compiled (or loaded from the cache) before timing.
"""

from __future__ import annotations

import argparse
import platform
import random
import time
from typing import Any

from faidecs import Engine

TYPES = (
    "type Quote(sym: int, price: float, time: int)\n"
    "type Trade(sym: int, price: float, time: int)\n"
    "type News(sym: int, time: int)\n"
)

PROGRAMS = {
    "windowed ALL+NONE join, window 50": (
        "subscription S (matching ALL, disposal NONE, within 50 on time):"
        " Quote and Trade and Quote.sym = Trade.sym and Quote.price < Trade.price"
    ),
    "negation between, FR+PI": (
        "subscription S (within 200 on time): Quote[0] and Quote[1] and Quote[0].sym = Quote[1].sym"
        " and Quote[1].price > Quote[0].price * 1.02"
        " and no News(News.sym = Quote[0].sym) between Quote[0] and Quote[1]"
    ),
    "absence after, window 20": (
        "subscription S (within 20 on time): Trade and no Quote(Quote.sym = Trade.sym) after Trade"
    ),
    "group Quote+ with prev() and count": (
        "subscription S (within 30 on time): Quote+ and Trade and Quote.sym = Trade.sym"
        " and prev(Quote).price < Quote.price and count(Quote) >= 2"
    ),
}


def stream(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    price = [100.0] * 16
    out: list[dict[str, Any]] = []
    for i in range(n):
        sym = rng.randrange(16)
        price[sym] *= 1 + rng.uniform(-0.02, 0.021)
        kind = rng.choices(("Quote", "Trade", "News"), (70, 25, 5))[0]
        attrs: dict[str, Any] = {"sym": sym, "time": i}
        if kind != "News":
            attrs["price"] = price[sym]
        out.append({"id": f"e{i}", "type": kind, "attrs": attrs})
    return out


def run(text: str, matcher: str, events: list[dict[str, Any]]) -> tuple[float, list[Any], list[str]]:
    engine = Engine.from_source(TYPES + text, matcher=matcher, kernels="eager")
    validated = [engine.validate(e) for e in events]
    out: list[Any] = []
    start = time.perf_counter()
    for k, event in enumerate(validated):
        out += [(d.ids, d.timeout) for d in engine.publish(event)]
        if k % 100 == 99:
            out += [(d.ids, d.timeout) for d in engine.advance(k + 1)]
    seconds = time.perf_counter() - start
    return seconds, out, engine.matchers()["S"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    events = stream(args.events, args.seed)
    print(f"python {platform.python_version()} on {platform.machine()}, {args.events} events, publish() per event")
    print(
        f"{'workload':42} {'matcher':10} {'compiled ev/s':>14} {'reference ev/s':>15} {'speed-up':>9} {'relations':>10}"
    )
    for name, text in PROGRAMS.items():
        compiled_s, compiled_out, kinds = run(text, "compiled", events)
        reference_s, reference_out, _ = run(text, "reference", events)
        same = "same" if compiled_out == reference_out else "DIFFERENT"
        print(
            f"{name:42} {kinds[0]:10} {args.events / compiled_s:>14,.0f} {args.events / reference_s:>15,.0f}"
            f" {reference_s / compiled_s:>8.1f}x {len(compiled_out):>10,} {same}"
        )


if __name__ == "__main__":
    main()
