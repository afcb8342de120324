"""Replay a JSON-lines stream of events through an engine (the logic behind ``faidecs run``).

Each non-blank line is one event in the input JSON shape. A bad line (not UTF-8, too long,
invalid JSON, an event that does not fit its type, a duplicate id; see
:mod:`faidecs.runs.event_lines` for the limits) either stops the replay (``on_error="stop"``, the
default) or is handed to ``reject`` and counted (``on_error="skip"``). Nothing is dropped
silently, and no line raises anything but :class:`EventError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from faidecs.errors import EventError
from faidecs.matching.delivery import Delivery
from faidecs.matching.engine import Engine
from faidecs.matching.events import Event
from faidecs.runs.event_lines import MAX_LINE_BYTES, LongLine, decode, limit_problem, parse, too_long
from faidecs.runs.runlog import RunRecorder

OnError = Literal["stop", "skip"]


class Validates(Protocol):
    """What validates an input line's object: an :class:`Engine`, or anything with its method."""

    def validate(self, obj: Any, *, line: int | None = None) -> Event: ...


@dataclass(slots=True)
class ReplaySummary:
    lines: int = 0
    events: int = 0
    deliveries: int = 0
    rejected: int = 0


def parse_line(engine: Validates, text: str | bytes, line: int, seen_ids: set[str]) -> Event:
    """Validate one input line (text, or bytes to decode as UTF-8) into an event; raises
    :class:`EventError` naming the line."""
    if isinstance(text, bytes):
        if len(text) > MAX_LINE_BYTES and len(text.rstrip(b"\r\n")) > MAX_LINE_BYTES:
            raise too_long(len(text.rstrip(b"\r\n")), line)
        text = decode(text, line)
    elif len(text) * 4 > MAX_LINE_BYTES:  # (a character takes at most 4 bytes)
        size = len(text.rstrip("\r\n").encode("utf-8", "surrogatepass"))
        if size > MAX_LINE_BYTES:
            raise too_long(size, line)
    obj = parse(text, line)
    try:
        event = engine.validate(obj, line=line)
    except EventError:
        # A line past the digit or nesting limit that parsed (the limits are below Python's)
        # fails validation: name the limit, the same error as where parsing failed.
        problem = limit_problem(text, line)
        if problem is not None:
            raise problem from None
        raise
    check_unique(event, line, seen_ids)
    return event


def check_unique(event: Event, line: int, seen_ids: set[str]) -> None:
    """Raise :class:`EventError` if ``event``'s id is among ``seen_ids`` (the stream's so far)."""
    if event.id in seen_ids:
        raise EventError("duplicate event id: ids must be unique within a stream", line=line, event_id=event.id)


def validated_events(
    validator: Validates,
    lines: Iterable[str | bytes | LongLine],
    summary: ReplaySummary,
    *,
    on_error: OnError = "stop",
    reject: Callable[[int, str | bytes | LongLine, EventError], None] | None = None,
    progress: Callable[[str | bytes | LongLine], None] | None = None,
) -> Iterator[Event]:
    """The valid events of ``lines`` (1-based line numbers), counting lines, events and rejected
    lines in ``summary``: the reading half of :func:`replay`, which ``faidecs compare`` also uses
    to validate a stream once for every variant."""
    if on_error not in ("stop", "skip"):
        raise ValueError(f"on_error must be 'stop' or 'skip', not {on_error!r}")
    seen_ids: set[str] = set()
    for number, text in enumerate(lines, start=1):
        summary.lines = number
        if progress is not None:
            progress(text)
        try:
            if isinstance(text, LongLine):
                raise too_long(text.size, number)
            if not text.strip():
                continue
            event = parse_line(validator, text, number, seen_ids)
        except EventError as err:
            if on_error == "stop":
                raise
            summary.rejected += 1
            if reject is not None:
                reject(number, text, err)
            continue
        seen_ids.add(event.id)
        summary.events += 1
        yield event


def replay(
    engine: Engine,
    lines: Iterable[str | bytes | LongLine],
    emit: Callable[[Delivery], None],
    *,
    on_error: OnError = "stop",
    reject: Callable[[int, str | bytes | LongLine, EventError], None] | None = None,
    progress: Callable[[str | bytes | LongLine], None] | None = None,
    recorder: RunRecorder | None = None,
) -> ReplaySummary:
    """Publish every line of ``lines`` (1-based line numbers) and ``emit`` each delivery in
    delivery order. Lines are text, or bytes as :func:`~faidecs.runs.event_lines.read_lines`
    reads them from a file. With ``on_error="stop"`` the first bad line raises its
    :class:`EventError`; with ``"skip"`` it goes to ``reject`` (with the line as given)."""
    summary = ReplaySummary()
    for event in validated_events(engine, lines, summary, on_error=on_error, reject=reject, progress=progress):
        if recorder is not None:
            recorder.publish(event.to_json())
        for delivery in engine.publish(event):
            summary.deliveries += 1
            if recorder is not None:
                recorder.deliver(delivery.subscription, delivery.conjunction, delivery.ids)
            emit(delivery)
    return summary
