"""Reading event lines: the text layer in front of event validation, with explicit limits.

A JSON-lines stream is split on LF only (a CR inside a line is JSON whitespace, or an error
inside a string, never a line break), each line is decoded as UTF-8 on its own (one bad byte
rejects its line, not the stream), and parsed as JSON without duplicate keys. Every failure is an
:class:`EventError` naming the line and, where the text is at fault, the column; nothing in a
line can raise anything else.

Limits (documented in ``docs/dsl.md``, "Events"):

- a line holds at most :data:`MAX_LINE_BYTES` bytes (the overlay's default ``max_event_bytes``);
  a longer line is skipped unread past that many bytes, so strings are bounded by it too;
- an integer has at most :data:`MAX_INT_DIGITS` digits (no valid event needs 400: an ``int`` is
  64-bit and a ``float`` ends near 1.8e308); below Python's own limit of 4,300, so the answer
  does not depend on ``sys.set_int_max_str_digits``;
- JSON nests at most :data:`MAX_NESTING` deep (a valid event nests 2 deep);
- attributes: exactly those the type declares.

The digit and nesting limits cost nothing on a valid line: a valid event holds neither, so they
are looked for only once the line has failed (parsing or validation), to report them in place of
whatever error they caused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from faidecs.brief import brief
from faidecs.errors import EventError, FaidecsError

MAX_LINE_BYTES = 1 << 20
MAX_INT_DIGITS = 1000
MAX_NESTING = 64

_SKIP_CHUNK = 1 << 16


@dataclass(frozen=True, slots=True)
class LongLine:
    """A line longer than the limit: its first bytes and its full length, the rest unread."""

    head: bytes | str
    size: int


def read_lines(stream: IO[bytes] | IO[str]) -> Iterator[bytes | str | LongLine]:
    """The lines of ``stream`` (a binary stream: split on LF only), each with its LF; a line
    longer than :data:`MAX_LINE_BYTES` (without its LF) comes as a :class:`LongLine`, and its
    rest is skipped a chunk at a time rather than read into memory."""
    max_bytes = MAX_LINE_BYTES
    while True:
        raw: bytes | str = stream.readline(max_bytes + 1)
        if not raw:
            return
        if len(raw) <= max_bytes or raw[-1:] in (b"\n", "\n"):
            yield raw
            continue
        size = len(raw)
        while True:  # a line over the limit: count the rest without keeping it
            more: bytes | str = stream.readline(_SKIP_CHUNK)
            size += len(more)
            if not more or more[-1:] in (b"\n", "\n"):
                if more:
                    size -= 1
                break
        yield LongLine(raw[:200], size)


def too_long(size: int, number: int) -> EventError:
    return EventError(f"line of {size:,} bytes, longer than the limit of {MAX_LINE_BYTES:,}", line=number)


def decode(raw: bytes, number: int) -> str:
    """One line as text; an invalid UTF-8 byte is an error at its column."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        column = len(raw[: exc.start].decode("utf-8", "replace")) + 1
        byte = raw[exc.start : exc.start + 1].hex()
        raise EventError(f"not UTF-8 text: {exc.reason} (byte 0x{byte})", line=number, column=column) from None


def shown_input(raw: bytes | str | LongLine) -> str:
    """A rejected line as text for the rejects file: bad bytes as ``\\xNN`` escapes."""
    if isinstance(raw, LongLine):
        raw = raw.head
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "backslashreplace")
    return raw.rstrip("\r\n")


class _Constant(FaidecsError):
    pass


def _reject_constant(name: str) -> Any:
    # Python's json module accepts NaN, Infinity and -Infinity; JSON does not.
    raise _Constant(name)


class _DuplicateKey(FaidecsError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


# Built once: json.loads with keyword arguments builds a decoder per call, which costs more
# than parsing a line.
_FAST = json.JSONDecoder(parse_constant=_reject_constant)
_STRICT = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_pairs)


def _pairs(obj: Any) -> int:
    """Key/value pairs in an event as parsed (top level and attrs), for the duplicate test."""
    if type(obj) is not dict:
        return -1
    attrs = obj.get("attrs")
    return len(obj) + (len(attrs) if type(attrs) is dict else 0)


def parse(text: str, number: int) -> Any:
    """One line's JSON value; raises :class:`EventError` at the line (and column)."""
    text = text.rstrip("\r\n")
    try:
        try:
            obj, end = _FAST.raw_decode(text)
        except json.JSONDecodeError:
            end = -1  # the strict decoder says what is wrong (or takes leading whitespace)
        # Each pair has one colon outside strings: as many colons as pairs parsed means no key
        # was given twice. Otherwise (a colon in a string, a nested object, a duplicate) parse
        # again, counting for real; rare, and exact either way.
        if end == len(text) and text.count(":") == _pairs(obj):
            return obj
        return _STRICT.decode(text)
    except json.JSONDecodeError as exc:
        raise EventError(f"invalid JSON: {exc.msg}", line=number, column=exc.colno) from None
    except _Constant as exc:
        name = exc.args[0]
        raise EventError(f"invalid JSON: {name} is not a JSON value", line=number, column=_column(text, name)) from None
    except _DuplicateKey as exc:
        key = exc.args[0]
        raise EventError(
            f"duplicate key {brief(key)}: a key may appear once in an object",
            line=number,
            column=_column(text, key, as_key=True),
        ) from None
    except (ValueError, RecursionError):
        # An integer past Python's digit limit, or nesting past its recursion limit.
        problem = limit_problem(text, number)
        if problem is not None:
            raise problem from None
        raise EventError("invalid JSON: the line exceeds the parser's limits", line=number) from None


def _column(text: str, name: str, *, as_key: bool = False) -> int | None:
    """Where a constant (``NaN``) or the second occurrence of a key is, outside strings."""
    found = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if as_key and token[0] == '"':
            try:
                same = json.loads(token) == name
            except ValueError:
                same = False
            if same and text[match.end() :].lstrip(" \t\r\n").startswith(":"):
                found += 1
                if found == 2:
                    return match.start() + 1
        elif not as_key and text.startswith(name, match.start()):
            return match.start() + 1
    return None


# A JSON token that matters to the limits: a string (skipped whole, so that digits and brackets
# inside one do not count), a number, or a bracket.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|-?(?:\d+(\.\d+)?([eE][-+]?\d+)?|Infinity)|NaN|[\[{]|[\]}]')
_LONG_RUN = re.compile(rf"(?<!\d)\d{{{MAX_INT_DIGITS + 1}}}")


def limit_problem(text: str, number: int) -> EventError | None:
    """The first limit (digits, nesting) ``text`` goes past, as an error at its column."""
    depth = 0
    long_run = _LONG_RUN.search(text) is not None
    for match in _TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return EventError(f"JSON nested more than {MAX_NESTING} deep", line=number, column=match.start() + 1)
        elif first in "]}":
            depth -= 1
        elif long_run and first != '"' and match.group(1) is None and match.group(2) is None:
            count = len(token.lstrip("-"))
            if count > MAX_INT_DIGITS:
                return EventError(
                    f"integer of {count:,} digits, more than the limit of {MAX_INT_DIGITS:,}",
                    line=number,
                    column=match.start() + 1,
                )
    return None
