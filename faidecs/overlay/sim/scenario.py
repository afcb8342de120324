"""What a simulated deployment runs: the program, who subscribes and publishes when, the faults."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from faidecs.matching.records import Matcher
from faidecs.overlay.sim.costmodel import CostModel

FaultKind = Literal["crash", "pause", "partition", "restart", "wipe"]


@dataclass(frozen=True, slots=True)
class Fault:
    """``crash``: the processes stop for good at ``at``. ``pause``: they stop and resume after
    ``duration`` (SIGSTOP/SIGCONT). ``partition``: links between ``processes`` and the other
    servers hold their messages from ``at`` for ``duration``, then deliver them in order.
    ``restart``: the servers crash at ``at`` (SIGKILL) and start again after ``duration`` with
    what their replicas kept on disk (issue 22). ``wipe``: the same, but their disks are lost:
    their replicas come back amnesic."""

    kind: FaultKind
    at: int
    processes: tuple[str, ...]
    duration: int = 0

    def describe(self) -> str:
        what = ", ".join(self.processes)
        span = f" for {self.duration} ms" if self.kind != "crash" else ""
        return f"{self.kind} {what} at {self.at} ms{span}"


JoinMode = Literal["register", "marker"]


@dataclass(frozen=True, slots=True)
class Joiner:
    """Subscriber ``process`` joins at ``at`` with ``subscription``; from ``peer``'s state when
    ``peer`` is given (a subscriber with the identical subscription), fresh otherwise. A fresh
    joiner with ``mode="register"`` logs a mark at each merger; with ``mode="marker"`` it starts
    at a marker of each merger whose committed stream already covers it (LoCaPS), and registers
    only where none does (docs/overlay.md, "Marker joins")."""

    process: str
    subscription: str
    at: int
    peer: str | None = None
    mode: JoinMode = "register"

    def __post_init__(self) -> None:
        if self.mode == "marker" and self.peer is not None:
            raise ValueError(f"joiner {self.process}: a marker join starts with empty queues, not from a peer")


@dataclass(frozen=True, slots=True)
class Reaction:
    """On each delivery, the process publishes an event of ``type_name`` with attributes
    ``attrs``, at most ``limit`` times: causal chains for the order properties."""

    type_name: str
    attrs: dict[str, Any] = field(hash=False)
    limit: int = 2


@dataclass(slots=True)
class Scenario:
    types_source: str
    subscribers: dict[str, str]  # process -> subscription declaration, present from the start
    publications: list[tuple[int, str, dict[str, Any]]]  # (time, publisher, event: id, type, attrs)
    joiners: list[Joiner] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    servers: int = 4
    reactions: dict[str, Reaction] = field(default_factory=dict)  # subscriber -> its reaction
    leavers: list[tuple[str, int]] = field(default_factory=list)  # (subscriber, time it leaves)


class LatchSpec(BaseModel):
    """The latch-time FIFO stage (seed 002) in front of each root merger replica, one receiver per
    (replica, publisher): see :class:`faidecs.ordering.latch.LatchConfig`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    p_t: float = Field(default=0.05, gt=0.0, le=0.5)
    late: Literal["drop", "deliver"] = "drop"


class InputPath(BaseModel):
    """Publishers reach the root merger replicas over an unordered, lossy path instead of the
    overlay's reliable FIFO links (docs/ordering-latch-stage.md): each copy of a ``Publish``
    crosses ``hops`` brokers, each adding an independent exponential delay of mean
    ``mean_hop_delay`` ms (so copies overtake each other) and dropping it with probability
    ``loss``. ``latch``: the latch stage that restores per-publisher FIFO order at each replica;
    None hands the raw reordered stream to the replicas."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hops: int = Field(default=3, ge=1)
    mean_hop_delay: float = Field(default=5.0, ge=0.0)
    loss: float = Field(default=0.0, ge=0.0, lt=1.0)
    latch: LatchSpec | None = LatchSpec()


class SimConfig(BaseModel):
    """Timing of a simulated deployment, in virtual milliseconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = 0
    replicas: int = Field(default=3, ge=1)
    min_delay: int = Field(default=1, ge=1)
    max_delay: int = Field(default=20, ge=1)
    tick_every: int = Field(default=10, ge=1)
    heartbeat_every: int = Field(default=40, ge=1)
    session_timeout: int = Field(default=150, ge=1)
    notify_delay: int = Field(default=10, ge=1)
    retry_every: int = Field(default=200, ge=1)
    retain: int = Field(default=2000, ge=0)
    ack_every: int = Field(default=50, ge=1)
    settle: int = Field(default=3000, ge=1)
    #: 0: each replica answers every message on its own (flushes at once). Otherwise replicas
    #: batch (MergerReplica.flush): a server flushes ``batch_ms`` after the first message or tick
    #: of a batch, so a batch holds what reached it meanwhile, at most ``max_batch`` per message
    batch_ms: int = Field(default=0, ge=0)
    max_batch: int = Field(default=128, ge=1)
    matcher: Matcher = "compiled"
    #: None: publishers send over reliable FIFO links, as the overlay assumes
    input_path: InputPath | None = None
    #: None: messages are handled the instant they arrive, links add min_delay..max_delay ms.
    #: A cost model: each process handles what waits for it in passes that take CPU time, and its
    #: host's link takes time per byte (faidecs/overlay/sim/costmodel.py); servers flush their
    #: batches at the end of each pass, as the runtime does (batch_ms is not used), and link delays
    #: are the model's latency (no random delays). For performance runs without faults.
    cost: CostModel | None = None
    #: overlay: the type-merging overlay. sequencer: every publication ordered by one replica group
    #: (``replicas`` of them) for all types, each subscriber reading one stream from it, as the
    #: runtime's ``ordering = "sequencer"`` baseline (Deployment.sequencer_role)
    ordering: Literal["overlay", "sequencer"] = "overlay"

    @model_validator(mode="after")
    def _delays(self) -> SimConfig:
        if self.max_delay < self.min_delay:
            raise ValueError("max_delay must be at least min_delay")
        return self


__all__ = ["Fault", "FaultKind", "InputPath", "JoinMode", "Joiner", "LatchSpec", "Reaction", "Scenario", "SimConfig"]
