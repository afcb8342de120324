"""Running an engine event by event and recording everything observable after each step: what the
differential tests compare between the compiled and the reference matcher."""

from __future__ import annotations

from typing import Any

import numpy as np

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


def as_batch(engine: Engine, events: list[dict[str, Any]]) -> list[Delivered]:
    """Publish ``events`` as one batch: one table per type, ids in an ``id`` column."""
    types = engine.types
    names = sorted({e["type"] for e in events})
    tables: dict[str, dict[str, Any]] = {}
    for name in names:
        rows = [e for e in events if e["type"] == name]
        columns: dict[str, Any] = {"id": np.array([e["id"] for e in rows], dtype=object)}
        for attr in types[name].attributes:
            values = [e["attrs"][attr.name] for e in rows]
            kind = attr.kind.value
            dtype = {"int": np.int64, "float": np.float64, "bool": np.bool_, "str": object}[kind]
            columns[attr.name] = np.array(values, dtype=dtype)
        tables[name] = columns
    result = engine.publish_batch(tables, [e["type"] for e in events])
    return result.deliveries()
