"""What a publisher attaches to each message: seq, departure, prev_departure and the optional
publication record. Brokers carry it as opaque payload; nothing on the path reads it.

The record lists the previous ``y`` messages with their departure times and a summary of their
content. In faidecs the summary is the event's type, which is exact (the paper's content-based
B-DRP needs a Bloom filter, 16 bytes per entry, with false positives that only cost delay).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

#: bytes per record entry in the paper's evaluation (an encoded Bloom filter): P-x-5 adds 80 bytes
RECORD_ENTRY_BYTES = 16


def record_overhead(y: int) -> int:
    """Bytes a record of ``y`` entries adds to every message, as the paper counts them."""
    return RECORD_ENTRY_BYTES * y


@dataclass(frozen=True, slots=True)
class RecordEntry:
    seq: int
    departure: float
    summary: str  # the content summary: in faidecs, the event type


@dataclass(frozen=True, slots=True)
class Stamp:
    publisher: str
    seq: int
    departure: float  # the publisher's clock, never compared with a receiver's
    prev_departure: float | None  # departure of seq − 1 (basic mode's δ); None for the first
    record: tuple[RecordEntry, ...] | None = None  # enhanced mode: the previous y messages, oldest first


class Stamper:
    """A publisher's side: numbers its messages from 0 and keeps the last ``record_size`` for the
    record (0: basic mode, no record)."""

    __slots__ = ("_prev", "_recent", "_seq", "publisher", "record_size")

    def __init__(self, publisher: str, record_size: int = 0) -> None:
        self.publisher = publisher
        self.record_size = record_size
        self._seq = 0
        self._prev: float | None = None
        self._recent: deque[RecordEntry] = deque(maxlen=max(record_size, 1))

    def stamp(self, departure: float, summary: str = "") -> Stamp:
        record = tuple(self._recent) if self.record_size > 0 else None
        out = Stamp(self.publisher, self._seq, departure, self._prev, record)
        self._recent.append(RecordEntry(self._seq, departure, summary))
        self._seq += 1
        self._prev = departure
        return out
