"""Snapshots that once gave TypeError, AttributeError or OverflowError (some only at the next
publish), or read ``true`` as 1: each is a SnapshotError naming the field path at restore."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from faidecs import Engine, SnapshotError

PROGRAM = (
    "type T(k: int, a: int)\ntype U(k: int, a: int)\n"
    "subscription S (covering staged): T and U and T.a > 0 and U.a > 0\n"
    "subscription P (partition by k): T and U\n"
    "subscription Q: T and U\n"
)


def snapshot() -> dict[str, Any]:
    engine = Engine.from_source(PROGRAM, matcher="reference")
    engine.publish({"id": "t1", "type": "T", "attrs": {"k": 1, "a": 1}})
    return json.loads(json.dumps(engine.snapshot()))


def put(*path: Any) -> Callable[[dict[str, Any]], None]:
    """A change to a snapshot: set the field at ``path[:-1]`` to ``path[-1]``."""

    def change(snap: dict[str, Any]) -> None:
        target = snap
        for step in path[:-2]:
            target = target[step]
        target[path[-2]] = path[-1]

    return change


#: (change, what the error says) for each case of issue 20 on snapshots, and their neighbours.
CASES = [
    (put("program", 5), "program: Expected `str`, got `int`"),
    (put("published", True), "published: Expected `int`, got `bool`"),
    (put("published", 2**63), "published: Expected `int` <= 9007199254740992"),
    (put("queues", "Q", 0, "@clock", 10**30), "queues.Q[0] (subscription Q, conjunction 0): @clock: Expected `int` <="),
    (
        put("queues", "S", 0, "parts", 3),
        "queues.S[0] (subscription S, conjunction 0): parts: Expected `array`, got `int`",
    ),
    (
        put("queues", "S", 0, "pending", [[1], []]),
        "queues.S[0] (subscription S, conjunction 0): pending[0][0]: Expected",
    ),
    (put("queues", "S", 0, "pending_arrivals", "x"), "pending_arrivals: Expected `array`, got `str`"),
    (put("queues", "S", 0, "parts", 0, "@ticks", None), "parts[0]: @ticks: Expected `object`, got `null`"),
    (put("queues", "P", 0, "partitions", [[[1], {}]]), "partitions[0][0]: Expected `bool | int | float | str`"),
    (put("queues", "Q", 0, "T", 0, "attrs", "a", 10**5000), "attribute 'a': integer 10000000000000000000… (5,001"),
    (put("queues", "Q", 0, "T", "x"), "queues.Q[0] (subscription Q, conjunction 0): T: Expected `array`, got `str`"),
    (put("extra", 1), "Object contains unknown field `extra`"),
    (put("program", "type T("), "program: <snapshot>:1:8: error"),
]


@pytest.mark.parametrize(("change", "message"), CASES, ids=range(len(CASES)))
def test_bad_snapshot_is_a_snapshot_error_naming_the_field(change: Callable[..., None], message: str) -> None:
    snap = snapshot()
    change(snap)
    with pytest.raises(SnapshotError) as info:
        Engine.restore(snap, matcher="reference")
    assert message in str(info.value)


def test_a_good_snapshot_still_restores_and_runs_on() -> None:
    snap = snapshot()
    engine = Engine.restore(copy.deepcopy(snap), matcher="reference")
    assert engine.snapshot() == snap
    delivered = engine.publish({"id": "u1", "type": "U", "attrs": {"k": 1, "a": 1}})
    assert [d.subscription for d in delivered] == ["S", "P", "Q"]
