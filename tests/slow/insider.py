"""An insider for attack tests: someone who holds ONE legitimate key of a deployment (a
publisher's, a subscriber's, a server's) and sends what they like to its processes.

The insider opens its own CurveZMQ DEALER connections with that key, beside the real process's,
so every message it sends is attributed by the receiver to ``as_process``: the transport names a
connection by its client key, never by what the message says. It can send an overlay message
(encoded as the processes encode theirs, :func:`faidecs.overlay.runtime.wire.encode`) or any
bytes as one frame (malformed, oversized, the transport's multi-message framing...).

A legitimate publisher's publications are real publications: :meth:`Insider.log_publication`
records one in a run log of its own in the run folder, so that the merged run log judges the
deliveries of what the insider published as it judges the real publisher's."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import zmq

from faidecs.matching.events import Event
from faidecs.net.certificates import Keys
from faidecs.net.processlog import ProcessLog
from faidecs.overlay.core.messages import Message
from faidecs.overlay.runtime.deployment import Deployment
from faidecs.overlay.runtime.wire import encode


class Insider:
    """Connections to a deployment's processes with the key of ``as_process``."""

    def __init__(self, keys_dir: Path, as_process: str, deployment: Deployment):
        self.process = as_process
        self.deployment = deployment
        self.keys = Keys.load(keys_dir, as_process)
        self.context: zmq.Context[Any] = zmq.Context()
        self.socks: dict[str, zmq.Socket[Any]] = {}
        self.sent = 0
        self.log: ProcessLog | None = None

    def _sock(self, target: str) -> zmq.Socket[Any]:
        sock = self.socks.get(target)
        if sock is None:
            sock = self.context.socket(zmq.DEALER)
            sock.setsockopt(zmq.SNDHWM, 0)
            sock.setsockopt(zmq.LINGER, 5000)  # what was queued still goes when the insider closes
            sock.curve_secretkey = self.keys.secret
            sock.curve_publickey = self.keys.public
            sock.curve_serverkey = self.keys.public_key_of(target)
            sock.connect(self.deployment.address(target))
            self.socks[target] = sock
        return sock

    def send(self, target: str, msg: Message) -> None:
        """One overlay message to ``target``, as a process would send it."""
        self.send_raw(target, encode(msg))

    def send_to(self, targets: tuple[str, ...] | list[str], msg: Message) -> None:
        for target in targets:
            self.send(target, msg)

    def send_raw(self, target: str, data: bytes) -> None:
        """``data`` as one frame to ``target``'s inbox."""
        self._sock(target).send(data, copy=len(data) < 1 << 16)
        self.sent += 1

    def log_publication(self, run_dir: Path, event: Event) -> None:
        """Record ``event`` (published by this insider, a legitimate publisher) in the insider's
        own run log of ``run_dir``, as the publisher nodes record theirs."""
        if self.log is None:
            path = run_dir / "logs" / f"insider-{self.process}.runlog"
            self.log = ProcessLog(path, self.deployment.types_source(), self.process, None)
        self.log.publish(
            {"id": event.id, "type": event.type, "attrs": event.attrs, "publisher": event.publisher, "seq": event.seq}
        )
        self.log.flush()

    def close(self, wait: float = 0.2) -> None:
        """Close the connections, after ``wait`` seconds for what is queued to leave."""
        time.sleep(wait)
        for sock in self.socks.values():
            sock.close(linger=2000)
        self.socks.clear()
        self.context.term()
        if self.log is not None:
            self.log.close()
            self.log = None


__all__ = ["Insider"]
