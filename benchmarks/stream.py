"""``Engine.stream`` against ``publish_many`` on the same events, in the same run.

Prints events per second (best of ``--rounds``, the rounds interleaved) of: ``publish_many`` (no event loop, the
ceiling); ``stream`` over an async generator with ``batch=1`` (the pull contract: one hop to the
worker thread per event) and with larger batches (the worker takes the events already read);
and ``stream`` over a plain list (read on the worker, ``batch`` events per hop). Every run's
deliveries are checked against ``publish_many``'s. The workload is the stock example of
``benchmarks/workloads.py`` on the compiled matcher, kernels loaded before timing.

    PYTHONPATH=$PWD python benchmarks/stream.py [--events 50000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workloads  # noqa: E402

from faidecs import Delivery, Engine  # noqa: E402


async def _agen(events: list[Any]) -> AsyncIterator[Any]:
    for event in events:
        yield event


def _stream(program: str, events: list[Any], batch: int, kind: str) -> tuple[float, list[Delivery]]:
    engine = Engine.from_source(program, kernels="eager")

    async def main() -> list[Delivery]:
        source = _agen(events) if kind == "async" else events
        async with engine.stream(source, batch=batch) as deliveries:
            return [d async for d in deliveries]

    start = time.perf_counter()
    got = asyncio.run(main())
    return time.perf_counter() - start, got


def _publish_many(program: str, events: list[Any]) -> tuple[float, list[Delivery]]:
    engine = Engine.from_source(program, kernels="eager")
    start = time.perf_counter()
    got = list(engine.publish_many(events))
    return time.perf_counter() - start, got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    workload = workloads.stock(args.events, seed=0)
    events = workload.events()
    program = workload.program
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"stock workload, {len(events)} events, compiled matcher")
    runs: list[tuple[str, Callable[[], tuple[float, list[Delivery]]]]] = [
        ("publish_many", lambda: _publish_many(program, events)),
        ("stream, async source, batch=1", lambda: _stream(program, events, 1, "async")),
        ("stream, async source, batch=64", lambda: _stream(program, events, 64, "async")),
        ("stream, async source, batch=1024", lambda: _stream(program, events, 1024, "async")),
        ("stream, list, batch=1", lambda: _stream(program, events, 1, "plain")),
        ("stream, list, batch=1024", lambda: _stream(program, events, 1024, "plain")),
    ]
    # Rounds interleave the configurations, so that a busy spell of the machine falls on all alike.
    expected = [d.to_json() for d in _publish_many(program, events)[1]]
    best = dict.fromkeys((name for name, _ in runs), float("inf"))
    for _ in range(args.rounds):
        for name, run in runs:
            seconds, got = run()
            best[name] = min(best[name], seconds)
            if [d.to_json() for d in got] != expected:
                raise SystemExit(f"{name}: deliveries differ from publish_many's")
    base = len(events) / best["publish_many"]
    for name, seconds in best.items():
        rate = len(events) / seconds
        print(f"{name:36} {rate:>12,.0f} events/s   {rate / base:5.2f} x publish_many")
    print(f"deliveries: {len(expected)}, equal in every run")


if __name__ == "__main__":
    main()
