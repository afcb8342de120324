"""A subscriber process: one subscription's client, fed by its mergers' streams, and its
deliveries in its process log."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from faidecs.overlay.core.messages import Message, Send
from faidecs.overlay.core.subscriber import SubscriberClient
from faidecs.overlay.runtime.deployment import Deployment
from faidecs.overlay.runtime.node import Node


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
        out["foreign"] = self.client.foreign
        return out


__all__ = ["SubscriberNode"]
