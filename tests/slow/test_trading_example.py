"""The trading example (examples/trading/run.py) end to end: quotes and orders published to NATS
JetStream, read by the publisher of a 3-replica overlay, with a NATS restart and a SIGKILL of the
publisher in the middle; the run verifies, every event enters the overlay exactly once, the desks
agree, and the single-type subscriber delivers what the embedded engine delivers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("nats")  # the `nats` extra
pytest.importorskip("zmq")  # the `overlay` extra

from overlay_harness import BLOCK, _blocks

pytestmark = [pytest.mark.slow, pytest.mark.processes]

ROOT = Path(__file__).resolve().parents[2]


def test_trading_over_nats_through_a_three_replica_overlay(tmp_path: Path, zookeeper: str) -> None:
    spec = importlib.util.spec_from_file_location("trading_run", ROOT / "examples" / "trading" / "run.py")
    assert spec is not None and spec.loader is not None
    trading = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(trading)
    base = next(_blocks)
    assert base + 20 < base + BLOCK
    found = trading.run(tmp_path, base_port=base, zookeeper=zookeeper, kill_publisher_at=220)
    assert found["published"] == len(trading.events())
    assert found["delivered"]["s3"] > 0 and found["delivered"]["s1"] > 0
    # The restarted publisher went on from its outbox: it read what was left and published it.
    assert found["publisher"]["published"] == len(trading.events()) and found["publisher"]["source"]["taken"] > 0
