"""Running an engine event by event and recording everything observable after each step: what the
differential tests compare between the compiled and the reference matcher."""

from __future__ import annotations

from typing import Any

from faidecs import Engine

Delivered = tuple[str, int, tuple[str, ...]]  # (subscription, conjunction as written, ids)


def per_event(engine: Engine, events: list[dict[str, Any]]) -> tuple[list[list[Delivered]], list[Any]]:
    """The deliveries of each event and the queues after it; ``engine.check()`` after every step."""
    deliveries, states = [], []
    for event in events:
        deliveries.append([(d.subscription, d.conjunction, tuple(d.ids)) for d in engine.publish(event)])
        engine.check()
        states.append(engine.state_json())
    return deliveries, states
