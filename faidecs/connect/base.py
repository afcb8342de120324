"""What the NATS and MQTT connectors share: the source and sink protocols, the extra check,
and the retry of an operation across a broker restart."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from faidecs.connect.urls import ConnectError
from faidecs.matching.delivery import Delivery
from faidecs.matching.events import Event

LOG = logging.getLogger("faidecs.connect")

T = TypeVar("T")


class Source(Protocol):
    """An async iterable of events that acknowledges each one when asked for the next (or by
    :meth:`ack_pending`), so that the engine has taken it first."""

    def __aiter__(self) -> AsyncIterator[Event]: ...

    async def ack_pending(self) -> None: ...

    async def close(self) -> None: ...


class Sink(Protocol):
    """Deliveries out to a broker; :meth:`send` returns once the broker has them."""

    async def send(self, deliveries: Sequence[Delivery]) -> None: ...

    async def close(self) -> None: ...


def missing_extra(extra: str) -> ConnectError:
    return ConnectError(f"install the {extra} extra: pip install 'faidecs[{extra}]'")


def delivery_bytes(delivery: Delivery) -> bytes:
    """One delivery as the JSON line a sink publishes (``Delivery.to_json()``, no newline)."""
    return json.dumps(delivery.to_json(), ensure_ascii=False).encode("utf-8")


def delivery_key(delivery: Delivery) -> str:
    """A name of the delivery that a republished copy shares (JetStream's ``Nats-Msg-Id``)."""
    text = json.dumps([delivery.subscription, delivery.conjunction, delivery.ids], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


async def retrying(what: str, op: Callable[[], Awaitable[T]], errors: tuple[type[BaseException], ...]) -> T:
    """``op()`` until it succeeds: a broker restart makes an operation fail for a while, and
    giving up would lose the message. Logged once per failure streak; cancel to stop."""
    delay = 0.05
    failed = 0
    while True:
        try:
            return await op()
        except errors as exc:
            failed += 1
            if failed == 1 or failed % 50 == 0:
                LOG.warning("%s failed (%s: %s), retrying", what, type(exc).__name__, exc)
            await asyncio.sleep(delay)
            delay = min(1.0, delay * 2)


__all__ = ["LOG", "Sink", "Source", "delivery_bytes", "delivery_key", "missing_extra", "retrying"]
