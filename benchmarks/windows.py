"""Event-time windows keep memory bounded on an unbounded stream (issue 24).

Streams quotes and earnings reports of 100 symbols, time growing by one per event, through three
windowed subscriptions (a pair within 300, a group of rising quotes within 300, an absence within
60; all ``partition by sym``) and prints, every ``--every`` events, the events queued, logged and
purged, the process's resident memory and the rate. The baseline, in the same run on the first
``--baseline`` events, is the pair written with arithmetic predicates instead of a window
(``Earnings.time - Quote.time <= 300 and ...``): the same relations, but queues that never empty.

    PYTHONPATH=$PWD python benchmarks/windows.py [--events 10000000] [--every 1000000] [--baseline 200000]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time
from collections.abc import Iterator
from typing import Any

from faidecs import Engine

TYPES = """type Quote(sym: int, price: float, time: int)
type Earnings(sym: int, price: float, time: int)
"""
WINDOWED = (
    TYPES
    + """
subscription Pair (disposal I, within 300 on time, partition by sym):
    Quote and Earnings and Quote.price > Earnings.price
subscription Rising (within 300 on time, partition by sym):
    Quote+ and prev(Quote).price < Quote.price and count(Quote) >= 3 and avg(Quote.price) > Earnings.price
subscription Silent (within 60 on time, partition by sym): Earnings and no Quote after Earnings
"""
)
ARITHMETIC = (
    TYPES
    + """
subscription Pair (disposal I, partition by sym): Quote and Earnings and Quote.price > Earnings.price
    and Earnings.time - Quote.time <= 300 and Quote.time - Earnings.time <= 300
"""
)


def events(n: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    for i in range(n):
        kind = "Earnings" if rng.random() < 0.02 else "Quote"
        yield {"type": kind, "attrs": {"sym": rng.randrange(100), "price": round(rng.uniform(50, 150), 2), "time": i}}


def held(engine: Engine) -> tuple[int, int, int]:
    """Events queued, negated events logged, events purged so far (every subscription)."""
    queued = logged = purged = 0
    for conjunctions in engine.metrics()["subscriptions"].values():
        for gauges in conjunctions:
            queued += sum(gauges["queues"].values())
            logged += gauges.get("logged", 0)
            purged += gauges.get("purged", 0)
    return queued, logged, purged


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run(program: str, n: int, every: int, label: str, compare: int) -> tuple[list[int], list[list[str]]]:
    """Queued events at each checkpoint, and Pair's relations among the first ``compare`` events."""
    engine = Engine.from_source(program, kernels="eager")
    start = last = time.perf_counter()
    delivered = 0
    queued_at: list[int] = []
    pairs: list[list[str]] = []
    for k, event in enumerate(events(n), 1):
        event["id"] = str(k)
        found = engine.publish(event)
        delivered += len(found)
        if k <= compare:
            pairs += [d.ids for d in found if d.subscription == "Pair"]
        if k % every == 0:
            queued, logged, purged = held(engine)
            queued_at.append(queued)
            now = time.perf_counter()
            print(
                f"{label:>10} {k:>11,} events: queued {queued:>7,}  logged {logged:>6,}  purged {purged:>11,}"
                f"  deliveries {delivered:>10,}  rss {rss_mib():7.1f} MiB  {every / (now - last):9,.0f} events/s"
            )
            last = now
    print(f"{label:>10} total {time.perf_counter() - start:.1f} s")
    return queued_at, pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--every", type=int, default=1_000_000)
    parser.add_argument("--baseline", type=int, default=200_000)
    args = parser.parse_args()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    base, base_pairs = run(ARITHMETIC, args.baseline, max(1, args.baseline // 4), "arithmetic", args.baseline)
    windowed, pairs = run(WINDOWED, args.events, args.every, "window", args.baseline)
    if pairs != base_pairs:
        raise SystemExit("the window's Pair relations differ from the arithmetic predicates' ones")
    print(f"Pair: the same {len(pairs):,} relations with the window as with arithmetic predicates")
    print(f"arithmetic window: queued grew {base[-1] / max(base[0], 1):.2f}x from the first to the last checkpoint")
    print(f"declared window: queued at the last checkpoint / the first: {windowed[-1] / max(windowed[0], 1):.2f}")


if __name__ == "__main__":
    main()
