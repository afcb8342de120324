"""The one exception hierarchy of faidecs. Every user error says where and what."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from faidecs.brief import brief
from faidecs.span import Span

#: Characters of a source line a diagnostic shows at most.
SHOWN = 160


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem in a program, with the span of the offending text."""

    message: str
    span: Span
    hint: str | None = None

    def format(self, text: str, filename: str = "<program>") -> str:
        """``file:line:col: error: message`` followed by the source line and a caret under the span."""
        head = f"{filename}:{self.span.line}:{self.span.column}: error: {self.message}"
        # Lines as the parser counts them: only "\n" ends a line.
        lines = text.split("\n")
        if not 1 <= self.span.line <= len(lines):
            return head if self.hint is None else f"{head}\n  hint: {self.hint}"
        source_line = lines[self.span.line - 1].rstrip("\r")
        start = self.span.column - 1
        if self.span.end_line == self.span.line and self.span.end_column > self.span.column:
            width = self.span.end_column - self.span.column
        else:
            width = max(1, len(source_line.rstrip()) - start)
        if len(source_line) > SHOWN:
            # A huge line (a generated program, a 20 MB literal) is shown around the span only.
            begin = max(0, start - SHOWN // 4)
            width = min(width, SHOWN // 2)
            shown = source_line[begin : begin + SHOWN]
            before, after = ("…" if begin else ""), ("…" if begin + SHOWN < len(source_line) else "")
            source_line, start = before + shown + after, start - begin + len(before)
        # Keep tabs in the padding so that the caret lines up under the text on any terminal.
        padding = "".join(c if c == "\t" else " " for c in source_line[:start])
        caret = padding + "^" * max(1, width)
        out = f"{head}\n    {source_line}\n    {caret}"
        if self.hint is not None:
            out += f"\n  hint: {self.hint}"
        return out


class FaidecsError(Exception):
    """Base class of every exception faidecs defines: errors on bad input, and the few it raises
    and catches inside itself (tests/unit/test_error_hierarchy.py checks that none is left out)."""


class ProgramError(FaidecsError):
    """A program (or a subscription added at run time) failed to parse or check."""

    def __init__(self, diagnostics: Sequence[Diagnostic], text: str, filename: str = "<program>"):
        self.diagnostics = tuple(diagnostics)
        self.text = text
        self.filename = filename
        super().__init__(self.format())

    def format(self) -> str:
        return "\n".join(d.format(self.text, self.filename) for d in self.diagnostics)


class EventError(FaidecsError):
    """An input event does not fit its declared type (or the input JSON shape). ``column``
    (1-based, in characters) is set when the problem is in the text of a line rather than in a
    field the other attributes name."""

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        event_id: str | None = None,
        type_name: str | None = None,
        attribute: str | None = None,
        column: int | None = None,
    ):
        self.reason = message
        self.line = line
        self.column = column
        self.event_id = event_id
        self.type_name = type_name
        self.attribute = attribute
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.column is not None:
            where.append(f"column {self.column}")
        # Ids, type and attribute names come from the input: shortened, they cannot flood a log.
        if self.event_id is not None:
            where.append(f"event {brief(self.event_id)}")
        if self.type_name is not None:
            where.append(f"type {self.type_name}")
        if self.attribute is not None:
            where.append(f"attribute {brief(self.attribute)}")
        return (", ".join(where) + ": " if where else "") + self.reason

    def at_line(self, line: int) -> EventError:
        """The same error, located at an input line."""
        return EventError(
            self.reason,
            line=line,
            event_id=self.event_id,
            type_name=self.type_name,
            attribute=self.attribute,
            column=self.column,
        )


class SnapshotError(FaidecsError):
    """A snapshot cannot be restored (wrong format, or state that contradicts its program)."""


class SubscriptionNotFound(FaidecsError, KeyError):
    """`unsubscribe` named a subscription the engine does not have."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class QueueOverflowError(FaidecsError):
    """A bounded queue was full under ``overflow = "error"``. The engine stops: every later call
    to publish raises this error again; restore a snapshot taken before to go on."""

    def __init__(self, subscription: str, conjunction: int, type_name: str, max_queue: int, event_id: str):
        self.subscription = subscription
        self.conjunction = conjunction
        self.type_name = type_name
        self.max_queue = max_queue
        self.event_id = event_id
        super().__init__(
            f"subscription {subscription}, conjunction {conjunction}: queue {type_name} is full "
            f"({max_queue} events) when event {event_id!r} arrives, and its overflow policy is error"
        )


class EngineStateError(FaidecsError):
    """:meth:`Engine.check <faidecs.Engine.check>` found the engine's state inconsistent (a bug in
    faidecs, or state changed from outside); the message says which part and what."""
