"""The batch path runs the extended language exactly as publishing event by event does: groups
(relations of varying length), ALL (several relations per arrival), absences, partitions."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from faidecs import Engine

PROGRAM = """type A(k: int, v: int, t: int)
type B(k: int, v: int, t: int)
type N(k: int, v: int, t: int)
subscription G (partition by k): A+ and B and prev(A).v <= A.v and count(A) >= 2
subscription P (matching ALL, disposal NONE, within 4 on t): A and B and A.v < B.v
subscription S (within 3 on t): A and no N(N.k = A.k) after A
subscription X: A and B
"""


def _stream(seed: int, n: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    t, out = 0, []
    for i in range(n):
        t += rng.choice((0, 1, 2))
        attrs = {"k": rng.randint(0, 1), "v": rng.randint(0, 3), "t": t}
        out.append({"id": f"e{i}", "type": rng.choice("ABN"), "attrs": attrs})
    return out


@pytest.mark.parametrize("cut", [0, 17, 150])
def test_batch_equals_event_by_event(cut: int) -> None:
    events = _stream(cut, 300)
    one = Engine.from_source(PROGRAM)
    expected = [(d.subscription, d.conjunction, tuple(d.ids)) for e in events for d in one.publish(e)]
    engine = Engine.from_source(PROGRAM)
    got = [(d.subscription, d.conjunction, tuple(d.ids)) for e in events[:cut] for d in engine.publish(e)]
    rest = events[cut:]
    tables = {}
    for type_name in "ABN":
        rows = [e for e in rest if e["type"] == type_name]
        columns = {a: np.array([e["attrs"][a] for e in rows], dtype=np.int64) for a in "kvt"}
        tables[type_name] = {"id": np.array([e["id"] for e in rows], dtype=object), **columns}
    result = engine.publish_batch(tables, [e["type"] for e in rest])
    got += result.deliveries()
    assert got == expected and len({d[0] for d in expected}) == 4  # every subscription delivered
    timeouts = [bool(t) for g in result.groups if g.timeouts is not None for t in g.timeouts]
    assert any(timeouts)  # absences are marked in the batch's groups too
    assert engine.snapshot()["queues"] == one.snapshot()["queues"]
