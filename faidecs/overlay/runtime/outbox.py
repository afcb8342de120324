"""A publisher's outbox (issue 22): the publications it sent that no root leader has acknowledged
(:class:`~faidecs.overlay.core.messages.Ordered`) yet, held as the core holds them
(:class:`~faidecs.overlay.core.unacked.Unacknowledged`) and, with ``[durability]``, kept in a
segment log in its state folder, so that a restarted publisher resends them and goes on with
its next sequence number and the next line of its events file.

A record is a msgpack array: ``[0, seq, line, publish]`` (sent: the publication as the wire format
encodes it, and the line of the events file it came from) or ``[1, [seq, ...]]`` (acknowledged).
The roots drop a resent publication they already ordered, by (publisher, seq), and acknowledge it
again: resending is always safe, so the outbox errs on that side.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import msgspec

from faidecs.errors import FaidecsError
from faidecs.merging.roles import Role
from faidecs.net.segmentlog import SegmentLog
from faidecs.overlay.core.messages import Publish
from faidecs.overlay.core.unacked import Unacked, Unacknowledged
from faidecs.overlay.runtime import wire
from faidecs.overlay.runtime.deployment import Durability

_SENT, _ACKED = 0, 1
_ENCODE = msgspec.msgpack.Encoder().encode
_DECODE = msgspec.msgpack.Decoder(list[int | bytes | list[int]]).decode


class Outbox(Unacknowledged):
    """What a publisher sent and was not told is ordered, kept on disk too; :meth:`open` it."""

    def __init__(self, log: SegmentLog | None, *, every_line: bool = False):
        super().__init__()
        self.log = log
        self.next_seq = 0
        self.next_line = 0  # the highest line published; a file's lines before it were too
        #: with ``every_line`` (a broker source): each line published. A broker does not hand
        #: its messages over in line order: JetStream gives a message never delivered before
        #: one whose acknowledgement timed out, so a restarted publisher is handed the stream's
        #: newest message before the older ones its predecessor took and never acknowledged;
        #: a high-water mark would take those for published and lose them.
        self.lines: set[int] | None = set() if every_line else None

    def published(self, line: int) -> bool:
        """Whether the event of ``line`` (a file's line, a broker's stream sequence) was published."""
        return line <= self.next_line if self.lines is None else line in self.lines

    @classmethod
    def open(
        cls,
        folder: Path | None,
        durability: Durability,
        decoder: wire.Declared,
        root: object,
        *,
        every_line: bool = False,
    ) -> Outbox:
        """The outbox in ``folder`` (None: in memory only); ``root``: the role of an event type;
        ``every_line``: remember each line published, not only the highest (a broker source)."""
        if folder is None:
            return cls(None, every_line=every_line)
        log, records, _ = SegmentLog.open(folder, **durability.log_settings())
        outbox = cls(log, every_line=every_line)
        for index, data in enumerate(records):
            try:
                record = _DECODE(data)
                kind = record[0] if record else None
                if kind == _SENT and len(record) == 4:
                    _, seq, line, encoded = record
                    if not isinstance(seq, int) or not isinstance(line, int) or not isinstance(encoded, bytes):
                        raise FaidecsError("a sent record is [0, seq, line, publication]")
                    publish = decoder.decode(encoded)
                    if not isinstance(publish, Publish) or publish.seq != seq:
                        raise FaidecsError(f"not the publication of seq {seq}")
                    Unacknowledged.sent(outbox, publish, root(publish.event.type), 0)  # type: ignore[operator]
                    outbox.next_seq = max(outbox.next_seq, seq + 1)
                    outbox.next_line = max(outbox.next_line, line)
                    if outbox.lines is not None:
                        outbox.lines.add(line)
                elif kind == _ACKED and len(record) == 2 and isinstance(record[1], list):
                    for seq in record[1]:
                        outbox.unacked.pop(seq, None)
                else:
                    raise FaidecsError(f"not an outbox record: {record!r:.80}")
            except (msgspec.ValidationError, msgspec.DecodeError, wire.WireError, FaidecsError) as exc:
                log.close()
                raise FaidecsError(f"{folder}: record {index}: {exc}") from None
        return outbox

    def send(self, publish: Publish, role: Role, line: int, data: bytes, now: int) -> None:
        """``publish`` (encoded ``data``), from ``line`` of the events file, goes out now."""
        self.sent(publish, role, now)
        self.next_seq = publish.seq + 1
        self.next_line = max(self.next_line, line)
        if self.lines is not None:
            self.lines.add(line)
        if self.log is not None:
            self.log.append(_ENCODE((_SENT, publish.seq, line, data)))

    def ordered(self, seqs: Iterable[int]) -> list[int]:
        gone = super().ordered(seqs)
        if gone and self.log is not None:
            self.log.append(_ENCODE((_ACKED, gone)))
        return gone

    def commit(self) -> None:
        """Records to the operating system, and to the disk as the policy says: before the pass's
        publications leave."""
        if self.log is not None:
            self.log.commit()

    def close(self) -> None:
        if self.log is not None:
            self.log.close()


__all__ = ["Outbox", "Unacked"]  # Unacked: the core's, what the outbox holds
