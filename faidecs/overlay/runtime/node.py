"""One overlay process: the protocol core driven by real sockets, a real clock and ZooKeeper.

A process has one job, and a class for it: a :class:`ServerNode` hosts the merger replicas that
placement gives it, a :class:`SubscriberNode` runs one subscription's
:class:`~faidecs.overlay.core.subscriber.SubscriberClient`, a :class:`PublisherNode` publishes
the events of a file; :func:`open_node` picks the one a deployment's process is. What every
process does is here, in their base :class:`Node`: the transport, the coordination service's
membership, the process log and the status file, and the loop. The loop reads the transport,
hands each message to the core with the current time in milliseconds (the host's wall clock, so
that the timestamps of different mergers' streams are comparable when a subscriber merges a
disjunction), passes on the coordination service's news, ticks the core, and sends what the core
returns. The core is the one the simulator tests; only the I/O is here.

Coordination news arrives on kazoo's thread and is queued for the loop: the core is single
threaded. ``Down(p)`` also drops the link to ``p`` with what was queued for it, as a crash would.
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faidecs.errors import FaidecsError
from faidecs.merging.roles import Role
from faidecs.net.certificates import Keys
from faidecs.net.processlog import ProcessLog
from faidecs.net.segmentlog import BackgroundSync, SegmentLog
from faidecs.net.statusfile import StatusFile
from faidecs.net.transport import MAX_MESSAGE, LinkDelay, Transport
from faidecs.overlay.core.admission import inconsistency
from faidecs.overlay.core.authority import Authority
from faidecs.overlay.core.coalesce import coalesce, supersede_key
from faidecs.overlay.core.messages import Down, Message, Send
from faidecs.overlay.runtime import profile, wire
from faidecs.overlay.runtime.codec import OverlayCodec
from faidecs.overlay.runtime.deployment import Deployment

if TYPE_CHECKING:
    from faidecs.overlay.runtime.metrics import NodeMetrics

LOG = logging.getLogger("faidecs.overlay.runtime.node")
COORDINATOR = "coordinator"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


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
        state_dir: Path | None = None,
        metrics: tuple[str, int] | None = None,
    ):
        """``roles``: the merger roles this process is a candidate for, with their replicas (a
        server's); ``subscription``: the source of the subscription its process log records (a
        subscriber's); ``state_dir``: the folder of what it keeps on disk to restart
        where it stood (``[durability]``; None or ``sync = "off"``: nothing); ``metrics``: (host,
        port) of its Prometheus endpoint while it runs (None: none)."""
        if process not in deployment.processes():
            raise FaidecsError(f"process {process} is not in deployment {deployment.name}")
        self.d = deployment
        self.process = process
        self.zookeeper = zookeeper
        self.stopping = threading.Event()
        self.news: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self.status_dir = status_dir
        self.state_dir = state_dir if deployment.durability.enabled else None
        self.status_file = StatusFile(status_dir / f"{process}.json") if status_dir is not None else None
        self.keys = None if deployment.insecure else Keys.load(deployment.path(deployment.keys or ""), process)
        codec = OverlayCodec(
            Authority(process, deployment.roster()),
            wire.Declared(deployment.types, deployment.roles),
            max_event=deployment.max_event_bytes,
            max_message=MAX_MESSAGE,
        )
        emulation = deployment.emulation
        delay = (  # benchmarks only: [emulation] in the deployment file
            LinkDelay(emulation.link_delay_ms, emulation.link_jitter_ms, f"{emulation.seed}:{process}")
            if emulation.active
            else None
        )
        self.transport = Transport(
            process, deployment.address(process), deployment.addresses(), self.keys, codec=codec, delay=delay
        )
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
        #: bytes of messages of this pass already encoded, by id (see _flush)
        self.encoded: dict[int, bytes] = {}
        #: FAIDECS_PROFILE=1: CPU per message kind, in the status (runtime/profile.py); else None
        self.profile: Any = None
        #: the thread that fsyncs this process's logs under group commit (_keep_on_disk)
        self.syncer: BackgroundSync | None = None
        self.kept: list[SegmentLog] = []
        #: its Prometheus endpoint's registry and histograms (runtime/metrics.py); None: no metrics,
        #: and nothing of prometheus-client is imported
        self.metrics: NodeMetrics | None = None
        if metrics is not None:
            from faidecs.overlay.runtime.metrics import NodeMetrics

            self.metrics = NodeMetrics(process, metrics)

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

    def _keep_on_disk(self, logs: list[SegmentLog]) -> None:
        """The process's durable logs: under group commit a thread fsyncs them (off the loop)."""
        self.kept = logs
        durability = self.d.durability
        if durability.sync == "group" and logs:
            self.syncer = BackgroundSync(logs, durability.group_ms, f"faidecs-fsync-{self.process}").start()

    def _disk_failed(self, what: str, exc: OSError | None = None) -> None:
        """Stop, before this pass's messages acknowledge what could not be kept: ``what`` failed
        with ``exc``, or (None) the background fsync failed. Raises when the disk failed."""
        exc = exc if exc is not None else self.syncer.failure if self.syncer is not None else None
        if exc is None:
            return
        for log in self.kept:
            log.abandon()
        raise FaidecsError(
            f"{self.process}: {what}: {exc.strerror or exc}; stopping before it acknowledges anything more"
        )

    # --- the loop -----------------------------------------------------------------------------

    def stop(self) -> None:
        self.stopping.set()

    def run(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            if threading.current_thread() is threading.main_thread():
                signal.signal(sig, lambda *_: self.stop())
        if profile.enabled():
            self.profile = profile.attach(self)
        if self.metrics is not None:
            self.metrics.start()
        self.member.start()
        now = self.started_at = now_ms()
        self._send(self._start(now))
        next_tick = now + self.tick_every
        next_status = now
        try:
            while not self.stopping.is_set():
                now = now_ms()
                wait = min(next_tick - now, self._due(now))
                if self.transport.delay is not None:  # emulated link delay: wake when a frame is due
                    wait = min(wait, self.transport.delay.wait_ms())
                self._receive(max(0, wait))
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
                if self.transport.delay is not None:
                    self.transport.release()
                if now >= next_status:
                    next_status = now + 500
                    self._flush_logs()
                    self._hand_over_status()
        finally:
            if self.syncer is not None:
                self.syncer.stop()  # before the logs close
            self._close()
            self.log.close()
            if self.status_file is not None:
                # "stopped": a reader (the live view) tells a process that stopped from a dead one.
                self.status_file.close({**self.status(), "stopped": True})
            self.member.stop()
            self.transport.close()
            if self.metrics is not None:
                self.metrics.close()

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
        # A message to several peers (a publication to its root's replicas, a batch of
        # decisions to the followers) is encoded once. Keyed by id: every message is held by
        # the outbox until the end of this pass, so no id is reused meanwhile.
        encoded, self.encoded = self.encoded, {}
        for dst, msgs in outbox.items():
            self.transport.send_many(dst, coalesce(msgs), encoded)

    # --- status -------------------------------------------------------------------------------

    def _hand_over_status(self) -> None:
        """A fresh status to the status file's writer and the metrics' scrapes: each reads it on
        its own thread, so it is never changed once handed over."""
        if self.status_file is None and self.metrics is None:
            return
        status = self.status()
        if self.metrics is not None:
            self.metrics.status = status
        if self.status_file is not None:
            self.status_file.put(status)

    def _rejected_from(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (kind, sender), count in self.transport.rejected_from.items():
            out.setdefault(sender, {})[kind] = count
        return out

    def status(self) -> dict[str, Any]:
        """What `faidecs overlay up` shows: transport counters, and what the kind of process adds."""
        return {
            "process": self.process,
            "time": time.time(),
            "cpu_s": round(time.process_time(), 3),
            "sent": self.transport.sent,
            "received": self.transport.received,
            "rejected": dict(self.transport.rejected),
            "rejected_from": self._rejected_from(),
            "protocol_errors": self.protocol_errors,
            **({"profile": self.profile.report()} if self.profile is not None else {}),
        }


__all__ = ["Node", "coalesce", "now_ms", "supersede_key"]
