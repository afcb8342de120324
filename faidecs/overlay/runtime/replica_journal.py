"""A merger replica's log on disk (issue 22): its journal deltas (core/journal.py) as records of a
:class:`~faidecs.net.segmentlog.SegmentLog` in ``<run>/state/<server>/<role>/``.

A record is one :class:`JournalDelta`, a msgpack array ``[log_epoch, keep, decisions, inputs,
received, trimmed, acks, base]`` (``acks``: every consumer's last acknowledgement, when they
changed; ``base``: the record holds the replica's whole state, as compaction writes it):

- ``decisions``: the appended decisions in columns (:class:`_Decisions`: the first position, then
  per decision its epoch, ts, kind, source, key, consumer and request), and the few with a filter
  (marks, upmarks) also as one :class:`Decide` in the overlay's wire format, which carries their
  filters;
- ``inputs``: per run of inputs from one source (a publisher, or a parent's side ``L``/``R``),
  their keys and ``prev`` s (:class:`~faidecs.overlay.core.messages.Publish`) in columns, and their
  payloads as one :class:`ForwardBatch` in the wire format.

Why columns: a restart reads every record, and building a million decisions from columns of
checked ints and strings is several times faster than decoding a million wire frames. Why the
payloads stay wire frames, decoded lazily: they are most of the bytes and of the decoding time
(each event is checked against its declared type, as a message from the network is), and a
replica needs only those it has not yet handed to every consumer (positions after ``trimmed``)
or not decided yet; the others are known by their keys alone. The wire format's version thus
versions these files too, and a payload is checked as strictly as any message.

Compaction: once the records since the last base outweigh a segment and twice that base, the
server writes a new base (the replica's decisions, the inputs it still holds, where it stands) at
the start of a new segment, ``fsync`` s it and drops every older segment. The inputs every
consumer had are in no base: a restart knows them by the keys of the decided events.

When a record reaches the disk is the deployment's ``[durability]`` policy: :meth:`commit`, which
the server calls after each pass of its loop and before it sends that pass's messages, writes
every record to the operating system (a killed process loses nothing it acknowledged) and, with
``sync = "always"``, ``fsync`` s it; with ``"group"`` it ``fsync`` s at most every ``group_ms``.
"""

from __future__ import annotations

from itertools import repeat, starmap
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Annotated

import msgspec

from faidecs.errors import FaidecsError
from faidecs.matching.events import Event
from faidecs.merging.filters import Filter
from faidecs.merging.roles import Role
from faidecs.net.segmentlog import CorruptLog, Recovered, SegmentLog
from faidecs.overlay.core.journal import Input, JournalDelta, JournalError, Restored
from faidecs.overlay.core.messages import Decide, Decision, Entry, EntryKind, ForwardBatch
from faidecs.overlay.runtime import wire
from faidecs.overlay.runtime.deployment import Durability

#: inputs per ForwardBatch (the wire format's limit)
_CHUNK = wire.MAX_ENTRIES
_Nat = Annotated[int, msgspec.Meta(ge=0)]
_FromM1 = Annotated[int, msgspec.Meta(ge=-1)]


class _Decisions(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    first: _Nat
    epochs: list[_Nat]
    ts: list[_Nat]
    kinds: list[EntryKind]
    sources: list[str]
    keys: list[_FromM1]
    consumers: list[str]
    requests: list[str]
    filtered: bytes | None  # a Decide of those with a filter


class _Inputs(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    source: str
    keys: list[_FromM1]
    prevs: list[_FromM1]
    payloads: bytes  # a ForwardBatch: one entry per key, its payload


class _Record(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    log_epoch: _Nat
    keep: _Nat | None
    decisions: _Decisions | None
    inputs: list[_Inputs]
    received: dict[str, _FromM1]
    trimmed: _FromM1
    acks: list[tuple[str, str, _FromM1]] | None = None  # (consumer, process, position), when changed
    base: bool = False  # the whole state: the records before it are not needed (compaction)


_INPUT_KEY, _DECISION_KEY = itemgetter(0, 1), attrgetter("source", "key")
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
        self.since_base = log.bytes()  # bytes of records since the last base (compaction_due)
        self.base_bytes = 0
        self.compactions = 0

    @classmethod
    def open(
        cls, folder: Path, role: Role, durability: Durability, decoder: wire.Declared
    ) -> tuple[ReplicaJournal, Restored | None, Recovered]:
        """The journal in ``folder`` (made if missing), the state its records fold into (None:
        no record, a first start), and what recovery found. A damaged record raises
        :class:`CorruptLog` naming the file and offset; a record that does not fold or decode,
        :class:`FaidecsError` naming the folder and the record."""
        log, records, recovered = SegmentLog.open(folder, **durability.log_settings())
        journal = cls(role, log, decoder)
        if not records:
            return journal, None, recovered
        state = Restored()
        # Payloads are decoded at the end, and only those the replica will need: per run of
        # inputs, the record, its payload frame, and where its inputs are in state.inputs.
        batches: list[tuple[int, bytes, int, int]] = []
        try:
            for index, data in enumerate(records, start=recovered.first):
                delta = journal._decode(data, index, batches, len(state.inputs))
                state.apply(delta)
            journal._payloads(state, batches)
            state.dropped = True
        except (msgspec.ValidationError, msgspec.DecodeError, wire.WireError, JournalError) as exc:
            log.close()
            raise FaidecsError(f"{folder}: record {index}: {exc}") from None
        return journal, state, recovered

    def write(self, delta: JournalDelta) -> None:
        record = _Record(
            delta.log_epoch,
            delta.keep,
            self._encode_decisions(delta.decisions) if delta.decisions else None,
            _encode_inputs(self.role, delta.inputs),
            delta.received,
            delta.trimmed,
            [(c, p, a) for (c, p), a in delta.acks.items()] if delta.acks is not None else None,
            delta.base,
        )
        data = _ENCODE(record)
        self.log.append(data)
        self.written += 1
        self.since_base += len(data)

    def compaction_due(self) -> bool:
        """Whether the records since the last base outweigh a new base: more than a segment, and
        more than twice the last base (so that a large live state is not written again and again)."""
        return self.since_base > max(self.log.segment_bytes, 2 * self.base_bytes)

    def compact(self, base: JournalDelta) -> None:
        """Write ``base`` (the replica's whole state) at the start of a new segment, make it
        durable, then drop every segment before it."""
        self.log.roll()
        self.since_base = 0
        index = self.log.next
        self.write(base)
        self.base_bytes, self.since_base = self.since_base, 0
        self.log.commit(force=True)
        self.log.trim(index)
        self.compactions += 1

    def commit(self, *, force: bool = False) -> None:
        """Every record written goes to the operating system; to the disk as the policy says."""
        self.log.commit(force=force)

    def close(self) -> None:
        self.log.close()

    def abandon(self) -> None:
        """Close without writing more (the disk failed): what was not written is not kept."""
        self.log.abandon()

    def _encode_decisions(self, ds: list[Decision]) -> _Decisions:
        with_filter = tuple(d for d in ds if d.filter is not None)
        return _Decisions(
            ds[0].position,
            [d.epoch for d in ds],
            [d.ts for d in ds],
            [d.kind for d in ds],
            [d.source for d in ds],
            [d.key for d in ds],
            [d.consumer for d in ds],
            [d.request for d in ds],
            wire.encode(Decide(self.role, ds[0].epoch, with_filter, -1)) if with_filter else None,
        )

    def _decode(self, data: bytes, index: int, batches: list[tuple[int, bytes, int, int]], held: int) -> JournalDelta:
        """Record ``index``; its inputs follow the ``held`` already folded (payloads left None)."""
        record = _DECODE(data)
        delta = JournalDelta(
            record.log_epoch, record.keep, received=record.received, trimmed=record.trimmed, base=record.base
        )
        if record.acks is not None:
            delta.acks = {(c, p): a for c, p, a in record.acks}
        if record.decisions is not None:
            delta.decisions = self._decisions(record.decisions)
        for run in record.inputs:
            if len(run.prevs) != len(run.keys) or not run.keys:
                raise JournalError(f"inputs of {run.source}: {len(run.keys)} keys, {len(run.prevs)} prevs")
            n = len(run.keys)
            batches.append((index, run.payloads, held + len(delta.inputs), n))
            delta.inputs += zip(repeat(run.source, n), run.keys, repeat(None, n), run.prevs)
        return delta

    def _decisions(self, c: _Decisions) -> list[Decision]:
        n = len(c.epochs)
        if not n or any(len(col) != n for col in (c.ts, c.kinds, c.sources, c.keys, c.consumers, c.requests)):
            raise JournalError("decision columns of different lengths")
        filters: dict[int, Filter] = {}
        if c.filtered is not None:
            decide = self.decoder.decode(c.filtered)
            if not isinstance(decide, Decide) or decide.role != self.role:
                raise JournalError(f"filters recorded as a {type(decide).__name__} of another role")
            filters = {d.position: d.filter for d in decide.decisions if d.filter is not None}
        first = c.first
        positions = range(first, first + n)
        with_filters = [filters.get(p) for p in positions] if filters else repeat(None, n)
        columns = (c.epochs, c.ts, c.kinds, c.sources, c.keys, c.consumers, c.requests, with_filters)
        out = list(starmap(Decision, zip(positions, *columns)))
        if len(filters) != sum(1 for d in out if d.filter is not None):
            raise JournalError("a filter recorded for a position the record does not decide")
        return out

    def _payloads(self, state: Restored, batches: list[tuple[int, bytes, int, int]]) -> None:
        """Fill in the payloads the replica will need: of the inputs not decided, and of those
        decided after ``trimmed`` (or not events); the others stay None (known by key). Most
        runs of inputs of a long log are wholly decided before ``trimmed``: two set tests each.
        The keys and the decided set are left in ``state`` for the replica's restore."""
        inputs = state.inputs
        keys = state.keys = list(map(_INPUT_KEY, inputs))
        decided = state.decided = set(map(_DECISION_KEY, state.decisions))
        decided.discard(("", -1))  # marks and heartbeats
        # Read back: what is not decided, decided after trimmed, or an upmark's filter (few).
        held = set(map(_DECISION_KEY, state.decisions[state.trimmed + 1 :]))
        held.update((d.source, d.key) for d in state.decisions if d.kind == "upmark")
        for record, frame, start, n in batches:
            run = keys[start : start + n]
            if decided.issuperset(run) and held.isdisjoint(run):
                continue  # every one decided, and dropped
            batch = self.decoder.decode(frame)
            source = run[0][0]
            if not isinstance(batch, ForwardBatch) or batch.role != self.role or batch.consumer != source:
                raise JournalError(f"record {record}: inputs of {source} recorded as another message")
            if [e.position for e in batch.entries] != [k for _, k in run]:
                raise JournalError(f"record {record}: the payloads do not match the keys of {source}")
            for i, e in enumerate(batch.entries):
                key = run[i]
                if key in decided and key not in held:
                    continue
                payload: Event | Filter | None = e.event if e.kind == "event" else e.filter
                if payload is None:
                    raise JournalError(f"record {record}: input {source}:{key[1]} has no payload")
                inputs[start + i] = (source, key[1], payload, inputs[start + i][3])


def _encode_inputs(role: Role, inputs: list[Input]) -> list[_Inputs]:
    """Runs of inputs of one source, of at most ``_CHUNK`` each."""
    out: list[_Inputs] = []
    run: list[Input] = []

    def close() -> None:
        entries: list[Entry] = []
        for _, key, payload, _ in run:
            if isinstance(payload, Event):
                entries.append(Entry(key, 0, "event", payload))
            else:
                entries.append(Entry(key, 0, "mark", None, "", payload))
        frame = wire.encode(ForwardBatch(role, run[0][0], tuple(entries)))
        out.append(_Inputs(run[0][0], [i[1] for i in run], [i[3] for i in run], frame))

    for item in inputs:
        if run and (item[0] != run[0][0] or len(run) >= _CHUNK):
            close()
            run = []
        run.append(item)
    if run:
        close()
    return out


__all__ = ["CorruptLog", "ReplicaJournal"]
