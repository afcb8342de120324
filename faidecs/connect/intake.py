"""What a source does with one broker message: an event, a redelivery to drop, or a dead letter.

A message is taken as an event only if it is at most ``max_bytes`` long, UTF-8 JSON in the input
shape of ``docs/dsl.md`` (no duplicate keys, the limits of :mod:`faidecs.runs.event_lines`), of a
declared type, and has an ``id`` (replays are recognised by it). Anything else is *malformed*: it
becomes a dead letter, a JSON object with where it came from, the error, and the original
payload, which the source publishes to its dead-letter subject or topic and then acknowledges.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass

from faidecs.errors import EventError
from faidecs.grammar.model import EventType
from faidecs.matching.events import Event, EventValidator
from faidecs.runs.event_lines import decode, limit_problem, parse

#: Characters of a malformed payload a dead letter keeps (then ``payload_bytes`` says how long it was).
DEAD_PAYLOAD_CHARS = 64 * 1024


@dataclass(slots=True)
class Counts:
    """What a source did: events taken, malformed messages dead-lettered, redeliveries dropped."""

    taken: int = 0
    dead_lettered: int = 0
    duplicates: int = 0

    def line(self) -> str:
        return f"{self.taken} events taken, {self.dead_lettered} dead-lettered, {self.duplicates} duplicates dropped"


class Intake:
    """Turns payloads into events of ``types``, or into the error that makes them dead letters."""

    def __init__(self, types: Mapping[str, EventType], max_bytes: int):
        self.validator = EventValidator(types)
        self.max_bytes = max_bytes

    def event(self, payload: bytes) -> Event:
        """The event ``payload`` holds; raises :class:`EventError` saying what is wrong."""
        if len(payload) > self.max_bytes:
            raise EventError(f"message of {len(payload):,} bytes, longer than the limit of {self.max_bytes:,}")
        text = decode(payload, 1)
        obj = parse(text, 1)
        if type(obj) is dict and "id" not in obj:
            raise EventError("an event from a broker needs an id (redeliveries are recognised by it)")
        try:
            return self.validator.validate(obj)
        except EventError:
            problem = limit_problem(text, 1)
            if problem is not None:
                raise problem from None
            raise


def reason(err: EventError) -> str:
    """The error without the ``line 1`` a one-message 'line' would add."""
    text = str(err)
    return text.removeprefix("line 1, ").removeprefix("line 1: ")


def dead_letter(source: str, where: str, err: EventError, payload: bytes) -> bytes:
    """The dead letter of ``payload``: ``{"source", "where", "error", "payload" | "payload_base64",
    "payload_bytes"}`` as JSON (a payload that is not UTF-8 goes as base64; a long one is cut)."""
    record: dict[str, object] = {"source": source, "where": where, "error": reason(err)}
    cut = payload[:DEAD_PAYLOAD_CHARS]
    try:
        record["payload"] = cut.decode("utf-8")
    except UnicodeDecodeError:
        record["payload_base64"] = base64.b64encode(cut).decode("ascii")
    record["payload_bytes"] = len(payload)
    if len(cut) < len(payload):
        record["payload_cut"] = True
    return json.dumps(record, ensure_ascii=False).encode("utf-8")


__all__ = ["DEAD_PAYLOAD_CHARS", "Counts", "Intake", "dead_letter", "reason"]
