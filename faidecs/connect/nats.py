"""NATS with JetStream: a source reading a subject through a durable consumer, and a sink.

The source (:class:`NatsSource`) pulls messages from a durable JetStream consumer with explicit
acknowledgements, creating the stream (file storage) and the consumer if they are missing. It
yields each good message as an :class:`~faidecs.matching.events.Event` and acknowledges it only
when asked for the next one (or by :meth:`NatsSource.ack_pending`), that is once the engine has
taken it and its deliveries were handed on: a crash before that replays it. Redeliveries are
dropped by event id (:mod:`faidecs.connect.dedupe`); malformed messages go to the dead-letter
subject (:mod:`faidecs.connect.intake`) and are acknowledged.

The sink (:class:`NatsSink`) publishes each delivery as a JSON line through JetStream, waits for
the stream's acknowledgement, and names each message (``Nats-Msg-Id``) so that a delivery sent
again after a failure is stored once within JetStream's duplicate window (two minutes).
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from faidecs.connect.base import LOG, delivery_bytes, delivery_key, missing_extra, retrying
from faidecs.connect.dedupe import RecentIds
from faidecs.connect.intake import Counts, Intake, dead_letter, reason
from faidecs.connect.urls import BrokerUrl, ConnectError, parse_url, wildcard
from faidecs.errors import EventError
from faidecs.grammar.model import EventType
from faidecs.matching.delivery import Delivery
from faidecs.matching.events import Event
from faidecs.runs.event_lines import MAX_LINE_BYTES

if TYPE_CHECKING:
    from nats.aio.client import Client
    from nats.aio.msg import Msg
    from nats.js.client import JetStreamContext

#: Messages one fetch asks for: a round trip per message would bound the rate by the latency.
FETCH_BATCH = 64
DEFAULT_WINDOW = 1 << 16


def _import() -> Any:
    try:
        import nats
    except ModuleNotFoundError:
        raise missing_extra("nats") from None
    return nats


def _errors() -> tuple[type[BaseException], ...]:
    """What a broker restart raises out of nats-py: its own errors and timeouts."""
    import nats.errors

    return (nats.errors.Error, asyncio.TimeoutError, OSError)


def stream_name(subject: str) -> str:
    """The default stream of a subject: its tokens upper-cased, joined by ``_`` (``quotes.us`` → ``QUOTES_US``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", subject.replace("*", "ANY").replace(">", "ALL")).upper()


async def connect(url: BrokerUrl, name: str) -> Client:
    """A connection to the broker that reconnects forever (a restart is a pause, not an end)."""
    nats = _import()

    async def error_cb(exc: Exception) -> None:
        LOG.debug("%s: %s: %s", url.text, type(exc).__name__, exc)

    try:
        client: Client = await nats.connect(
            servers=[f"nats://{url.address}"],
            name=name,
            connect_timeout=2,
            allow_reconnect=True,
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.1,
            error_cb=error_cb,
        )
    except Exception as exc:  # nats-py raises NoServersError, OSError, timeouts...
        raise ConnectError(f"{url.text}: cannot reach NATS at {url.address} ({type(exc).__name__}: {exc})") from None
    return client


async def ensure_stream(js: JetStreamContext, subject: str, name: str | None) -> str:
    """The stream that holds ``subject``: ``name`` (created if missing), else the one already
    holding it, else a new file-backed one named after the subject."""
    import nats.js.errors
    from nats.js.api import StorageType

    if name is None:
        try:
            found: str = await js.find_stream_name_by_subject(subject)
            return found
        except nats.js.errors.NotFoundError:
            name = stream_name(subject)
    try:
        await js.stream_info(name)
    except nats.js.errors.NotFoundError:
        await js.add_stream(name=name, subjects=[subject], storage=StorageType.FILE)
    return name


class NatsSource:
    """The events of ``url``'s subject (``nats://host:port/subject?durable=..&stream=..&dead=..``),
    validated against ``types``. Iterate it with ``async for``; see the module's docstring."""

    def __init__(self, url: BrokerUrl | str, types: Mapping[str, EventType]):
        self.url = parse_url(url) if isinstance(url, str) else url
        if self.url.scheme != "nats":
            raise ConnectError(f"{self.url.text}: not a nats:// URL")
        _import()
        subject = self.url.name
        self.subject = subject
        self.durable = self.url.option("durable", "faidecs_" + stream_name(subject).lower())
        if not re.fullmatch(r"[A-Za-z0-9_-]+", self.durable):
            raise ConnectError(f"{self.url.text}: durable={self.durable!r}: use letters, digits, _ and -")
        if "dead" not in self.url.options and wildcard(self.url):
            raise ConnectError(f"{self.url.text}: a wildcard subject needs a dead-letter subject: add ?dead=SUBJECT")
        self.dead = self.url.option("dead", subject + ".dead")
        self.ack_wait = self.url.number("ack_wait", 30, low=0.1, high=86400, whole=False)
        max_bytes = int(self.url.number("max_bytes", MAX_LINE_BYTES, low=1, high=1 << 30))
        self.recent = RecentIds(int(self.url.number("window", DEFAULT_WINDOW, low=1, high=1 << 24)))
        self.intake: Intake = Intake(types, max_bytes)
        self.counts = Counts()
        self.client: Client | None = None
        self._js: JetStreamContext | None = None
        self._sub: Any = None
        self._buffer: deque[Msg] = deque()
        self._pending: Msg | None = None

    async def start(self) -> None:
        """Connect, and create the stream, the dead-letter stream and the consumer if missing."""
        if self.client is not None:
            return
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

        self.client = await connect(self.url, f"faidecs source {self.durable}")
        js = self.client.jetstream()
        self._js = js
        stream = await ensure_stream(js, self.subject, self.url.options.get("stream"))
        await ensure_stream(js, self.dead, None)
        config = ConsumerConfig(
            durable_name=self.durable,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=self.ack_wait,
            max_deliver=-1,
        )
        self._sub = await js.pull_subscribe(self.subject, durable=self.durable, stream=stream, config=config)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events()

    async def _events(self) -> AsyncIterator[Event]:
        async for event, msg in self.messages():
            self._pending = msg
            yield event
            # Resumed for the next one: the engine has taken this one.
            await self.ack_pending()

    async def messages(self, *, dedupe: bool = True) -> AsyncIterator[tuple[Event, Msg]]:
        """Each good message's event with the message, for a caller that acknowledges messages
        itself (:meth:`ack`) once it has made their events safe. Malformed messages are handled
        (and acknowledged) here, as by ``async for``; so are redeliveries, unless ``dedupe`` is
        off: a caller that holds taken events a while before they are safe must recognise copies
        itself, since acknowledging a copy acknowledges the message."""
        await self.start()
        while True:
            msg = await self._next()
            event = await self._take(msg, dedupe)
            if event is not None:
                yield event, msg

    async def _take(self, msg: Msg, dedupe: bool = True) -> Event | None:
        """The message's event, or None once it was dropped (a redelivery) or dead-lettered."""
        try:
            event = self.intake.event(msg.data)
        except EventError as err:
            await self._dead_letter(msg, err)
            await self._ack(msg)
            return None
        if dedupe:
            if event.id in self.recent:
                self.counts.duplicates += 1
                await self._ack(msg)
                return None
            self.recent.add(event.id)
        self.counts.taken += 1
        return event

    async def _next(self) -> Msg:
        import nats.errors

        while not self._buffer:
            assert self._sub is not None
            try:
                self._buffer.extend(await self._sub.fetch(FETCH_BATCH, timeout=1))
            except nats.errors.TimeoutError:
                continue  # nothing new
            except _errors() as exc:  # the broker is away: nats-py reconnects meanwhile
                LOG.debug("%s: fetch failed (%s), retrying", self.url.text, exc)
                await asyncio.sleep(0.1)
        return self._buffer.popleft()

    async def _dead_letter(self, msg: Msg, err: EventError) -> None:
        meta = msg.metadata
        where = f"subject {msg.subject}, stream {meta.stream} seq {meta.sequence.stream}"
        data = dead_letter(self.url.text, where, err, msg.data)
        assert self._js is not None
        js = self._js
        await retrying(f"dead letter to {self.dead}", lambda: js.publish(self.dead, data), _errors())
        self.counts.dead_lettered += 1
        LOG.warning("%s: dead letter (%s): %s", self.url.text, where, reason(err))

    async def ack(self, msg: Msg) -> None:
        """Acknowledge ``msg`` (one :meth:`messages` yielded); a failure is logged, not raised:
        JetStream then redelivers it after ``ack_wait`` and the window drops it."""
        await self._ack(msg)

    async def _ack(self, msg: Msg) -> None:
        try:
            await msg.ack()
        except _errors() as exc:
            # Not acknowledged: JetStream redelivers it after ack_wait and the window drops it.
            LOG.debug("%s: ack failed (%s)", self.url.text, exc)

    async def ack_pending(self) -> None:
        """Acknowledge the event yielded last (the engine has taken it)."""
        msg, self._pending = self._pending, None
        if msg is not None:
            await self._ack(msg)

    async def close(self) -> None:
        """Disconnect. The event yielded last is not acknowledged unless :meth:`ack_pending` was
        called; messages fetched but not yielded are handed back for immediate redelivery."""
        client, self.client = self.client, None
        if client is None:
            return
        for msg in self._buffer:
            try:
                await msg.nak()
            except _errors():
                pass  # redelivered after ack_wait instead
        self._buffer.clear()
        await _close(client)


class NatsSink:
    """Deliveries as JSON lines to ``url``'s subject, through JetStream (its stream created if missing)."""

    def __init__(self, url: BrokerUrl | str):
        self.url = parse_url(url) if isinstance(url, str) else url
        if self.url.scheme != "nats":
            raise ConnectError(f"{self.url.text}: not a nats:// URL")
        if wildcard(self.url):
            raise ConnectError(f"{self.url.text}: a sink publishes to one subject, not a wildcard")
        extra = set(self.url.options) - {"stream"}
        if extra:
            raise ConnectError(f"{self.url.text}: a sink takes only the stream option, not {', '.join(sorted(extra))}")
        _import()
        self.client: Client | None = None
        self._js: JetStreamContext | None = None
        self.sent = 0

    async def start(self) -> None:
        if self.client is not None:
            return
        self.client = await connect(self.url, "faidecs sink")
        self._js = self.client.jetstream()
        await ensure_stream(self._js, self.url.name, self.url.options.get("stream"))

    async def send(self, deliveries: Sequence[Delivery]) -> None:
        """Publish each delivery and wait until its stream stored it."""
        await self.start()
        js = self._js
        assert js is not None
        subject = self.url.name
        for delivery in deliveries:
            data = delivery_bytes(delivery)
            headers = {"Nats-Msg-Id": delivery_key(delivery)}

            async def publish(data: bytes = data, headers: dict[str, str] = headers) -> object:
                return await js.publish(subject, data, headers=headers)

            await retrying(f"publish to {subject}", publish, _errors())
            self.sent += 1

    async def close(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            await _close(client)


async def _close(client: Client) -> None:
    """Close once what was sent (acknowledgements above all) reached the server, if it is there."""
    try:
        await client.flush(timeout=2)
    except _errors():
        pass  # unacknowledged then: redelivered after ack_wait
    await client.close()


__all__ = ["FETCH_BATCH", "NatsSink", "NatsSource", "connect", "ensure_stream", "stream_name"]
