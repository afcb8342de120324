"""The stock-market examples of the extended language (examples/stock_extended.fdc, docs/dsl.md)
on a seeded stream, and what the embedded engine delivers on it: what every runtime's test
compares its deliveries with (the overlay's simulator and processes, Spark batch and streaming)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from faidecs import Engine, compile_program

PROGRAM = (Path(__file__).resolve().parents[1] / "examples" / "stock_extended.fdc").read_text()
TYPES_SOURCE = "".join(line + "\n" for line in PROGRAM.splitlines() if line.startswith("type "))
NAMES = ("RisingAverage", "SilentEarnings", "UnexplainedJump")


def subscriptions() -> dict[str, str]:
    """Each subscription's declaration (its normal form), by name: one subscriber process each."""
    return {s.name: s.to_source() for s in compile_program(PROGRAM).subscriptions}


def stream(seed: int, n: int) -> list[dict[str, Any]]:
    """``n`` events of two symbols, time rising 1 to 25 seconds an event: quotes on a random walk
    with rising streaks and jumps, earnings reports priced near the quote, news now and then."""
    rng = random.Random(seed)
    value = {"ACME": 100.0, "INIT": 20.0}
    time = 0
    out: list[dict[str, Any]] = []
    for k in range(n):
        time += rng.randint(1, 25)
        symbol = rng.choice(("ACME", "INIT"))
        roll = rng.random()
        if roll < 0.12:
            price = round(value[symbol] * rng.uniform(0.94, 1.01), 2)
            attrs = {"symbol": symbol, "eps": round(rng.uniform(0.1, 2.0), 2), "price": price, "time": time}
            out.append({"id": f"e{k}", "type": "EarningsReport", "attrs": attrs})
        elif roll < 0.25:
            out.append({"id": f"n{k}", "type": "News", "attrs": {"symbol": symbol, "time": time}})
        else:
            step = rng.choice((1.01, 1.02, 1.03, 1.15)) if rng.random() < 0.75 else rng.uniform(0.9, 1.0)
            value[symbol] = round(value[symbol] * step, 2)
            out.append(
                {"id": f"q{k}", "type": "StockQuote", "attrs": {"symbol": symbol, "value": value[symbol], "time": time}}
            )
    return out


def embedded(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The embedded engine's deliveries, as ``Delivery.to_json`` gives them, in order."""
    engine = Engine.from_source(PROGRAM, matcher="reference")
    return [d.to_json() for e in events for d in engine.publish(e)]


def by_subscription(deliveries: list[dict[str, Any]]) -> dict[str, list[tuple[int, tuple[str, ...]]]]:
    """Per subscription, its (conjunction, relation) in order: what one subscriber process delivers."""
    out: dict[str, list[tuple[int, tuple[str, ...]]]] = {name: [] for name in NAMES}
    for d in deliveries:
        out[d["subscription"]].append((d["conjunction"], tuple(d["relation"])))
    return out
