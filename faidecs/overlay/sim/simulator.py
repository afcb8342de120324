"""The deterministic simulator: a whole overlay deployment in one process, in virtual time.

Servers host merger replicas (placed by :func:`~faidecs.overlay.core.placement.place`), subscriber
processes run :class:`~faidecs.overlay.core.subscriber.SubscriberClient`, publishers send to the root
mergers. Links are FIFO with seeded random delays (with ``SimConfig.input_path``, publishers reach the root
mergers over an unordered, lossy path instead, through a latch stage at each server:
docs/ordering-latch-stage.md); a partition holds the messages across it until
it heals; a crashed process loses what is sent to it; a paused one finds it waiting when it
resumes. The coordination service is :class:`SimulatedCoordination`. Everything random comes from
one ``random.Random(seed)``, so a run is reproduced exactly from its scenario, configuration and
seed. Every run records the run log of the property checker.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from faidecs.errors import EventError, FaidecsError
from faidecs.grammar import compile_program
from faidecs.grammar.model import EventType, Subscription
from faidecs.matching.events import Event, EventValidator
from faidecs.merging.roles import Role, is_root, merger_roles, role_name, role_of, split_by_role
from faidecs.ordering.latch.receiver import LatchStats
from faidecs.overlay.core.authority import Authority, Roster
from faidecs.overlay.core.coordination import SimulatedCoordination
from faidecs.overlay.core.host import ServerHost
from faidecs.overlay.core.inputstage import InputStage, InputStamper, Latched, latch_config
from faidecs.overlay.core.journal import Restored
from faidecs.overlay.core.keys import stream_filter, stream_key
from faidecs.overlay.core.messages import Decide, Decision, LeaderChange, Message, Ordered, Publish, Send, Up
from faidecs.overlay.core.placement import place
from faidecs.overlay.core.replica import MergerReplica
from faidecs.overlay.core.subscriber import SubscriberClient
from faidecs.overlay.core.unacked import Unacknowledged
from faidecs.overlay.core.weights import positions
from faidecs.overlay.sim.audit import StreamGap, stream_gaps
from faidecs.overlay.sim.costmodel import ProcessClass, frames
from faidecs.overlay.sim.scenario import Fault, Joiner, Scenario, SimConfig
from faidecs.runs.runlog import Notified, Published, RunLog, RunRecorder

COORDINATOR = "coordinator"


class SimulationError(FaidecsError, RuntimeError):
    """A simulated run that could not go on; the message names the seed that reproduces it."""


@dataclass(slots=True)
class SimResult:
    seed: int
    log: RunLog
    gate: int  # when every initial subscriber had started and publications began
    end: int
    servers: list[str]
    roles: list[Role]
    placement: dict[Role, tuple[str, ...]]
    leadership: dict[Role, tuple[str, int]]
    replicas: dict[str, dict[Role, MergerReplica]]
    clients: dict[str, SubscriberClient]
    gaps: list[StreamGap]
    messages: Counter[str] = field(default_factory=Counter)
    faults: list[Fault] = field(default_factory=list)
    root_events: dict[tuple[Role, int], Event] = field(default_factory=dict)
    published_at: dict[str, int] = field(default_factory=dict)  # event id -> when its publisher sent it
    joined_at: dict[str, int] = field(default_factory=dict)  # joiner -> when it asked to join (virtual ms)
    first_delivery_at: dict[str, int] = field(default_factory=dict)  # process -> its first delivery (virtual ms)
    left_at: dict[str, int] = field(default_factory=dict)  # leaver -> when it left (virtual ms)
    #: every publication its publisher sent, in send order (the run log has those ordered)
    sent: list[dict[str, Any]] = field(default_factory=list)
    #: input_path: (server, root role, publisher) -> the latch receiver's counters
    latch: dict[tuple[str, Role, str], LatchStats] = field(default_factory=dict)
    lost_on_path: int = 0  # copies of publications the lossy path dropped
    #: batch_ms: "Decide": batches of decisions sent, "decisions": the decisions they carried
    batches: Counter[str] = field(default_factory=Counter)
    #: cost model: (process, time, relation) of each delivery, time in fractional virtual ms
    delivered_at: list[tuple[str, float, tuple[str, ...]]] = field(default_factory=list)
    #: cost model: event id -> when its publisher sent it (fractional virtual ms)
    published_clock: dict[str, float] = field(default_factory=dict)
    #: cost model: subscriber -> (events fed to its engines, when the last was fed)
    fed: dict[str, tuple[int, float]] = field(default_factory=dict)
    #: cost model: process -> CPU µs it spent
    busy_us: Counter[str] = field(default_factory=Counter)
    #: restarts: publications no root acknowledged by the end (publisher, seq); none is lost
    unacked: list[tuple[str, int]] = field(default_factory=list)

    def input_log(self) -> RunLog:
        """The root mergers' input as a run log of its own: every publication sent, and per root
        role (a process named after it, subscribing to its type) a ``notify`` record per event its
        committed stream ordered, in that order. Notification FIFO Order counts the per-publisher
        FIFO violations at the roots' input; an event sent but never notified was never ordered."""
        roots = [r for r in self.roles if is_root(r)]
        out = RunLog(self.log.types_source, {role_name(r): f"subscription R: {r[0]}" for r in roots})
        time = 0
        for event in self.sent:
            time += 1
            out.published.append(Published(time, event))
        for r in roots:
            for d in self.log_of(r):
                e = self.root_events.get((r, d.position)) if d.kind == "event" else None
                if e is not None:
                    time += 1
                    out.notified.append(Notified(time, role_name(r), e.id))
        return out

    def stale_rejected(self) -> int:
        return sum(r.log.stale_rejected for reps in self.replicas.values() for r in reps.values())

    def log_of(self, role: Role) -> list[Decision]:
        """The committed stream of ``role``: the longest committed log among its replicas."""
        logs = [self.replicas[p][role].committed() for p in self.placement[role]]
        return max(logs, key=len)

    def event_at(self, role: Role, d: Decision) -> Event | None:
        """The event at a committed position, followed back through the parents to its root."""
        while not is_root(role):
            parent = role[:-1] if d.source == "L" else role[-1:]
            role, d = parent, self.log_of(parent)[d.key]
        return self.root_events.get((role, d.position))


class Simulation:
    def __init__(self, scenario: Scenario, config: SimConfig):
        self.scenario = scenario
        self.config = config
        self.rng = random.Random(config.seed)
        self.types: dict[str, EventType] = dict(compile_program(scenario.types_source, "<types>").types)
        self.validator = EventValidator(self.types)
        self.subscriptions: dict[str, Subscription] = {}
        for name, source in [*scenario.subscribers.items(), *((j.process, j.subscription) for j in scenario.joiners)]:
            program = compile_program(source, f"<subscription of {name}>", known_types=self.types)
            if len(program.subscriptions) != 1:
                raise ValueError(f"process {name}: give exactly one subscription")
            self.subscriptions[name] = program.subscriptions[0]
        self.servers = [f"m{k}" for k in range(1, scenario.servers + 1)]
        if config.ordering == "sequencer":
            self.sequencer: Role | None = role_of([min(self.types)])
            self.roles = [self.sequencer]
        else:
            self.sequencer = None
            self.roles = merger_roles(self.types, self.subscriptions.values())
        replicas = config.replicas

        @cache
        def placement(role: Role) -> tuple[str, ...]:
            return place(role, self.servers, replicas)

        self.placement = placement
        self.recorder = RunRecorder(
            scenario.types_source,
            {
                name: self.subscriptions[name].source or self.subscriptions[name].to_source()
                for name in self.subscriptions
            },
        )
        self.recorded: set[str] = set()
        self.root_events: dict[tuple[Role, int], Event] = {}
        # Servers that restart keep their replicas' logs on "disk": what each replica's journal
        # recorded before each of its sends, folded (core/journal.py). A root then fetches the
        # payload of a decided publication it lacks (a publication sent while it was down).
        self.durable = any(f.kind in ("restart", "wipe") for f in scenario.faults)
        self.disks: dict[str, dict[Role, Restored]] = {s: {} for s in self.servers}
        # ... and their publishers keep an outbox, as the runtime's do: what no root leader
        # acknowledged (Ordered) is sent again when a replica of its root is back.
        self.outboxes: dict[str, Unacknowledged] = {}
        self.replicas: dict[str, dict[Role, MergerReplica]] = {s: {} for s in self.servers}
        for role in self.roles:
            for server in placement(role):
                self.replicas[server][role] = self._replica(role, server)
        self.hosts = {server: ServerHost(server, reps, self.root) for server, reps in self.replicas.items()}
        self.clients: dict[str, SubscriberClient] = {}
        self.publishers = sorted({p for _, p, _ in scenario.publications})
        processes = [*self.servers, *self.subscriptions, *self.publishers]
        self.coordination = SimulatedCoordination(self.roles, placement, processes)
        # Every message between processes is put to the authority a deployment's process checks
        # its peers with: an honest message it would refuse is a bug (of the rules or the core).
        roster = self._roster()  # one for all: an Authority only reads it
        self.authorities = {p: Authority(p, roster) for p in processes}
        self.state: dict[str, str] = {p: "up" for p in processes}
        self.inbox: dict[str, list[tuple[str, Message]]] = {p: [] for p in processes}
        self.incarnation: Counter[str] = Counter()
        self.partitions: list[tuple[frozenset[str], int, int]] = []
        self.last_arrival: dict[tuple[str, str], float] = {}
        self.queue: list[tuple[float, int, str, Any]] = []
        self.seq = 0
        self.now = 0
        self.messages: Counter[str] = Counter()
        self.next_seq: Counter[str] = Counter()
        self.reacted: Counter[str] = Counter()
        self.published_at: dict[str, int] = {}
        self.late: set[str] = set()  # joiners: their start goes into the run log
        self.joined_at: dict[str, int] = {}
        self.left_at: dict[str, int] = {}
        self.first_delivery_at: dict[str, int] = {}
        self.sent: list[dict[str, Any]] = []
        self.flush_due: set[str] = set()  # batch_ms: servers with a flush on the queue
        self.batches: Counter[str] = Counter()  # batch_ms: Decide batches (and positions) sent
        # The cost model's state (config.cost): the fine clock, each process's waiting work and
        # when it is free, when each host's link is free, the CPUs' free times (cores > 0).
        self.clock: float = 0.0
        self.pending: dict[str, list[tuple[str, Any]]] = {p: [] for p in processes}
        self.busy_until: dict[str, float] = dict.fromkeys(processes, 0.0)
        self.pass_due: set[str] = set()
        self.link_free: dict[str, float] = dict.fromkeys(processes, 0.0)
        self.cores: list[float] = [0.0] * (config.cost.cores if config.cost is not None else 0)
        self.passing: str | None = None
        self.collected: list[Send] = []
        self.delivered_at: list[tuple[str, float, tuple[str, ...]]] = []
        self.published_clock: dict[str, float] = {}
        self.fed: dict[str, tuple[int, float]] = {}
        self.busy_us: Counter[str] = Counter()
        # The lossy input path draws from its own generator: without it every run is as before.
        path = config.input_path
        self.input_rng = random.Random(f"{config.seed}:input") if path is not None else None
        self.stages: dict[str, InputStage] = {}
        self.stampers: dict[str, InputStamper] = {}
        self.lost_on_path = 0
        if path is not None:
            latch = latch_config(path.latch.p_t, path.latch.late) if path.latch is not None else None
            self.stages = {s: InputStage(latch) for s in self.servers}

    def _replica(self, role: Role, server: str) -> MergerReplica:
        config = self.config
        replica = MergerReplica(
            role,
            server,
            self.placement,
            heartbeat_every=config.heartbeat_every,
            retry_every=config.retry_every,
            retain=config.retain,
            ack_every=config.ack_every,
            on_commit=self._committed if is_root(role) else None,
            batching=config.batch_ms > 0 or config.cost is not None,
            max_batch=config.max_batch,
            durable=self.durable,
            lossy_inputs=self.durable and is_root(role),
            ack_publishers=self.durable,
        )
        if config.input_path is not None and is_root(role):
            latch = config.input_path.latch
            replica.lossy_inputs = True
            replica.fifo_inputs = latch is not None and latch.late == "drop"
        return replica

    def root(self, type_name: str) -> Role:
        """The role a publication of ``type_name`` goes to: its root merger, or the sequencer."""
        return self.sequencer if self.sequencer is not None else role_of([type_name])

    def split(self, subscription: Subscription) -> list[tuple[Role, tuple[int, ...], Subscription]]:
        """A subscriber's streams: one per merger its conjunctions need, or the sequencer's one."""
        if self.sequencer is not None:
            return [(self.sequencer, tuple(range(len(subscription.conjunctions))), subscription)]
        return split_by_role(subscription)

    def _roster(self) -> Roster:
        streams = {
            name: {role: (stream_key(part), stream_filter(part)) for role, _, part in self.split(sub)}
            for name, sub in self.subscriptions.items()
        }
        return Roster(
            publishers=frozenset(self.publishers) | frozenset(self.scenario.reactions),
            placement={role: self.placement(role) for role in self.roles},
            streams=streams,
            joins_from={j.process: j.peer for j in self.scenario.joiners},
            root=self.root,
        )

    # --- observer of the clients -----------------------------------------------------------------

    def deliver(self, process: str, conjunction: int, relation: tuple[str, ...]) -> None:
        self.recorder.deliver(process, conjunction, relation)
        self.first_delivery_at.setdefault(process, self.now)
        if self.config.cost is not None:
            self.delivered_at.append((process, self.clock, relation))
        rule = self.scenario.reactions.get(process)
        if rule is not None and self.reacted[process] < rule.limit:
            self.reacted[process] += 1
            event = {"id": f"{process}r{self.reacted[process]}", "type": rule.type_name, "attrs": dict(rule.attrs)}
            self._publish(process, event)

    def snapshot_taken(self, peer: str, joiner: str) -> int:
        return self.recorder.clock

    def joined(self, process: str, peer: str | None, marker: int | None) -> None:
        if process in self.late:
            self.recorder.log.joined[process] = (self.recorder.clock if marker is None else marker, peer)

    def _committed(self, role: Role, decision: Decision, event: Event | None) -> None:
        if event is not None:
            self.root_events[(role, decision.position)] = event
        if event is None or event.id in self.recorded:
            return
        self.recorded.add(event.id)
        json_event = {"id": event.id, "type": event.type, "attrs": event.attrs}
        self.recorder.publish({**json_event, "publisher": decision.source, "seq": decision.key})

    # --- the event loop ------------------------------------------------------------------------

    def _at(self, time: float, kind: str, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (time, self.seq, kind, payload))

    def _persist(self, server: str) -> None:
        """What the server's replicas changed goes to their disks, before anything they send."""
        disk = self.disks[server]
        for role, replica in self.replicas[server].items():
            delta = replica.take_journal()
            if delta is not None:
                disk.setdefault(role, Restored()).apply(delta)

    def _send(self, src: str, sends: list[Send]) -> None:
        if self.durable and src in self.hosts:
            self._persist(src)
        if self.config.cost is not None and src != COORDINATOR:
            self._send_costed(src, sends)
            return
        for dst, msg in sends:
            self.messages[type(msg).__name__] += 1
            if src == COORDINATOR:
                arrival = self.now + self.config.notify_delay
            else:
                arrival = self.now + self.rng.randint(self.config.min_delay, self.config.max_delay)
                for group, start, end in self.partitions:
                    if start <= self.now < end and (src in group) != (dst in group) and self._server_link(src, dst):
                        arrival = max(arrival, end + self.rng.randint(self.config.min_delay, self.config.max_delay))
            at = max(arrival, self.last_arrival.get((src, dst), 0))
            self.last_arrival[(src, dst)] = at
            self._at(at, "msg", (src, dst, msg))

    def _server_link(self, a: str, b: str) -> bool:
        return a in self.replicas and b in self.replicas

    def _dispatch(self, dst: str, src: str, msg: Message) -> None:
        state = self.state[dst]
        if state in ("crashed", "left"):
            return
        if state == "paused":
            self.inbox[dst].append((src, msg))
            return
        self._send(dst, self._outputs(dst, src, msg))

    def _outputs(self, dst: str, src: str, msg: Message) -> list[Send]:
        """What ``dst`` sends on handling ``msg`` from ``src``."""
        if src != dst and src != COORDINATOR and not isinstance(msg, Latched):
            refused = self.authorities[dst].refuse(src, msg)
            if refused is not None:
                raise SimulationError(f"at {self.now}: an honest message refused: {refused[1]}")
        out: list[Send] = []
        outbox = self.outboxes.get(dst)
        if outbox is not None:
            if isinstance(msg, Ordered):
                outbox.ordered(msg.seqs)
                return []
            if isinstance(msg, Up):
                roles = {u.role for u in outbox.unacked.values() if msg.process in self.placement(u.role)}
                out = [(p, u.publish) for r in roles for u in outbox.due(self.now, 0, r) for p in self.placement(r)]
        if isinstance(msg, Latched):
            for publish in self.stages[dst].receive(msg, float(self.now)):
                out += self.hosts[dst].handle(src, publish, self.now)
            self._arm_latch(dst)
        elif dst in self.replicas:
            out = self.hosts[dst].handle(src, msg, self.now)
            self._arm_flush(dst)
        elif dst in self.clients:
            out += self.clients[dst].handle(src, msg, self.now)
        return out

    def _tick(self, process: str) -> None:
        if self.state[process] != "up":
            return
        if self.config.cost is not None:  # in the process's next pass
            self._enqueue(process, ("", None))
            self._at(self.now + self.config.tick_every, "tick", process)
            return
        out: list[Send] = self.hosts[process].tick(self.now) if process in self.hosts else []
        if process in self.hosts:
            self._arm_flush(process)
        if process in self.clients:
            out += self.clients[process].tick(self.now)
        self._send(process, out)
        self._at(self.now + self.config.tick_every, "tick", process)

    def _run_until(self, until: int, done: Any = None) -> None:
        while self.queue and self.queue[0][0] <= until:
            if done is not None and done():
                return
            time, _, kind, payload = heapq.heappop(self.queue)
            self.clock = time
            self.now = int(time)
            if kind == "msg":
                src, dst, msg = payload
                if self.config.cost is not None and src != COORDINATOR:
                    self._enqueue(dst, (src, msg))
                else:
                    self._dispatch(dst, src, msg)
            elif kind == "pass":
                self._pass(payload)
            elif kind == "tick":
                self._tick(payload)
            elif kind == "publish":
                if self.config.cost is not None:
                    self._enqueue(payload[0], ("", payload[1]))
                else:
                    self._publish(*payload)
            elif kind == "join":
                self._join(payload)
            elif kind == "leave":
                if payload in self.clients and self.state[payload] == "up":
                    self._send(payload, self.clients[payload].leave())
                    self.state[payload] = "left"
                    self.recorder.left(payload)
                    self.left_at[payload] = self.now
            elif kind == "latch":
                self._poll_latch(payload)
            elif kind == "flush":
                self._flush(payload)
            elif kind == "fault":
                self._fault(payload)
            elif kind == "resume":
                self._resume(payload)
            elif kind == "restart":
                self._restart(*payload)
            elif kind == "expire":
                process, incarnation = payload
                if self.state[process] != "up" and self.incarnation[process] == incarnation:
                    self._send(COORDINATOR, self.coordination.session_lost(process))
        self.now = max(self.now, until)
        self.clock = max(self.clock, until)

    # --- actions ---------------------------------------------------------------------------------

    def _publish(self, publisher: str, event: dict[str, Any]) -> None:
        seq = self.next_seq[publisher]
        self.next_seq[publisher] += 1
        try:
            validated = self.validator.validate({**event, "publisher": publisher, "seq": seq})
        except EventError as exc:
            raise ValueError(f"publication by {publisher} at {self.now} ms: {exc}") from None
        self.published_at.setdefault(validated.id, self.now)
        if self.config.cost is not None:
            self.published_clock.setdefault(validated.id, self.clock)
        root = self.root(validated.type)
        # With restarts, a publisher keeps an outbox and a publication names the previous one to
        # its root, as a runtime publisher's does; on the lossy input path nothing would send a
        # lost one again, so it names none (the latch stage orders what arrives there).
        chained = self.durable and self.config.input_path is None
        outbox = self.outboxes.setdefault(publisher, Unacknowledged()) if chained else None
        message = Publish(publisher, seq, validated, outbox.prev(root) if outbox is not None else -1)
        if self.config.input_path is not None:
            self.sent.append(
                {
                    "id": validated.id,
                    "type": validated.type,
                    "attrs": validated.attrs,
                    "publisher": publisher,
                    "seq": seq,
                }
            )
            self._lossy(publisher, root, message)
            return
        if outbox is not None:
            outbox.sent(message, root, self.now)
        self._send(publisher, [(p, message) for p in self.placement(root)])

    def _lossy(self, publisher: str, role: Role, publish: Publish) -> None:
        """One publication's copies to the replicas of ``role`` over the lossy, reordering path."""
        path = self.config.input_path
        assert path is not None and self.input_rng is not None
        stamp = self.stampers.setdefault(publisher, InputStamper(publisher)).stamp(role, float(self.now))
        for dst in self.placement(role):
            self.messages["Publish"] += 1
            rng = self.input_rng
            delay = 0.0
            lost = False
            for _ in range(path.hops):
                delay += rng.expovariate(1.0 / path.mean_hop_delay) if path.mean_hop_delay > 0 else 0.0
                lost = lost or (path.loss > 0 and rng.random() < path.loss)
            if lost:
                self.lost_on_path += 1
                continue
            self._at(
                self.now + self.config.min_delay + round(delay), "msg", (publisher, dst, Latched(role, stamp, publish))
            )

    def _arm_latch(self, server: str) -> None:
        due = self.stages[server].next_poll_ms()
        if due is not None:
            self._at(max(due, self.now), "latch", server)

    def _poll_latch(self, server: str) -> None:
        if self.state[server] != "up":
            return  # a paused server polls when it resumes; a crashed one never
        out: list[Send] = []
        for publish in self.stages[server].poll(float(self.now)):
            out += self.hosts[server].handle(publish.publisher, publish, self.now)
        self._arm_flush(server)
        self._send(server, out)

    def _arm_flush(self, server: str) -> None:
        if self.config.cost is not None:
            return  # the end of each pass flushes
        if self.config.batch_ms and server not in self.flush_due:
            self.flush_due.add(server)
            self._at(self.now + self.config.batch_ms, "flush", server)

    def _flush(self, server: str) -> None:
        self.flush_due.discard(server)
        if self.state[server] != "up":
            return  # a paused server flushes after its next message or tick; a crashed one never
        out = self.hosts[server].flush(self.now)
        for _, msg in out:
            if isinstance(msg, Decide):
                self.batches["Decide"] += 1
                self.batches["decisions"] += len(msg.decisions)
        self._send(server, out)

    def _start_client(self, name: str, peer: str | None, marker: bool = False) -> None:
        client = SubscriberClient(
            name,
            self.subscriptions[name],
            self.types,
            self.placement,
            self,
            matcher=self.config.matcher,
            peer=peer,
            marker=marker,
            retry_every=self.config.retry_every,
            ack_every=self.config.ack_every,
            down=self.coordination.expired,
            split=self.split,
        )
        self.clients[name] = client
        self._send(name, client.start(self.now))
        self._at(self.now + self.config.tick_every, "tick", name)

    def _join(self, joiner: Joiner) -> None:
        self.late.add(joiner.process)
        self.joined_at[joiner.process] = self.now
        self._start_client(joiner.process, joiner.peer, joiner.mode == "marker")

    def _fault(self, fault: Fault) -> None:
        if fault.kind == "partition":
            self.partitions.append((frozenset(fault.processes), self.now, self.now + fault.duration))
            return
        for p in fault.processes:
            if self.state[p] == "crashed" or (fault.kind == "pause" and self.state[p] != "up"):
                continue  # a crash is for good, even of a paused process; a pause needs a running one
            self.state[p] = "paused" if fault.kind == "pause" else "crashed"
            self.incarnation[p] += 1
            self._at(self.now + self.config.session_timeout, "expire", (p, self.incarnation[p]))
            if fault.kind == "pause":
                self._at(self.now + fault.duration, "resume", p)
            elif fault.kind in ("restart", "wipe"):
                self._at(self.now + fault.duration, "restart", (p, fault.kind == "wipe", self.incarnation[p]))

    def _resume(self, process: str) -> None:
        if self.state[process] != "paused":
            return
        self.state[process] = "up"
        self.incarnation[process] += 1
        waiting, self.inbox[process] = self.inbox[process], []
        for src, msg in waiting:
            self._dispatch(process, src, msg)
        if process in self.stages:
            self._arm_latch(process)
        self._send(COORDINATOR, self.coordination.session_back(process))
        self._at(self.now + self.config.tick_every, "tick", process)

    def _restart(self, server: str, wiped: bool, incarnation: int) -> None:
        """A crashed server starts again: new replicas, from their disks or (``wiped``) amnesic.
        Its old session goes first (the runtime's restarted process waits for that too); it then
        reads each role's leadership, as a ZooKeeper member's first read does."""
        if self.state[server] != "crashed" or self.incarnation[server] != incarnation:
            return
        self._send(COORDINATOR, self.coordination.session_lost(server))
        if wiped:
            self.disks[server] = {}
        replicas = {}
        for role in self.replicas[server]:
            replica = replicas[role] = self._replica(role, server)
            state = self.disks[server].get(role)
            if state is not None:
                replica.restore(state)
            else:
                replica.amnesic = True  # ran before: an empty log must not vote
        self.replicas[server] = replicas
        self.hosts[server] = ServerHost(server, replicas, self.root)
        if server in self.stages:
            self.stages[server] = InputStage(self.stages[server].config)
        self.state[server] = "up"
        self.incarnation[server] += 1
        self.inbox[server] = []
        leaders = self.coordination.leadership()
        news: list[Send] = [(server, LeaderChange(r, *leaders[r])) for r in replicas if r in leaders]
        self._send(COORDINATOR, news + self.coordination.session_back(server))
        self._send(server, self.hosts[server].start(self.now))
        self._at(self.now + self.config.tick_every, "tick", server)

    # --- the cost model (config.cost) -----------------------------------------------------------

    def _class(self, process: str) -> ProcessClass:
        return "server" if process in self.hosts else "subscriber" if process in self.subscriptions else "publisher"

    def _enqueue(self, process: str, item: tuple[str, Any]) -> None:
        """Work for ``process``: a message (sender, message), a tick ("", None) or, for a
        publisher, a publication ("", event). It is done in the process's next pass."""
        self.pending[process].append(item)
        if process not in self.pass_due:
            self.pass_due.add(process)
            self._at(max(self.clock, self.busy_until[process]), "pass", process)

    def _pass(self, process: str) -> None:
        """One pass of ``process``'s loop: everything waiting for it, handled one after another
        from when it (and, with ``cores``, a CPU) is free; its replies leave when the pass ends."""
        cost = self.config.cost
        assert cost is not None
        self.pass_due.discard(process)
        if self.state[process] != "up":
            return  # runs with the cost model have no faults; a stopped process does nothing
        start = self.clock
        core = 0
        if self.cores:
            core = min(range(len(self.cores)), key=self.cores.__getitem__)
            if self.cores[core] > start:  # no CPU free: the pass starts when one is
                self._at(self.cores[core], "pass", process)
                self.pass_due.add(process)
                return
        items, self.pending[process] = self.pending[process], []
        if process in self.publishers and len(items) > cost.publish_per_pass:
            items, self.pending[process] = items[: cost.publish_per_pass], items[cost.publish_per_pass :]
        costs = cost.costs(self._class(process))
        received = [m for src, m in items if src and m is not None]
        cursor = start + (costs.receive.at(sum(positions(m) for m in received)) if received else 0.0) / 1000
        cursor += costs.io * len(received) / 1000
        self.passing, self.collected = process, []
        fed_before = self._fed_count(process)
        for src, what in items:
            self.clock, self.now = cursor, int(cursor)
            if src:
                self.collected += self._outputs(process, src, what)
                cursor += costs.handling(what) / 1000
            elif what is None:
                out: list[Send] = self.hosts[process].tick(self.now) if process in self.hosts else []
                if process in self.clients:
                    out += self.clients[process].tick(self.now)
                self.collected += out
                cursor += costs.tick / 1000
            else:
                self._publish(process, what)
        self.clock, self.now = cursor, int(cursor)
        queued = sum(positions(m) for _, m in self.collected)
        if process in self.hosts:
            self.collected += self.hosts[process].flush(self.now)
        if process in self.hosts:
            cursor += costs.after.at(sum(positions(m) for _, m in self.collected) - queued) / 1000
        elif process not in self.clients and queued:  # a publisher's publications are its after-pass work
            cursor += costs.after.at(queued) / 1000
        if process in self.clients:
            fed = self._fed_count(process)
            if fed != fed_before:
                self.fed[process] = (fed, cursor)
        sends, self.passing, self.collected = self.collected, None, []
        for _, msg in sends:
            if isinstance(msg, Decide):
                self.batches["Decide"] += 1
                self.batches["decisions"] += len(msg.decisions)
        out_frames = frames(sends)
        for msgs in out_frames.values():
            cursor += (costs.send.at(sum(positions(m) for m in msgs)) + costs.io * len(msgs)) / 1000
        self.busy_until[process] = cursor
        if self.cores:
            self.cores[core] = cursor
        self.busy_us[process] += round((cursor - start) * 1000)
        self.clock, self.now = cursor, int(cursor)
        for dst, msgs in out_frames.items():
            self._transmit(process, dst, msgs)
        self.clock, self.now = start, int(start)
        if self.pending[process] and process not in self.pass_due:
            self.pass_due.add(process)
            self._at(cursor, "pass", process)

    def _fed_count(self, process: str) -> int:
        client = self.clients.get(process)
        return sum(len(s.fed) for s in client.streams.values()) if client is not None else 0

    def _send_costed(self, src: str, sends: list[Send]) -> None:
        """Sends under the cost model: collected during ``src``'s pass; outside one (a client's
        start, a publication's copies) each destination's messages go at once, one frame."""
        if src == self.passing:
            self.collected += sends
            return
        for dst, msgs in frames(sends).items():
            self._transmit(src, dst, msgs)

    def _transmit(self, src: str, dst: str, msgs: list[Message]) -> None:
        """One frame from ``src``'s host link to ``dst``: after the frames before it on that link,
        its bytes at the link's bandwidth, then the propagation latency; FIFO per pair."""
        cost = self.config.cost
        assert cost is not None
        for msg in msgs:
            self.messages[type(msg).__name__] += 1
        depart = max(self.clock, self.link_free[src])
        done = depart + cost.transmit_us(cost.frame_size(msgs)) / 1000
        self.link_free[src] = done
        arrival = max(done + cost.latency_us / 1000, self.last_arrival.get((src, dst), 0))
        self.last_arrival[(src, dst)] = arrival
        for msg in msgs:
            if dst == src:
                self._enqueue(dst, (src, msg))
            else:
                self._at(arrival, "msg", (src, dst, msg))

    # --- a run -----------------------------------------------------------------------------------

    def run(self, quiet: float | None = None) -> SimResult:
        """The run. ``quiet`` (cost model only): end once every publication was sent and no
        subscriber's engines were fed for ``quiet`` ms, rather than ``settle`` after the last one."""
        cfg = self.config
        self._send(COORDINATOR, self.coordination.start())
        for server, host in self.hosts.items():
            self._send(server, host.start(0))
            self._at(self.rng.randint(1, cfg.tick_every), "tick", server)
        for name in self.scenario.subscribers:
            self._start_client(name, None)
        # Publications begin once every initial subscriber reads its streams, so that they all
        # see the whole run (joiners are the ones that come later).
        limit = 20 * cfg.retry_every + 10 * cfg.max_delay
        self._run_until(limit, done=lambda: all(c.started() for c in self.clients.values()))
        if not all(c.started() for c in self.clients.values()):
            waiting = sorted(n for n, c in self.clients.items() if not c.started())
            raise SimulationError(f"seed {cfg.seed}: subscribers {', '.join(waiting)} never started")
        gate = self.now + 1
        last = gate
        for time, publisher, event in sorted(self.scenario.publications, key=lambda p: p[0]):
            self._at(gate + time, "publish", (publisher, event))
            last = max(last, gate + time)
        for joiner in self.scenario.joiners:
            self._at(gate + joiner.at, "join", joiner)
        for process, at in self.scenario.leavers:
            self._at(gate + at, "leave", process)
        for fault in self.scenario.faults:
            self._at(gate + fault.at, "fault", fault)
            last = max(last, gate + fault.at + fault.duration)
        end = last + cfg.settle
        if quiet is not None and cfg.cost is not None:
            self._run_until(end, done=lambda: self._quiet(last, quiet))
            end = self.now
        else:
            self._run_until(end)
        return self._result(gate, end)

    def _quiet(self, last: int, quiet: float) -> bool:
        if self.clock <= last or any(self.pending[p] for p in self.publishers):
            return False
        if not self.fed:  # nothing fed yet: a long first pass is no quiet
            return self.clock - last > 20 * quiet
        fed = max(t for _, t in self.fed.values())
        return self.clock - max(fed, last) > quiet

    def _result(self, gate: int, end: int) -> SimResult:
        final = {name: client.final_queues() for name, client in self.clients.items()}
        log = self.recorder.finish(final)
        for name in self.subscriptions:
            if name not in self.clients or not self.clients[name].started():
                log.joined.setdefault(name, (self.recorder.clock, None))
        result = SimResult(
            self.config.seed,
            log,
            gate,
            end,
            self.servers,
            self.roles,
            {r: self.placement(r) for r in self.roles},
            self.coordination.leadership(),
            self.replicas,
            self.clients,
            [],
            self.messages,
            list(self.scenario.faults),
            self.root_events,
            self.published_at,
            self.joined_at,
            self.first_delivery_at,
        )
        result.sent = self.sent
        result.left_at = self.left_at
        result.latch = {(s, r, p): st for s, stage in self.stages.items() for (r, p), st in stage.stats().items()}
        result.lost_on_path = self.lost_on_path
        result.batches = self.batches
        result.delivered_at = self.delivered_at
        result.published_clock = self.published_clock
        result.fed = self.fed
        result.busy_us = self.busy_us
        result.unacked = sorted((p, seq) for p, box in self.outboxes.items() for seq in box.unacked)
        result.gaps = stream_gaps(result)
        return result


def simulate(scenario: Scenario, config: SimConfig | None = None) -> SimResult:
    """Run ``scenario`` under ``config`` (seeded) and return its run log, topology and state."""
    return Simulation(scenario, config or SimConfig()).run()


__all__ = ["SimResult", "Simulation", "SimulationError", "StreamGap", "simulate"]
