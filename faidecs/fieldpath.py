"""Strict decoding: where in a nested message a bad field is, and how to show a peer's value.

Shared by the wire codecs of the overlay (`faidecs/overlay/runtime/wire.py`) and of the ordering layers
(`faidecs/ordering/wire.py`), whose errors name the message and the field path, e.g.
``Sequenced.stamps[0]``.
"""

from __future__ import annotations

from typing import Any

from faidecs.errors import FaidecsError


class BadField(FaidecsError):
    """A problem found inside a field; each enclosing decoder adds its step to ``path``."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
        self.path: list[str | int] = []  # innermost step first

    def at(self, step: str | int) -> BadField:
        self.path.append(step)
        return self

    def where(self) -> str:
        return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in reversed(self.path)).lstrip(".")


def show(value: Any) -> str:
    """A value for an error message: a peer's bytes may hold a huge string."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
