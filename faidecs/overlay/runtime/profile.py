"""Opt-in CPU accounting of a node, per message kind: what the simulator's cost model is
calibrated from (``benchmarks/calibrate.py``, docs/performance.md "The papers' evaluation").

With ``FAIDECS_PROFILE=1`` in a process's environment, :func:`attach` wraps the few methods of a
:class:`~faidecs.overlay.runtime.node.Node` and its transport through which all of its work passes,
and measures each call's thread CPU time (``time.thread_time_ns``: the core is single threaded, and
waiting in ``poll`` costs none). Each measurement is a point (x, y): y the CPU nanoseconds, x the
stream positions the call worked on (:func:`~faidecs.overlay.core.weights.positions`), so that a
least-squares line ``y = a + b·x`` per key separates the per-call cost from the per-position one.
The keys:

- ``receive``: one read of the transport (decoding and checking what arrived), x = positions read;
- ``handle:<Kind>``: the core's handling of one message of that kind, x = its positions;
- ``tick``: the core's timers, x = 1;
- ``pass``: the work after each pass (a server's batch flush, a publisher's publications),
  x = positions it queued;
- ``send``: one frame to one peer (encoding and sending), x = the positions of its messages.

Without the variable nothing is wrapped: the node runs exactly the code it runs unprofiled.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from faidecs.overlay.core.messages import Message
from faidecs.overlay.core.weights import positions

ENV = "FAIDECS_PROFILE"


class Sums:
    """Running sums for a least-squares line through (x, y) points: n, Σx, Σy, Σx², Σxy."""

    __slots__ = ("n", "sx", "sy", "sxx", "sxy")

    def __init__(self) -> None:
        self.n = 0
        self.sx = 0
        self.sy = 0
        self.sxx = 0
        self.sxy = 0

    def add(self, x: int, y: int) -> None:
        self.n += 1
        self.sx += x
        self.sy += y
        self.sxx += x * x
        self.sxy += x * y

    def as_list(self) -> list[int]:
        return [self.n, self.sx, self.sy, self.sxx, self.sxy]


class Profile:
    """The sums per key of one process."""

    def __init__(self) -> None:
        self.sums: dict[str, Sums] = {}

    def add(self, key: str, x: int, ns: int) -> None:
        s = self.sums.get(key)
        if s is None:
            s = self.sums[key] = Sums()
        s.add(x, ns)

    def report(self) -> dict[str, list[int]]:
        return {k: s.as_list() for k, s in sorted(self.sums.items())}


def enabled() -> bool:
    return os.environ.get(ENV) == "1"


def attach(node: Any) -> Profile:
    """Wrap ``node``'s receive, handle, tick, after-pass and send paths; the profile they fill."""
    profile = Profile()
    clock = time.thread_time_ns
    transport = node.transport
    receive: Callable[[int], list[tuple[str, Message]]] = transport.receive
    send_many: Callable[[str, list[Message], dict[int, bytes] | None], None] = transport.send_many
    handle: Callable[[str, Message, int], Any] = node._core_handle
    tick: Callable[[int], Any] = node._tick
    after: Callable[[int], None] = node._after_pass

    def timed_receive(timeout_ms: int) -> list[tuple[str, Message]]:
        t = clock()
        got = receive(timeout_ms)
        if got:
            profile.add("receive", sum(positions(m) for _, m in got), clock() - t)
        return got

    def timed_send_many(dst: str, msgs: list[Message], encoded: dict[int, bytes] | None = None) -> None:
        t = clock()
        send_many(dst, msgs, encoded)
        if msgs:
            profile.add("send", sum(positions(m) for m in msgs), clock() - t)

    def timed_handle(src: str, msg: Message, now: int) -> Any:
        t = clock()
        out = handle(src, msg, now)
        profile.add(f"handle:{type(msg).__name__}", positions(msg), clock() - t)
        return out

    def timed_tick(now: int) -> Any:
        t = clock()
        out = tick(now)
        profile.add("tick", 1, clock() - t)
        return out

    def timed_after(now: int) -> None:
        before = sum(positions(m) for msgs in node.outbox.values() for m in msgs)
        t = clock()
        after(now)
        ns = clock() - t
        queued = sum(positions(m) for msgs in node.outbox.values() for m in msgs) - before
        profile.add("pass", queued, ns)

    transport.receive = timed_receive
    transport.send_many = timed_send_many
    node._core_handle = timed_handle
    node._tick = timed_tick
    node._after_pass = timed_after
    return profile


__all__ = ["ENV", "Profile", "Sums", "attach", "enabled"]
