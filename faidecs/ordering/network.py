"""A deterministic discrete-event network for the ordering layers of seeds 000 and 004.

Two kinds of link, as both papers assume: protocol links between ordering entities (and between
clients and them) are FIFO, and the event notification service (ENS) that carries events to
subscribers is not (events take different paths). Delays are drawn from one seeded
``random.Random``; a link's delay can be fixed (the papers' counterexamples need slow links), or
drawn by a ``delay`` function of the link (geographic deployments: short and long links by site).
Everything happens in virtual time, so a run is reproduced exactly from its seed.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from faidecs.errors import FaidecsError

Handler = Callable[[str, Any], None]  # (sender, message)


class NetworkError(FaidecsError, RuntimeError):
    """A message to an address nobody listens on, or a run that does not end."""


@dataclass(slots=True)
class LinkStats:
    messages: int = 0
    entries: int = 0  # timestamp entries carried, where the sender says


@dataclass(slots=True)
class Network:
    rng: random.Random
    mean_delay: float = 1.0
    ens_mean_delay: float = 1.0
    now: float = 0.0
    #: (src, dst) -> fixed delay for that link
    override: dict[tuple[str, str], float] = field(default_factory=dict)
    #: optional (src, dst, rng) -> delay for links without an override, in place of the
    #: exponential draw; None keeps the exponential delays
    delay: Callable[[str, str, random.Random], float] | None = None
    handlers: dict[str, Handler] = field(default_factory=dict)
    sent: dict[tuple[str, str], LinkStats] = field(default_factory=dict)
    _queue: list[tuple[float, int, Callable[[], None]]] = field(default_factory=list)
    _seq: int = 0
    _fifo_tail: dict[tuple[str, str], float] = field(default_factory=dict)

    def listen(self, address: str, handler: Handler) -> None:
        self.handlers[address] = handler

    def at(self, time: float, action: Callable[[], None]) -> None:
        """Run ``action`` at virtual ``time`` (not before now)."""
        self._seq += 1
        heapq.heappush(self._queue, (max(time, self.now), self._seq, action))

    def _delay(self, src: str, dst: str, mean: float) -> float:
        fixed = self.override.get((src, dst))
        if fixed is None and self.delay is not None:
            return self.delay(src, dst, self.rng)
        return fixed if fixed is not None else self.rng.expovariate(1.0 / mean) if mean > 0 else 0.0

    def send(self, src: str, dst: str, message: Any, *, entries: int = 0) -> None:
        """A FIFO protocol link: ``message`` arrives after everything ``src`` sent ``dst`` before."""
        arrival = self.now + self._delay(src, dst, self.mean_delay)
        tail = self._fifo_tail.get((src, dst), 0.0)
        arrival = max(arrival, tail)  # ties keep sending order through the sequence number
        self._fifo_tail[(src, dst)] = arrival
        self._count(src, dst, entries)
        self.at(arrival, lambda: self._arrive(src, dst, message))

    def ens(self, src: str, dst: str, message: Any, *, entries: int = 0) -> None:
        """The notification service: independent delay per message, so no FIFO order."""
        self._count(src, dst, entries)
        self.at(self.now + self._delay(src, dst, self.ens_mean_delay), lambda: self._arrive(src, dst, message))

    def _count(self, src: str, dst: str, entries: int) -> None:
        stats = self.sent.setdefault((src, dst), LinkStats())
        stats.messages += 1
        stats.entries += entries

    def _arrive(self, src: str, dst: str, message: Any) -> None:
        handler = self.handlers.get(dst)
        if handler is None:
            raise NetworkError(f"{src} sent {type(message).__name__} to {dst}, which does not listen")
        handler(src, message)

    def run(self, *, until: float | None = None, max_steps: int = 10_000_000) -> int:
        """Process events in time order until none is left (or ``until``); returns the steps taken."""
        steps = 0
        while self._queue and (until is None or self._queue[0][0] <= until):
            time, _, action = heapq.heappop(self._queue)
            self.now = time
            action()
            steps += 1
            if steps >= max_steps:
                raise NetworkError(f"no quiescence after {max_steps} steps at time {self.now}")
        if until is not None:
            self.now = max(self.now, until)
        return steps

    def idle(self) -> bool:
        return not self._queue
