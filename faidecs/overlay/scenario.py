"""What a simulated deployment runs: the program, who subscribes and publishes when, the faults."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

FaultKind = Literal["crash", "pause", "partition"]


@dataclass(frozen=True, slots=True)
class Fault:
    """``crash``: the processes stop for good at ``at``. ``pause``: they stop and resume after
    ``duration`` (SIGSTOP/SIGCONT). ``partition``: links between ``processes`` and the other
    servers hold their messages from ``at`` for ``duration``, then deliver them in order."""

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
    only where none does (docs/overlay-locaps-join.md)."""

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
    matcher: Literal["compiled", "reference"] = "compiled"

    @model_validator(mode="after")
    def _delays(self) -> "SimConfig":
        if self.max_delay < self.min_delay:
            raise ValueError("max_delay must be at least min_delay")
        return self


__all__ = ["Fault", "FaultKind", "JoinMode", "Joiner", "Reaction", "Scenario", "SimConfig"]
