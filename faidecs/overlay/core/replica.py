"""One replica of one merger role: the protocol core, with no I/O inside.

The replica is a state machine. :meth:`handle` takes one message and the current time and returns
the messages to send; :meth:`tick` does the same for the passage of time (heartbeats, retries).
The simulator and the real runtime drive it identically.

Protocol (docs/overlay.md has the pictures):

- Every replica receives the role's inputs itself: publications for a root merger ``[T]`` (each
  publisher sends to every replica), or the committed streams of the left and right parents for a
  conjunction merger (each replica reads one replica of each parent, and fails over to another).
- The leader, named with its epoch by the coordination service, decides the merge order: it
  appends each input, in the order it receives them, as a :class:`Decision` and sends only the
  decisions, stamped (role, epoch, position), to its peers. A decision is committed once a majority
  of the replicas hold it. Only committed positions go downstream, so no consumer ever sees an
  order that a later leader could change.
- Decisions travel in batches (as Raft and Multi-Paxos implementations batch): :meth:`handle`
  and :meth:`tick` change the state; :meth:`flush` decides what arrived since the last flush,
  sends the new decisions to each peer as one :class:`Decide`, and each consumer what was
  committed since as one :class:`ForwardBatch`. A follower answers a batch with one
  :class:`Holds`. The leader does not wait for a batch's majority before it flushes the next
  (pipelining). With ``batching`` off, every :meth:`handle` and :meth:`tick` flushes at its end;
  with it on, the driver flushes after each pass over the messages it read (the runtime) or
  at most every ``batch_ms`` (the simulator), so that a batch holds what arrived meanwhile.
- A new leader queries its peers; with a majority of answers it adopts the log of the answer with
  the highest log epoch, then the longest (the rule of Viewstamped Replication), which contains
  every committed decision, and sends it to its peers. Decisions of an older epoch are rejected.
- Consumers register a filter (the unary predicates they need); the registration is itself a
  decision (a *mark*), so every replica filters each consumer's stream from the same positions.
  A conjunction merger widens what its parents send it first, and logs the consumer's mark only
  after its parents' marks for it (*upmarks*) are in its own log.
- A subscriber may instead join at a *marker* (LoCaPS, docs/overlay.md, "Marker joins"): any replica
  whose committed stream covers the subscriber's filter at its commit index ``c`` (a root always
  does; a conjunction merger when its committed upmarks cover the filter on both sides) serves it
  from ``c`` on with the subscriber's own filter on that link. Nothing is decided: the marker is
  a position of the committed stream, the same at every replica.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from operator import attrgetter, itemgetter

from faidecs.errors import FaidecsError
from faidecs.matching.events import Event
from faidecs.merging.filters import Filter, union_all
from faidecs.merging.roles import Role, is_root, role_name
from faidecs.overlay.core.journal import Input, JournalDelta, Restored, common_prefix
from faidecs.overlay.core.keys import is_subscriber, merger_key
from faidecs.overlay.core.messages import (
    Ack,
    Commit,
    Connect,
    Decide,
    Decision,
    Disconnect,
    Down,
    Entry,
    EntryKind,
    EpochQuery,
    EpochState,
    Fetch,
    Forward,
    ForwardBatch,
    Holds,
    LeaderChange,
    MarkerReply,
    MarkerRequest,
    Message,
    NewLog,
    Ordered,
    Publish,
    Register,
    Send,
    Up,
)
from faidecs.overlay.core.replica_state import (
    Consumers,
    EpochMessage,
    Inputs,
    Link,
    ReplicatedLog,
    Upstream,
)

Placement = Callable[[Role], tuple[str, ...]]
#: Messages held per sender for an epoch the coordination service has not named yet.
EARLY_LIMIT = 4096
CommitHook = Callable[[Role, Decision, "Event | None"], None]


class ProtocolError(FaidecsError, RuntimeError):
    """A replica reached a state the protocol rules out, or got a message it cannot place: a
    bug (its own or a peer's), never bad input. A :class:`FaidecsError` like every error faidecs
    raises, and still a :class:`RuntimeError`, as it was."""


class MergerReplica:
    """One replica of ``role`` at process ``me``. Besides its identity and settings, its state is
    four parts: :attr:`log` (the decisions and the replication protocol's view of them),
    :attr:`inputs` (what it orders), :attr:`consumers` (who reads its committed stream) and
    :attr:`upstream` (the parents a conjunction merger reads); :attr:`down` is the processes the
    coordination service reports down."""

    def __init__(
        self,
        role: Role,
        me: str,
        placement: Placement,
        *,
        heartbeat_every: int = 50,
        retry_every: int = 200,
        retain: int = 2000,
        ack_every: int = 50,
        on_commit: CommitHook | None = None,
        amnesic: bool = False,
        lossy_inputs: bool = False,
        fifo_inputs: bool = False,
        batching: bool = False,
        max_batch: int = 128,
        durable: bool = False,
        ack_publishers: bool = False,
    ):
        """``amnesic``: this replica ran before and lost its log (a restarted process). Until a
        leader gives it the role's log it has no say in a recovery: its empty log would let a new
        leader drop committed decisions.

        ``lossy_inputs`` (a root merger whose publishers send over an unordered, lossy path,
        docs/ordering-latch-stage.md): a publication decided by the leader may never reach this
        replica, so it asks its peers for the payload of each committed position it lacks
        (:class:`Fetch`, once per ``retry_every``) instead of waiting for it for ever.
        ``fifo_inputs``: the leader never decides a publisher's event below one of that
        publisher's it already decided (a late input, counted in ``inputs.late_inputs`` and never
        ordered), so the decided events of each publisher stay in seq order across leader changes
        too. Both are off on the overlay's own reliable FIFO links, where they change nothing.

        ``batching``: the driver calls :meth:`flush` (otherwise every :meth:`handle` and
        :meth:`tick` does). ``max_batch``: the most decisions one :class:`Decide` carries and the
        most positions one :class:`ForwardBatch` does; a decision or position with a filter (a
        mark) ends its batch, so that a message holds at most one filter.

        ``durable``: the replica records what it changes for the driver to keep on disk
        (:meth:`take_journal`, :mod:`faidecs.overlay.core.journal`); a restarted one is given it
        back with :meth:`restore` before it starts, and keeps its vote.

        ``ack_publishers`` (a root merger): leading, it tells each publisher which of its
        publications are committed (:class:`Ordered`), so that the publisher's outbox lets them
        go, and acknowledges again a resent one it had ordered."""
        self.role = role
        self.me = me
        self.placement = placement
        self.replicas = placement(role)
        if me not in self.replicas:
            raise ValueError(f"{me} is not a replica of {role_name(role)}")
        self.majority = len(self.replicas) // 2 + 1
        self.key = merger_key(role)
        self.heartbeat_every = heartbeat_every
        self.retry_every = retry_every
        self.retain = retain
        self.ack_every = ack_every
        self.on_commit = on_commit
        self.amnesic = amnesic
        self.lossy_inputs = lossy_inputs
        self.fifo_inputs = fifo_inputs
        self.batching = batching
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, not {max_batch}")
        self.max_batch = max_batch
        self.down: set[str] = set()  # processes the coordination service reports down
        self.log = ReplicatedLog()
        self.inputs = Inputs(fetched_at=-retry_every)
        self.consumers = Consumers()
        self.upstream = Upstream.of(role)
        self.durable = durable
        self.ack_publishers = ack_publishers and is_root(role)
        # The journal: what the disk holds (_on_disk), and the inputs not on it yet.
        self._new_inputs: list[Input] = []
        self._disk_len = self._stable = 0
        self._on_disk()  # an empty disk holds the empty state

    # --- driving -------------------------------------------------------------------------------

    def start(self, now: int) -> list[Send]:
        out: list[Send] = []
        for side in self.upstream.sides:
            out += self._read_from(side, now)
        return out

    def handle(self, sender: str, msg: Message, now: int) -> list[Send]:
        out = self._handle(sender, msg, now)
        return out if self.batching else out + self.flush(now)

    def flush(self, now: int) -> list[Send]:
        """Close the batch: decide what arrived since the last flush (leading), send the
        decisions not sent yet to the peers, and the consumers what was committed since."""
        out: list[Send] = []
        if self.is_leading():
            out += self._decide_arrivals(now)
            self.log.holds[self.me] = self.held()
            self._advance_commit(now)  # a majority of one commits at once
            out += self._announce()
        return out + self._forward(now)

    def _handle(self, sender: str, msg: Message, now: int) -> list[Send]:
        match msg:
            case Publish():
                return self._item(msg.publisher, msg.seq, msg.event, now, msg.prev)
            case Forward():
                return self._upstream(sender, msg.role, msg.consumer, (msg,), now)
            case ForwardBatch():
                return self._upstream(sender, msg.role, msg.consumer, msg.entries, now)
            case Decide():
                return self._on_decide(sender, msg, now) if self._from_leader(sender, msg) else []
            case Holds():
                return self._on_holds(msg, now)
            case Commit():
                if self._from_leader(sender, msg) and self.log.status == "normal":
                    self._set_commit(min(msg.commit, len(self.log.decisions) - 1), now)
                return []
            case LeaderChange():
                return self._on_leader_change(msg, now)
            case EpochQuery():
                return self._on_epoch_query(msg) if self._from_leader(sender, msg) else []
            case EpochState():
                return self._on_epoch_state(msg, now)
            case NewLog():
                return self._on_new_log(sender, msg, now) if self._from_leader(sender, msg) else []
            case Register():
                return self._on_register(msg, now)
            case Connect():
                return self._on_connect(msg, now)
            case MarkerRequest():
                return self._on_marker_request(msg, now)
            case Fetch():
                return self._on_fetch(msg)
            case Disconnect():
                # Sent to every replica: a consumer that left must not hold back dropping payloads.
                self.consumers.links.pop((msg.consumer, msg.process), None)
                self.consumers.acks.pop((msg.consumer, msg.process), None)
                self._trim(now)
                return []
            case Ack():
                return self._on_ack(msg, now)
            case Down():
                return self._on_down(msg.process, now)
            case Up():
                return self._on_up(msg.process, now)
        raise ProtocolError(f"{role_name(self.role)} at {self.me}: unexpected {type(msg).__name__}")

    def tick(self, now: int) -> list[Send]:
        out: list[Send] = []
        up, log = self.upstream, self.log
        ack = now - up.last_ack >= self.ack_every
        if ack:
            up.last_ack = now
        for side, parent in up.sides.items():
            if up.reading[side] is None:
                out += self._read_from(side, now)
            if ack and up.received[side] > up.acked[side]:
                up.acked[side] = up.received[side]
                out += [(p, Ack(parent, self.key, self.me, up.received[side])) for p in self.placement(parent)]
        if self.is_leading() and log.commit > log.commit_sent:
            log.commit_sent = log.commit
            out += [(p, Commit(self.role, log.epoch, log.commit)) for p in self.replicas if p != self.me]
        if self.is_leading():
            serves_subscribers = any(is_subscriber(c) for c in self.consumers.marks)
            if serves_subscribers and now - log.last_decided_at >= self.heartbeat_every:
                out += self._decide("heartbeat", now)
            out += self._drive_pending(now)
        if self.lossy_inputs and now - self.inputs.fetched_at >= self.retry_every:
            out += self._fetch_missing(now)
        return out if self.batching else out + self.flush(now)

    def is_leading(self) -> bool:
        return self.log.leader == self.me and self.log.status == "normal"

    # --- inputs ----------------------------------------------------------------------------

    def _upstream(
        self, sender: str, role: Role, consumer: str, positions: Sequence[Forward | Entry], now: int
    ) -> list[Send]:
        """Positions of a parent's stream (a Forward's, or a ForwardBatch's entries)."""
        up = self.upstream
        side = "L" if role == up.sides.get("L") else "R" if role == up.sides.get("R") else None
        if side is None:
            raise ProtocolError(f"{role_name(self.role)} at {self.me}: stream of {role_name(role)} is no input")
        if sender != up.reading[side]:
            # Only the replica it reads feeds a side: a copy from the one it read before failing
            # over says nothing new (that one resends from ``received``), and another sender's
            # positions would be ahead of the stream it reads, which it would then skip.
            up.foreign += len(positions)
            return []
        out: list[Send] = []
        for e in positions:
            if e.position <= up.received[side]:
                continue  # a copy from the replica we read before failing over
            up.received[side] = e.position
            if e.kind == "event" and e.event is not None:
                out += self._item(side, e.position, e.event, now)
            elif e.kind == "mark" and consumer == self.key and e.filter is not None:
                out += self._item(side, e.position, e.filter, now)
        return out

    def _item(self, source: str, key: int, payload: Event | Filter, now: int, prev: int = -1) -> list[Send]:
        k = (source, key)
        inputs = self.inputs
        if k in inputs.items:
            held = inputs.items[k]
            if held is not None and held != payload:  # a publisher's bug, or a forgery: never ordered
                inputs.conflicting += 1
                inputs.last_conflict = k
            elif (
                self.ack_publishers and self._position_of().get(k, self.consumers.ordered + 1) <= self.consumers.ordered
            ):
                inputs.reacks.setdefault(source, []).append(key)  # resent: its first Ordered was lost
            return []
        inputs.items[k] = payload
        inputs.arrivals.append(k)  # the leader decides it at the next flush
        if prev >= 0:
            inputs.prev[k] = prev
        if self.durable:
            self._new_inputs.append((source, key, payload, prev))
        out: list[Send] = []
        if self.lossy_inputs and k in inputs.decided:  # a payload this replica lacked: it now holds more
            log = self.log
            if self.is_leading():
                log.holds[self.me] = self.held()
                self._advance_commit(now)
            elif log.status == "normal" and log.leader is not None:
                out.append((log.leader, Holds(self.role, log.epoch, self.me, self.held())))
        return out

    def _read_from(self, side: str, now: int) -> list[Send]:
        """(Re)connect to a live replica of the parent on ``side``, from what we have."""
        up = self.upstream
        parent = up.sides[side]
        live = [p for p in self.placement(parent) if p not in self.down]
        if not live:
            return []
        target = live[0] if up.reading[side] not in live else up.reading[side]
        assert target is not None
        up.reading[side] = target
        return [(target, Connect(parent, self.key, self.me, up.received[side]))]

    # --- deciding (leader) ----------------------------------------------------------------------

    def _decide(
        self,
        kind: EntryKind,
        now: int,
        *,
        source: str = "",
        key: int = -1,
        consumer: str = "",
        request: str = "",
        filter: Filter | None = None,
    ) -> list[Send]:
        log = self.log
        d = Decision(len(log.decisions), log.epoch, max(now, log.last_ts), kind, source, key, consumer, request, filter)
        self._append(d)
        log.last_decided_at = now
        return []  # the peers get it, and it counts towards a majority, at the next flush

    def _announce(self) -> list[Send]:
        """The decisions not sent to the peers yet, in batches of at most ``max_batch``."""
        log = self.log
        if log.announced >= len(log.decisions):
            return []
        out: list[Send] = []
        peers = [p for p in self.replicas if p != self.me]
        for batch in self._batches(log.decisions, log.announced, len(log.decisions)):
            msg = Decide(self.role, log.epoch, batch, log.commit)
            out += [(p, msg) for p in peers]
        log.announced = len(log.decisions)
        return out

    def _batches(self, decisions: list[Decision], start: int, end: int) -> list[tuple[Decision, ...]]:
        """``decisions[start:end]`` cut into batches (:func:`_cuts`); the positions with a filter
        are few, and the log keeps them (``log.filtered``)."""
        return [tuple(decisions[a:b]) for a, b in _cuts(start, end, self.max_batch, self.log.filtered)]

    def _decide_arrivals(self, now: int) -> list[Send]:
        out: list[Send] = []
        inputs = self.inputs
        upmarked = False
        while inputs.next_arrival < len(inputs.arrivals):
            k = inputs.arrivals[inputs.next_arrival]
            inputs.next_arrival += 1
            if k in inputs.decided:
                continue
            payload = inputs.items[k]
            if isinstance(payload, Filter):
                out += self._decide("upmark", now, source=k[0], key=k[1], filter=payload)
                upmarked = True
            elif self.fifo_inputs and k[1] <= inputs.highest.get(k[0], -1):
                inputs.late_inputs += 1  # a later one of its publisher is decided: never ordered
            else:
                self._decide_in_order(k, now)
        if upmarked:
            out += self._drive_pending(now)
        return out

    def _decide_in_order(self, k: tuple[str, int], now: int) -> None:
        """Decide publication ``k`` once its publisher's previous one to this role is decided (it
        waits, parked, otherwise), then those that waited for it, in turn."""
        inputs = self.inputs
        prev = inputs.prev.get(k, -1)
        if prev >= 0 and (k[0], prev) not in inputs.decided:
            inputs.parked.setdefault((k[0], prev), []).append(k)
            return
        todo = [k]
        while todo:
            k = todo.pop()
            if k in inputs.decided:
                continue
            self._decide("event", now, source=k[0], key=k[1])
            todo += reversed(inputs.parked.pop(k, []))

    def _append(self, d: Decision) -> None:
        """Append ``d`` to the log and to what is derived from it: the inputs it decides, the
        consumers' marks."""
        log = self.log
        if d.position != len(log.decisions):
            raise ProtocolError(
                f"{role_name(self.role)} at {self.me}: decision {d.position} after {len(log.decisions)}"
            )
        log.decisions.append(d)
        if d.filter is not None:
            log.filtered.append(d.position)
        log.last_ts = max(log.last_ts, d.ts)
        if d.kind in ("event", "upmark"):
            self.inputs.decided.add((d.source, d.key))
        if d.kind == "event" and self.inputs.position_of is not None:
            self.inputs.position_of[(d.source, d.key)] = d.position
        if d.kind == "event" and self.fifo_inputs:
            self.inputs.highest[d.source] = max(self.inputs.highest.get(d.source, -1), d.key)
        if d.kind == "mark" and d.filter is not None:
            self.consumers.marks.setdefault(d.consumer, []).append((d.position, d.filter, d.request))

    def _position_of(self) -> dict[tuple[str, int], int]:
        inputs = self.inputs
        if inputs.position_of is None:
            inputs.position_of = {(d.source, d.key): d.position for d in self.log.decisions if d.kind == "event"}
        return inputs.position_of

    def _rebuild(self, decisions: list[Decision], decided: set[tuple[str, int]] | None = None) -> None:
        """Replace the log with ``decisions``, and what is derived from it; every arrival is
        looked at again (one the old log decided may not be in this one). What :meth:`_append`
        derives is derived for the whole log at once, mostly in C: a recovered log may hold
        millions of decisions. ``decided``: their events' and upmarks' keys, when known."""
        if self.durable:
            self._stable = min(self._stable, common_prefix(self.log.decisions, decisions))
        if list(map(_POSITION, decisions)) != list(range(len(decisions))):
            raise ProtocolError(f"{role_name(self.role)} at {self.me}: a log whose positions do not follow on")
        log, inputs = self.log, self.inputs
        log.decisions = decisions
        log.filtered = [d.position for d in decisions if d.filter is not None]
        log.last_ts = max(map(_TS, decisions), default=0)
        if decided is None:
            # Every event and upmark; a mark or heartbeat has no source ("", -1), never an input's.
            decided = set(map(_KEY, decisions))
            decided.discard(("", -1))
        inputs.decided = decided
        inputs.highest, inputs.fetch_from, inputs.parked, inputs.position_of = {}, 0, {}, None
        if self.fifo_inputs:
            for d in decisions:
                if d.kind == "event":
                    inputs.highest[d.source] = max(inputs.highest.get(d.source, -1), d.key)
        self.consumers.marks = {}
        for p in log.filtered:
            d = decisions[p]
            if d.kind == "mark" and d.filter is not None:
                self.consumers.marks.setdefault(d.consumer, []).append((d.position, d.filter, d.request))
        inputs.next_arrival = 0

    # --- registration and filters -------------------------------------------------------------

    def _on_register(self, msg: Register, now: int) -> list[Send]:
        if not self.is_leading():
            return []  # every replica gets it; the leader acts, the consumer retries on a leader change
        marks = self.consumers.marks.get(msg.consumer, [])
        if is_subscriber(msg.consumer):
            if any(r == msg.request for _, _, r in marks):
                return []
        elif marks and marks[-1][1].covers(msg.filter):
            return []
        if is_root(self.role):
            # What arrived before it is decided before it, as without batches.
            out = self._decide_arrivals(now)
            return out + self._decide("mark", now, consumer=msg.consumer, request=msg.request, filter=msg.filter)
        self.upstream.pending[(msg.consumer, msg.request)] = msg.filter
        return self._drive_pending(now)

    def _upfilter(self, side: str) -> Filter:
        for d in reversed(self.log.decisions):
            if d.kind == "upmark" and d.source == side and d.filter is not None:
                return d.filter
        return Filter.nothing()

    def _drive_pending(self, now: int) -> list[Send]:
        up = self.upstream
        if not up.pending or not self.is_leading():
            return []
        out: list[Send] = []
        current = [m[-1][1] for m in self.consumers.marks.values() if m]
        need = union_all(current + list(up.pending.values()))
        have = {side: self._upfilter(side) for side in up.sides}
        for side, parent in up.sides.items():
            want = need.restrict(parent)
            if have[side].covers(want):
                continue
            asked = up.asked.get(side)
            if asked is None or not asked[0].covers(want) or now - asked[1] >= self.retry_every:
                up.asked[side] = (want, now)
                out += [(p, Register(parent, self.key, self.key, want)) for p in self.placement(parent)]
        for (consumer, request), f in list(up.pending.items()):
            if all(have[s].covers(f.restrict(parent)) for s, parent in up.sides.items()):
                del up.pending[(consumer, request)]
                out += self._decide("mark", now, consumer=consumer, request=request, filter=f)
        return out

    # --- joins at a marker (LoCaPS) ---------------------------------------------------------------

    def covers_at(self, f: Filter, position: int) -> bool:
        """Whether the committed stream after ``position`` holds every event ``f`` passes (as far
        as the roots order it): a root's always does; a conjunction merger's does when the last
        upmark of each side at or before ``position`` covers ``f`` restricted to that parent's
        types. Filters only widen, so this stays true for every later position."""
        if is_root(self.role):
            return set(f.alternatives) <= set(self.role)
        sides = self.upstream.sides
        return all(self._upfilter_at(side, position).covers(f.restrict(parent)) for side, parent in sides.items())

    def _upfilter_at(self, side: str, position: int) -> Filter:
        for d in reversed(self.log.decisions[: position + 1]):
            if d.kind == "upmark" and d.source == side and d.filter is not None:
                return d.filter
        return Filter.nothing()

    def _serves_subscribers_at(self, position: int) -> bool:
        return any(is_subscriber(c) and any(p <= position for p, _, _ in m) for c, m in self.consumers.marks.items())

    def marker_for(self, f: Filter, heartbeats: bool) -> int | None:
        """The marker this replica would place for a subscriber stream with filter ``f``: its
        commit index, or None when its committed stream does not cover ``f`` there (or, with
        ``heartbeats``, no subscriber's mark is committed yet, so the leader logs no heartbeats)."""
        if self.amnesic:
            return None  # its log is not the role's yet
        c = self.log.commit
        if not self.covers_at(f, c):
            return None
        if heartbeats and not self._serves_subscribers_at(c):
            return None
        return c

    def _on_marker_request(self, msg: MarkerRequest, now: int) -> list[Send]:
        k = (msg.consumer, msg.process)
        consumers = self.consumers
        out: list[Send] = []
        if msg.after is not None:
            after = msg.after  # failover of a stream that started at a marker: coverage holds on
            if after < consumers.trimmed:
                consumers.refused_connects += 1
                return []
            marker = None
        else:
            link = consumers.links.get(k)
            if link is not None and link.marker is not None:
                # A repeated request (our reply may still be on its way): the same marker, same link.
                return [
                    (msg.process, MarkerReply(self.role, msg.consumer, link.marker, self._ts_at(link.marker), True))
                ]
            found = self.marker_for(msg.filter, msg.heartbeats)
            if found is None:
                out.append((msg.process, MarkerReply(self.role, msg.consumer, -1, 0, False)))
                if self.is_leading():  # start the climb now: the subscriber registers too
                    out += self._on_register(Register(self.role, msg.consumer, msg.process, msg.filter), now)
                return out
            after = marker = found
            out.append((msg.process, MarkerReply(self.role, msg.consumer, found, self._ts_at(found), True)))
        consumers.links[k] = Link(msg.consumer, msg.process, after, filter=msg.filter, marker=marker)
        consumers.acks[k] = max(consumers.acks.get(k, -1), after)
        return out  # the stream follows at the next flush

    def _ts_at(self, position: int) -> int:
        return self.log.decisions[position].ts if position >= 0 else 0

    def filter_at(self, consumer: str, position: int) -> Filter | None:
        """The filter of ``consumer`` at ``position``; None before its first mark."""
        marks = self.consumers.marks.get(consumer)
        if not marks:
            return None
        k = bisect_right([m[0] for m in marks], position)
        return marks[k - 1][1] if k else None

    # --- replication ----------------------------------------------------------------------------

    def _from_leader(self, sender: str, msg: EpochMessage) -> bool:
        """Whether ``msg`` comes from the leader the coordination service named for its epoch,
        the one epoch this replica takes decisions and queries of. One of an older epoch is
        turned away; one of an epoch the service has not named here yet is held (a leader may
        hear of its election first) until the service names its sender leader of that epoch:
        an epoch a process chose for itself never takes a role over."""
        log = self.log
        if msg.epoch < log.epoch:
            log.stale_rejected += 1
            return False
        if msg.epoch > log.epoch:
            early = log.early.setdefault(sender, [])
            if len(early) < EARLY_LIMIT:
                early.append(msg)
            else:
                log.unconfirmed += 1
            return False
        if sender != log.leader or (isinstance(msg, EpochQuery) and msg.leader != sender):
            log.unconfirmed += 1
            return False
        return True

    def _confirm_early(self, now: int) -> list[Send]:
        """After a leader change: what its leader sent early for this epoch, in the order sent."""
        log = self.log
        early, log.early = log.early, {}
        out: list[Send] = []
        for sender, msgs in early.items():
            for msg in msgs:
                if msg.epoch > log.epoch:
                    log.early.setdefault(sender, []).append(msg)
                elif msg.epoch == log.epoch and sender == log.leader:
                    out += self.handle(sender, msg, now)
                else:
                    log.unconfirmed += 1
        return out

    def _on_decide(self, sender: str, msg: Decide, now: int) -> list[Send]:
        log = self.log
        if log.status != "normal":
            return []  # cannot happen on FIFO links: a new leader's log precedes its decisions
        batch = msg.decisions
        if not batch or batch[-1].position < len(log.decisions):
            return []  # nothing this replica lacks
        first = batch[0].position
        if first > len(log.decisions):
            # Decisions were lost on the way (the link was dropped while this process was thought
            # down): say what we hold; the leader resends from there.
            return [(sender, Holds(self.role, log.epoch, self.me, self.held()))]
        for d in batch[len(log.decisions) - first :]:
            self._append(d)  # a batch whose positions do not follow on is refused here
        self._set_commit(min(msg.commit, len(log.decisions) - 1), now)
        return [(sender, Holds(self.role, log.epoch, self.me, self.held()))]

    def _on_holds(self, msg: Holds, now: int) -> list[Send]:
        log = self.log
        if msg.epoch != log.epoch or not self.is_leading():
            return []
        before = log.holds.get(msg.replica, 0)
        length = msg.length
        if length > len(log.decisions):  # no follower holds what was never decided
            log.overclaimed += 1
            length = len(log.decisions)
        log.holds[msg.replica] = max(before, length)
        out: list[Send] = []
        # Every Decide a follower appends raises its length: one that does not is a follower that
        # missed decisions. Resend what it lacks, at most once per retry interval.
        if length <= before and length < len(log.decisions):
            if now - log.resent_at.get(msg.replica, -self.retry_every) >= self.retry_every:
                log.resent_at[msg.replica] = now
                resend = self._batches(log.decisions, msg.length, log.announced)
                out += [(msg.replica, Decide(self.role, log.epoch, batch, log.commit)) for batch in resend]
        self._advance_commit(now)
        return out

    def _advance_commit(self, now: int) -> None:
        holds = self.log.holds
        lengths = sorted((holds.get(r, 0) for r in self.replicas), reverse=True)
        new = lengths[self.majority - 1] - 1
        # Followers learn the commit index from the next batch of decisions, or from the next
        # tick's Commit: one message per tick, not one per position.
        self._set_commit(new, now)

    def _set_commit(self, commit: int, now: int) -> None:
        """Committed up to ``commit``; the consumers get it at the next flush."""
        log = self.log
        if commit <= log.commit:
            return
        log.events_committed += sum(d.kind == "event" for d in log.decisions[log.commit + 1 : commit + 1])
        log.commit = commit
        while len(log.committed_at) <= commit:
            log.committed_at.append(now)

    def _on_leader_change(self, msg: LeaderChange, now: int) -> list[Send]:
        log = self.log
        if msg.role != self.role or msg.epoch <= log.epoch:
            return []
        if msg.epoch < log.log_epoch:
            # Epochs only grow while the coordination service keeps its data: this log, from a
            # disk, is of a later epoch than the one it names now. Its data was lost (or another
            # service's was given): no leader of this epoch may judge a log of a later one.
            raise ProtocolError(
                f"{role_name(self.role)} at {self.me}: the coordination service names epoch {msg.epoch}, "
                f"but this replica's log is of epoch {log.log_epoch}: did ZooKeeper lose its data?"
            )
        log.epoch, log.leader, log.holds = msg.epoch, msg.leader, {}
        self.upstream.pending.clear()
        self.upstream.asked.clear()
        if msg.leader != self.me:
            log.status = "waiting"
            return self._confirm_early(now)
        log.status = "recovering"
        log.recovery = {} if self.amnesic else {self.me: self._state()}
        out: list[Send] = [(p, EpochQuery(self.role, log.epoch, self.me)) for p in self.replicas if p != self.me]
        return out + self._maybe_recover(now) + self._confirm_early(now)

    def _state(self) -> EpochState:
        # With lossy inputs a replica vouches only for the decisions whose payloads it holds, as
        # its Holds do: a committed one is then in a majority's answers, payload and all.
        log = self.log
        return EpochState(self.role, log.epoch, self.me, log.log_epoch, tuple(log.decisions[: self.held()]), log.commit)

    def _on_epoch_query(self, msg: EpochQuery) -> list[Send]:
        if self.amnesic:
            return []  # an empty log after a restart must not count towards a recovery majority
        self.log.status = "waiting"
        return [(msg.leader, self._state())]

    def _on_epoch_state(self, msg: EpochState, now: int) -> list[Send]:
        if msg.epoch != self.log.epoch or self.log.status != "recovering":
            return []
        self.log.recovery[msg.replica] = msg
        return self._maybe_recover(now)

    def _maybe_recover(self, now: int) -> list[Send]:
        log = self.log
        if len(log.recovery) < self.majority:
            return []
        best = max(log.recovery.values(), key=lambda s: (s.log_epoch, len(s.decisions)))
        commit = max(s.commit for s in log.recovery.values())
        log.recovery = {}
        self._rebuild(list(best.decisions))
        log.log_epoch = log.epoch
        log.status = "normal"
        log.holds = {self.me: self.held()}
        decisions = tuple(log.decisions)
        log.announced = len(decisions)  # the NewLog carries them
        out: list[Send] = [(p, NewLog(self.role, log.epoch, decisions, commit)) for p in self.replicas if p != self.me]
        self._set_commit(min(commit, len(log.decisions) - 1), now)
        self._advance_commit(now)
        return out  # what arrived meanwhile is decided at the next flush

    def _on_new_log(self, sender: str, msg: NewLog, now: int) -> list[Send]:
        log = self.log
        committed = log.decisions[: log.commit + 1]
        if list(msg.decisions[: len(committed)]) != committed:
            raise ProtocolError(f"{role_name(self.role)} at {self.me}: epoch {msg.epoch} rewrites committed decisions")
        log.epoch, log.leader, log.log_epoch, log.status = msg.epoch, sender, msg.epoch, "normal"
        self.amnesic = False
        self._rebuild(list(msg.decisions))
        self._set_commit(min(msg.commit, len(log.decisions) - 1), now)
        return [(sender, Holds(self.role, log.epoch, self.me, self.held()))]

    def _on_down(self, process: str, now: int) -> list[Send]:
        self.down.add(process)
        consumers, up = self.consumers, self.upstream
        for k in [k for k in consumers.links if k[1] == process]:
            del consumers.links[k]
        if not self.durable:
            # A durable deployment's consumer comes back from its disk wanting what follows its
            # last acknowledgement: its position keeps holding back the payloads' drop (one that
            # leaves for good says so, Disconnect). Otherwise it comes back with nothing.
            for k in [k for k in consumers.acks if k[1] == process]:
                del consumers.acks[k]
        out: list[Send] = []
        for side, reading in up.reading.items():
            if reading == process:
                up.reading[side] = None
                out += self._read_from(side, now)
        return out

    def _on_up(self, process: str, now: int) -> list[Send]:
        self.down.discard(process)
        log, up = self.log, self.upstream
        out: list[Send] = []
        if process in self.replicas and process != self.me:
            if log.status == "recovering" and log.leader == self.me and process not in log.recovery:
                # A peer that was down when this leader asked (a role whose replicas all
                # restarted): its answer may be the one a majority still lacks.
                out.append((process, EpochQuery(self.role, log.epoch, self.me)))
            elif self.is_leading():
                # It may have restarted with nothing, or missed decisions while thought down.
                out.append((process, NewLog(self.role, log.epoch, tuple(log.decisions), log.commit)))
        if process == self.me:  # our session had expired: upstream dropped our links
            return out + [m for side in up.sides for m in self._read_from(side, now)]
        # A parent whose replicas were all down is read again as soon as one is back; the replica
        # read is asked again when it is back (it dropped the link with its old session, or a
        # restarted replica asked it while it was down, not knowing).
        return out + [
            m for side, r in up.reading.items() if r is None or r == process for m in self._read_from(side, now)
        ]

    # --- inputs a lossy path lost (lossy_inputs) ----------------------------------------------------

    def held(self) -> int:
        """How many decisions this replica holds: all of them, or with ``lossy_inputs`` those
        before the first whose payload never arrived (what Holds and EpochState report, so that
        a committed publication is held, payload and all, by a majority). O(1) amortised."""
        decisions = self.log.decisions
        if not self.lossy_inputs:
            return len(decisions)
        inputs = self.inputs
        while inputs.fetch_from < len(decisions):
            d = decisions[inputs.fetch_from]
            if d.kind == "event" and (d.source, d.key) not in inputs.items:
                break
            inputs.fetch_from += 1
        return inputs.fetch_from

    def _fetch_missing(self, now: int, limit: int = 64) -> list[Send]:
        """Ask the peers for the payloads of decided positions that never arrived here."""
        start = self.held()
        decisions, inputs = self.log.decisions, self.inputs
        missing = [
            p
            for p in range(start, len(decisions))
            if decisions[p].kind == "event" and (decisions[p].source, decisions[p].key) not in inputs.items
        ][:limit]
        if not missing:
            return []
        inputs.fetched_at = now
        inputs.fetches += len(missing)
        peers = [r for r in self.replicas if r != self.me and r not in self.down]
        return [(peer, Fetch(self.role, self.me, p)) for p in missing for peer in peers]

    def _on_fetch(self, msg: Fetch) -> list[Send]:
        decisions = self.log.decisions
        if msg.position >= len(decisions):
            return []
        d = decisions[msg.position]
        payload = self.inputs.items.get((d.source, d.key)) if d.kind == "event" else None
        if not isinstance(payload, Event):
            return []  # not here either, or dropped after every acknowledgement
        return [(msg.replica, Publish(d.source, d.key, payload))]

    # --- downstream -----------------------------------------------------------------------------

    def _on_ack(self, msg: Ack, now: int) -> list[Send]:
        consumers, k = self.consumers, (msg.consumer, msg.process)
        # A consumer reading this replica has no more than it was sent: trusting more would drop
        # payloads that link still has to send. (A consumer reading another replica may be ahead
        # of this one; _trim never drops beyond the commit point anyway.)
        position = msg.position
        link = consumers.links.get(k)
        if link is not None and position > link.sent:
            consumers.bad_acks += 1
            position = link.sent
        consumers.acks[k] = max(consumers.acks.get(k, -1), position)
        self._trim(now)
        return []

    def _on_connect(self, msg: Connect, now: int) -> list[Send]:
        consumers = self.consumers
        if msg.after < consumers.trimmed:
            # Positions after ``after`` were dropped here: serving the link would fail. The
            # consumer reads another replica (or, restarted, adopts a log first).
            consumers.refused_connects += 1
            return []
        k = (msg.consumer, msg.process)
        consumers.links[k] = Link(msg.consumer, msg.process, msg.after)
        consumers.acks[k] = max(consumers.acks.get(k, -1), msg.after)
        return []  # the stream follows at the next flush

    def _forward(self, now: int) -> list[Send]:
        out: list[Send] = []
        consumers = self.consumers
        # Reported first, in commit order: a consumer never gets a position before its commit
        # is reported (a UDP publisher's event is published in the run log by its commit), even
        # from a replica that lacks an earlier payload (it fetches it) after a restart.
        if self.on_commit is not None:
            log, items = self.log, self.inputs.items
            while consumers.reported < log.commit:
                d = log.decisions[consumers.reported + 1]
                payload = items.get((d.source, d.key)) if d.kind == "event" else None
                if d.kind == "event" and payload is None:
                    break
                consumers.reported += 1
                self.on_commit(self.role, d, payload if isinstance(payload, Event) else None)
        for link in consumers.links.values():
            out += self._forward_link(link, now)
        if self.ack_publishers:
            out += self._ordered()
        self._trim(now)
        return out

    def _ordered(self) -> list[Send]:
        """The leader tells each publisher which of its publications were committed since."""
        log, consumers, inputs = self.log, self.consumers, self.inputs
        by: dict[str, list[int]] = inputs.reacks if self.is_leading() else {}
        inputs.reacks = {}
        if self.is_leading():
            for d in log.decisions[consumers.ordered + 1 : log.commit + 1]:
                if d.kind == "event":
                    by.setdefault(d.source, []).append(d.key)
        consumers.ordered = max(consumers.ordered, log.commit)
        return [
            (publisher, Ordered(self.role, publisher, tuple(seqs[k : k + 1024])))
            for publisher, seqs in by.items()
            for k in range(0, len(seqs), 1024)
        ]

    def _forward_link(self, link: Link, now: int) -> list[Send]:
        """What ``link`` gets of the positions committed since it last got something, as
        :class:`ForwardBatch` es of at most ``max_batch`` positions, each ending at a mark."""
        entries = self._link_entries(link, now)
        if not entries:
            return []
        link.sent_at = now
        marks = [k for k, e in enumerate(entries) if e.filter is not None]
        return [
            (link.process, ForwardBatch.of(self.role, link.consumer, tuple(entries[a:b])))
            for a, b in _cuts(0, len(entries), self.max_batch, marks)
        ]

    def _link_entries(self, link: Link, now: int) -> list[Entry]:
        out: list[Entry] = []
        decisions, commit, items = self.log.decisions, self.log.commit, self.inputs.items
        if self.on_commit is not None:
            commit = min(commit, self.consumers.reported)
        subscriber = is_subscriber(link.consumer)
        # The link's filter at each position: its own (a marker's), or its consumer's marks',
        # which change only at a mark (looked up once per stretch between two marks).
        f: Filter | None = link.filter
        marks = self.consumers.marks.get(link.consumer, []) if f is None else []
        starts = [m[0] for m in marks]
        changes_at = -1 if f is None else commit + 1
        while link.sent < commit:
            pos = link.sent + 1
            if pos >= changes_at:
                k = bisect_right(starts, pos)
                f = marks[k - 1][1] if k else None
                changes_at = starts[k] if k < len(starts) else commit + 1
            d = decisions[pos]
            kind = d.kind
            if kind == "event":
                key = (d.source, d.key)
                if key not in items:
                    break  # decided before this replica received it: wait for the input
                if f is not None:
                    payload = items[key]
                    if payload is None:
                        raise ProtocolError(f"{role_name(self.role)} at {self.me}: position {pos} dropped too early")
                    assert isinstance(payload, Event)
                    if f.passes(payload):
                        out.append(Entry(pos, d.ts, "event", payload))
                    elif subscriber and now - link.sent_at >= self.heartbeat_every:
                        # Busy with events this subscriber does not want: tell it time has passed,
                        # or a disjunction would hold its other streams back until the merger idles.
                        out.append(Entry(pos, d.ts, "heartbeat"))
                        link.sent_at = now
            elif kind == "mark" and d.consumer == link.consumer and link.filter is None:
                out.append(Entry(pos, d.ts, "mark", None, d.request, d.filter))
            elif kind == "heartbeat" and subscriber and f is not None:
                out.append(Entry(pos, d.ts, "heartbeat"))
            link.sent = pos
        return out

    def _trim(self, now: int) -> None:
        """Drop inputs every consumer has acknowledged, once committed for ``retain`` time."""
        consumers = self.consumers
        if not consumers.acks:
            return
        log, items = self.log, self.inputs.items
        upto = min(min(consumers.acks.values()), consumers.reported if self.on_commit else log.commit)
        while consumers.trimmed < upto and now - log.committed_at[consumers.trimmed + 1] >= self.retain:
            consumers.trimmed += 1
            d = log.decisions[consumers.trimmed]
            if d.kind == "event" and (d.source, d.key) in items:
                items[(d.source, d.key)] = None

    # --- durability ---------------------------------------------------------------------------------

    def take_journal(self) -> JournalDelta | None:
        """What changed since the last call, for the driver to write to disk before it sends
        anything this replica returned meanwhile; None when nothing did (or not ``durable``)."""
        if not self.durable:
            return None
        log, up = self.log, self.upstream
        n = len(log.decisions)
        keep = min(self._stable, self._disk_len)
        delta = JournalDelta(
            log.log_epoch,
            keep if keep < self._disk_len else None,
            log.decisions[keep:n],
            self._new_inputs,
            {s: p for s, p in up.received.items() if p != self._disk_received.get(s)},
            self.consumers.trimmed,
            dict(self.consumers.acks) if self.consumers.acks != self._disk_acks else None,
        )
        if (
            delta.empty()
            and not delta.received
            and delta.acks is None
            and (delta.trimmed, delta.log_epoch) == (self._disk_trimmed, self._disk_epoch)
        ):
            return None
        self._on_disk()
        return delta

    def journal_base(self) -> JournalDelta | None:
        """The whole state a restart needs, as one delta that replaces what came before it (the
        driver then drops the older records: compaction); None when not ``durable``. Inputs
        every consumer had are left out: their keys are those of the decided events up to
        ``trimmed``. What changed since the last delta is in it."""
        if not self.durable:
            return None
        log, consumers, items, prev = self.log, self.consumers, self.inputs.items, self.inputs.prev
        held: list[Input] = [
            (s, k, p, prev.get((s, k), -1)) for s, k in self.inputs.arrivals if (p := items[(s, k)]) is not None
        ]
        delta = JournalDelta(
            log.log_epoch,
            None,
            list(log.decisions),
            held,
            dict(self.upstream.received),
            consumers.trimmed,
            dict(consumers.acks),
            base=True,
        )
        self._on_disk()
        return delta

    def restore(self, state: Restored) -> None:
        """Take back what a previous run of this replica kept on disk, before :meth:`start`: its
        log, with the vote it gives (not amnesic), and its inputs, which it orders again as they
        arrived, those the log decides excepted. Payloads every consumer had are not kept."""
        self._rebuild(list(state.decisions), state.decided)
        log, inputs, consumers = self.log, self.inputs, self.consumers
        log.log_epoch = state.log_epoch
        # A replica records an input once (a copy is turned away before): no key repeats.
        keys = state.keys if state.keys is not None else list(map(_INPUT_KEY, state.inputs))
        inputs.items = dict(zip(keys, map(_PAYLOAD, state.inputs), strict=True))
        inputs.arrivals = list(keys)
        inputs.prev = dict(zip(keys, map(_PREV, state.inputs), strict=True))  # -1: none
        items = inputs.items
        if not state.dropped:
            for d in log.decisions[: state.trimmed + 1]:
                if d.kind == "event" and (d.source, d.key) in items:
                    items[(d.source, d.key)] = None
        if state.compacted:
            # A compacted journal left out the inputs every consumer had: they are known by key.
            for d in log.decisions[: state.trimmed + 1]:
                if d.kind == "event":
                    items.setdefault((d.source, d.key), None)
        consumers.trimmed = consumers.reported = state.trimmed
        # Consumers not back yet still hold back the drop of what follows their acknowledgement.
        consumers.acks = dict(state.acks)
        self.upstream.received.update(state.received)
        self.amnesic = False
        self._on_disk()

    def _on_disk(self) -> None:
        """The disk now holds this replica's state as it is: what the next delta is measured from.
        ``_stable``: the length below which the log has not changed since (a new leader's log may
        replace an uncommitted tail, _rebuild)."""
        self._new_inputs = []
        self._disk_len = self._stable = len(self.log.decisions)
        self._disk_received = dict(self.upstream.received)
        self._disk_trimmed, self._disk_epoch = self.consumers.trimmed, self.log.log_epoch
        self._disk_acks = dict(self.consumers.acks)

    # --- introspection ---------------------------------------------------------------------------

    def buffered(self) -> int:
        """Inputs held in memory (not yet dropped)."""
        return sum(1 for v in self.inputs.items.values() if v is not None)

    def committed(self) -> list[Decision]:
        return self.log.decisions[: self.log.commit + 1]


_POSITION, _TS, _KEY = attrgetter("position"), attrgetter("ts"), attrgetter("source", "key")
_INPUT_KEY, _PAYLOAD, _PREV = itemgetter(0, 1), itemgetter(2), itemgetter(3)


def _cuts(start: int, end: int, cap: int, marks: list[int]) -> list[tuple[int, int]]:
    """``[start, end)`` cut into ranges of at most ``cap`` items, each ending at the first of the
    sorted positions ``marks`` it holds (items with a filter: a message carries at most one)."""
    out: list[tuple[int, int]] = []
    k = bisect_left(marks, start)
    while start < end:
        stop = min(end, start + cap)
        if k < len(marks) and marks[k] < stop:
            stop = marks[k] + 1
            k += 1
        out.append((start, stop))
        start = stop
    return out


__all__ = ["Consumers", "Inputs", "Link", "MergerReplica", "Placement", "ProtocolError", "ReplicatedLog", "Upstream"]
