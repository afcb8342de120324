"""Replay a JSON-lines stream of events through an engine (the logic behind ``faidecs run``).

Each non-blank line is one event in the input JSON shape. A bad line (invalid JSON, an event
that does not fit its type, a duplicate id) either stops the replay (``on_error="stop"``, the
default) or is handed to ``reject`` and counted (``on_error="skip"``). Nothing is dropped
silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from faidecs.errors import EventError, FaidecsError
from faidecs.matching.delivery import Delivery
from faidecs.matching.engine import Engine
from faidecs.matching.events import Event
from faidecs.runs.runlog import RunRecorder

OnError = Literal["stop", "skip"]


@dataclass(slots=True)
class ReplaySummary:
    lines: int = 0
    events: int = 0
    deliveries: int = 0
    rejected: int = 0


class _NotJson(FaidecsError):
    pass


def _reject_constant(name: str) -> Any:
    # Python's json module accepts NaN, Infinity and -Infinity; JSON does not.
    raise _NotJson(name)


def parse_line(engine: Engine, text: str, line: int, seen_ids: set[str]) -> Event:
    """Validate one input line into an event; raises :class:`EventError` naming the line."""
    try:
        obj = json.loads(text.rstrip("\r\n"), parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise EventError(f"invalid JSON: {exc.msg} (column {exc.colno})", line=line) from None
    except _NotJson as exc:
        raise EventError(f"invalid JSON: {exc} is not a JSON value", line=line) from None
    event = engine.validate(obj, line=line)
    if event.id in seen_ids:
        raise EventError("duplicate event id: ids must be unique within a stream", line=line, event_id=event.id)
    return event


def replay(
    engine: Engine,
    lines: Iterable[str],
    emit: Callable[[Delivery], None],
    *,
    on_error: OnError = "stop",
    reject: Callable[[int, str, EventError], None] | None = None,
    progress: Callable[[str], None] | None = None,
    recorder: RunRecorder | None = None,
) -> ReplaySummary:
    """Publish every line of ``lines`` (1-based line numbers) and ``emit`` each delivery in
    delivery order. With ``on_error="stop"`` the first bad line raises its :class:`EventError`."""
    if on_error not in ("stop", "skip"):
        raise ValueError(f"on_error must be 'stop' or 'skip', not {on_error!r}")
    summary = ReplaySummary()
    seen_ids: set[str] = set()
    for number, text in enumerate(lines, start=1):
        summary.lines = number
        if progress is not None:
            progress(text)
        if not text.strip():
            continue
        try:
            event = parse_line(engine, text, number, seen_ids)
        except EventError as err:
            if on_error == "stop":
                raise
            summary.rejected += 1
            if reject is not None:
                reject(number, text, err)
            continue
        seen_ids.add(event.id)
        summary.events += 1
        if recorder is not None:
            recorder.publish(event.to_json())
        for delivery in engine.publish(event):
            summary.deliveries += 1
            if recorder is not None:
                recorder.deliver(delivery.subscription, delivery.conjunction, delivery.ids)
            emit(delivery)
    return summary
