"""The MQTT connector against a real mosquitto with persistence (faidecs.connect.mqtt).

One broker for the module, one topic (and client ids) per test. The deliveries are checked
against the embedded engine's for the same events: nothing lost, nothing duplicated.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

mqtt = pytest.importorskip("paho.mqtt.client")  # the `mqtt` extra; CI installs it

from connector_helpers import PROGRAM, ROOT, expected, payload, stock_events
from paho.mqtt.enums import CallbackAPIVersion

from faidecs import Engine
from faidecs.connect.mqtt import MqttSink, MqttSource
from faidecs.connect.pump import pump
from faidecs.connect.servers import MosquittoServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MosquittoServer]:
    with MosquittoServer(tmp_path_factory.mktemp("mosquitto")) as srv:
        yield srv


class Reader:
    """A persistent-session subscriber that collects a topic's messages (from before a restart too)."""

    def __init__(self, srv: MosquittoServer, topic: str):
        self.messages: list[dict[str, Any]] = []
        self.client = mqtt.Client(
            callback_api_version=CallbackAPIVersion.VERSION2, client_id=f"reader-{topic}", clean_session=False
        )
        self.client.reconnect_delay_set(1, 1)
        subscribed = threading.Event()
        self.client.on_connect = lambda c, u, f, r, p: c.subscribe(topic, qos=1)
        self.client.on_subscribe = lambda *args: subscribed.set()
        self.client.on_message = lambda c, u, m: self.messages.append(json.loads(m.payload))
        self.client.connect("127.0.0.1", srv.port)
        self.client.loop_start()
        assert subscribed.wait(10)

    def wait_for(self, count: int) -> list[dict[str, Any]]:
        for _ in range(400):
            if len(self.messages) >= count:
                break
            threading.Event().wait(0.05)
        self.client.disconnect()
        self.client.loop_stop()
        return self.messages


def publish(srv: MosquittoServer, topic: str, payloads: list[bytes]) -> None:
    client = mqtt.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id=f"writer-{topic}")
    client.reconnect_delay_set(1, 1)
    client.connect("127.0.0.1", srv.port)
    client.loop_start()
    for data in payloads:
        client.publish(topic, data, qos=1).wait_for_publish(30)
    client.disconnect()
    client.loop_stop()


def test_round_trip_with_dead_letters_through_the_engine_to_a_sink(server: MosquittoServer) -> None:
    events = stock_events(60, "m1")
    bad = [b"not json", b'{"id": "x", "type": "Nope", "attrs": {}}', b"\xff"]
    mixed = [payload(e) for e in events[:20]] + bad + [payload(e) for e in events[20:]]
    out = Reader(server, "m1/out")
    dead = Reader(server, "m1/in/dead")

    async def run() -> None:
        engine = Engine.from_source(PROGRAM, matcher="reference")
        source = MqttSource(server.url("m1/in"), engine.types)
        await source.start()  # the persistent session and its subscription from now on
        await asyncio.to_thread(publish, server, "m1/in", mixed)
        summary = await pump(engine, source, sink=MqttSink(server.url("m1/out")), max_events=len(events))
        assert summary.events == len(events)
        assert (source.counts.taken, source.counts.dead_lettered, source.counts.duplicates) == (len(events), 3, 0)

    asyncio.run(asyncio.wait_for(run(), 60))  # a lost event fails the test instead of hanging it
    want = expected(events)
    assert out.wait_for(len(want)) == want
    letters = dead.wait_for(3)
    assert [w in d["error"] for d, w in zip(letters, ("invalid JSON", "unknown event type 'Nope'", "not UTF-8"))] == [
        True
    ] * 3
    assert [d.get("payload") for d in letters[:2]] == [bad[0].decode(), bad[1].decode()]
    assert letters[2]["payload_base64"] == "/w==" and all(d["where"].startswith("topic m1/in, ") for d in letters)


def test_a_broker_restart_mid_stream_loses_and_duplicates_nothing(server: MosquittoServer) -> None:
    events = stock_events(200, "m2")

    async def run() -> list[dict[str, Any]]:
        engine = Engine.from_source(PROGRAM, matcher="reference")
        source = MqttSource(server.url("m2/in"), engine.types)
        await source.start()
        await asyncio.to_thread(publish, server, "m2/in", [payload(e) for e in events[:100]])
        got: list[dict[str, Any]] = []
        consumer = asyncio.ensure_future(
            pump(engine, source, emit=lambda d: got.append(d.to_json()), max_events=len(events))
        )
        while source.counts.taken < 50:
            await asyncio.sleep(0.001)
        await asyncio.to_thread(server.restart)  # sessions and queued messages survive it
        await asyncio.to_thread(publish, server, "m2/in", [payload(e) for e in events[100:]])
        await asyncio.wait_for(consumer, 60)
        assert source.counts.taken == len(events)
        return got

    assert asyncio.run(asyncio.wait_for(run(), 60)) == expected(events)


def test_a_consumer_killed_before_it_acknowledged_gets_the_event_again(server: MosquittoServer) -> None:
    events = stock_events(40, "m3")

    async def run() -> None:
        engine = Engine.from_source(PROGRAM, matcher="reference")
        first = MqttSource(server.url("m3/in"), engine.types)
        await first.start()
        await asyncio.to_thread(publish, server, "m3/in", [payload(e) for e in events])
        taken = aiter(first)
        got = [await anext(taken) for _ in range(20)]  # the 20th is taken, not acknowledged
        delivered = [d.to_json() for e in got for d in engine.publish(e)]
        await first.close()  # the connection goes as a killed process's would: no PUBACK for the 20th

        # Same process, same engine: the broker resends the 20th on the session, the window drops it.
        same = MqttSource(server.url("m3/in"), engine.types)
        same.recent = first.recent
        await pump(engine, same, emit=lambda d: delivered.append(d.to_json()), max_events=20)
        assert (same.counts.duplicates, same.counts.taken) == (1, 20)
        assert delivered == expected(events)

    asyncio.run(asyncio.wait_for(run(), 60))  # a lost event fails the test instead of hanging it


def test_faidecs_run_reads_a_topic_and_publishes_to_a_topic(server: MosquittoServer) -> None:
    events = stock_events(25, "m4")
    out = Reader(server, "m4/out")

    async def subscribe_first() -> None:  # the source's session exists before anything is published
        source = MqttSource(server.url("m4/in"), Engine.from_source(PROGRAM, matcher="reference").types)
        await source.start()
        await source.close()

    asyncio.run(subscribe_first())
    publish(server, "m4/in", [payload(e) for e in events])
    result = subprocess.run(
        [sys.executable, "-m", "faidecs.cli.main", "run", "--program", str(ROOT / "examples" / "stock.fdc"),
         "--source", server.url("m4/in"), "--sink", server.url("m4/out"), "--max-events", str(len(events)),
         "--matcher", "reference"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    want = expected(events)
    assert result.stderr.strip().splitlines()[-1] == (
        f"faidecs: {len(events)} events taken, {len(want)} deliveries, 0 dead-lettered, 0 duplicates dropped"
    )
    assert out.wait_for(len(want)) == want
