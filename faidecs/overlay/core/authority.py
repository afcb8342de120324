"""Who may send what to whom: each overlay message kind checked against its sender's role.

Authentication names the sender of every message (its CurveZMQ key), but a deployment has many
keys, and a process that holds one must not be able to forge what another kind of process says.
:class:`Authority` answers, for one receiving process, whether an authenticated sender may send
it a message, from the deployment's roster alone (:class:`Roster`):

=========================================  ============================================================
message                                    sender, when the receiver is ...
=========================================  ============================================================
``Publish``                                a publisher, to a replica of its event type's root role;
                                           or a peer replica of that role (the answer to a ``Fetch``)
``Connect`` ``Disconnect`` ``Register``    a consumer of the role the receiver hosts, under a consumer
``Ack``                                    key that consumer owns: a subscriber reading that role
                                           (its stream's key), or a replica of a child role (the
                                           child's merger key); ``Register`` asks in its own name
``MarkerRequest``                          a subscriber reading that role, under its stream's key
``Forward`` ``ForwardBatch`` ``MarkerReply`` a replica of a role the receiver reads
``Decide`` ``Holds`` ``Commit``            another replica of a role the receiver hosts
``EpochQuery`` ``EpochState`` ``NewLog``
``Fetch``
``Ordered``                                a replica of a root role the receiver (a publisher) publishes to
``JoinRequest``                            a subscriber with the same streams (an identical subscription)
``JoinState``                              the peer the receiver joins from
``LeaderChange`` ``Down`` ``Up``           only the coordination service (never the network)
=========================================  ============================================================

Two rules that roles cannot say are the core's: a replica takes decisions and epoch queries only
with the epoch the coordination service gave their sender
(:class:`~faidecs.overlay.core.replica.MergerReplica`), and a consumer takes a stream only from
the replica it reads. What remains is a replica of a role misbehaving in that role: replicas are
trusted with their role's order (docs/deploy.md, "Threat model").

:meth:`Authority.may_send` answers from the message kind alone, before the bytes are decoded: a
publisher's key gets no more than a ``Publish`` decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from faidecs.merging.filters import Filter
from faidecs.merging.roles import Role, is_root, parents, role_name
from faidecs.overlay.core.keys import is_subscriber, merger_key
from faidecs.overlay.core.messages import (
    Ack,
    Commit,
    Connect,
    Decide,
    Disconnect,
    Down,
    EpochQuery,
    EpochState,
    Fetch,
    Forward,
    ForwardBatch,
    Holds,
    JoinRequest,
    JoinState,
    LeaderChange,
    MarkerReply,
    MarkerRequest,
    Message,
    NewLog,
    Ordered,
    Publish,
    Register,
    Up,
)

#: (kind of refusal, why): what the transport counts and logs.
Refusal = tuple[str, str]

_CONSUMER = (Connect, Disconnect, Register, Ack, MarkerRequest)
_REPLICATION = (Decide, Holds, Commit, EpochQuery, EpochState, NewLog, Fetch)
_STREAM = (Forward, ForwardBatch, MarkerReply)
_COORDINATION = (LeaderChange, Down, Up)


@dataclass(frozen=True)
class Roster:
    """A deployment's processes by what they do.

    ``placement``: every merger role's replicas; ``streams``: per subscriber, the roles it reads
    and, for each, its consumer key and the filter it registers; ``joins_from``: per subscriber,
    the peer it joins from (if any); ``root``: the role a publication of a type goes to."""

    publishers: frozenset[str]
    placement: Mapping[Role, tuple[str, ...]]
    streams: Mapping[str, Mapping[Role, tuple[str, Filter]]]
    joins_from: Mapping[str, str | None]
    root: Callable[[str], Role]

    @property
    def servers(self) -> frozenset[str]:
        return frozenset(p for replicas in self.placement.values() for p in replicas)


class Authority:
    """What ``me`` accepts from whom, in ``roster``'s deployment."""

    def __init__(self, me: str, roster: Roster):
        self.me = me
        self.roster = roster
        placement = roster.placement
        self.servers = roster.servers
        self.hosted = frozenset(r for r, replicas in placement.items() if me in replicas)
        #: the root role of each event type seen: a deployment's process decodes only its declared
        #: types, so this stays as small as the program (bounded anyway, for other decoders)
        self._roots: dict[str, Role] = {}
        #: per hosted role: process -> the consumer keys it may read that role under
        self.consumers: dict[Role, dict[str, frozenset[str]]] = {r: {} for r in self.hosted}
        #: (subscriber, hosted role) -> the filter its stream registers
        self.filters: dict[tuple[str, Role], Filter] = {}
        for subscriber, streams in roster.streams.items():
            for role, (key, f) in streams.items():
                if role in self.consumers:
                    self.consumers[role][subscriber] = frozenset({key})
                    self.filters[(subscriber, role)] = f
        for child, replicas in placement.items():
            if is_root(child):
                continue
            for parent in parents(child):
                if parent in self.consumers:
                    for p in replicas:
                        keys = self.consumers[parent].get(p, frozenset())
                        self.consumers[parent][p] = keys | {merger_key(child)}
        #: the roles whose streams ``me`` reads
        self.reads = frozenset(roster.streams.get(me, {})) | {
            parent for r in self.hosted if not is_root(r) for parent in parents(r)
        }
        # A subscriber joins from one with the same streams, consumer keys and all (the joiner's
        # JoinRequest carries its keys, which the peer's must equal).
        mine = roster.streams.get(me)
        self.peers = frozenset(s for s, streams in roster.streams.items() if mine and streams == mine and s != me)
        self._kinds = {sender: self._kinds_from(sender) for sender in self._everyone()}

    def _everyone(self) -> Iterable[str]:
        r = self.roster
        return {*r.publishers, *r.servers, *r.streams}

    def _kinds_from(self, sender: str) -> frozenset[type]:
        """The message kinds ``sender`` may send ``me`` at all."""
        r = self.roster
        kinds: set[type] = set()
        if sender in r.publishers and self.hosted:
            kinds.add(Publish)
        if sender in r.servers:
            if any(sender in r.placement[role] for role in self.hosted):
                kinds.update((Publish, *_REPLICATION))
            if any(sender in r.placement[role] for role in self.reads):
                kinds.update(_STREAM)
        if any(sender in consumers for consumers in self.consumers.values()):
            kinds.update(_CONSUMER)
        if sender in r.servers and self.me in r.publishers:
            kinds.add(Ordered)
        if sender in self.peers:
            kinds.add(JoinRequest)
        if sender == r.joins_from.get(self.me):
            kinds.add(JoinState)
        return frozenset(kinds)

    def may_send(self, sender: str, kind: type) -> bool:
        """Whether ``sender`` may send ``me`` a message of ``kind`` at all (from its role alone)."""
        kinds = self._kinds.get(sender)
        return kinds is not None and kind in kinds

    def refuse(self, sender: str, msg: Message) -> Refusal | None:
        """Why ``sender`` may not send ``msg`` to ``me``; None when it may."""
        kind = type(msg)
        if isinstance(msg, _COORDINATION):
            return "coordination", f"from {sender}: {kind.__name__} comes only from the coordination service"
        if not self.may_send(sender, kind):
            return "unauthorised", f"{sender} may not send {kind.__name__} to {self.me}"
        why = self._why_not(sender, msg)
        return ("unauthorised", f"{kind.__name__} from {sender}: {why}") if why is not None else None

    def _why_not(self, sender: str, msg: Message) -> str | None:
        placement = self.roster.placement
        if isinstance(msg, (JoinRequest, JoinState, LeaderChange, Down, Up)):
            return None  # a peer's join, as may_send found; coordination was refused before
        if isinstance(msg, Publish):
            role = self._roots.get(msg.event.type)
            if role is None:
                if len(self._roots) >= 4096:
                    self._roots.clear()
                role = self._roots[msg.event.type] = self.roster.root(msg.event.type)
            if role not in self.hosted:
                return f"{self.me} hosts no replica of {role_name(role)}"
            if sender in self.roster.publishers or sender in placement[role]:
                return None
            return f"{sender} is neither a publisher nor a replica of {role_name(role)}"
        role = msg.role
        if isinstance(msg, Ordered):
            if msg.publisher != self.me or not is_root(role) or sender not in placement.get(role, ()):
                return f"{sender} is not a replica of a root role acknowledging {self.me}'s publications"
            return None
        if isinstance(msg, _STREAM):
            if role not in self.reads or sender not in placement[role]:
                return f"{sender} is not a replica of {role_name(role)}, or {self.me} does not read it"
            return None
        if role not in self.hosted:
            return f"{self.me} hosts no replica of {role_name(role)}"
        if isinstance(msg, _REPLICATION):
            return None if sender in placement[role] else f"{sender} is not a replica of {role_name(role)}"
        keys = self.consumers[role].get(sender, frozenset())
        if msg.consumer not in keys:
            return f"{sender} does not read {role_name(role)} as consumer {msg.consumer}"
        if isinstance(msg, MarkerRequest) and not is_subscriber(msg.consumer):
            return "only a subscriber joins at a marker"
        if isinstance(msg, Register) and msg.request != (sender if is_subscriber(msg.consumer) else msg.consumer):
            return f"registers for {msg.request}, not in its own name"
        if isinstance(msg, (Register, MarkerRequest)) and is_subscriber(msg.consumer):
            # Subscribers of one key share its filter marks: another filter under the key would
            # change what the others receive.
            if msg.filter != self.filters[(sender, role)]:
                return f"registers a filter its subscription does not have for {role_name(role)}"
        return None


__all__ = ["Authority", "Refusal", "Roster"]
