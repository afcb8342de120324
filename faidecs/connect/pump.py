"""The loop of ``faidecs run --source``: events from a source through an engine to a sink.

Each event is published to the engine, its deliveries are handed to the sink (or to ``emit``),
and only then is the source asked for the next event, which acknowledges this one: an event is
acknowledged once the engine has taken it and its deliveries are out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from faidecs.connect.base import Sink, Source
from faidecs.connect.urls import ConnectError, parse_url
from faidecs.grammar.model import EventType
from faidecs.matching.delivery import Delivery
from faidecs.matching.engine import Engine


@dataclass(slots=True)
class PumpSummary:
    events: int = 0
    deliveries: int = 0


def open_source(url: str, types: Mapping[str, EventType]) -> Source:
    """The source a ``nats://`` or ``mqtt://`` URL names (a :class:`ConnectError` if the URL is
    wrong or the broker's extra is not installed)."""
    parsed = parse_url(url)
    if parsed.scheme == "nats":
        from faidecs.connect.nats import NatsSource

        return NatsSource(parsed, types)
    from faidecs.connect.mqtt import MqttSource

    return MqttSource(parsed, types)


def open_sink(url: str) -> Sink:
    """The sink a ``nats://`` or ``mqtt://`` URL names."""
    parsed = parse_url(url)
    if parsed.scheme == "nats":
        from faidecs.connect.nats import NatsSink

        return NatsSink(parsed)
    from faidecs.connect.mqtt import MqttSink

    return MqttSink(parsed)


async def pump(
    engine: Engine,
    source: Source,
    *,
    sink: Sink | None = None,
    emit: Callable[[Delivery], None] | None = None,
    max_events: int | None = None,
    stop: asyncio.Event | None = None,
) -> PumpSummary:
    """Run until ``max_events`` events were taken (the last one is then acknowledged) or ``stop``
    is set, then close the source (and sink). The counts of what the source dropped are on the
    source (``source.counts``)."""
    summary = PumpSummary()
    if max_events is not None and max_events < 1:
        raise ConnectError("max_events must be positive")

    async def run() -> None:
        async for event in source:
            deliveries = engine.publish(event)
            summary.events += 1
            summary.deliveries += len(deliveries)
            if emit is not None:
                for delivery in deliveries:
                    emit(delivery)
            if sink is not None and deliveries:
                await sink.send(deliveries)
            if max_events is not None and summary.events >= max_events:
                await source.ack_pending()
                return

    task = asyncio.ensure_future(run())
    try:
        waits: set[asyncio.Future[Any]] = {task}
        stopper = asyncio.ensure_future(stop.wait()) if stop is not None else None
        if stopper is not None:
            waits.add(stopper)
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if stopper is not None:
            stopper.cancel()
        if not task.done():
            # Stopped while waiting for the next event (the source acknowledged the last one
            # before it waited) or while the sink published an event's deliveries (that event
            # stays unacknowledged, so the broker gives it again).
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        else:
            task.result()
    finally:
        if not task.done():  # pump itself was cancelled
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await source.close()
        if sink is not None:
            await sink.close()
    return summary


__all__ = ["PumpSummary", "open_sink", "open_source", "pump"]
