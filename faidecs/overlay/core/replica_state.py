"""A merger replica's state, in the four parts its protocol keeps apart: the replicated log of
decisions, the inputs waiting to be decided, the consumers it forwards to, and (for a conjunction
merger) the upstream mergers it reads from. :class:`~faidecs.overlay.core.replica.MergerReplica`
holds one of each and is the only code that changes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from faidecs.matching.events import Event
from faidecs.merging.filters import Filter
from faidecs.merging.roles import Role, is_root, parents
from faidecs.overlay.core.messages import Commit, Decide, Decision, EpochQuery, EpochState, NewLog

ItemKey = tuple[str, int]
LinkKey = tuple[str, str]  # (consumer, process)
Status = Literal["waiting", "recovering", "normal"]
#: The messages only the leader of their epoch sends.
EpochMessage = Decide | Commit | EpochQuery | NewLog


@dataclass(slots=True)
class Link:
    """One consumer's stream from this replica, to one process."""

    consumer: str
    process: str
    sent: int  # last position examined for this link
    sent_at: int = 0  # when it last got something: a filtered-out stretch still shows time passing
    filter: Filter | None = None  # a link started at a marker: its own filter, not the key's marks
    marker: int | None = None  # where that stream started


@dataclass(slots=True)
class ReplicatedLog:
    """The role's decisions as this replica holds them, and where the replication protocol stands
    with them: the epoch and its leader, how far they are committed, and (at a leader) what each
    follower holds."""

    epoch: int = 0
    leader: str | None = None
    log_epoch: int = 0  # the epoch of the leader whose log this one is
    status: Status = "waiting"  # waiting (for a leader's log) | recovering (new leader) | normal
    decisions: list[Decision] = field(default_factory=list)
    filtered: list[int] = field(default_factory=list)  # positions of the decisions with a filter (marks)
    last_ts: int = 0  # the highest timestamp decided: a new decision's is never below it
    last_decided_at: int = 0  # when this replica, leading, last decided (heartbeats)
    commit: int = -1
    #: committed positions that hold an event: the commit position also counts the marks, upmarks
    #: and heartbeats a merger logs (a heartbeat every heartbeat_every ms of quiet)
    events_committed: int = 0
    committed_at: list[int] = field(default_factory=list)  # when each position became committed here
    commit_sent: int = -1  # leader: the commit index its last Commit told the followers
    announced: int = 0  # leader: decisions before it were sent to the peers (a Decide or the NewLog)
    holds: dict[str, int] = field(default_factory=dict)  # leader: replica -> decisions it holds
    recovery: dict[str, EpochState] = field(default_factory=dict)  # recovering leader: the answers
    resent_at: dict[str, int] = field(default_factory=dict)  # leader: follower -> when it last resent a gap
    stale_rejected: int = 0  # messages of an older epoch turned away
    #: sender -> its decisions and queries of an epoch the coordination service has not named
    #: yet, held until it names their sender leader of that epoch (or a later epoch)
    early: dict[str, list[EpochMessage]] = field(default_factory=dict)
    unconfirmed: int = 0  # such messages the coordination service never confirmed, turned away
    overclaimed: int = 0  # leader: Holds claiming more than it decided, cut down to its log


@dataclass(slots=True)
class Inputs:
    """What the role orders: publications (a root) or the parents' events and upmarks (a
    conjunction merger), as they arrived here, and which of them the log decides."""

    items: dict[ItemKey, Event | Filter | None] = field(default_factory=dict)  # None: dropped after every ack
    arrivals: list[ItemKey] = field(default_factory=list)  # in the order they arrived here
    next_arrival: int = 0  # arrivals before it were looked at by this replica, leading
    decided: set[ItemKey] = field(default_factory=set)  # events and upmarks the log holds
    highest: dict[str, int] = field(default_factory=dict)  # fifo_inputs: publisher -> highest decided seq
    late_inputs: int = 0  # fifo_inputs: inputs never ordered, a later one of their publisher was
    fetch_from: int = 0  # lossy_inputs: positions before it have their payloads here
    fetched_at: int = 0  # lossy_inputs: when it last asked its peers for missing payloads
    fetches: int = 0  # lossy_inputs: payloads asked for
    prev: dict[ItemKey, int] = field(default_factory=dict)  # a publication -> its publisher's previous to this role
    parked: dict[ItemKey, list[ItemKey]] = field(default_factory=dict)  # leader: a publication -> those waiting for it
    #: ack_publishers: a decided event's position, built when a copy first comes again (rare)
    position_of: dict[ItemKey, int] | None = None
    reacks: dict[str, list[int]] = field(default_factory=dict)  # ack_publishers: resent ones ordered before
    conflicting: int = 0  # publications repeating a (publisher, seq) with other content, dropped
    last_conflict: ItemKey | None = None


@dataclass(slots=True)
class Consumers:
    """Who reads the role's committed stream from this replica, from where, and with what filter."""

    links: dict[LinkKey, Link] = field(default_factory=dict)
    acks: dict[LinkKey, int] = field(default_factory=dict)  # the last position each acknowledged
    marks: dict[str, list[tuple[int, Filter, str]]] = field(
        default_factory=dict
    )  # consumer -> (position, filter, request)
    reported: int = -1  # on_commit: the last position reported
    ordered: int = -1  # ack_publishers: the last position whose publisher was told (Ordered)
    trimmed: int = -1  # positions up to it have their payloads dropped
    refused_connects: int = 0  # links refused: they would start at a dropped position
    bad_acks: int = 0  # acknowledgements beyond what this replica sent the link, cut down to it


@dataclass(slots=True)
class Upstream:
    """A conjunction merger's parents, ``L`` and ``R``: which replica of each it reads, how far,
    and the widening of their filters it asked for (a root merger has none)."""

    sides: dict[str, Role] = field(default_factory=dict)  # side -> parent role
    reading: dict[str, str | None] = field(default_factory=dict)  # side -> the replica it reads
    received: dict[str, int] = field(default_factory=dict)  # side -> last position received
    acked: dict[str, int] = field(default_factory=dict)  # side -> last position acknowledged
    last_ack: int = 0  # when it last acknowledged
    pending: dict[tuple[str, str], Filter] = field(default_factory=dict)  # leader: (consumer, request) -> filter
    asked: dict[str, tuple[Filter, int]] = field(default_factory=dict)  # leader: side -> (filter asked for, when)
    foreign: int = 0  # stream positions from a replica it does not read, turned away

    @classmethod
    def of(cls, role: Role) -> Upstream:
        """Nothing read yet: a conjunction merger's two parents, a root's none."""
        if is_root(role):
            return cls()
        left, right = parents(role)
        return cls(
            sides={"L": left, "R": right},
            reading={"L": None, "R": None},
            received={"L": -1, "R": -1},
            acked={"L": -1, "R": -1},
        )


__all__ = ["Consumers", "EpochMessage", "Inputs", "ItemKey", "Link", "LinkKey", "ReplicatedLog", "Status", "Upstream"]
