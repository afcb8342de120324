"""A subscriber process: one subscription's client, fed by its mergers' streams, and its
deliveries in its process log.

With ``[durability]`` on, it keeps a checkpoint in ``<state_dir>/checkpoint`` (the client's
engines and stream positions, and where its run log stood), written atomically every
``checkpoint_every`` deliveries or ``checkpoint_ms`` after one not yet in it; its run log is
flushed and ``fsync``ed first, so every delivery a checkpoint reflects is recorded. Restarted with
a checkpoint there, it resumes from it: each stream is read again after its position, and the
relations since the checkpoint come again with the same ids; those its predecessors had recorded
are not delivered (nor logged) again (docs/overlay.md, "Subscriber checkpoints and delivery ids").
A damaged checkpoint stops it with an error naming the file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from faidecs.net.checkpointfile import CheckpointError, read_checkpoint, write_checkpoint
from faidecs.net.processlog import recorded_deliveries
from faidecs.overlay.core.checkpoint import CheckpointPolicy, SubscriberCheckpoint
from faidecs.overlay.core.messages import Message, Send
from faidecs.overlay.core.subscriber import SubscriberClient
from faidecs.overlay.runtime.deployment import Deployment
from faidecs.overlay.runtime.node import Node, now_ms


class SubscriberNode(Node):
    """A subscriber: one subscription's client, and its deliveries in the process log (it is the
    client's observer)."""

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
        subscription = deployment.subscription(process)
        spec = deployment.subscribers[process]
        super().__init__(
            deployment,
            process,
            zookeeper,
            log_dir=log_dir,
            status_dir=status_dir,
            state_dir=state_dir,
            subscription=subscription.source or subscription.to_source(),
            metrics=metrics,
        )
        self.subscription_name = subscription.name
        self.delivery_latency: Any = None
        if self.metrics is not None:
            self.delivery_latency = self.metrics.histogram(
                "faidecs_overlay_delivery_latency_seconds",
                "From the decision of the event a delivery's relation was made at (its merger's leader's "
                "clock) to the delivery (this process's clock).",
                ["subscription"],
            ).labels(process, subscription.name)
        durability = deployment.durability
        policy = CheckpointPolicy(durability.checkpoint_every, durability.checkpoint_ms)
        self.checkpoint_path = self.state_dir / "checkpoint" if self.state_dir is not None else None
        self.checkpoints = 0  # written by this incarnation
        resume = self._read_checkpoint()
        recorded: set[str] = set()
        if resume is not None:
            # The same process again: no join, and what its predecessors recorded since the
            # checkpoint is not recorded twice.
            self.log.start()
            where = resume.sinks.get("runlog", {})
            since = (int(where.get("incarnation", 0)), int(where.get("offset", 0)))
            recorded = recorded_deliveries(log_dir / f"{process}.runlog", process, since, self.log.incarnation)
        elif spec.start == "up":
            self.log.start()
        self.resumed = resume is not None
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
            checkpoints=policy if self.checkpoint_path is not None else None,
            resume=resume,
            recorded=recorded,
        )

    # --- checkpoints ----------------------------------------------------------------------------

    def _read_checkpoint(self) -> SubscriberCheckpoint | None:
        if self.checkpoint_path is None:
            return None
        self.checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
        data = read_checkpoint(self.checkpoint_path)
        if data is None:
            return None
        try:
            return SubscriberCheckpoint.from_json(data)
        except ValueError as exc:
            raise CheckpointError(f"{self.checkpoint_path}: {exc}") from None

    def _checkpoint(self) -> None:
        """Save the client's checkpoint: the run log first (every delivery the checkpoint reflects
        is recorded, and where it stood is in the checkpoint), then the checkpoint, atomically;
        only then may the client acknowledge up to it."""
        assert self.checkpoint_path is not None
        checkpoint = self.client.checkpoint()
        offset = self.log.sync()
        checkpoint = checkpoint.with_sinks({"runlog": {"incarnation": self.log.incarnation, "offset": offset}})
        write_checkpoint(self.checkpoint_path, checkpoint.to_json())
        self.client.saved(checkpoint)
        self.checkpoints += 1

    # --- the client's observer ---------------------------------------------------------------

    def deliver(self, process: str, conjunction: int, relation: tuple[str, ...]) -> None:
        self.delivered += 1
        self.log.deliver(conjunction, relation)
        if self.delivery_latency is not None:
            self._observe_delivery()

    def deliver_identified(self, process: str, delivery: str, conjunction: int, relation: tuple[str, ...]) -> None:
        self.delivered += 1
        self.log.deliver(conjunction, relation, delivery)
        if self.delivery_latency is not None:
            self._observe_delivery()

    def _observe_delivery(self) -> None:
        self.delivery_latency.observe(max(0, now_ms() - self.client.release_ts) / 1000)

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
        if self.client.checkpoint_due(now):
            self._checkpoint()

    def _close(self) -> None:
        if self.client.started():
            self.log.final(self.client.final_queues())

    def status(self) -> dict[str, Any]:
        """Its deliveries, whether its streams started, and what reached its engines."""
        out = super().status()
        out["delivered"] = self.delivered
        out["subscription"] = self.subscription_name
        out["started"] = self.client.started()
        out["fed"], out["fed_at"] = self.fed, self.fed_at
        out["foreign"] = self.client.foreign
        out["checkpoints"], out["resumed"], out["skipped"] = self.checkpoints, self.resumed, self.client.skipped
        return out


__all__ = ["SubscriberNode"]
