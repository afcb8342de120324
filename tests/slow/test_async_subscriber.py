"""``AsyncSubscriber``: a deployment's subscriber inside an asyncio application, against real
processes (ZooKeeper, CurveZMQ, merger servers, a publisher on loopback).

A deployment with its three subscribers run three ways: s1 as a ``faidecs overlay node``
process, s2 as an ``AsyncSubscriber`` in this test's event loop, s3 by
``examples/async_subscriber.py`` (the example of docs/deploy.md) in a process of its own. s2 must
deliver exactly what s1 does (same subscription, same order), and the async subscribers' run
logs must hold what they handed to the application. Ordered by the sequencer (one publisher on
a FIFO link: the order is the events file's), each must also deliver exactly what the embedded
engine delivers on the events file; ordered by the replicated mergers, the merged run logs
must keep every property the options keep."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from overlay_harness import embedded, settled, verified, write_deployment

from faidecs.errors import FaidecsError
from faidecs.overlay import AsyncSubscriber, OverlayDelivery
from faidecs.overlay.runtime.launcher import LocalDeployment

pytestmark = [pytest.mark.slow, pytest.mark.processes]

ROOT = Path(__file__).resolve().parents[2]
EVENTS = 200


@pytest.mark.parametrize("ordering", ["sequencer", "mergers"])
def test_async_subscriber_delivers_what_the_process_and_the_engine_deliver(
    tmp_path: Path, zookeeper: str, ordering: str
) -> None:
    if ordering == "sequencer":
        path = write_deployment(tmp_path, EVENTS, rate=800, extra='ordering = "sequencer"', replicas=1)
    else:
        path = write_deployment(tmp_path, EVENTS, rate=800, replicas=3)
    run_dir = tmp_path / "run"
    run = LocalDeployment(path, run_dir, zookeeper=zookeeper)
    example: subprocess.Popen[bytes] | None = None
    out = run_dir / "out" / "s3-example.out"

    async def main() -> tuple[list[OverlayDelivery], int, list[int]]:
        nonlocal example
        got: list[OverlayDelivery] = []
        ticks = 0
        at: list[int] = []  # a concurrent task's count at each delivery

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.002)

        async def consume(subscriber: AsyncSubscriber) -> None:
            async for delivery in subscriber:  # ends when the subscriber is stopped
                got.append(delivery)
                at.append(ticks)

        ticking = asyncio.create_task(ticker())
        async with AsyncSubscriber(path, "s2", run_dir=run_dir, zookeeper=zookeeper) as subscriber:
            consumer = asyncio.create_task(consume(subscriber))
            await asyncio.to_thread(start_servers_and_s1, run)
            example = subprocess.Popen(
                [sys.executable, str(ROOT / "examples" / "async_subscriber.py"), str(path), "s3"]
                + ["--run-dir", str(run_dir)],
                stdout=out.open("wb"),
                stderr=(run_dir / "out" / "s3-example.err").open("wb"),
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            await subscriber.started()
            await asyncio.to_thread(
                run.wait_for,
                lambda s: all(s.get(n, {}).get("started") for n in ("s1", "s3")),
                60,
                "s1 and the example's s3 to start",
            )
            run.start_process("p1")
            await asyncio.to_thread(settled, run)
            pending = subscriber.pending
        await consumer
        ticking.cancel()
        return got, pending, at

    try:
        got, pending, at = asyncio.run(main())
    finally:
        if example is not None and example.poll() is None:
            example.send_signal(signal.SIGTERM)
            example.wait(20)
        run.stop()
    assert example is not None and example.returncode == 0, (run_dir / "out" / "s3-example.err").read_text()
    by = verified(run, EVENTS)  # the merged run logs, s2's and s3's included, keep every property
    expected = embedded(tmp_path)
    mine = [(d.conjunction, d.relation) for d in got]
    assert mine, "the subscription delivered nothing: the comparisons would say nothing"
    assert mine == by["s1"], "the async subscriber differs from the subscriber process"
    if ordering == "sequencer":
        assert mine == expected["s2"], "the async subscriber differs from the embedded engine"
    assert mine == by["s2"], "the async subscriber's run log differs from what it handed over"
    assert all(d.subscription == "Pairs" for d in got)
    ids = [d.id for d in got]
    assert all(i is not None and i.startswith("s2/") for i in ids) and len(set(ids)) == len(ids)
    assert pending <= len(got)
    # The loop ran another task while the subscriber delivered: its count moved between them.
    assert at[-1] > at[0]

    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0] == {"started": "s3"}
    printed = [(d["conjunction"], tuple(d["relation"])) for d in lines[1:]]
    assert printed and printed == by["s3"], "the example printed what its run log lacks"
    if ordering == "sequencer":
        assert printed == expected["s3"], "the example's subscriber differs from the engine"


def start_servers_and_s1(run: LocalDeployment) -> None:
    for name in run.deployment.servers:
        run.start_process(name)
    run.start_process("s1")


def test_started_raises_when_the_subscriber_stops_first(tmp_path: Path, zookeeper: str) -> None:
    """No merger runs, so the streams never start: ``started()`` must not wait for good once the
    subscriber is stopped, and the ``async for`` ends with nothing delivered."""
    path = write_deployment(tmp_path, 1, rate=1)

    async def main() -> list[OverlayDelivery]:
        async with AsyncSubscriber(path, "s1", run_dir=tmp_path / "run", zookeeper=zookeeper) as subscriber:
            waiting = asyncio.create_task(subscriber.started())
            await asyncio.sleep(0.2)  # it registers and asks its (absent) mergers meanwhile
            assert not waiting.done()
            await subscriber.stop()
            with pytest.raises(FaidecsError, match="s1 stopped before its streams started"):
                await waiting
            return [d async for d in subscriber]

    assert asyncio.run(main()) == []
