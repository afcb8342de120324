"""The NATS JetStream connector against a real ``nats-server -js`` (faidecs.connect.nats).

One server for the module, one subject per test. Each test checks the engine's deliveries
against the embedded engine's for the same events: nothing lost, nothing duplicated.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

nats = pytest.importorskip("nats")  # the `nats` extra; CI installs it

from connector_helpers import PROGRAM, ROOT, expected, payload, stock_events

from faidecs import Engine
from faidecs.connect.nats import NatsSink, NatsSource, ensure_stream
from faidecs.connect.pump import pump
from faidecs.connect.servers import NatsServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    with NatsServer(tmp_path_factory.mktemp("nats")) as srv:
        yield srv


async def _publish(srv: NatsServer, subject: str, payloads: list[bytes]) -> None:
    nc = await nats.connect(f"nats://127.0.0.1:{srv.port}", max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    js = nc.jetstream()
    await ensure_stream(js, subject, None)
    for data in payloads:
        await js.publish(subject, data)
    await nc.close()


async def _read(srv: NatsServer, subject: str) -> list[dict[str, Any]]:
    """Every message stored on ``subject`` so far, through a throwaway consumer."""
    nc = await nats.connect(f"nats://127.0.0.1:{srv.port}")
    js = nc.jetstream()
    sub = await js.pull_subscribe(subject)
    out: list[dict[str, Any]] = []
    while True:
        try:
            msgs = await sub.fetch(100, timeout=0.5)
        except TimeoutError:  # nats-py raises its own or asyncio's (a race in its fetch)
            break
        out += [json.loads(m.data) for m in msgs]
    await nc.close()
    return out


def test_round_trip_through_the_engine_to_a_sink(server: NatsServer) -> None:
    events = stock_events(60, "rt")

    async def run() -> None:
        engine = Engine.from_source(PROGRAM, matcher="reference")
        source = NatsSource(server.url("rt.in"), engine.types)
        await source.start()  # creates the stream and the durable consumer
        await _publish(server, "rt.in", [payload(e) for e in events])
        summary = await pump(engine, source, sink=NatsSink(server.url("rt.out")), max_events=len(events))
        assert summary.events == len(events)
        assert (source.counts.taken, source.counts.dead_lettered, source.counts.duplicates) == (len(events), 0, 0)
        assert await _read(server, "rt.out") == expected(events)
        # All acknowledged: a second source on the same durable finds nothing to take.
        again = NatsSource(server.url("rt.in"), engine.types)
        await again.start()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(aiter(again)), 1.5)
        await again.close()

    asyncio.run(asyncio.wait_for(run(), 60))  # a lost event fails the test instead of hanging it


def test_malformed_messages_are_dead_lettered_while_good_ones_flow(server: NatsServer) -> None:
    events = stock_events(30, "mf")
    bad = [
        (b"not json at all", "invalid JSON"),
        (b'{"id": "x1", "type": "Nope", "attrs": {}}', "Nope"),
        (b'{"id": "x2", "type": "StockQuote", "attrs": {"symbol": "A", "value": "high", "time": 1}}', "value"),
        (b'{"type": "StockQuote", "attrs": {"symbol": "A", "value": 1.0, "time": 1}}', "needs an id"),
        (b"\xff\xfe", "not UTF-8"),
        (json.dumps({"id": "big", "type": "StockQuote", "attrs": {"symbol": "A" * 600}}).encode(), "limit of 512"),
    ]
    mixed = [payload(e) for e in events[:10]] + [b for b, _ in bad] + [payload(e) for e in events[10:]]

    async def run() -> None:
        engine = Engine.from_source(PROGRAM, matcher="reference")
        source = NatsSource(server.url("mf.in", "max_bytes=512"), engine.types)
        await source.start()
        await _publish(server, "mf.in", mixed)
        got: list[dict[str, Any]] = []
        await pump(engine, source, emit=lambda d: got.append(d.to_json()), max_events=len(events))
        assert got == expected(events)
        assert (source.counts.taken, source.counts.dead_lettered) == (len(events), len(bad))
        dead = await _read(server, "mf.in.dead")
        assert len(dead) == len(bad)
        for record, (data, words) in zip(dead, bad):
            assert words in record["error"], record
            assert record["where"].startswith("subject mf.in, stream MF_IN seq ")
            assert record["payload_bytes"] == len(data)
            if "payload" in record:
                assert record["payload"].encode() == data
            else:
                assert record["payload_base64"] == "//4="

    asyncio.run(asyncio.wait_for(run(), 60))  # a lost event fails the test instead of hanging it


def test_a_broker_restart_mid_stream_loses_and_duplicates_nothing(server: NatsServer) -> None:
    events = stock_events(200, "rs")

    async def run() -> None:
        engine = Engine.from_source(PROGRAM, matcher="reference")
        source = NatsSource(server.url("rs.in", "ack_wait=1"), engine.types)
        await source.start()
        await _publish(server, "rs.in", [payload(e) for e in events[:100]])
        sink = NatsSink(server.url("rs.out"))
        consumer = asyncio.ensure_future(pump(engine, source, sink=sink, max_events=len(events)))
        while source.counts.taken < 50:
            await asyncio.sleep(0.001)
        await asyncio.to_thread(server.restart)  # the consumer and the sink are in the middle of it
        await _publish(server, "rs.in", [payload(e) for e in events[100:]])
        summary = await asyncio.wait_for(consumer, 60)
        assert summary.events == len(events)
        assert source.counts.taken == len(events)
        assert await _read(server, "rs.out") == expected(events)

    asyncio.run(asyncio.wait_for(run(), 60))  # a lost event fails the test instead of hanging it


def test_a_consumer_killed_before_it_acknowledged_gets_the_event_again(server: NatsServer) -> None:
    events = stock_events(40, "kl")

    async def run() -> None:
        engine = Engine.from_source(PROGRAM, matcher="reference")
        url = server.url("kl.in", "ack_wait=1")
        first = NatsSource(url, engine.types)
        await first.start()
        await _publish(server, "kl.in", [payload(e) for e in events])
        taken = aiter(first)
        got = [await anext(taken) for _ in range(20)]  # the 20th is taken, not acknowledged
        delivered = [d.to_json() for e in got for d in engine.publish(e)]
        assert first.client is not None
        await first.client.close()  # the connection drops as a killed process's would: no ack, no nak

        # The same process goes on (its engine has the 20th): the replay is dropped by its window.
        same = NatsSource(url, engine.types)
        same.recent = first.recent
        summary = await pump(engine, same, emit=lambda d: delivered.append(d.to_json()), max_events=20)
        assert summary.events == 20 and same.counts.duplicates == 1
        assert delivered == expected(events)

    asyncio.run(asyncio.wait_for(run(), 60))  # a lost event fails the test instead of hanging it


def test_a_restarted_process_with_a_fresh_engine_takes_the_replay(server: NatsServer) -> None:
    events = stock_events(30, "fr")

    async def run() -> None:
        engine = Engine.from_source(PROGRAM, matcher="reference")
        url = server.url("fr.in", "ack_wait=1")
        first = NatsSource(url, engine.types)
        await first.start()
        await _publish(server, "fr.in", [payload(e) for e in events])
        taken = aiter(first)
        for _ in range(10):
            engine.publish(await anext(taken))
        assert first.client is not None
        await first.client.close()  # killed after taking the 10th, before acknowledging it

        fresh = Engine.from_source(PROGRAM, matcher="reference")
        second = NatsSource(url, fresh.types)
        got: list[dict[str, Any]] = []
        await pump(fresh, second, emit=lambda d: got.append(d.to_json()), max_events=21)
        assert (second.counts.taken, second.counts.duplicates) == (21, 0)
        assert got == expected(events[9:])

    asyncio.run(asyncio.wait_for(run(), 60))  # a lost event fails the test instead of hanging it


def test_faidecs_run_reads_a_subject_and_prints_the_counts(server: NatsServer) -> None:
    events = stock_events(25, "cli")
    asyncio.run(_publish(server, "cli.in", [payload(e) for e in events] + [b"{broken"]))
    result = subprocess.run(
        [sys.executable, "-m", "faidecs.cli.main", "run", "--program", str(ROOT / "examples" / "stock.fdc"),
         "--source", server.url("cli.in"), "--sink", server.url("cli.out"), "--max-events", str(len(events)),
         "--matcher", "reference"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    deliveries = len(expected(events))
    assert result.stderr.strip().splitlines()[-1] == (
        f"faidecs: {len(events)} events taken, {deliveries} deliveries, 0 dead-lettered, 0 duplicates dropped"
    )
    assert asyncio.run(_read(server, "cli.out")) == expected(events)


def test_faidecs_run_stops_cleanly_at_sigterm_with_everything_taken_acknowledged(server: NatsServer) -> None:
    events = stock_events(30, "st")
    # Cut after the last event that completes a relation: once its delivery is out, all are taken.
    events = events[
        : max(k for k in range(1, len(events) + 1) if len(expected(events[:k])) > len(expected(events[: k - 1])))
    ]
    asyncio.run(_publish(server, "st.in", [payload(e) for e in events]))
    command = [sys.executable, "-m", "faidecs.cli.main", "run", "--program", str(ROOT / "examples" / "stock.fdc"),
               "--source", server.url("st.in"), "--matcher", "reference"]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    want = expected(events)
    assert proc.stdout is not None
    got = [json.loads(proc.stdout.readline()) for _ in want]  # every event taken: its deliveries are out
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert got == want and out == ""
    assert err.strip().splitlines()[-1] == (
        f"faidecs: {len(events)} events taken, {len(want)} deliveries, 0 dead-lettered, 0 duplicates dropped"
    )

    async def nothing_left() -> None:  # every event was acknowledged: the durable has none to give
        engine = Engine.from_source(PROGRAM, matcher="reference")
        again = NatsSource(server.url("st.in"), engine.types)
        await again.start()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(aiter(again)), 1.5)
        await again.close()

    asyncio.run(nothing_left())


def test_the_python_example_of_docs_connectors_runs(server: NatsServer) -> None:
    text = (ROOT / "docs" / "connectors.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    # The reference matcher: the compiled one would spend its first half minute compiling.
    code = code.replace("127.0.0.1:4222", f"127.0.0.1:{server.port}").replace(
        ".read())", ".read(), matcher='reference')"
    )
    events = stock_events(100, "doc")
    asyncio.run(_publish(server, "quotes", [payload(e) for e in events]))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    want = expected(events)
    assert result.stdout == f"100 {len(want)} 100 events taken, 0 dead-lettered, 0 duplicates dropped\n"
    assert asyncio.run(_read(server, "alerts")) == want


def test_engine_stream_over_a_nats_source_acknowledges_only_what_the_consumer_took(server: NatsServer) -> None:
    """``async for d in engine.stream(source)``: the stream's pull contract and the source's
    acknowledge-on-resume together mean that a consumer stopping mid-stream leaves the event of
    the delivery it holds unacknowledged, and every earlier event acknowledged."""
    events = stock_events(60, "es")
    want = expected(events)
    position = {e["id"]: i for i, e in enumerate(events)}
    stop_after = len(want) // 2

    async def run() -> None:
        engine = Engine.from_source(PROGRAM, matcher="reference")
        url = server.url("es.in", "ack_wait=1")
        source = NatsSource(url, engine.types)
        await source.start()
        await _publish(server, "es.in", [payload(e) for e in events])
        got: list[dict[str, Any]] = []
        async with engine.stream(source) as deliveries:
            async for delivery in deliveries:
                got.append(delivery.to_json())
                if len(got) == stop_after:
                    break
        assert source.client is not None
        await source.client.close()  # as a killed process: the held event is not acknowledged
        assert got == want[:stop_after]
        held = max(position[i] for i in got[-1]["relation"])  # the event that completed it

        fresh = Engine.from_source(PROGRAM, matcher="reference")
        again = NatsSource(url, fresh.types)
        replay: list[dict[str, Any]] = []
        # Bounded: had the stream acknowledged events it had not delivered, fewer would come back
        # and the pump would wait for them for good.
        replayed = pump(fresh, again, emit=lambda d: replay.append(d.to_json()), max_events=len(events) - held)
        await asyncio.wait_for(replayed, 20)
        assert again.counts.taken == len(events) - held
        assert replay == expected(events[held:])

    asyncio.run(asyncio.wait_for(run(), 60))  # a lost event fails the test instead of hanging it
