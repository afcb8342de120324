"""The events of a comparison: read and validated once, for every variant."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faidecs.errors import EventError, FaidecsError
from faidecs.grammar.model import EventType
from faidecs.matching.events import Event, EventValidator
from faidecs.runs.event_lines import LongLine, read_lines
from faidecs.runs.replay import OnError, ReplaySummary, check_unique, validated_events

Reject = Callable[[int, "str | bytes | LongLine", EventError], None]


class _Validator:
    """Validates as :meth:`Engine.validate` does (an event without an id is named by its line),
    without building an engine."""

    def __init__(self, types: Mapping[str, EventType]):
        self._validator = EventValidator(types)

    def validate(self, obj: Any, *, line: int | None = None) -> Event:
        return self._validator.validate(obj, default_id=None if line is None else str(line), line=line)


@dataclass(frozen=True, slots=True)
class Stream:
    events: list[Event]
    rejected: int
    seconds: float
    source: str


def read_stream(
    types: Mapping[str, EventType],
    events: str | Path | Iterable[Mapping[str, Any] | Event],
    *,
    on_error: OnError = "stop",
    reject: Reject | None = None,
) -> Stream:
    """Every event of ``events``: a JSON-lines file (``str`` or :class:`Path`; lines are numbered
    from 1, as ``faidecs run`` numbers them), or an iterable of input mappings or validated
    events (numbered from 1 in the same way). A bad event raises :class:`EventError` naming its
    line (``on_error="stop"``) or goes to ``reject`` (``"skip"``)."""
    start = time.perf_counter()
    validator = _Validator(types)
    summary = ReplaySummary()
    if isinstance(events, (str, Path)):
        source = str(events)
        try:
            f = open(events, "rb")
        except OSError as exc:
            raise FaidecsError(f"cannot read {source}: {exc.strerror}") from None
        with f:
            out = list(validated_events(validator, read_lines(f), summary, on_error=on_error, reject=reject))
    else:
        source = "<events>"
        out = []
        seen: set[str] = set()
        for number, item in enumerate(events, start=1):
            try:
                event = item if isinstance(item, Event) else validator.validate(item, line=number)
                if event.type not in types or types[event.type] != event.event_type:
                    raise EventError("event of a type this program does not declare", line=number, event_id=event.id)
                check_unique(event, number, seen)
            except EventError as err:
                if on_error == "stop":
                    raise
                summary.rejected += 1
                if reject is not None:
                    reject(number, repr(item), err)
                continue
            seen.add(event.id)
            out.append(event)
    return Stream(out, summary.rejected, time.perf_counter() - start, source)


__all__ = ["Reject", "Stream", "read_stream"]
