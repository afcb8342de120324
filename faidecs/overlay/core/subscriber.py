"""A subscriber client: the embedded engine run on the streams of its mergers.

Each conjunction of the subscription is served by the merger of its type set; conjunctions with
the same type set share one stream (and one engine, which evaluates them together as the embedded
engine would). With several streams (a disjunction over several mergers), the client buffers
entries and releases them in timestamp order — (ts, stream rank, position) — once every stream
has passed that timestamp; mergers' heartbeats keep quiet streams moving. Every client with the
same subscription therefore feeds its engines the same sequence.

A client starts either fresh (it registers its filter and reads from its own mark on, with empty
queues) or from a peer with the identical subscription (it takes the peer's engines and, per
stream, the last position they reflect, and reads from there): it then delivers exactly what the
peer delivers after that point. With ``marker`` it joins LoCaPS-style (docs/overlay.md, "Marker joins"):
it asks the replica it reads for a *marker*, a committed position after which that replica's stream
covers its filter, and starts there with empty queues, without any decision being logged; a stream
whose merger does not cover it yet registers as a fresh client does.

Each delivery has an id, :func:`delivery_id`: the process, the merger stream and position of the
event whose release produced it, and its index among that event's deliveries. With a
:class:`~faidecs.overlay.core.checkpoint.CheckpointPolicy` the client is *durable*: it offers a
checkpoint (its engines and stream positions, the state a peer hands a joiner) every so many
deliveries or milliseconds, acknowledges to its mergers nothing past the last one saved, and a
client started with ``resume`` takes its engines from it and reads each stream again from its
position, as a joiner does from a peer's state: it re-produces the relations since the checkpoint
with the same ids, and those its sinks already recorded (``recorded``) are not delivered again
(docs/overlay.md, "Subscriber checkpoints and delivery ids").
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from faidecs.grammar.model import EventType, Program, Subscription
from faidecs.matching.engine import Engine
from faidecs.matching.events import Event
from faidecs.matching.records import Matcher
from faidecs.merging.filters import Filter
from faidecs.merging.roles import Role, role_name, split_by_role
from faidecs.overlay.core.checkpoint import CheckpointPolicy, SubscriberCheckpoint
from faidecs.overlay.core.keys import stream_filter, stream_key
from faidecs.overlay.core.messages import (
    Ack,
    Connect,
    Disconnect,
    Down,
    Entry,
    Forward,
    ForwardBatch,
    JoinRequest,
    JoinState,
    MarkerReply,
    MarkerRequest,
    Message,
    Register,
    Send,
    Up,
)
from faidecs.overlay.core.replica import Placement, ProtocolError


class Observer(Protocol):
    """What a client reports to whoever runs it (the simulator records run logs from it)."""

    def deliver(self, process: str, conjunction: int, relation: tuple[str, ...]) -> None: ...

    def snapshot_taken(self, peer: str, joiner: str) -> int:
        """``peer`` gives its state to ``joiner``; returns a marker of this point of the run."""
        ...

    def joined(self, process: str, peer: str | None, marker: int | None) -> None:
        """``process`` starts: from ``peer``'s state taken at ``marker``, or fresh (no peer)."""
        ...


@runtime_checkable
class IdentifiedObserver(Observer, Protocol):
    """An observer that takes each delivery with its id (:func:`delivery_id`): the client calls
    :meth:`deliver_identified` instead of ``deliver`` when its observer has it."""

    def deliver_identified(self, process: str, delivery: str, conjunction: int, relation: tuple[str, ...]) -> None: ...


def delivery_id(process: str, role: Role, position: int, index: int) -> str:
    """The id of a delivery: ``process``, the merger stream ``role`` and ``position`` of the event
    whose release produced it, and its ``index`` among that event's deliveries. Positions are the
    same at every replica, and a client restarted from a checkpoint feeds its engines the same
    events in the same order, so it gives a relation it delivers again the same id."""
    return f"{process}/{role_name(role)}/{position}/{index}"


@dataclass(slots=True)
class Stream:
    role: Role
    rank: int
    key: str
    filter: Filter
    conjunctions: list[int]  # indices in the subscription, as written
    engine: Engine
    engine_program: Program  # the stream's part of the subscription, for fresh engines
    reading: str | None = None
    started: bool = False
    start: int = -1  # the position the stream starts after (its mark, or the peer's position)
    position: int = -1  # last position received
    released: int = -1  # last position fed to the engine (or the start mark)
    progress: int = -1  # timestamp of the last entry received
    acked: int = -1
    heard: int = 0  # when its replica last sent it a position (the driver's clock)
    fed: list[tuple[int, str]] = field(default_factory=list)  # (position, event id) fed to the engine
    fed_at: list[int] = field(default_factory=list)  # when each was fed (the driver's clock)
    # How the stream starts: "mark" (registers, starts after its own logged mark), "ask" (waits
    # for a replica's marker), "marker" (started at a marker: its link carries its own filter).
    how: str = "mark"


class SubscriberClient:
    def __init__(
        self,
        name: str,
        subscription: Subscription,
        types: dict[str, EventType],
        placement: Placement,
        observer: Observer,
        *,
        matcher: Matcher = "compiled",
        peer: str | None = None,
        marker: bool = False,
        retry_every: int = 200,
        ack_every: int = 50,
        down: Iterable[str] = (),
        split: Callable[[Subscription], list[tuple[Role, tuple[int, ...], Subscription]]] = split_by_role,
        checkpoints: CheckpointPolicy | None = None,
        resume: SubscriberCheckpoint | None = None,
        recorded: Iterable[str] = (),
    ):
        """``down``: the processes whose sessions are expired now (read from the coordination
        service when the client starts; ``Down``/``Up`` notifications keep it current).
        ``marker``: join at a marker of each merger that covers the stream (not with ``peer``).
        ``checkpoints``: be durable (offer checkpoints, acknowledge nothing past the last one
        saved); ``resume``: start from this checkpoint of this client (rather than from a peer,
        a marker or a mark); ``recorded``: ids of deliveries since that checkpoint its sinks
        already recorded, not delivered again."""
        if marker and peer is not None:
            raise ValueError("a client joins from a peer's state or at a marker, not both")
        self.name = name
        self.subscription = subscription
        self.placement = placement
        self.observer = observer
        self.matcher = matcher
        self.peer = peer
        self.retry_every = retry_every
        self.ack_every = ack_every
        self.last_ack = 0
        self.down: set[str] = set(down)
        self.joined_from: str | None = None
        self.joining = peer is not None
        self.last_register = 0
        self.gone = False
        self.started_at = 0
        self.marker = marker
        self.ready_at: int | None = None  # when every stream had started (the driver's clock)
        self.streams: dict[Role, Stream] = {}
        for rank, (role, indices, part) in enumerate(split(subscription)):
            program = Program(dict(types), (part,))
            engine = Engine(program, matcher=matcher)
            key = stream_key(part)
            self.streams[role] = Stream(role, rank, key, stream_filter(part), list(indices), engine, program)
        self.heap: list[tuple[int, int, int, Role, Event]] = []
        self.foreign = 0  # stream positions from a replica it does not read, turned away
        self._identified = observer if isinstance(observer, IdentifiedObserver) else None
        self.checkpoints = checkpoints
        self.resume = resume
        if resume is not None and (resume.process != name or resume.keys != self.keys()):
            raise ValueError(f"subscriber {name}: the checkpoint is {resume.process!r}'s of another subscription")
        self.recorded = set(recorded)
        self.delivered = resume.delivered if resume is not None else 0  # relations produced (recorded or not)
        self.skipped = 0  # deliveries its sinks had recorded before it restarted
        #: the timestamp of the entry released last (its merger's decision time): an observer's
        #: ``deliver`` learns from it when the event it is given a relation for was decided
        self.release_ts = 0
        #: the positions of the last checkpoint saved: acknowledgements never pass them when durable
        self.durable: dict[Role, int] | None = dict(resume.positions) if resume is not None else None
        self.unsaved = 0  # deliveries since the last checkpoint offered
        self.unsaved_since: int | None = None  # when the first of them was made

    # --- driving ---------------------------------------------------------------------------------

    def start(self, now: int) -> list[Send]:
        self.started_at = now
        if self.resume is not None:  # the same process again: its own state, as a joiner takes a peer's
            self.joining = False
            self.ready_at = now
            for role, how in self.resume.how.items():
                self.streams[role].how = how
                self.streams[role].heard = now
            return self._adopt(self.resume.state)
        if self.peer is not None:
            return [(self.peer, JoinRequest(self.name, self.keys()))]
        if self.marker:
            self.joining = False
            out: list[Send] = []
            for s in self.streams.values():
                s.how = "ask"
                out += self._connect(s)
            return out
        return self._register_all(now)

    def _register_all(self, now: int) -> list[Send]:
        self.joining = False
        self.last_register = now
        out: list[Send] = []
        for s in self.streams.values():
            out += [(p, Register(s.role, s.key, self.name, s.filter)) for p in self.placement(s.role)]
            out += self._connect(s)
        return out

    def _connect(self, s: Stream) -> list[Send]:
        live = [p for p in self.placement(s.role) if p not in self.down]
        if not live:
            return []
        s.reading = s.reading if s.reading in live else live[0]
        if s.how == "ask":
            heartbeats = len(self.streams) > 1  # a disjunction needs its quiet streams' heartbeats
            return [(s.reading, MarkerRequest(s.role, s.key, self.name, s.filter, heartbeats))]
        if s.how == "marker":
            return [(s.reading, MarkerRequest(s.role, s.key, self.name, s.filter, after=s.position))]
        return [(s.reading, Connect(s.role, s.key, self.name, s.position if s.started else -1))]

    def leave(self) -> list[Send]:
        """Stop: disconnect from every stream. Mergers keep the filter (it only ever widens)."""
        self.gone = True
        return [
            (p, Disconnect(s.role, s.key, self.name)) for s in self.streams.values() for p in self.placement(s.role)
        ]

    def handle(self, sender: str, msg: Message, now: int) -> list[Send]:
        if self.gone:
            return []
        if isinstance(msg, Forward):
            return self._on_stream(sender, msg.role, msg.consumer, (msg,), now)
        if isinstance(msg, ForwardBatch):
            return self._on_stream(sender, msg.role, msg.consumer, msg.entries, now)
        if isinstance(msg, JoinRequest):
            return [(msg.joiner, self._join_state(msg.joiner, msg.keys))]
        if isinstance(msg, JoinState):
            return self._on_join_state(msg, now)
        if isinstance(msg, MarkerReply):
            return self._on_marker_reply(sender, msg, now)
        if isinstance(msg, Down):
            self.down.add(msg.process)
            out: list[Send] = []
            if self.joining and msg.process == self.peer:
                out += self._register_all(now)
            for s in self.streams.values():
                if s.reading == msg.process:
                    s.reading = None
                    out += self._connect(s)
            return out
        if isinstance(msg, Up):
            self.down.discard(msg.process)
            if msg.process == self.name:  # our session had expired: the mergers dropped our links
                return [m for s in self.streams.values() for m in self._connect(s)]
            # A stream whose replicas were all down reads again as soon as one is back.
            return [m for s in self.streams.values() if s.reading is None for m in self._connect(s)]
        return []  # merger-to-merger traffic never reaches a client; nothing else is for us

    def tick(self, now: int) -> list[Send]:
        out: list[Send] = []
        if self.gone:
            return out
        if not self.joining:
            for s in self.streams.values():
                if s.reading is None:
                    out += self._connect(s)
                elif self.resume is not None and now - s.heard >= 5 * self.retry_every:
                    # Restarted under its old name: the replicas may learn that its predecessor's
                    # session ended (Down, then Up) after its Connect, and drop the new link with
                    # the old; or the replica it asked had dropped positions it needs (a replica
                    # that restarted too, before this subscriber's acknowledgements were on its
                    # disk) and refused it. A silent stream asks the next replica (a Connect
                    # repeated is harmless: copies of positions it has are dropped).
                    s.heard = now
                    live = [p for p in self.placement(s.role) if p not in self.down]
                    if s.reading in live and len(live) > 1:
                        s.reading = live[(live.index(s.reading) + 1) % len(live)]
                    out += self._connect(s)
        ack = now - self.last_ack >= self.ack_every
        if ack:
            self.last_ack = now
        for s in self.streams.values() if ack else ():
            # Acknowledge what a peer joining from us could still need: buffered entries are not done.
            held = [position for _, _, position, role, _ in self.heap if role == s.role]
            done = min(held) - 1 if held else s.position
            if self.checkpoints is not None:
                # Durable: what a restart reads again from its checkpoint must still be there.
                if self.durable is None:
                    continue
                done = min(done, self.durable[s.role])
            if s.started and done > s.acked:
                s.acked = done
                out += [(p, Ack(s.role, s.key, self.name, done)) for p in self.placement(s.role)]
        if self.joining and now - self.started_at >= 2 * self.retry_every:
            return out + self._register_all(now)  # the peer does not answer: start fresh
        waiting = [s for s in self.streams.values() if not s.started and s.how == "mark"]
        if waiting and not self.joining and now - self.last_register >= self.retry_every:
            self.last_register = now
            for s in waiting:
                out += [(p, Register(s.role, s.key, self.name, s.filter)) for p in self.placement(s.role)]
        return out

    # --- streams -----------------------------------------------------------------------------------

    def _on_stream(
        self, sender: str, role: Role, consumer: str, positions: Sequence[Forward | Entry], now: int
    ) -> list[Send]:
        """Positions of one merger stream (a Forward's, or a ForwardBatch's entries)."""
        s = self.streams.get(role)
        if s is None:
            raise ProtocolError(f"subscriber {self.name}: stream of {role_name(role)} was never asked for")
        if sender != s.reading:
            # Only the replica it reads feeds a stream: the one it read before failing over says
            # nothing new (the new one resends after ``position``), and positions from another
            # would be ahead of the stream it reads, which it would then skip.
            self.foreign += len(positions)
            return []
        s.heard = now
        for e in positions:
            if not s.started:
                if e.kind == "mark" and e.request == self.name and consumer == s.key:
                    s.started, s.start, s.position, s.released = True, e.position, e.position, e.position
                    s.progress = e.ts
                    self._on_stream_started(now)
                continue
            if e.position <= s.position:
                continue  # a copy from the replica we read before failing over
            s.position, s.progress = e.position, e.ts
            if e.kind == "event" and e.event is not None:
                heapq.heappush(self.heap, (e.ts, s.rank, e.position, s.role, e.event))
        self._release(now)  # once for what arrived: released in order all the same
        return []

    def _on_marker_reply(self, sender: str, msg: MarkerReply, now: int) -> list[Send]:
        s = self.streams.get(msg.role)
        if s is None:
            raise ProtocolError(f"subscriber {self.name}: marker of {role_name(msg.role)} was never asked for")
        if s.how != "ask" or sender != s.reading:
            # A reply we no longer wait for (we failed over, or started already): if it opened a
            # link, close it, so that only the replica we read feeds this stream.
            return [(sender, Disconnect(s.role, s.key, self.name))] if msg.ok and sender != s.reading else []
        if not msg.ok:
            s.how = "mark"  # not covered there yet: register, which widens the parents' filters
            self.last_register = now
            out: list[Send] = [(p, Register(s.role, s.key, self.name, s.filter)) for p in self.placement(s.role)]
            return out + self._connect(s)
        s.how = "marker"
        s.started, s.start, s.position, s.released = True, msg.position, msg.position, msg.position
        s.progress = msg.ts
        self._on_stream_started(now)
        return []

    def _on_stream_started(self, now: int) -> None:
        if self.started():
            self.ready_at = now
            self.observer.joined(self.name, None, None)
        self._release(now)

    def _release(self, now: int) -> None:
        if not all(s.started for s in self.streams.values()):
            return
        while self.heap:
            ts, rank, position, role, event = self.heap[0]
            for other in self.streams.values():
                if other.rank != rank and not (other.progress > ts or (other.progress == ts and other.rank > rank)):
                    return
            heapq.heappop(self.heap)
            self.release_ts = ts
            s = self.streams[role]
            s.released = position
            s.fed.append((position, event.id))
            s.fed_at.append(now)
            for k, d in enumerate(s.engine.publish(event)):
                self._deliver(
                    delivery_id(self.name, role, position, k), s.conjunctions[d.conjunction], tuple(d.ids), now
                )

    def _deliver(self, delivery: str, conjunction: int, relation: tuple[str, ...], now: int) -> None:
        self.delivered += 1
        self.unsaved += 1
        if self.unsaved_since is None:
            self.unsaved_since = now
        if delivery in self.recorded:  # made before a restart, after its checkpoint: recorded already
            self.recorded.discard(delivery)
            self.skipped += 1
        elif self._identified is not None:
            self._identified.deliver_identified(self.name, delivery, conjunction, relation)
        else:
            self.observer.deliver(self.name, conjunction, relation)

    # --- checkpoints ---------------------------------------------------------------------------------

    def checkpoint_due(self, now: int) -> bool:
        """Whether a durable client should checkpoint now: it has started and has none yet (its
        marks are where a restart starts), or ``every`` deliveries or ``ms`` ms after the first
        one are not in a checkpoint."""
        policy = self.checkpoints
        if policy is None or self.gone or not self.started():
            return False
        if self.durable is None:
            return True
        return self.unsaved >= policy.every or (
            self.unsaved_since is not None and now - self.unsaved_since >= policy.ms
        )

    def checkpoint(self) -> SubscriberCheckpoint:
        """The client's state now, to be saved; acknowledgements move up to it once it is
        (:meth:`saved`). Deliveries made so far are in it (they count as checkpointed)."""
        if not self.started():
            raise ProtocolError(f"subscriber {self.name}: no checkpoint before every stream started")
        snapshots, positions = self._state()
        self.unsaved, self.unsaved_since = 0, None
        state = JoinState(self.name, snapshots, positions)
        how = {r: s.how for r, s in self.streams.items()}
        return SubscriberCheckpoint(self.name, self.keys(), state, how, self.delivered)

    def saved(self, checkpoint: SubscriberCheckpoint) -> None:
        """``checkpoint`` is durable: the mergers may now drop what it reflects."""
        self.durable = dict(checkpoint.positions)

    # --- joining from a peer ---------------------------------------------------------------------

    def keys(self) -> tuple[str, ...]:
        return tuple(s.key for s in self.streams.values())

    def _state(self) -> tuple[dict[Role, Mapping[str, Any]], dict[Role, int]]:
        """Each stream's engine snapshot and the last position it reflects (entries held back
        come after it): what a joiner or a restart starts from."""
        return (
            {r: s.engine.snapshot() for r, s in self.streams.items()},
            {r: s.released for r, s in self.streams.items()},
        )

    def _join_state(self, joiner: str, keys: tuple[str, ...]) -> JoinState:
        if not self.started() or keys != self.keys():
            return JoinState(self.name, {}, {}, ok=False)
        marker = self.observer.snapshot_taken(self.name, joiner)
        snapshots, positions = self._state()
        return JoinState(self.name, snapshots, positions, marker=marker)

    def _on_join_state(self, msg: JoinState, now: int) -> list[Send]:
        if not self.joining:
            return []
        if not msg.ok or set(msg.positions) != set(self.streams):
            return self._register_all(now)
        self.joining = False
        self.joined_from = msg.peer
        self.ready_at = now
        self.observer.joined(self.name, msg.peer, msg.marker)
        return self._adopt(msg)

    def _adopt(self, state: JoinState) -> list[Send]:
        """Take the engines of ``state`` (a peer's, or this client's own checkpoint) and read
        each stream again right after the position they reflect."""
        out: list[Send] = []
        for role, s in self.streams.items():
            s.engine = Engine.restore(state.snapshots[role], matcher=self.matcher)
            s.started, s.start = True, state.positions[role]
            s.position = s.released = state.positions[role]
            out += self._connect(s)
        return out

    # --- introspection -----------------------------------------------------------------------------

    def final_queues(self) -> list[dict[str, list[str]]]:
        queues: list[dict[str, list[str]]] = [{} for _ in self.subscription.conjunctions]
        for s in self.streams.values():
            for k, q in zip(s.conjunctions, next(iter(s.engine.state_json().values()))):
                queues[k] = q
        return queues

    def started(self) -> bool:
        return not self.joining and all(s.started for s in self.streams.values())


__all__ = ["IdentifiedObserver", "Observer", "Stream", "SubscriberClient", "delivery_id"]
