"""A merger replica's log on disk (issue 22): its journal deltas (core/journal.py) as records of a
:class:`~faidecs.net.segmentlog.SegmentLog` in ``<run>/state/<server>/<role>/``.

A record is one :class:`JournalDelta`, a msgpack array ``[log_epoch, keep, decisions, inputs,
received, trimmed]`` whose decisions and inputs are overlay messages in the wire format
(:mod:`faidecs.overlay.runtime.wire`), decoded on recovery with the deployment's checks like any
message from the network: the decisions as one :class:`Decide`, the inputs as
:class:`ForwardBatch` es, one per run of inputs from one source (a publisher, or a parent's side
``L``/``R``), each entry the input's key (its position), its payload and, in its ``ts``, the
publication's ``prev`` plus one (:class:`~faidecs.overlay.core.messages.Publish`; 0: none). The
wire format's version therefore versions these files too.

When a record reaches the disk is the deployment's ``[durability]`` policy: :meth:`commit`, which
the server calls after each pass of its loop and before it sends that pass's messages, writes
every record to the operating system (a killed process loses nothing it acknowledged) and, with
``sync = "always"``, ``fsync`` s it; with ``"group"`` it ``fsync`` s at most every ``group_ms``.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from faidecs.errors import FaidecsError
from faidecs.matching.events import Event
from faidecs.merging.filters import Filter
from faidecs.merging.roles import Role
from faidecs.net.segmentlog import CorruptLog, Recovered, SegmentLog
from faidecs.overlay.core.journal import Input, JournalDelta, JournalError, Restored
from faidecs.overlay.core.messages import Decide, Entry, ForwardBatch
from faidecs.overlay.runtime import wire
from faidecs.overlay.runtime.deployment import Durability

#: inputs per ForwardBatch record entry list (the wire format's limit)
_CHUNK = wire.MAX_ENTRIES


class _Record(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    log_epoch: int
    keep: int | None
    decisions: bytes | None
    inputs: list[bytes]
    received: dict[str, int]
    trimmed: int


_ENCODE = msgspec.msgpack.Encoder().encode
_DECODE = msgspec.msgpack.Decoder(_Record).decode


class ReplicaJournal:
    """The journal of ``role``'s replica, in ``folder``: :meth:`open` it, :meth:`write` each delta,
    :meth:`commit` after each pass."""

    def __init__(self, role: Role, log: SegmentLog, decoder: wire.Declared):
        self.role = role
        self.log = log
        self.decoder = decoder
        self.written = 0  # records written by this process

    @classmethod
    def open(
        cls, folder: Path, role: Role, durability: Durability, decoder: wire.Declared
    ) -> tuple[ReplicaJournal, Restored | None, Recovered]:
        """The journal in ``folder`` (made if missing), the state its records fold into (None:
        no record, a first start), and what recovery found. A damaged record raises
        :class:`CorruptLog` naming the file and offset; a record that does not fold or decode,
        :class:`FaidecsError` naming the folder and the record."""
        log, records, recovered = SegmentLog.open(
            folder, sync="always" if durability.sync == "always" else "group",
            group_ms=durability.group_ms, segment_bytes=durability.segment_bytes,
        )  # fmt: skip
        journal = cls(role, log, decoder)
        if not records:
            return journal, None, recovered
        state = Restored()
        for index, data in enumerate(records, start=recovered.first):
            try:
                state.apply(journal._decode(data))
            except (msgspec.ValidationError, msgspec.DecodeError, wire.WireError, JournalError) as exc:
                log.close()
                raise FaidecsError(f"{folder}: record {index}: {exc}") from None
        return journal, state, recovered

    def write(self, delta: JournalDelta) -> None:
        decisions = delta.decisions
        record = _Record(
            delta.log_epoch,
            delta.keep,
            wire.encode(Decide(self.role, delta.log_epoch, tuple(decisions), -1)) if decisions else None,
            _encode_inputs(self.role, delta.inputs),
            delta.received,
            delta.trimmed,
        )
        self.log.append(_ENCODE(record))
        self.written += 1

    def commit(self, *, force: bool = False) -> None:
        """Every record written goes to the operating system; to the disk as the policy says."""
        self.log.flush()
        self.log.commit(force=force)

    def close(self) -> None:
        self.log.close()

    def _decode(self, data: bytes) -> JournalDelta:
        record = _DECODE(data)
        delta = JournalDelta(record.log_epoch, record.keep, received=record.received, trimmed=record.trimmed)
        if record.decisions is not None:
            decide = self.decoder.decode(record.decisions)
            if not isinstance(decide, Decide) or decide.role != self.role:
                raise JournalError(f"decisions recorded as a {type(decide).__name__} of another role")
            delta.decisions = list(decide.decisions)
        for data_in in record.inputs:
            batch = self.decoder.decode(data_in)
            if not isinstance(batch, ForwardBatch) or batch.role != self.role:
                raise JournalError(f"inputs recorded as a {type(batch).__name__} of another role")
            for e in batch.entries:
                payload: Event | Filter | None = e.event if e.kind == "event" else e.filter
                if payload is None:
                    raise JournalError(f"input {batch.consumer}:{e.position} has no payload")
                delta.inputs.append((batch.consumer, e.position, payload, e.ts - 1))
        return delta


def _encode_inputs(role: Role, inputs: list[Input]) -> list[bytes]:
    """Runs of inputs of one source, as ForwardBatch es of at most ``_CHUNK`` entries."""
    out: list[bytes] = []
    run: list[Entry] = []
    source = ""
    for s, key, payload, prev in inputs:
        if run and (s != source or len(run) >= _CHUNK):
            out.append(wire.encode(ForwardBatch(role, source, tuple(run))))
            run = []
        source = s
        if isinstance(payload, Event):
            run.append(Entry(key, prev + 1, "event", payload))
        else:
            run.append(Entry(key, prev + 1, "mark", None, "", payload))
    if run:
        out.append(wire.encode(ForwardBatch(role, source, tuple(run))))
    return out


__all__ = ["CorruptLog", "ReplicaJournal"]
