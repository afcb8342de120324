"""Source positions, shared by the syntax tree and the error types."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A region of the program text: 1-based line and column, 0-based offsets."""

    line: int
    column: int
    end_line: int
    end_column: int
    start: int
    end: int

    @staticmethod
    def unknown() -> Span:
        return Span(0, 0, 0, 0, 0, 0)
