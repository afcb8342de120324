"""One overlay process: the protocol core driven by real sockets, a real clock and ZooKeeper.

A process has one job, and a class for it: a :class:`ServerNode` hosts the merger replicas that
placement gives it, a :class:`SubscriberNode` runs one subscription's
:class:`~faidecs.overlay.core.subscriber.SubscriberClient`, a :class:`PublisherNode` publishes
the events of a file; :func:`open_node` picks the one a deployment's process is. What every
process does is in their base, :class:`Node`: the transport, the coordination service's
membership, the process log and the status file, and the loop. The loop reads the transport,
hands each message to the core with the current time in milliseconds (the host's wall clock, so
that the timestamps of different mergers' streams are comparable when a subscriber merges a
disjunction), passes on the coordination service's news, ticks the core, and sends what the core
returns. The core is the one the simulator tests; only the I/O is here.

Coordination news arrives on kazoo's thread and is queued for the loop: the core is single
threaded. ``Down(p)`` also drops the link to ``p`` with what was queued for it, as a crash would.
"""

from __future__ import annotations

import json
import logging
import queue
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from faidecs.errors import EventError, FaidecsError
from faidecs.matching.events import Event, EventValidator
from faidecs.merging.roles import Role, is_root, role_name
from faidecs.net.certificates import Keys
from faidecs.net.processlog import ProcessLog
from faidecs.net.statusfile import StatusFile
from faidecs.net.transport import Transport
from faidecs.overlay.core.admission import inconsistency
from faidecs.overlay.core.host import ServerHost
from faidecs.overlay.core.messages import Ack, Commit, Decision, Down, Holds, Message, Publish, Send
from faidecs.overlay.core.replica import MergerReplica
from faidecs.overlay.core.subscriber import SubscriberClient
from faidecs.overlay.runtime.codec import OVERLAY_CODEC, RelayingCodec
from faidecs.overlay.runtime.deployment import Deployment
from faidecs.overlay.runtime.udp import UdpReceiver, UdpSender

LOG = logging.getLogger("faidecs.overlay.runtime.node")
COORDINATOR = "coordinator"


def supersede_key(msg: Message) -> tuple[Any, ...] | None:
    """Messages with equal keys carry a position that only grows (a follower's log length in an
    epoch, a commit point in an epoch, an acknowledged position): the last one sent says all that
    the earlier ones said, so only it needs to go."""
    if isinstance(msg, Holds):
        return ("holds", msg.role, msg.epoch, msg.replica)
    if isinstance(msg, Commit):
        return ("commit", msg.role, msg.epoch)
    if isinstance(msg, Ack):
        return ("ack", msg.role, msg.consumer, msg.process)
    return None


def coalesce(msgs: list[Message]) -> list[Message]:
    """``msgs`` in order without those a later message supersedes."""
    last: dict[tuple[Any, ...], int] = {}
    for k, msg in enumerate(msgs):
        key = supersede_key(msg)
        if key is not None:
            last[key] = k
    if not last:
        return msgs
    return [m for k, m in enumerate(msgs) if (key := supersede_key(m)) is None or last[key] == k]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def open_node(
    deployment: Deployment, process: str, zookeeper: str, *, log_dir: Path, status_dir: Path | None = None
) -> Node:
    """The node that ``process`` of ``deployment`` is: a server, a subscriber or a publisher."""
    if process not in deployment.processes():
        raise FaidecsError(f"process {process} is not in deployment {deployment.name}")
    kind: type[Node]
    if process in deployment.servers:
        kind = ServerNode
    elif process in deployment.subscribers:
        kind = SubscriberNode
    else:
        kind = PublisherNode
    return kind(deployment, process, zookeeper, log_dir=log_dir, status_dir=status_dir)


class Node:
    """What every process of ``deployment`` does; :meth:`run` until stopped (SIGTERM, SIGINT or
    :meth:`stop`). A subclass gives the core: what it does at the start (:meth:`_start`), with a
    message (:meth:`_core_handle`), at a tick (:meth:`_tick`) and after each pass of the loop
    (:meth:`_after_pass`), and what it adds to the status and closes at the end."""

    def __init__(
        self,
        deployment: Deployment,
        process: str,
        zookeeper: str,
        *,
        log_dir: Path,
        status_dir: Path | None = None,
        roles: Mapping[Role, tuple[str, ...]] | None = None,
        subscription: str | None = None,
    ):
        """``roles``: the merger roles this process is a candidate for, with their replicas (a
        server's); ``subscription``: the source of the subscription its process log records (a
        subscriber's)."""
        if process not in deployment.processes():
            raise FaidecsError(f"process {process} is not in deployment {deployment.name}")
        self.d = deployment
        self.process = process
        self.zookeeper = zookeeper
        self.stopping = threading.Event()
        self.news: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self.status_dir = status_dir
        self.status_file = StatusFile(status_dir / f"{process}.json") if status_dir is not None else None
        self.keys = None if deployment.insecure else Keys.load(deployment.path(deployment.keys or ""), process)
        # With UDP publishers a server answers a peer's Fetch with the Publish itself.
        codec = RelayingCodec(deployment.servers) if deployment.udp_publishers() else OVERLAY_CODEC
        self.transport = Transport(process, deployment.address(process), deployment.addresses(), self.keys, codec=codec)
        self.types = deployment.types
        self.tick_every = deployment.timing.tick_every
        self.log = ProcessLog(log_dir / f"{process}.runlog", deployment.types_source(), process, subscription)
        from faidecs.overlay.runtime.zkcoordination import ZooKeeperMember

        self.member = ZooKeeperMember(
            zookeeper,
            deployment.name,
            process,
            dict(roles or {}),
            self.news.put,
            session_timeout=deployment.timing.session_timeout / 1000,
        )
        self.protocol_errors = 0
        self.started_at = 0
        self.outbox: dict[str, list[Message]] = {}

    # --- what a kind of process adds -------------------------------------------------------------

    def _start(self, now: int) -> list[Send]:
        """The core's first messages, once the membership started."""
        return []

    def _core_handle(self, src: str, msg: Message, now: int) -> list[Send]:
        """The core's replies to one message."""
        return []

    def _tick(self, now: int) -> list[Send]:
        """The core's messages at a tick."""
        return []

    def _due(self, now: int) -> int:
        """Milliseconds until this process has something to do besides ticking."""
        return self.tick_every

    def _receive(self, wait: int) -> None:
        """Read what arrived, waiting at most ``wait`` ms for the first message."""
        for src, msg in self.transport.receive(wait):
            self._admit(src, msg)

    def _after_pass(self, now: int) -> None:
        """Work of each pass of the loop, after the tick, before the pass's messages go out."""

    def _flush_logs(self) -> None:
        """Flush the process's own files (twice a second)."""
        self.log.flush()

    def _close(self) -> None:
        """Close what the process opened besides the process log, status, membership and transport."""

    # --- the loop -----------------------------------------------------------------------------

    def stop(self) -> None:
        self.stopping.set()

    def run(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            if threading.current_thread() is threading.main_thread():
                signal.signal(sig, lambda *_: self.stop())
        self.member.start()
        now = self.started_at = now_ms()
        self._send(self._start(now))
        next_tick = now + self.tick_every
        next_status = now
        try:
            while not self.stopping.is_set():
                now = now_ms()
                self._receive(max(0, min(next_tick - now, self._due(now))))
                while True:
                    try:
                        news = self.news.get_nowait()
                    except queue.Empty:
                        break
                    if isinstance(news, Down):
                        # As a crash would: what was queued for it, sent or not yet, is dropped.
                        self.transport.forget(news.process)
                        self.outbox.pop(news.process, None)
                    self._handle(COORDINATOR, news, now_ms())
                now = now_ms()
                if now >= next_tick:
                    next_tick = now + self.tick_every
                    self._send(self._tick(now))
                self._after_pass(now)
                self._flush()
                if now >= next_status:
                    next_status = now + 500
                    self._flush_logs()
                    if self.status_file is not None:
                        self.status_file.put(self.status())
        finally:
            self._close()
            self.log.close()
            if self.status_file is not None:
                self.status_file.close(self.status())
            self.member.stop()
            self.transport.close()

    def _admit(self, src: str, msg: Message) -> None:
        problem = inconsistency(msg, self.types)
        if problem is not None:
            self.transport.rejected["inconsistent"] += 1
            LOG.warning("%s rejected %s from %s: %s", self.process, type(msg).__name__, src, problem)
            return
        self._handle(src, msg, now_ms())

    def _handle(self, src: str, msg: Message, now: int) -> None:
        try:
            self._send(self._core_handle(src, msg, now))
        except FaidecsError as exc:  # a ProtocolError too
            # A message the core cannot place (a peer's bug or a stale sender) or a peer's state
            # that does not restore: logged and counted; the process goes on.
            self.protocol_errors += 1
            LOG.warning("%s: %s", self.process, exc)

    def _send(self, sends: list[Send]) -> None:
        """Queue for the end of the loop pass (:meth:`_flush`); a message to itself is handled now."""
        for dst, msg in sends:
            if dst == self.process:
                self._handle(self.process, msg, now_ms())
            else:
                self.outbox.setdefault(dst, []).append(msg)

    def _flush(self) -> None:
        """Send what the pass produced: one frame per destination, with a message that a later
        one of the same kind supersedes left out (:func:`coalesce`)."""
        outbox, self.outbox = self.outbox, {}
        for dst, msgs in outbox.items():
            self.transport.send_many(dst, coalesce(msgs))

    # --- status -------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """What `faidecs overlay up` shows: transport counters, and what the kind of process adds."""
        return {
            "process": self.process,
            "time": time.time(),
            "cpu_s": round(time.process_time(), 3),
            "sent": self.transport.sent,
            "received": self.transport.received,
            "rejected": dict(self.transport.rejected),
            "protocol_errors": self.protocol_errors,
        }


class ServerNode(Node):
    """A server: the merger replicas that placement gives it, behind one :class:`ServerHost`."""

    def __init__(
        self, deployment: Deployment, process: str, zookeeper: str, *, log_dir: Path, status_dir: Path | None = None
    ):
        self.udp_publishers = set(deployment.udp_publishers())
        roles: dict[Role, tuple[str, ...]] = {}
        replicas: dict[Role, MergerReplica] = {}
        timing = deployment.timing
        for role in deployment.roles:
            if process not in deployment.placement(role):
                continue
            if deployment.ordering == "raft":  # Raft elects its leader: no candidacy
                from faidecs.overlay.runtime.raft import raft_replica

                replicas[role] = raft_replica(deployment, role, process)
                continue
            # A root that UDP publishers feed: replicas may lose different inputs (lossy), the
            # leader never orders a publisher's event below one it ordered (fifo, with the latch's
            # drop policy), and the replica records what it commits of them.
            udp_root = bool(self.udp_publishers) and is_root(role)
            replicas[role] = MergerReplica(
                role,
                process,
                deployment.placement,
                heartbeat_every=timing.heartbeat_every,
                retry_every=timing.retry_every,
                retain=timing.retain,
                ack_every=timing.ack_every,
                lossy_inputs=udp_root,
                fifo_inputs=udp_root and deployment.latch.enabled and deployment.latch.late == "drop",
                on_commit=self._committed if udp_root else None,
            )
            roles[role] = deployment.placement(role)
        super().__init__(deployment, process, zookeeper, log_dir=log_dir, status_dir=status_dir, roles=roles)
        self.host = ServerHost(process, replicas, deployment.root_role)
        self.udp_in: UdpReceiver | None = None
        if self.udp_publishers:
            import zmq

            self.udp_in = UdpReceiver(deployment, process, self.keys, self.transport.rejected)
            self.poller = zmq.Poller()
            self.poller.register(self.transport.inbox, zmq.POLLIN)
            self.poller.register(self.udp_in.fileno(), zmq.POLLIN)
        # Per role: when this replica learned its current epoch, and when the commit point first
        # moved in it (wall clock, s): a failover's length, seen from the new leader.
        self.epochs: dict[Role, dict[str, float]] = {}

    def _start(self, now: int) -> list[Send]:
        if self.member.ran_before:
            for replica in self.host.replicas.values():
                replica.amnesic = True  # restarted: its log is gone until a leader sends it
        return self.host.start(now)

    def _core_handle(self, src: str, msg: Message, now: int) -> list[Send]:
        return self.host.handle(src, msg, now)

    def _tick(self, now: int) -> list[Send]:
        return self.host.tick(now)

    def _receive(self, wait: int) -> None:
        if self.udp_in is None:
            super()._receive(wait)
            return
        latch = self.udp_in.wait_ms()
        wait = wait if latch is None else min(wait, latch)
        if self.poller.poll(wait):
            wait = 0
        super()._receive(wait)
        for msg in self.udp_in.receive(self.host.replicas) + self.udp_in.poll():
            self._admit(msg.publisher, msg)

    def _after_pass(self, now: int) -> None:
        for role, r in self.host.replicas.items():
            seen = self.epochs.get(role)
            if seen is None or seen["epoch"] != r.log.epoch:
                self.epochs[role] = {"epoch": r.log.epoch, "epoch_at": time.time(), "commit_then": r.log.commit}
            elif "first_commit_at" not in seen and r.log.commit > seen["commit_then"] and r.is_leading():
                seen["first_commit_at"] = time.time()

    def _committed(self, role: Role, decision: Decision, event: Event | None) -> None:
        """A root fed by UDP publishers committed ``decision``: the run log's publication of a UDP
        publisher's event is its commit (it may never be ordered), recorded by each replica that
        holds it; merging the run logs keeps the earliest (the leader's, before it forwards)."""
        if event is not None and decision.source in self.udp_publishers:
            self.log.publish(
                {
                    "id": event.id,
                    "type": event.type,
                    "attrs": dict(event.attrs),
                    "publisher": decision.source,
                    "seq": decision.key,
                }
            )

    def _close(self) -> None:
        if self.udp_in is not None:
            self.udp_in.close()
        for replica in self.host.replicas.values():
            getattr(replica, "close", lambda: None)()  # a Raft replica's thread and sockets

    def status(self) -> dict[str, Any]:
        """Per merger replica its role, leader, epoch, log and commit positions, buffered inputs."""
        out = super().status()
        out["mergers"] = [
            {
                "role": role_name(r.role),
                "leader": r.log.leader,
                "epoch": r.log.epoch,
                "status": r.log.status,
                "log": len(r.log.decisions),
                "commit": r.log.commit,
                "buffered": r.buffered(),
                "stale_rejected": r.log.stale_rejected,
                "late_inputs": r.inputs.late_inputs,
                "fetches": r.inputs.fetches,
                **self.epochs.get(r.role, {}),
            }
            for r in self.host.replicas.values()
        ]
        if self.udp_in is not None:
            out["udp"] = self.udp_in.status()
        return out


class SubscriberNode(Node):
    """A subscriber: one subscription's client, and its deliveries in the process log (it is the
    client's observer)."""

    def __init__(
        self, deployment: Deployment, process: str, zookeeper: str, *, log_dir: Path, status_dir: Path | None = None
    ):
        subscription = deployment.subscription(process)
        spec = deployment.subscribers[process]
        super().__init__(
            deployment,
            process,
            zookeeper,
            log_dir=log_dir,
            status_dir=status_dir,
            subscription=subscription.source or subscription.to_source(),
        )
        if spec.start == "up":
            self.log.start()
        self.delivered = 0
        self.fed, self.fed_at = 0, 0.0
        self.client = SubscriberClient(
            process,
            subscription,
            deployment.types,
            deployment.placement,
            self,
            matcher=deployment.matcher,
            peer=spec.peer,
            retry_every=deployment.timing.retry_every,
            ack_every=deployment.timing.ack_every,
            split=deployment.streams,
        )

    # --- the client's observer ---------------------------------------------------------------

    def deliver(self, process: str, conjunction: int, relation: tuple[str, ...]) -> None:
        self.delivered += 1
        self.log.deliver(conjunction, relation)

    def snapshot_taken(self, peer: str, joiner: str) -> int:
        return self.log.now()

    def joined(self, process: str, peer: str | None, marker: int | None) -> None:
        if self.d.subscribers[process].start == "later":  # its process record says when it joined
            # From the peer's snapshot on (``marker``: the peer's clock then, the host's), it
            # delivers what the peer delivers; a fresh start counts from now.
            self.log.start(peer, joining=True, at=marker)

    # --- the core -----------------------------------------------------------------------------

    def _start(self, now: int) -> list[Send]:
        return self.client.start(now)

    def _core_handle(self, src: str, msg: Message, now: int) -> list[Send]:
        return self.client.handle(src, msg, now)

    def _tick(self, now: int) -> list[Send]:
        return self.client.tick(now)

    def _after_pass(self, now: int) -> None:
        fed = sum(len(s.fed) for s in self.client.streams.values())
        if fed != self.fed:  # when the last event reached the engines (benchmarks)
            self.fed, self.fed_at = fed, time.time()

    def _close(self) -> None:
        if self.client.started():
            self.log.final(self.client.final_queues())

    def status(self) -> dict[str, Any]:
        """Its deliveries, whether its streams started, and what reached its engines."""
        out = super().status()
        out["delivered"] = self.delivered
        out["started"] = self.client.started()
        out["fed"], out["fed_at"] = self.fed, self.fed_at
        return out


class PublisherNode(Node):
    """A publisher: the events of its file, in order, at its rate, to the replicas of each event's
    root merger (over the overlay's links, or as UDP datagrams)."""

    def __init__(
        self, deployment: Deployment, process: str, zookeeper: str, *, log_dir: Path, status_dir: Path | None = None
    ):
        super().__init__(deployment, process, zookeeper, log_dir=log_dir, status_dir=status_dir)
        self.publisher = deployment.publishers[process]
        self.events: Iterator[dict[str, Any]] | None = self._read_events(deployment.path(self.publisher.events))
        self.validator = EventValidator(deployment.types)
        self.seq = 0
        self.udp_out: UdpSender | None = None
        self.sent_log: ProcessLog | None = None
        if process in deployment.udp_publishers():
            pub = self.publisher
            self.udp_out = UdpSender(deployment, process, self.keys, loss=pub.udp_test_loss, swap=pub.udp_test_swap)
            # What it sent: apart from the run log, where root replicas record what they commit.
            self.sent_log = ProcessLog(log_dir / f"{process}.sent", deployment.types_source(), process, None)

    def _read_events(self, path: Path) -> Iterator[dict[str, Any]]:
        with path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise FaidecsError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
                if not isinstance(event, dict):
                    raise FaidecsError(f"{path}:{number}: an event is a JSON object")
                yield {**event, "_line": f"{path}:{number}"}

    def _due(self, now: int) -> int:
        """Milliseconds until the next publication is due (a tick when there is nothing to publish)."""
        if self.events is None:
            return self.tick_every
        if not self.publisher.rate:
            return 0
        due = self.started_at + int(self.seq * 1000 / self.publisher.rate)
        return max(0, due - now)

    def _after_pass(self, now: int) -> None:
        if self.events is not None:
            self._publish(now)

    def _publish(self, now: int) -> None:
        budget = 256  # publications per pass: the loop must still read and tick
        while budget and self.events is not None and self._due(now) == 0:
            budget -= 1
            try:
                raw = next(self.events)
            except StopIteration:
                self.events = None
                if self.udp_out is not None:
                    self.udp_out.flush()  # a copy held back (udp_test_swap) goes now
                LOG.info("%s published %d events", self.process, self.seq)
                return
            where = raw.pop("_line")
            try:
                event = self.validator.validate({**raw, "publisher": self.process, "seq": self.seq})
            except EventError as exc:
                raise FaidecsError(f"{where}: {exc}") from None
            record = {
                "id": event.id,
                "type": event.type,
                "attrs": event.attrs,
                "publisher": self.process,
                "seq": self.seq,
            }
            message = Publish(self.process, self.seq, event)
            if self.udp_out is not None:
                assert self.sent_log is not None
                self.sent_log.publish(record)
                self.udp_out.publish(message)
            else:
                self.log.publish(record)
                self._send([(replica, message) for replica in self.d.placement(self.d.root_role(event.type))])
            self.seq += 1

    def _flush_logs(self) -> None:
        super()._flush_logs()
        if self.sent_log is not None:
            self.sent_log.flush()

    def _close(self) -> None:
        if self.udp_out is not None:
            self.udp_out.flush()
            self.udp_out.close()
        if self.sent_log is not None:
            self.sent_log.close()

    def status(self) -> dict[str, Any]:
        """Its UDP counters, what it published, and whether its file is done."""
        out = super().status()
        if self.udp_out is not None:
            out["udp"] = self.udp_out.status()
        out["published"] = self.seq
        out["done"] = self.events is None
        return out


__all__ = ["Node", "PublisherNode", "ServerNode", "SubscriberNode", "now_ms", "open_node"]
