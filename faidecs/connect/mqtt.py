"""MQTT (paho-mqtt 2.x, MQTT 3.1.1): a source reading a topic in a persistent session, and a sink.

The source (:class:`MqttSource`) subscribes at QoS 1 (or 2) with a fixed client id and
``clean_session=False``, so the broker keeps the subscription and queues messages while the
source is away, and with manual acknowledgements: a message is acknowledged (PUBACK) only when
the source is asked for the next event (or by :meth:`MqttSource.ack_pending`), once the engine
took it. A message not acknowledged when the connection drops is sent again by the broker when
the session resumes; the window of recent ids drops the copies the engine already took.
Malformed messages go to the dead-letter topic and are acknowledged.

The sink (:class:`MqttSink`) publishes each delivery as a JSON line at QoS 1 and waits for the
broker's PUBACK. A delivery sent again after a reconnect may reach a subscriber twice (MQTT
QoS 1 is at least once); its content names it (subscription, conjunction, ids).

paho runs its network loop in a thread of its own; messages and acknowledgements cross into the
asyncio loop through ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from faidecs.connect.base import LOG, delivery_bytes, missing_extra
from faidecs.connect.dedupe import RecentIds
from faidecs.connect.intake import Counts, Intake, dead_letter, reason
from faidecs.connect.urls import BrokerUrl, ConnectError, parse_url, wildcard
from faidecs.errors import EventError
from faidecs.grammar.model import EventType
from faidecs.matching.delivery import Delivery
from faidecs.matching.events import Event
from faidecs.runs.event_lines import MAX_LINE_BYTES

if TYPE_CHECKING:
    from paho.mqtt.client import Client, MQTTMessage

DEFAULT_WINDOW = 1 << 16


def _import() -> Any:
    try:
        import paho.mqtt.client as mqtt
    except ModuleNotFoundError:
        raise missing_extra("mqtt") from None
    return mqtt


def _client_id(prefix: str, topic: str) -> str:
    return prefix + re.sub(r"[^A-Za-z0-9_-]", "_", topic)[:40]


class _Connection:
    """A paho client on its own network thread, reconnecting after a broker restart; its
    callbacks hand over to the asyncio loop that :meth:`open` ran in."""

    def __init__(self, url: BrokerUrl, client_id: str, *, persistent: bool, topic: str | None, qos: int):
        mqtt = _import()
        from paho.mqtt.enums import CallbackAPIVersion

        self.url = url
        self.topic = topic
        self.qos = qos
        self.client: Client = mqtt.Client(
            callback_api_version=CallbackAPIVersion.VERSION2,
            client_id=client_id,
            clean_session=not persistent,
            protocol=mqtt.MQTTv311,
            manual_ack=True,
        )
        self.client.reconnect_delay_set(min_delay=1, max_delay=2)
        # Unacknowledged QoS 1 messages in flight: one per event is enough, and more would be
        # redelivered together after a drop.
        self.client.max_inflight_messages_set(64)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.messages: asyncio.Queue[MQTTMessage] = asyncio.Queue()
        self.connected: asyncio.Event | None = None
        self._published: dict[int, asyncio.Future[None]] = {}
        self._unsubscribed: dict[int, asyncio.Future[None]] = {}
        self._done_early: set[int] = set()
        self._lock = threading.RLock()
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_message = self._on_message
        self.client.on_publish = self._on_publish
        self.client.on_unsubscribe = self._on_unsubscribe

    async def open(self, timeout: float = 5.0) -> None:
        self.loop = asyncio.get_running_loop()
        self.connected = asyncio.Event()
        try:
            self.client.connect(self.url.host, self.url.port, keepalive=10)
        except OSError as exc:
            raise ConnectError(f"{self.url.text}: cannot reach MQTT at {self.url.address} ({exc})") from None
        self.client.loop_start()
        try:
            await asyncio.wait_for(self.connected.wait(), timeout)
        except TimeoutError:
            self.client.loop_stop()
            raise ConnectError(f"{self.url.text}: MQTT at {self.url.address} did not accept the connection") from None

    def _call(self, fn: Any, *args: Any) -> None:
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(fn, *args)

    # paho's callbacks, on its network thread
    def _on_connect(self, client: Client, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        if reason.is_failure:
            LOG.warning("%s: connection refused: %s", self.url.text, reason)
            return
        if self.topic is not None and not flags.session_present:
            client.subscribe(self.topic, qos=self.qos)
        assert self.connected is not None
        self._call(self.connected.set)

    def _on_disconnect(self, client: Client, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        LOG.debug("%s: disconnected (%s)", self.url.text, reason)
        if self.connected is not None:
            self._call(self.connected.clear)

    def _on_message(self, client: Client, userdata: Any, message: MQTTMessage) -> None:
        self._call(self.messages.put_nowait, message)

    def _on_publish(self, client: Client, userdata: Any, mid: int, reason: Any, properties: Any) -> None:
        with self._lock:
            future = self._published.pop(mid, None)
            if future is None:
                self._done_early.add(mid)
                return
        self._call(_settle, future)

    async def publish(self, topic: str, data: bytes, qos: int) -> None:
        """Publish and wait for the broker's acknowledgement (paho resends it after a reconnect)."""
        assert self.loop is not None
        future: asyncio.Future[None] = self.loop.create_future()
        with self._lock:
            info = self.client.publish(topic, data, qos=qos)
            if info.mid in self._done_early:
                self._done_early.discard(info.mid)
                future.set_result(None)
            else:
                self._published[info.mid] = future
        await future

    async def _sync(self, timeout: float = 2.0) -> None:
        """A round trip (UNSUBSCRIBE of a filter never subscribed, answered by UNSUBACK): the
        broker handles a client's packets in order, so it has processed every PUBACK sent
        before. Closing without it loses them when unread messages make the close a reset,
        and the broker then sends those messages again."""
        assert self.loop is not None
        future: asyncio.Future[None] = self.loop.create_future()
        with self._lock:
            _, mid = self.client.unsubscribe("faidecs-sync/none")
            if mid is not None:
                self._unsubscribed[mid] = future
        try:
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            LOG.debug("%s: no UNSUBACK before closing", self.url.text)

    def _on_unsubscribe(self, client: Client, userdata: Any, mid: int, reasons: Any, properties: Any) -> None:
        with self._lock:
            future = self._unsubscribed.pop(mid, None)
        if future is not None:
            self._call(_settle, future)

    def ack(self, message: MQTTMessage) -> None:
        self.client.ack(message.mid, message.qos)

    async def close(self) -> None:
        """Disconnect once the broker has processed what was sent (acknowledgements above all)."""
        if self.connected is not None and self.connected.is_set():
            await self._sync()
        self.client.disconnect()
        if self.connected is not None:
            for _ in range(40):
                if not self.connected.is_set():
                    break
                await asyncio.sleep(0.05)
        await asyncio.to_thread(self.client.loop_stop)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class MqttSource:
    """The events of ``url``'s topic (``mqtt://host:port/topic?qos=1&client_id=..&dead=..``),
    validated against ``types``. Iterate it with ``async for``; see the module's docstring."""

    def __init__(self, url: BrokerUrl | str, types: Mapping[str, EventType]):
        self.url = parse_url(url) if isinstance(url, str) else url
        if self.url.scheme != "mqtt":
            raise ConnectError(f"{self.url.text}: not an mqtt:// URL")
        _import()
        if "dead" not in self.url.options and wildcard(self.url):
            raise ConnectError(f"{self.url.text}: a wildcard topic needs a dead-letter topic: add ?dead=TOPIC")
        self.topic = self.url.name
        self.dead = self.url.option("dead", self.topic + "/dead")
        self.qos = int(self.url.number("qos", 1, low=1, high=2))
        self.client_id = self.url.option("client_id", _client_id("faidecs-source-", self.topic))
        max_bytes = int(self.url.number("max_bytes", MAX_LINE_BYTES, low=1, high=1 << 30))
        self.recent = RecentIds(int(self.url.number("window", DEFAULT_WINDOW, low=1, high=1 << 24)))
        self.intake = Intake(types, max_bytes)
        self.counts = Counts()
        self._conn: _Connection | None = None
        self._pending: MQTTMessage | None = None

    async def start(self) -> None:
        """Connect and subscribe (the broker keeps the session and the subscription from now on)."""
        if self._conn is None:
            conn = _Connection(self.url, self.client_id, persistent=True, topic=self.topic, qos=self.qos)
            await conn.open()
            self._conn = conn

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events()

    async def _events(self) -> AsyncIterator[Event]:
        await self.start()
        conn = self._conn
        assert conn is not None
        while True:
            message = await conn.messages.get()
            payload = bytes(message.payload)
            try:
                event = self.intake.event(payload)
            except EventError as err:
                where = f"topic {message.topic}, message id {message.mid}" + (" (a redelivery)" if message.dup else "")
                data = dead_letter(self.url.text, where, err, payload)
                await conn.publish(self.dead, data, 1)
                self.counts.dead_lettered += 1
                LOG.warning("%s: dead letter (%s): %s", self.url.text, where, reason(err))
                conn.ack(message)
                continue
            if event.id in self.recent:
                self.counts.duplicates += 1
                conn.ack(message)
                continue
            self.recent.add(event.id)
            self.counts.taken += 1
            self._pending = message
            yield event
            await self.ack_pending()

    async def ack_pending(self) -> None:
        """Acknowledge the event yielded last (the engine has taken it)."""
        message, self._pending = self._pending, None
        if message is not None and self._conn is not None:
            self._conn.ack(message)

    async def close(self) -> None:
        """Disconnect; the session stays with the broker, and what was not acknowledged comes again."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()


class MqttSink:
    """Deliveries as JSON lines to ``url``'s topic at QoS 1 (or ``?qos=2``)."""

    def __init__(self, url: BrokerUrl | str):
        self.url = parse_url(url) if isinstance(url, str) else url
        if self.url.scheme != "mqtt":
            raise ConnectError(f"{self.url.text}: not an mqtt:// URL")
        if wildcard(self.url):
            raise ConnectError(f"{self.url.text}: a sink publishes to one topic, not a filter")
        extra = set(self.url.options) - {"qos", "client_id"}
        if extra:
            raise ConnectError(f"{self.url.text}: a sink takes only qos and client_id, not {', '.join(sorted(extra))}")
        _import()
        self.qos = int(self.url.number("qos", 1, low=1, high=2))
        self.client_id = self.url.option("client_id", _client_id("faidecs-sink-", self.url.name))
        self._conn: _Connection | None = None
        self.sent = 0

    async def send(self, deliveries: Sequence[Delivery]) -> None:
        if self._conn is None:
            conn = _Connection(self.url, self.client_id, persistent=True, topic=None, qos=self.qos)
            await conn.open()
            self._conn = conn
        for delivery in deliveries:
            await self._conn.publish(self.url.name, delivery_bytes(delivery), self.qos)
            self.sent += 1

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()


__all__ = ["MqttSink", "MqttSource"]
