"""Event validation: dicts per second through ``Engine.validate``, fast path against pydantic alone.

    PYTHONPATH=. .venv/bin/python benchmarks/validation.py [--events 20000] [--repeat 5]

One type with three attributes (str, float, int); the events are parsed from JSON lines, as
``faidecs replay`` gets them, and are all valid: the fast path's common case. The pydantic figure
is the same call with the validator's fast path switched off (``validate`` bound to
``_validate_slow``, the code ``validate`` was before the fast path), so both run in one process,
on the same dicts. Prints the best of ``--repeat`` runs of each; takes a few seconds.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import machine

from faidecs import Engine

PROGRAM = "type Quote(symbol: str, price: float, volume: int)\nsubscription S: Quote\n"


def lines(n: int) -> list[str]:
    """``n`` valid events; every fifth price is written as an integer (converted to float)."""
    out = []
    for i in range(n):
        price: float | int = i if i % 5 == 0 else i + 0.25
        attrs = {"symbol": f"S{i % 97}", "price": price, "volume": i * 7}
        out.append(json.dumps({"id": f"e{i}", "type": "Quote", "attrs": attrs}))
    return out


def rate(engine: Engine, events: list[dict[str, Any]], repeat: int) -> float:
    """Events per second: the best of ``repeat`` passes over ``events``."""
    validate = engine.validate
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        for event in events:
            validate(event)
        best = min(best, time.perf_counter() - start)
    return len(events) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    events = [json.loads(line) for line in lines(args.events)]

    fast_engine = Engine.from_source(PROGRAM)
    slow_engine = Engine.from_source(PROGRAM)
    slow_engine._validator.validate = slow_engine._validator._validate_slow  # type: ignore[method-assign]
    # Both paths must give the same events, or the figures compare different work.
    assert [fast_engine.validate(e) for e in events[:1000]] == [slow_engine.validate(e) for e in events[:1000]]

    fast = rate(fast_engine, events, args.repeat)
    slow = rate(slow_engine, events, args.repeat)
    info = machine()
    print(f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}")
    print(f"Engine.validate, {args.events} dicts of type Quote(symbol: str, price: float, volume: int)")
    print(f"  fast path     : {fast:12,.0f} dicts/s  ({1e6 / fast:6.2f} us each)")
    print(f"  pydantic only : {slow:12,.0f} dicts/s  ({1e6 / slow:6.2f} us each)")
    print(f"  ratio         : {fast / slow:12.1f} x")


if __name__ == "__main__":
    main()
