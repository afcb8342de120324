"""What the connector tests share: a stream of stock events and the embedded engine's answer."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from faidecs import Engine

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = (ROOT / "examples" / "stock.fdc").read_text()


def stock_events(count: int, prefix: str, seed: int = 1) -> list[dict[str, Any]]:
    """Quotes of two symbols with an earnings report now and then: enough to deliver often."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    for i in range(count):
        symbol = rng.choice(("ACME", "INIT"))
        if i % 10 == 0:
            attrs = {"symbol": symbol, "eps": 1.0, "time": i * 10}
            events.append({"id": f"{prefix}e{i}", "type": "EarningsReport", "attrs": attrs})
        else:
            attrs = {"symbol": symbol, "value": round(rng.uniform(9, 12), 2), "time": i * 10}
            events.append({"id": f"{prefix}q{i}", "type": "StockQuote", "attrs": attrs})
    return events


def expected(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The embedded engine's deliveries for ``events``, in order."""
    engine = Engine.from_source(PROGRAM, matcher="reference")
    return [d.to_json() for e in events for d in engine.publish(e)]


def payload(event: dict[str, Any]) -> bytes:
    return json.dumps(event).encode()
