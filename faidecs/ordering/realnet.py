"""The ordering layers' network API (:class:`~faidecs.ordering.network.Network`) on real OS processes.

One :class:`RealNetwork` per process. The process hosts some addresses (the topic managers of one
server, the atoms of one sequencing node, one subscriber's ordering module, the publishers'
clients); ``hosts`` maps every address of the deployment to its process. A message between two
addresses of one process goes through a local queue; any other goes over the overlay's
:class:`~faidecs.net.transport.Transport` (ZeroMQ over TCP, CurveZMQ when given keys) to the
process hosting its destination, encoded by :mod:`faidecs.ordering.wire`. Both keep each link FIFO:
the local queue trivially, the transport because one ZeroMQ connection per pair of processes
carries, in sending order, every message from any address of one to any address of the other
(messages are batched per destination process per loop pass, in order). ``ens`` is ``send``: a FIFO
link is one of the orders the notification service may show.

``at(time, action)`` runs ``action`` once the wall clock (seconds since the network was made:
``now``) reaches ``time``. Timers, the local queue and the sockets are served by :meth:`step`,
which the process's loop calls. A received message that does not decode, comes from an address
its process does not host, is for an address this process does not host, or makes its handler
raise is counted in :attr:`rejected` and logged, never raised: a bad peer cannot stop a process.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from typing import Any

from faidecs.net.transport import Transport
from faidecs.ordering.network import Handler, LinkStats, NetworkError
from faidecs.ordering.wire import Envelope

LOG = logging.getLogger("faidecs.ordering.realnet")
#: Longest a step waits on the sockets when nothing else is due (seconds).
MAX_WAIT = 0.05


class RealNetwork:
    """The :class:`~faidecs.ordering.network.Network` API for one process on a real network."""

    def __init__(self, process: str, hosts: Mapping[str, str], transport: Transport | None):
        self.process = process
        self.hosts = dict(hosts)
        self.transport = transport
        self.handlers: dict[str, Handler] = {}
        self.sent: dict[tuple[str, str], LinkStats] = {}
        self.rejected: Counter[str] = Counter()
        self.handled = 0
        self._start = time.monotonic()
        self._local: deque[Envelope] = deque()
        self._out: dict[str, list[Envelope]] = {}
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0

    @property
    def now(self) -> float:
        """Seconds since this network was made (the wall clock, monotonic)."""
        return time.monotonic() - self._start

    def hosts_here(self, address: str) -> bool:
        return self.hosts.get(address) == self.process

    # -- the Network API ------------------------------------------------------------------------

    def listen(self, address: str, handler: Handler) -> None:
        if not self.hosts_here(address):
            raise NetworkError(f"{self.process} cannot listen on {address}: it is hosted by {self.hosts.get(address)}")
        self.handlers[address] = handler

    def at(self, time_s: float, action: Callable[[], None]) -> None:
        """Run ``action`` once ``now`` reaches ``time_s`` (at the next step if it has)."""
        self._seq += 1
        heapq.heappush(self._timers, (time_s, self._seq, action))

    def send(self, src: str, dst: str, message: Any, *, entries: int = 0) -> None:
        """A FIFO link from ``src`` (hosted here) to ``dst`` (hosted anywhere)."""
        host = self.hosts.get(dst)
        if host is None:
            raise NetworkError(f"{src} sent {type(message).__name__} to {dst}, which no process hosts")
        stats = self.sent.setdefault((src, dst), LinkStats())
        stats.messages += 1
        stats.entries += entries
        envelope = Envelope(src, dst, message)
        if host == self.process:
            self._local.append(envelope)
        else:
            self._out.setdefault(host, []).append(envelope)

    ens = send

    # -- the loop -------------------------------------------------------------------------------

    def step(self, max_wait: float = MAX_WAIT) -> int:
        """Run due timers, deliver local messages, send what is queued, take what arrived (waiting
        at most ``max_wait`` s, less when a timer is due sooner); returns the messages handled."""
        before = self.handled
        self._run_timers()
        self._drain()
        self.flush()
        wait = 0.0 if self._local else max_wait
        if self._timers:
            wait = min(wait, max(0.0, self._timers[0][0] - self.now))
        if self.transport is not None:
            for sender, envelope in self.transport.receive(int(wait * 1000)):
                self._arrive(sender, envelope)
        elif wait > 0:
            time.sleep(wait)
        self._drain()
        self.flush()
        return self.handled - before

    def flush(self) -> None:
        """Send what is queued for other processes, one frame per process, in order."""
        if not self._out:
            return
        out, self._out = self._out, {}
        if self.transport is None:
            raise NetworkError(f"{self.process} has no transport for {sorted(out)}")
        for host, envelopes in out.items():
            self.transport.send_many(host, envelopes)

    def idle(self) -> bool:
        return not self._local and not self._out

    def _run_timers(self) -> None:
        now = self.now
        while self._timers and self._timers[0][0] <= now:
            _, _, action = heapq.heappop(self._timers)
            self._guard("timer", action)

    def _drain(self) -> None:
        while self._local:
            envelope = self._local.popleft()
            self._dispatch(envelope)

    def _arrive(self, sender: str, envelope: Envelope) -> None:
        if not self.hosts_here(envelope.dst):
            self._reject(
                "misrouted", f"{type(envelope.message).__name__} from {sender} for {envelope.dst}, not hosted here"
            )
            return
        self._dispatch(envelope)

    def _dispatch(self, envelope: Envelope) -> None:
        handler = self.handlers.get(envelope.dst)
        if handler is None:
            self._reject("unheard", f"{type(envelope.message).__name__} for {envelope.dst}, where nothing listens")
            return
        self.handled += 1
        self._guard(envelope.dst, lambda: handler(envelope.src, envelope.message))

    def _guard(self, what: str, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception:  # one bad message costs itself, not the process
            self.rejected["handler"] += 1
            LOG.exception("%s: %s raised", self.process, what)

    def _reject(self, kind: str, why: str) -> None:
        self.rejected[kind] += 1
        LOG.warning("%s rejected a message: %s", self.process, why)

    def rejections(self) -> dict[str, int]:
        """Everything rejected so far, by kind: the transport's (malformed, impersonation...) and this network's."""
        total = Counter(self.rejected)
        if self.transport is not None:
            total.update(self.transport.rejected)
        return dict(total)


__all__ = ["RealNetwork"]
