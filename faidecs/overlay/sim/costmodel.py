"""The simulator's cost model: CPU time per message at each process and bandwidth per host link.

Without it (``SimConfig.cost = None``) the simulator is a protocol checker: a message is handled
the instant it arrives and links add a random delay. With it, the simulator predicts throughput
and latency, which is how the papers' evaluation is reproduced at scales one machine cannot hold
(docs/performance.md, "The papers' evaluation (issue 21)"). The model mirrors the runtime's loop
(:mod:`faidecs.overlay.runtime.node`):

- **A process does one thing at a time.** What reaches a process while it is busy waits; when it
  is free it takes everything waiting as one *pass* (the runtime reads all that arrived), handles
  it in order, flushes its batches (the runtime's ``_after_pass``) and sends each destination
  one frame, with superseded Holds/Commit/Ack left out as the runtime's ``coalesce`` does. The
  replies leave when the pass's handling ends. A busy server's batches therefore grow with its
  load, as in the runtime.
- **CPU per pass** is the sum of straight lines ``a + b·x`` (µs, x the stream positions a call
  worked on: :func:`~faidecs.overlay.core.weights.positions`): reading the transport, handling each
  message by its kind, the timers, the after-pass work, and each frame sent. The lines are fitted to
  the runtime's own profile (:mod:`faidecs.overlay.runtime.profile`) by ``benchmarks/calibrate.py``.
- **Bandwidth**: each process sits on a host whose link sends one frame after another at
  ``bandwidth`` bytes/s; a frame's size is the sum of its messages' sizes, lines per kind fitted
  to the wire format (:func:`faidecs.overlay.runtime.wire.encode`). Then ``latency_us`` of
  propagation.
- ``cores``: 0 gives every process a CPU of its own (one process per host); n > 0 makes all
  processes share n CPUs, as on the loopback machine the model is validated on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from faidecs.overlay.core.coalesce import coalesce
from faidecs.overlay.core.messages import Message, Send
from faidecs.overlay.core.weights import positions

ProcessClass = Literal["server", "subscriber", "publisher"]


class Line(BaseModel):
    """``a + b·x``: a cost per call and per position (µs, or bytes for sizes)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    a: float = 0.0
    b: float = 0.0

    def at(self, x: int) -> float:
        return self.a + self.b * x


class ProcessCosts(BaseModel):
    """One class of process's CPU costs, µs (keys as in the runtime's profile)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    receive: Line = Line()
    handle: dict[str, Line] = Field(default_factory=dict)
    #: a kind the calibration never saw handled
    other: Line = Line()
    tick: float = 0.0
    after: Line = Line()
    send: Line = Line()
    #: per message sent or received, on top of the loop's own work: ZeroMQ's I/O thread (TCP,
    #: CurveZMQ) and the loop's idle polls, from the process's whole CPU time less its profile
    io: float = 0.0

    def handling(self, msg: Message) -> float:
        return self.handle.get(type(msg).__name__, self.other).at(positions(msg))


class CostModel(BaseModel):
    """Costs per process class, sizes per message kind, the network and the CPUs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: ProcessCosts = ProcessCosts()
    subscriber: ProcessCosts = ProcessCosts()
    publisher: ProcessCosts = ProcessCosts()
    size: dict[str, Line] = Field(default_factory=dict)
    default_size: Line = Line(a=64.0)
    #: bytes a frame adds to its messages' (length prefixes, CurveZMQ's box, TCP/IP headers)
    frame_bytes: float = 0.0
    bandwidth: float = Field(default=0.0, ge=0.0)  # bytes/s of a host's link; 0: unlimited
    latency_us: float = Field(default=50.0, ge=0.0)
    cores: int = Field(default=0, ge=0)
    #: the most publications a publisher makes in one pass of its loop (the runtime's budget)
    publish_per_pass: int = Field(default=256, ge=1)
    #: where the figures come from (the calibration run's machine and date)
    source: str = ""

    def costs(self, cls: ProcessClass) -> ProcessCosts:
        return self.server if cls == "server" else self.subscriber if cls == "subscriber" else self.publisher

    def bytes_of(self, msg: Message) -> float:
        return self.size.get(type(msg).__name__, self.default_size).at(positions(msg))

    def frame_size(self, msgs: Sequence[Message]) -> float:
        return self.frame_bytes + sum(self.bytes_of(m) for m in msgs)

    def transmit_us(self, nbytes: float) -> float:
        return nbytes / self.bandwidth * 1e6 if self.bandwidth else 0.0

    def scaled(self, **changes: Any) -> CostModel:
        """A copy with other network or CPU settings (the calibration's costs kept)."""
        return self.model_copy(update=changes)


def frames(sends: Sequence[Send]) -> dict[str, list[Message]]:
    """A pass's sends as the runtime sends them: one frame per destination, in order of first
    send, without the messages a later one of the same key supersedes."""
    out: dict[str, list[Message]] = {}
    for dst, msg in sends:
        out.setdefault(dst, []).append(msg)
    return {dst: coalesce(msgs) for dst, msgs in out.items()}


__all__ = ["CostModel", "Line", "ProcessClass", "ProcessCosts", "frames"]
