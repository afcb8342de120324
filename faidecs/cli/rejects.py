"""The rejects file of ``--on-error skip`` (``faidecs run`` and ``faidecs compare``): one JSON
record per rejected line, saying where and what."""

from __future__ import annotations

from faidecs.errors import EventError
from faidecs.runs.event_lines import LongLine, shown_input

#: Characters of a rejected line a rejects record keeps (then ``input_bytes`` gives its length).
REJECT_INPUT_CHARS = 1000


def reject_record(line: int, raw: str | bytes | LongLine, err: EventError) -> dict[str, object]:
    """One line of the rejects file; a long line is cut (a 20 MB line must not make a 40 MB record)."""
    text = shown_input(raw)
    record: dict[str, object] = {"line": line}
    if err.column is not None:
        record["column"] = err.column
    record["error"] = err.reason
    record["input"] = text
    if isinstance(raw, LongLine) or len(text) > REJECT_INPUT_CHARS:
        record["input"] = text[:REJECT_INPUT_CHARS] + "…"
        if isinstance(raw, str):
            record["input_chars"] = len(text)
        else:
            record["input_bytes"] = raw.size if isinstance(raw, LongLine) else len(raw.rstrip(b"\r\n"))
    return record


__all__ = ["REJECT_INPUT_CHARS", "reject_record"]
