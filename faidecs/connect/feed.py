"""A NATS JetStream source for a caller without asyncio: an overlay publisher's loop.

:class:`NatsFeed` reads the source on a thread of its own (with its own asyncio loop) into a
bounded queue. The caller polls :class:`Taken` events, each with its JetStream stream sequence,
and hands back the messages to acknowledge once their events are safe (a publisher: once their
publications are committed in its outbox). The feed leaves redeliveries to the caller: it
knows, by the stream sequence, what it has already made safe, across its own restarts too.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from faidecs.connect.base import LOG
from faidecs.connect.nats import NatsSource
from faidecs.connect.urls import BrokerUrl, ConnectError
from faidecs.grammar.model import EventType
from faidecs.matching.events import Event


@dataclass(frozen=True, slots=True)
class Taken:
    """One event read, its stream sequence, and the message to acknowledge."""

    event: Event
    seq: int
    message: Any


class NatsFeed:
    """``url``'s events (``nats://…`` only), read ahead on a thread into a queue of ``capacity``."""

    def __init__(self, url: BrokerUrl | str, types: Mapping[str, EventType], *, capacity: int = 256):
        self.source = NatsSource(url, types)
        self.url = self.source.url
        self.taken: queue.Queue[Taken] = queue.Queue(capacity)
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="faidecs-nats-feed", daemon=True)

    def start(self, timeout: float = 15.0) -> None:
        """Connect (creating the stream and the consumer if missing) and start reading; a
        :class:`ConnectError` if the broker cannot be reached."""
        self._thread.start()
        if not self._ready.wait(timeout):
            raise ConnectError(f"{self.url.text}: NATS did not answer within {timeout:g} s")
        if self.error is not None:
            raise self.error if isinstance(self.error, ConnectError) else ConnectError(f"{self.url.text}: {self.error}")

    def poll(self) -> Taken | None:
        """The next event read, or None if there is none now."""
        try:
            return self.taken.get_nowait()
        except queue.Empty:
            return None

    def ack(self, messages: list[Any]) -> None:
        """Acknowledge ``messages`` (from :class:`Taken`), from any thread."""
        loop = self._loop
        if messages and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._ack_all(messages)))

    @property
    def counts(self) -> Any:
        return self.source.counts

    def close(self) -> None:
        """Stop reading and disconnect (what was read and not acknowledged comes again)."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        if self._thread.is_alive():
            self._thread.join(10)

    # --- the feed's thread --------------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # noqa: BLE001 (reported to the caller through error)
            self.error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            await self.source.start()
        except BaseException as exc:
            self.error = exc
            self._ready.set()
            return
        self._ready.set()
        reader = asyncio.ensure_future(self._read())
        stopper = asyncio.ensure_future(self._stop.wait())
        await asyncio.wait({reader, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if reader.done() and reader.exception() is not None:
            self.error = reader.exception()
            LOG.error("%s: the feed stopped: %s", self.url.text, self.error)
        reader.cancel()
        stopper.cancel()
        await asyncio.gather(reader, stopper, return_exceptions=True)
        await asyncio.sleep(0.05)  # acknowledgements scheduled just before the stop
        # Read but never polled: handed back for immediate redelivery (else after ack_wait).
        while (left := self.poll()) is not None:
            try:
                await left.message.nak()
            except Exception as exc:  # noqa: BLE001 (redelivered after ack_wait instead)
                LOG.debug("%s: nak failed (%s)", self.url.text, exc)
        await self.source.close()

    async def _read(self) -> None:
        async for event, message in self.source.messages(dedupe=False):
            item = Taken(event, message.metadata.sequence.stream, message)
            while True:
                try:
                    self.taken.put_nowait(item)
                    break
                except queue.Full:  # the caller is behind: hold the broker's messages back
                    await asyncio.sleep(0.005)

    async def _ack_all(self, messages: list[Any]) -> None:
        for message in messages:
            await self.source.ack(message)


__all__ = ["NatsFeed", "Taken"]
