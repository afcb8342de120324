"""A server process: the merger replicas placement gives it, their messages and ticks, and the
UDP receiver in front of its root replicas when the deployment has UDP publishers."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from faidecs.matching.events import Event
from faidecs.merging.roles import Role, is_root, role_name
from faidecs.overlay.core.host import ServerHost
from faidecs.overlay.core.messages import Decision, Message, Send
from faidecs.overlay.core.replica import MergerReplica
from faidecs.overlay.runtime import wire
from faidecs.overlay.runtime.anomalies import Anomalies
from faidecs.overlay.runtime.deployment import Deployment
from faidecs.overlay.runtime.node import Node
from faidecs.overlay.runtime.replica_journal import ReplicaJournal
from faidecs.overlay.runtime.udp import UdpReceiver
from faidecs.overlay.runtime.zkcoordination import role_key

LOG = logging.getLogger("faidecs.overlay.runtime.node")


def _anomalies(r: MergerReplica) -> dict[str, int]:
    """What a replica turned away that an honest peer never sends (docs/deploy.md, "Threat model")."""
    return {
        "unconfirmed": r.log.unconfirmed,
        "overclaimed": r.log.overclaimed,
        "conflicting": r.inputs.conflicting,
        "bad_acks": r.consumers.bad_acks,
        "foreign": r.upstream.foreign,
    }


class ServerNode(Node):
    """A server: the merger replicas that placement gives it, behind one :class:`ServerHost`."""

    def __init__(
        self,
        deployment: Deployment,
        process: str,
        zookeeper: str,
        *,
        log_dir: Path,
        status_dir: Path | None = None,
        state_dir: Path | None = None,
        metrics: tuple[str, int] | None = None,
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
            # Every root replica fetches from its peers a decided publication it never received
            # (lossy): a publisher that crashed mid-send, or a forged one, reached some replicas
            # only, and on UDP any datagram may be lost. A root that UDP publishers feed also
            # never orders a publisher's event below one it ordered (fifo, with the latch's drop
            # policy), and records what it commits of them.
            udp_root = bool(self.udp_publishers) and is_root(role)
            replicas[role] = MergerReplica(
                role,
                process,
                deployment.placement,
                heartbeat_every=timing.heartbeat_every,
                retry_every=timing.retry_every,
                retain=timing.retain,
                ack_every=timing.ack_every,
                batching=timing.batching,
                max_batch=deployment.max_batch(),
                lossy_inputs=is_root(role),
                fifo_inputs=udp_root and deployment.latch.enabled and deployment.latch.late == "drop",
                on_commit=self._committed if udp_root else None,
                durable=deployment.durability.enabled and state_dir is not None,
                ack_publishers=not udp_root,  # a UDP publisher has no outbox (its datagrams are lossy)
            )
            roles[role] = deployment.placement(role)
        super().__init__(
            deployment,
            process,
            zookeeper,
            log_dir=log_dir,
            status_dir=status_dir,
            state_dir=state_dir,
            roles=roles,
            metrics=metrics,
        )
        self.host = ServerHost(process, replicas, deployment.root_role)
        self.journals: dict[Role, ReplicaJournal] = {}
        self.restored: set[Role] = set()
        if self.state_dir is not None:
            self._recover()
            self._keep_on_disk([j.log for j in self.journals.values()])
        self.udp_in: UdpReceiver | None = None
        if self.udp_publishers:
            import zmq

            self.udp_in = UdpReceiver(
                deployment, process, self.keys, self.transport.rejected, self.transport.codec.decode
            )
            self.poller = zmq.Poller()
            self.poller.register(self.transport.inbox, zmq.POLLIN)
            self.poller.register(self.udp_in.fileno(), zmq.POLLIN)
        # Per role: when this replica learned its current epoch, and when the commit point first
        # moved in it (wall clock, s): a failover's length, seen from the new leader.
        self.epochs: dict[Role, dict[str, float]] = {}
        self.anomalies = Anomalies(process)
        # Metrics: per role, the commit position up to which commits were observed, and the
        # histogram of decision-to-commit latency (runtime/metrics.py).
        self.observed: dict[Role, int] = {}
        self.commit_latency: dict[Role, Any] = {}
        if self.metrics is not None:
            histogram = self.metrics.histogram(
                "faidecs_overlay_commit_latency_seconds",
                "From an event's decision (its leader's clock) to its commit at this replica (this process's clock).",
                ["role"],
            )
            self.commit_latency = {role: histogram.labels(process, role_name(role)) for role in self.host.replicas}

    def _recover(self) -> None:
        """Open each durable replica's journal and give it back what a previous run kept."""
        assert self.state_dir is not None
        decoder = wire.Declared(self.d.types, self.d.roles)
        for role, replica in self.host.replicas.items():
            if not replica.durable:
                continue  # a Raft replica
            folder = self.state_dir / role_key(role)
            journal, state, recovered = ReplicaJournal.open(folder, role, self.d.durability, decoder)
            self.journals[role] = journal
            if recovered.torn_bytes:
                LOG.warning("%s: %s: cut a torn last record (%d bytes)", self.process, folder, recovered.torn_bytes)
            if state is not None:
                replica.restore(state)
                self.restored.add(role)
                LOG.info("%s: %s: recovered %d decisions", self.process, role_name(role), len(state.decisions))

    def _start(self, now: int) -> list[Send]:
        if self.member.ran_before:
            for role, replica in self.host.replicas.items():
                if role not in self.restored:
                    replica.amnesic = True  # restarted without its log: it is gone until a leader sends it
        return self.host.start(now)

    def _persist(self) -> None:
        """What the replicas changed in this pass, to disk before the pass's messages go out."""
        self._disk_failed("cannot fsync its logs")
        for role, journal in self.journals.items():
            replica = self.host.replicas[role]
            try:
                if journal.compaction_due():
                    base = replica.journal_base()
                    assert base is not None
                    journal.compact(base)
                else:
                    delta = replica.take_journal()
                    if delta is not None:
                        journal.write(delta)
                journal.commit()
            except OSError as exc:
                # A full or failing disk. The peers go on without this replica (docs/deploy.md).
                self._disk_failed(f"cannot keep the log of {role_name(role)} in {journal.log.folder}", exc)

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
        if self.d.timing.batching:  # the pass's batch: decisions, then the streams
            self._send(self.host.flush(now))
        self._persist()
        for role, r in self.host.replicas.items():
            self.anomalies.report(role, _anomalies(r), now)
            if self.commit_latency:
                self._observe_commits(role, r)
            seen = self.epochs.get(role)
            if seen is None or seen["epoch"] != r.log.epoch:
                self.epochs[role] = {"epoch": r.log.epoch, "epoch_at": time.time(), "commit_then": r.log.commit}
            elif "first_commit_at" not in seen and r.log.commit > seen["commit_then"] and r.is_leading():
                seen["first_commit_at"] = time.time()

    def _observe_commits(self, role: Role, r: MergerReplica) -> None:
        """The decision-to-commit latency of the events committed here since the last pass."""
        log = r.log
        committed_at = log.committed_at
        last = self.observed.get(role)
        self.observed[role] = log.commit
        if last is None or log.commit < last:
            return  # the first look (a restored log was committed before), or a log taken anew
        histogram = self.commit_latency[role]
        for p in range(last + 1, min(log.commit + 1, len(committed_at))):
            d = log.decisions[p]
            if d.kind == "event":
                histogram.observe(max(0, committed_at[p] - d.ts) / 1000)

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
        for journal in self.journals.values():
            journal.close()
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
                "events_committed": r.log.events_committed,
                "buffered": r.buffered(),
                "stale_rejected": r.log.stale_rejected,
                "late_inputs": r.inputs.late_inputs,
                "fetches": r.inputs.fetches,
                "trimmed": r.consumers.trimmed,
                "refused_connects": r.consumers.refused_connects,
                "durable": role in self.journals,
                **_anomalies(r),
                **self.epochs.get(r.role, {}),
            }
            for role, r in self.host.replicas.items()
        ]
        if self.udp_in is not None:
            out["udp"] = self.udp_in.status()
        return out


__all__ = ["ServerNode"]
