"""What a merger replica must find again after a restart, as the changes it makes, and the state
they fold into: the core's side of durable replica logs (docs/deploy.md, "Durability").

A replica with ``durable=True`` records, between two calls of
:meth:`~faidecs.overlay.core.replica.MergerReplica.take_journal`, a :class:`JournalDelta`: the
decisions it appended (after cutting its log back, when a new leader's log replaced an
uncommitted tail), the inputs it received, how far it read each parent, and how far its
payloads were dropped. The driver writes each delta to disk *before* it sends any message of the
same pass (the runtime: :mod:`faidecs.overlay.runtime.replica_journal`), so nothing a peer or a
consumer ever heard of (a ``Holds``, an ``Ack``, a committed position) is missing on disk. After a
restart the deltas, in order, fold into a :class:`Restored` that
:meth:`~faidecs.overlay.core.replica.MergerReplica.restore` takes: the replica has its log and its
vote back, instead of the amnesia of a replica that lost its disk.

Nothing here touches a file: the simulator keeps the deltas in memory as a process's "disk" and
drops them to model a lost disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from faidecs.errors import FaidecsError
from faidecs.matching.events import Event
from faidecs.merging.filters import Filter
from faidecs.overlay.core.messages import Decision

#: an input as the replica received it: (source, key, payload, prev); see Inputs.items, Publish.prev.
#: Restored: a payload None is one every consumer had (a decided event at or before ``trimmed``),
#: which a restart does not read back.
Input = tuple[str, int, "Event | Filter | None", int]


class JournalError(FaidecsError):
    """Deltas that do not fold: a record out of place in a replica's log on disk."""


@dataclass(slots=True)
class JournalDelta:
    """The changes of one stretch. ``keep``: the log was cut back to its first ``keep`` decisions
    before ``decisions`` (None: nothing was cut; ``decisions`` follow what is on disk)."""

    log_epoch: int
    keep: int | None = None
    decisions: list[Decision] = field(default_factory=list)
    inputs: list[Input] = field(default_factory=list)
    received: dict[str, int] = field(default_factory=dict)
    trimmed: int = -1
    #: every consumer's last acknowledgement, (consumer, process) -> position, when they changed
    #: (None: as before): a restarted replica holds back what a consumer not back yet still needs
    acks: dict[tuple[str, str], int] | None = None
    #: the whole state, not a change (:meth:`MergerReplica.journal_base`): what came before it
    #: is not needed any more, and a journal drops it (compaction)
    base: bool = False

    def empty(self) -> bool:
        return self.keep is None and not self.decisions and not self.inputs


@dataclass(slots=True)
class Restored:
    """A replica's state on disk: its log, the epoch of the leader whose log it is, every input
    it received (in the order it received them), how far it read each parent, and the positions
    whose payloads it had dropped (every consumer had them)."""

    log_epoch: int = 0
    decisions: list[Decision] = field(default_factory=list)
    inputs: list[Input] = field(default_factory=list)
    received: dict[str, int] = field(default_factory=dict)
    trimmed: int = -1
    acks: dict[tuple[str, str], int] = field(default_factory=dict)
    #: the payloads of the events decided at or before ``trimmed`` are None already (a journal
    #: on disk does not read them back); otherwise restore drops them
    dropped: bool = False
    #: what restoring derives, when whoever folded the deltas derived it already (a journal on
    #: disk does, to find the payloads to read): every input's (source, key), in order, and the
    #: keys of the decided events and upmarks
    keys: list[tuple[str, int]] | None = None
    decided: set[tuple[str, int]] | None = None
    #: folded from a base (compaction): the inputs every consumer had are not among ``inputs``
    compacted: bool = False

    def apply(self, delta: JournalDelta) -> None:
        """Fold in the next delta; :class:`JournalError` when its decisions do not follow on."""
        if delta.base:
            self.decisions, self.inputs, self.received, self.trimmed, self.acks = [], [], {}, -1, {}
            self.compacted = True
        if delta.keep is not None:
            if delta.keep > len(self.decisions):
                raise JournalError(f"a cut back to {delta.keep} decisions, but only {len(self.decisions)} were kept")
            del self.decisions[delta.keep :]
        ds = delta.decisions
        if ds:
            # A delta's decisions are a stretch of a log: consecutive (checked whole on restore).
            if ds[0].position != len(self.decisions) or ds[-1].position != ds[0].position + len(ds) - 1:
                raise JournalError(
                    f"decisions {ds[0].position}..{ds[-1].position} recorded after {len(self.decisions)} decisions"
                )
            self.decisions += ds
        self.inputs += delta.inputs
        self.received.update(delta.received)
        self.trimmed = max(self.trimmed, delta.trimmed)
        self.log_epoch = delta.log_epoch
        if delta.acks is not None:
            self.acks = dict(delta.acks)


def common_prefix(a: list[Decision], b: list[Decision]) -> int:
    """How many decisions ``a`` and ``b`` share from the start."""
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


__all__ = ["Input", "JournalDelta", "JournalError", "Restored", "common_prefix"]
