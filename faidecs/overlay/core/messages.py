"""The messages of the overlay protocol, and the decisions a merger's replicas agree on.

Every message is an immutable value. The core (mergers, clients) exchanges them through whatever
transport runs it: the deterministic simulator here, sockets in the real runtime. A message to a
merger names its role; a process hosting several merger replicas dispatches on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from faidecs.matching.events import Event
from faidecs.merging.filters import Filter
from faidecs.merging.roles import Role

#: What a log position holds: an event (from a source), a consumer's filter mark, a parent's
#: mark for this merger (its upstream filter changed), or nothing (a heartbeat carrying time).
EntryKind = Literal["event", "mark", "upmark", "heartbeat"]


class Decision(msgspec.Struct, frozen=True, gc=False):
    """Position ``position`` of a merger's output stream, as its leader decided it.

    ``source``/``key`` name the input item (``"L"``/``"R"`` and the parent's position for a
    conjunction merger; the publisher and its sequence number for a root merger). ``ts`` is the
    timestamp clients merge disjunctions by; it never decreases along a stream.

    A frozen msgspec struct rather than a frozen dataclass like the messages: a replica holds one
    per position of its log and builds a million of them when it recovers a log from its disk,
    and a struct is built about ten times faster (equality and hashing are the same). ``gc=False``:
    it never refers back to itself (a filter is a tree of immutable values).
    """

    position: int
    epoch: int
    ts: int
    kind: EntryKind
    source: str = ""
    key: int = -1
    consumer: str = ""  # marks: the consumer key whose filter changes here
    request: str = ""  # marks: who asked (a subscriber's or merger's name)
    filter: Filter | None = None


# --- publishers -> root mergers ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Publish:
    """``prev``: the seq of the publisher's previous publication to the same root role (-1: none,
    or not said). A root orders this one only after that one, so that the publisher's events stay
    in their order even when a copy is lost and sent again (a root whose replicas all restarted
    missed it, and a later one overtook the resent copy)."""

    publisher: str
    seq: int
    event: Event
    prev: int = -1


@dataclass(frozen=True, slots=True)
class Ordered:
    """Root merger leader -> a publisher: its publications ``seqs`` are committed in ``role``'s
    order (held by a majority of its replicas, on their disks where they keep them), so its outbox
    may let them go. A publisher resends what is not acknowledged; the leader acknowledges a
    resent one it already ordered again (docs/deploy.md, "Durability")."""

    role: Role
    publisher: str
    seqs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Fetch:
    """Root merger replica -> its peers: send me the publication decided at ``position``, which
    never reached me (a lossy input path lost it, or my latch stage dropped it as late). A peer
    that holds it answers with the :class:`Publish` itself; nothing is sent otherwise."""

    role: Role
    replica: str
    position: int


# --- merger -> consumers (child merger replicas, subscribers) ------------------------------------


@dataclass(frozen=True, slots=True)
class Connect:
    """Send me (``process``, as consumer ``consumer``) your committed stream after ``after``."""

    role: Role
    consumer: str
    process: str
    after: int


@dataclass(frozen=True, slots=True)
class Disconnect:
    role: Role
    consumer: str
    process: str


@dataclass(frozen=True, slots=True)
class Forward:
    """One committed position of ``role``'s stream that consumer ``consumer`` needs (for a mark:
    the consumer whose filter it sets, always the receiving one)."""

    role: Role
    position: int
    ts: int
    kind: EntryKind
    event: Event | None = None
    consumer: str = ""
    request: str = ""
    filter: Filter | None = None


@dataclass(frozen=True, slots=True)
class Entry:
    """One position of a :class:`ForwardBatch`: a :class:`Forward` without the role and consumer
    its batch names once for all of its entries."""

    position: int
    ts: int
    kind: EntryKind
    event: Event | None = None
    request: str = ""
    filter: Filter | None = None


@dataclass(frozen=True, slots=True)
class ForwardBatch:
    """Consecutive :class:`Forward` s of ``role``'s stream to consumer ``consumer``, in position
    order: what a replica sends a link at once (one message, not one per position). The receiver
    handles each of :meth:`forwards` as it would the Forward itself."""

    role: Role
    consumer: str
    entries: tuple[Entry, ...]

    def forwards(self) -> list[Forward]:
        role, consumer = self.role, self.consumer
        return [Forward(role, e.position, e.ts, e.kind, e.event, consumer, e.request, e.filter) for e in self.entries]

    @staticmethod
    def of(role: Role, consumer: str, entries: tuple[Entry, ...]) -> Forward | ForwardBatch:
        """One message for ``entries`` (at least one) of ``role``'s stream to ``consumer``: a
        Forward when it is alone."""
        if len(entries) == 1:
            e = entries[0]
            return Forward(role, e.position, e.ts, e.kind, e.event, consumer, e.request, e.filter)
        return ForwardBatch(role, consumer, entries)


@dataclass(frozen=True, slots=True)
class MarkerRequest:
    """A LoCaPS-style join: subscriber ``process`` (consumer ``consumer``) asks one replica for
    the committed stream, restricted to ``filter``. With ``after`` None the replica places a
    *marker* at its commit index if its committed stream covers ``filter`` there (and, with
    ``heartbeats``, already serves a subscriber, so that its leader logs heartbeats); the stream
    then starts after the marker. With ``after`` given the link resumes after ``after`` (failover
    of a stream that started at a marker). Nothing is logged: no decision, no majority round."""

    role: Role
    consumer: str
    process: str
    filter: Filter
    heartbeats: bool = False
    after: int | None = None


@dataclass(frozen=True, slots=True)
class MarkerReply:
    """The answer to a :class:`MarkerRequest` without ``after``: with ``ok`` the stream starts
    after committed position ``position`` (timestamp ``ts``); otherwise this replica does not
    cover the filter and the subscriber registers (a leader that refuses registers it at once)."""

    role: Role
    consumer: str
    position: int
    ts: int
    ok: bool


@dataclass(frozen=True, slots=True)
class Ack:
    """``consumer`` at ``process`` has what ``role`` forwarded up to ``position``: replicas may
    drop what every consumer has acknowledged. Sent to every replica of the role."""

    role: Role
    consumer: str
    process: str
    position: int


@dataclass(frozen=True, slots=True)
class Register:
    """Consumer ``consumer`` (asked for by ``request``) needs the events ``filter`` passes."""

    role: Role
    consumer: str
    request: str
    filter: Filter


# --- between the replicas of one role -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Decide:
    """The leader's decisions ``decisions`` (consecutive positions, at least one) of ``epoch``:
    a batch, replicated and acknowledged as one entry; ``commit``: the leader's commit index."""

    role: Role
    epoch: int
    decisions: tuple[Decision, ...]
    commit: int


@dataclass(frozen=True, slots=True)
class Holds:
    """A follower holds decisions ``[0, length)`` of ``epoch``."""

    role: Role
    epoch: int
    replica: str
    length: int


@dataclass(frozen=True, slots=True)
class Commit:
    role: Role
    epoch: int
    commit: int


@dataclass(frozen=True, slots=True)
class EpochQuery:
    role: Role
    epoch: int
    leader: str


@dataclass(frozen=True, slots=True)
class EpochState:
    role: Role
    epoch: int
    replica: str
    log_epoch: int
    decisions: tuple[Decision, ...]
    commit: int


@dataclass(frozen=True, slots=True)
class NewLog:
    role: Role
    epoch: int
    decisions: tuple[Decision, ...]
    commit: int


# --- coordination service -> processes (watch notifications) --------------------------------------


@dataclass(frozen=True, slots=True)
class LeaderChange:
    role: Role
    leader: str
    epoch: int


@dataclass(frozen=True, slots=True)
class Down:
    """``process``'s session expired: it crashed or paused too long."""

    process: str


@dataclass(frozen=True, slots=True)
class Up:
    process: str


# --- subscribers joining from a peer -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """``joiner`` asks for the state of a peer; ``keys``: its streams' consumer keys, which the
    peer's must equal (identical conjunctions and options)."""

    joiner: str
    keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class JoinState:
    """A subscriber's engines and, per merger stream, the last position they reflect."""

    peer: str
    snapshots: dict[Role, Mapping[str, Any]] = field(hash=False)
    positions: dict[Role, int] = field(hash=False)
    ok: bool = True
    marker: int | None = None  # where the peer was in the run (for run logs)


Message = (
    Publish
    | Connect
    | Disconnect
    | Forward
    | ForwardBatch
    | Ack
    | Register
    | Decide
    | Holds
    | Commit
    | EpochQuery
    | EpochState
    | NewLog
    | LeaderChange
    | Down
    | Up
    | JoinRequest
    | JoinState
    | MarkerRequest
    | MarkerReply
    | Fetch
    | Ordered
)

#: A message to send: (destination process, message).
Send = tuple[str, Message]

__all__ = [
    "Ack",
    "Commit",
    "Connect",
    "Decide",
    "Decision",
    "Disconnect",
    "Down",
    "Entry",
    "EntryKind",
    "EpochQuery",
    "EpochState",
    "Fetch",
    "Forward",
    "ForwardBatch",
    "Holds",
    "JoinRequest",
    "JoinState",
    "LeaderChange",
    "MarkerReply",
    "MarkerRequest",
    "Message",
    "NewLog",
    "Ordered",
    "Publish",
    "Register",
    "Send",
    "Up",
]
