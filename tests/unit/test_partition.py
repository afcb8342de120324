"""`partition by`: one independent set of queues per value of an attribute.

The reference for a partitioned subscription is the definition itself: for each value v, the
same subscription without partitioning, fed only the events whose attribute is v; its deliveries,
merged by the event that caused them, are what the partitioned subscription must deliver.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import numpy as np
import pytest

from faidecs import Engine
from faidecs.errors import ProgramError
from faidecs.lab.generator import _conjunction

MATCHINGS = ("FR", "FRC", "MR", "MRC")
DISPOSALS = ("I", "PI", "IP", "FP")
TYPES = ("T1", "T2", "T3")
TYPES_SOURCE = "".join(f"type {t}(k: int, a: int)\n" for t in TYPES)


def _case(seed: int) -> tuple[str, str, list[dict[str, Any]]]:
    """(options, condition, events) of a seeded random case."""
    rng = random.Random(seed)
    conjs = [_conjunction(rng, rng.sample(TYPES, rng.randint(1, 3))) for _ in range(rng.choice((1, 1, 2)))]
    condition = " or ".join("(" + " and ".join(c) + ")" for c in conjs)
    options = f"matching {rng.choice(MATCHINGS)}, disposal {rng.choice(DISPOSALS)}"
    events = [
        {"id": f"e{n}", "type": rng.choice(TYPES), "attrs": {"k": rng.randrange(3), "a": rng.randrange(3)}}
        for n in range(rng.randint(5, 40))
    ]
    return options, condition, events


def _partitioned(options: str, condition: str, events: list[dict[str, Any]], matcher: str) -> list[Any]:
    engine = Engine.from_source(
        TYPES_SOURCE + f"subscription S ({options}, partition by k): {condition}", matcher=matcher
    )
    out = []
    for n, e in enumerate(events):
        for d in engine.publish(e):
            out.append((n, d.conjunction, tuple(d.ids)))
        engine.check()
    return out


def _by_definition(options: str, condition: str, events: list[dict[str, Any]]) -> list[Any]:
    """Each key value on its own, with the reference matcher; merged by the causing event."""
    per_key: dict[int, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for n, e in enumerate(events):
        per_key[e["attrs"]["k"]].append((n, e))
    out = []
    for stream in per_key.values():
        engine = Engine.from_source(TYPES_SOURCE + f"subscription S ({options}): {condition}", matcher="reference")
        for n, e in stream:
            out += [(n, d.conjunction, tuple(d.ids)) for d in engine.publish(e)]
    return sorted(out, key=lambda r: r[0])  # stable: one event's deliveries keep their order


@pytest.mark.parametrize("seed", range(300))
def test_reference_partitioned_equals_one_engine_per_value(seed: int) -> None:
    """Partitioned deliveries (reference matcher) are, event by event, those of one engine per value."""
    options, condition, events = _case(seed)
    assert _partitioned(options, condition, events, "reference") == _by_definition(options, condition, events)


@pytest.mark.parametrize("seed", range(8))
def test_compiled_partitioned_equals_one_engine_per_value(seed: int) -> None:
    """The same with the compiled matcher (fewer seeds: each new conjunction compiles a kernel)."""
    options, condition, events = _case(seed)
    assert _partitioned(options, condition, events, "compiled") == _by_definition(options, condition, events)


@pytest.mark.parametrize("seed", range(6))
def test_partitioned_snapshot_restores_and_continues(seed: int) -> None:
    """A snapshot in the middle restores every partition: the rest of the stream delivers the same."""
    options, condition, events = _case(seed)
    source = TYPES_SOURCE + f"subscription S ({options}, partition by k): {condition}"
    whole = Engine.from_source(source, matcher="reference")
    half = len(events) // 2
    for e in events[:half]:
        whole.publish(e)
    restored = Engine.restore(whole.snapshot(), matcher="compiled")
    assert restored.state_json() == whole.state_json()
    for e in events[half:]:
        assert [d.ids for d in restored.publish(e)] == [d.ids for d in whole.publish(e)]


def test_partitioned_batch_equals_per_event() -> None:
    """publish_batch on a partitioned subscription delivers what publishing event by event does."""
    options, condition, events = _case(3)
    source = TYPES_SOURCE + f"subscription S ({options}, partition by k): {condition}"
    one = Engine.from_source(source, matcher="compiled")
    per_event = [(n, d.conjunction, tuple(d.ids)) for n, e in enumerate(events) for d in one.publish(e)]
    tables = {
        t: {
            "id": np.array([e["id"] for e in events if e["type"] == t], dtype=object),
            "k": np.array([e["attrs"]["k"] for e in events if e["type"] == t], dtype=np.int64),
            "a": np.array([e["attrs"]["a"] for e in events if e["type"] == t], dtype=np.int64),
        }
        for t in TYPES
    }
    batch = Engine.from_source(source, matcher="compiled").publish_batch(tables, [e["type"] for e in events])
    assert [(s, c, tuple(ids)) for s, c, ids in batch.deliveries()] == [("S", c, ids) for _, c, ids in per_event]


def test_state_json_shows_each_partition() -> None:
    """The queues of each value appear under its JSON text, in the order values appeared."""
    engine = Engine.from_source(
        "type Q(symbol: str, v: int)\ntype T(symbol: str, n: int)\n"
        "subscription S (partition by symbol): Q and T and Q.v < T.n",
        matcher="reference",
    )
    engine.publish({"id": "q1", "type": "Q", "attrs": {"symbol": "ACME", "v": 5}})
    engine.publish({"id": "q2", "type": "Q", "attrs": {"symbol": "XYZ", "v": 1}})
    assert [d.ids for d in engine.publish({"id": "t1", "type": "T", "attrs": {"symbol": "XYZ", "n": 3}})] == [
        ["q2", "t1"]
    ]
    assert engine.state_json() == {
        "S": [{"partitions": {'"ACME"': {"Q": ["q1"], "T": []}, '"XYZ"': {"Q": [], "T": []}}}]
    }


@pytest.mark.parametrize(
    ("program", "message"),
    [
        (
            "type Q(symbol: str)\ntype T(sym: str)\nsubscription S (partition by symbol): Q and T",
            "partition by symbol: type T has no attribute 'symbol'",
        ),
        (
            "type Q(symbol: str)\ntype T(symbol: int)\nsubscription S (partition by symbol): Q and T",
            "partition by symbol: the attribute's kind differs between types (int in T; str in Q)",
        ),
        (
            "type Q(symbol: str)\nsubscription S (partition by symbol, partition by symbol): Q",
            "option 'partition' given twice",
        ),
    ],
)
def test_partition_errors_name_the_problem(program: str, message: str) -> None:
    """A partition attribute that a type lacks, or whose kind differs, is a positioned error."""
    with pytest.raises(ProgramError) as err:
        Engine.from_source(program)
    assert message in err.value.format()


def test_partition_round_trips_through_the_normal_form() -> None:
    """to_source keeps the clause, and compiles back to an equal subscription."""
    engine = Engine.from_source("type Q(symbol: str, v: int)\nsubscription S (matching MR, partition by symbol): Q")
    sub = engine.subscriptions[0]
    assert "partition by symbol" in sub.to_source()
    again = Engine.from_source("type Q(symbol: str, v: int)\n" + sub.to_source()).subscriptions[0]
    assert again == sub and again.partition_by == "symbol"
