"""Which node a deployment's process runs: :func:`open_node` (``faidecs overlay node``)."""

from __future__ import annotations

from pathlib import Path

from faidecs.errors import FaidecsError
from faidecs.overlay.runtime.deployment import Deployment
from faidecs.overlay.runtime.node import Node
from faidecs.overlay.runtime.publisher_node import PublisherNode
from faidecs.overlay.runtime.server_node import ServerNode
from faidecs.overlay.runtime.subscriber_node import SubscriberNode


def open_node(
    deployment: Deployment,
    process: str,
    zookeeper: str,
    *,
    log_dir: Path,
    status_dir: Path | None = None,
    state_dir: Path | None = None,
    metrics: tuple[str, int] | None = None,
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
    return kind(
        deployment, process, zookeeper, log_dir=log_dir, status_dir=status_dir, state_dir=state_dir, metrics=metrics
    )


__all__ = ["open_node"]
