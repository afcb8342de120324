"""``Engine.check()`` on deliberately corrupted state: it raises ``EngineStateError`` naming the
inconsistent part, and does so under ``python -O`` too (it is not built on ``assert``).

Why: the tests call ``check()`` after every step to catch bugs in the engine's bookkeeping; a
check that vanished under ``-O``, or that said only ``AssertionError``, would hide them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from faidecs import Bounds, Engine, EngineStateError, FaidecsError
from faidecs.matching.partitioned_state import PartitionedConjunctionState

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """\
type T1(a: int)
type T2(a: int)
subscription S (disposal I): T1 and T2 and T1.a > T2.a
subscription P (partition by a): T1 and T2
"""


def engine_with_queues(matcher: str = "reference") -> Engine:
    """An engine whose S queues hold two T1 events and P holds two partitions."""
    engine = Engine.from_source(PROGRAM, matcher=matcher)  # type: ignore[arg-type]
    for k, a in enumerate((0, 1)):
        engine.publish({"id": f"x{k}", "type": "T1", "attrs": {"a": a}})
    engine.check()
    return engine


def test_a_consistent_engine_passes() -> None:
    engine = engine_with_queues()
    engine.publish({"id": "y0", "type": "T2", "attrs": {"a": 5}})
    engine.check()
    assert issubclass(EngineStateError, FaidecsError)


def test_arrivals_out_of_order() -> None:
    engine = engine_with_queues()
    state = engine._subscriptions["S"].conjunctions[0]
    state.arrivals["T1"].reverse()  # type: ignore[union-attr]
    with pytest.raises(EngineStateError, match=r"subscription S, conjunction 0: queue T1: .*arrivals \[1, 0\]"):
        engine.check()


def test_event_in_the_queue_of_another_type() -> None:
    engine = engine_with_queues()
    state = engine._subscriptions["S"].conjunctions[0]
    stranger = engine.validate({"id": "y9", "type": "T2", "attrs": {"a": 0}})
    state.queues["T1"][0] = stranger
    with pytest.raises(EngineStateError, match="subscription S, conjunction 0: queue T1 holds event 'y9' of type T2"):
        engine.check()


def test_event_in_another_partition() -> None:
    engine = engine_with_queues()
    state = engine._subscriptions["P"].conjunctions[0]
    assert isinstance(state, PartitionedConjunctionState)
    first, second = state.parts.values()
    first.queues["T1"][0], second.queues["T1"][0] = second.queues["T1"][0], first.queues["T1"][0]
    with pytest.raises(
        EngineStateError, match=r"subscription P, conjunction 0: partition 0: queue T1 holds event 'x1'"
    ):
        engine.check()


def test_filter_index_miscounted() -> None:
    engine = engine_with_queues()
    engine._routers["T2"].size += 1
    with pytest.raises(EngineStateError, match="filter index of type T2: .* routes in the index, expected"):
        engine.check()


def test_filter_index_lost_a_route() -> None:
    engine = engine_with_queues()
    router = engine._routers["T2"]
    route = engine._subscriptions["S"].routes[0]
    router.remove(route, route.access["T2"])
    with pytest.raises(EngineStateError, match="the filter index holds 3 routes, expected 4"):
        engine.check()


def test_compiled_queue_over_its_bound() -> None:
    from faidecs.matching.compiled_state import CompiledConjunctionState

    engine = Engine.from_source(PROGRAM, matcher="compiled", kernels="eager", bounds={"S": Bounds(max_queue=2)})
    for k in range(2):
        engine.publish({"id": f"x{k}", "type": "T1", "attrs": {"a": k}})
    engine.check()
    state = engine._subscriptions["S"].conjunctions[0]
    assert isinstance(state, CompiledConjunctionState)
    state.bounds = Bounds(max_queue=1)
    with pytest.raises(
        EngineStateError, match="subscription S, conjunction 0: queue T1: 2 events, over its bound of 1"
    ):
        engine.check()


def test_check_survives_python_optimize() -> None:
    """Under ``-O`` asserts are gone; the check still raises."""
    code = (
        "from faidecs import Engine, EngineStateError\n"
        "e = Engine.from_source('type T1(a: int)\\ntype T2(a: int)\\nsubscription S: T1 and T2', matcher='reference')\n"
        "e.publish({'id': 'x0', 'type': 'T1', 'attrs': {'a': 0}})\n"
        "e.publish({'id': 'x1', 'type': 'T1', 'attrs': {'a': 1}})\n"
        "e._subscriptions['S'].conjunctions[0].arrivals['T1'].reverse()\n"
        "try:\n"
        "    e.check()\n"
        "except EngineStateError as exc:\n"
        "    print('raised:', exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.startswith("raised: subscription S, conjunction 0: queue T1"), out.stdout + out.stderr
