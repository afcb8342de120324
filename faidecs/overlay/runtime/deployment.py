"""A deployment file: which processes run an overlay, where, and with what (docs/deploy.md).

TOML, read with the standard library and checked with pydantic, so that a mistake is reported
with the field's path::

    name = "stock"
    program = "stock.fdc"          # event types and subscriptions (relative to this file)
    replicas = 3                   # replicas per merger role
    keys = "keys"                  # from `faidecs overlay keys`; omit only with insecure = true
    zookeeper = "127.0.0.1:2181"   # omit: `faidecs overlay up` starts one on loopback

    [servers]                      # merger hosts; roles are placed on them
    m1 = "tcp://127.0.0.1:7001"

    [subscribers.s1]
    address = "tcp://127.0.0.1:7101"
    subscription = "Pairs"         # a subscription of the program, by name

    [publishers.p1]
    address = "tcp://127.0.0.1:7201"
    events = "events.jsonl"        # JSON lines, published in file order
    # source = "nats://127.0.0.1:4222/quotes"   # or a NATS JetStream subject (docs/connectors.md)
    rate = 2000                    # events per second (0: as fast as the links take them)
    # transport = "udp"            # sealed datagrams to the root replicas, latch stage in front

    [metrics]                      # Prometheus endpoints: process i on base_port + i (optional)
    base_port = 9400

Across hosts the same file is used with the hosts' addresses; each host runs its processes with
``faidecs overlay node``.

UDP publishers (docs/ordering-latch-stage.md) reach each server at its host and port plus
``udp_port_offset``; ``[latch]`` sets the latch stage in front of the root replicas.

``[emulation]`` (``link_delay_ms``, ``link_jitter_ms``, ``seed``) delays every frame a process
sends, to benchmark LAN or WAN delays on one machine (benchmarks/hosts.py); never in production.
"""

from __future__ import annotations

import tomllib
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from faidecs.errors import FaidecsError
from faidecs.grammar import compile_program
from faidecs.grammar.model import EventType, Program, Subscription
from faidecs.matching.records import Matcher
from faidecs.merging.roles import Role, merger_roles, role_of, split_by_role
from faidecs.net.certificates import check_process_name
from faidecs.net.codec import MAX_MESSAGE
from faidecs.overlay.core.authority import Roster
from faidecs.overlay.core.keys import stream_filter, stream_key
from faidecs.overlay.core.placement import place
from faidecs.overlay.runtime.codec import FILTER_BYTES


class DeploymentError(FaidecsError):
    """A deployment file that cannot be used: says the file, the field and what is wrong."""


def _address(value: str) -> str:
    if not value.startswith("tcp://") or ":" not in value[6:]:
        raise ValueError(f"{value!r} is not a tcp://host:port address")
    return value


class Timing(BaseModel):
    """Milliseconds, as in the simulator's configuration."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tick_every: int = Field(default=5, ge=1)
    heartbeat_every: int = Field(default=20, ge=1)
    retry_every: int = Field(default=200, ge=1)
    retain: int = Field(default=2000, ge=0)
    ack_every: int = Field(default=50, ge=1)
    session_timeout: int = Field(default=1000, ge=200)
    #: leaders decide, and replicas forward, in batches: what arrived in one pass of the loop
    #: (docs/overlay.md, "Batches"); off, every message is answered on its own, as before
    batching: bool = True
    #: the most decisions one Decide carries, and positions one ForwardBatch (at most what fits
    #: the transport's largest message with events of max_event_bytes: Deployment.max_batch)
    max_batch: int = Field(default=128, ge=1, le=4096)


class Durability(BaseModel):
    """``[durability]``: what each process keeps on disk, in its folder of the run folder
    (``<run>/state/<process>``), so that it restarts where it stood (docs/deploy.md, "Durability").

    ``sync`` is when a replica's log and a publisher's outbox reach the disk. Every loop pass
    writes what it appended to the operating system before it sends anything that acknowledges it,
    so a killed process loses nothing it acknowledged either way; ``always`` also ``fsync``s then
    (an acknowledged write survives a power loss of every machine), ``group`` at most every
    ``group_ms`` (a power loss of a majority within that window may lose the last writes).
    ``off``: nothing on disk; a restarted replica has lost its log (the amnesia rule), a restarted
    publisher and subscriber start over."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sync: Literal["always", "group", "off"] = "group"
    group_ms: int = Field(default=5, ge=0, le=10_000)
    #: a log segment's size before the next one starts (whole segments are trimmed)
    segment_bytes: int = Field(default=16 << 20, ge=1 << 16, le=1 << 30)
    #: a subscriber checkpoints its engine and stream positions every this many deliveries ...
    checkpoint_every: int = Field(default=1000, ge=1)
    #: ... or this many milliseconds after a delivery it has not checkpointed, whichever first
    checkpoint_ms: int = Field(default=1000, ge=1)

    @property
    def enabled(self) -> bool:
        return self.sync != "off"

    def log_settings(self) -> dict[str, Any]:
        """The keyword arguments of ``SegmentLog.open`` for a log kept under this policy."""
        return {
            "sync": "always" if self.sync == "always" else "group",
            "group_ms": self.group_ms,
            "segment_bytes": self.segment_bytes,
        }


class SubscriberSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str
    subscription: str
    peer: str | None = None  # join from this subscriber's state (same subscription)
    start: Literal["up", "later"] = "up"  # later: not started by `overlay up` (joins when started)

    _check = field_validator("address")(_address)


class PublisherSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str
    #: one of: a JSON-lines file of events, published in file order ...
    events: str | None = None
    #: ... or a broker subject, ``nats://host:port/subject?durable=..`` (docs/connectors.md): each
    #: message is acknowledged once its publication is committed in the outbox
    source: str | None = None
    #: with ``source``: done after this many publications (none: it reads until stopped)
    max_events: int | None = Field(default=None, ge=1)
    rate: float = Field(default=0, ge=0)
    #: zmq: reliable FIFO links (CurveZMQ). udp: one sealed datagram per root replica, unordered and
    #: lossy, with the latch stage in front of the root replicas (docs/ordering-latch-stage.md)
    transport: Literal["zmq", "udp"] = "zmq"
    #: udp, for tests: each datagram is dropped with this probability, or held back and sent after
    #: the next one to the same server with probability ``udp_test_swap`` (seeded by the name)
    udp_test_loss: float = Field(default=0, ge=0, le=1)
    udp_test_swap: float = Field(default=0, ge=0, le=1)

    _check = field_validator("address")(_address)

    @field_validator("source")
    @classmethod
    def _broker(cls, value: str | None) -> str | None:
        if value is not None:
            from faidecs.connect.urls import ConnectError, parse_url

            try:
                url = parse_url(value)
            except ConnectError as exc:
                raise ValueError(str(exc)) from None
            if url.scheme != "nats":
                raise ValueError(
                    f"{value}: a publisher reads NATS JetStream only (it resumes by the stream's sequence numbers)"
                )
        return value

    @model_validator(mode="after")
    def _one_input(self) -> PublisherSpec:
        if (self.events is None) == (self.source is None):
            raise ValueError("give events (a file) or source (a nats:// URL), one of them")
        if self.source is not None and self.transport != "zmq":
            raise ValueError(
                'a publisher with a broker source needs transport = "zmq" (it acknowledges through its outbox)'
            )
        if self.max_events is not None and self.source is None:
            raise ValueError("max_events goes with source")
        return self


class LatchSettings(BaseModel):
    """The latch stage in front of root replicas fed by UDP publishers (faidecs/ordering/latch)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True  # false: the raw arrival order goes in
    p_t: float = Field(default=0.05, gt=0, le=0.5)  # the FIFO violation coefficient
    late: Literal["drop", "deliver"] = "drop"  # a message after a later one was released


class Emulation(BaseModel):
    """``[emulation]``: a benchmarking aid, never for production. Every process holds each frame it
    sends for ``link_delay_ms`` plus a uniform jitter of up to ``link_jitter_ms``, in order per
    link (faidecs.net.transport.LinkDelay), to emulate a LAN or WAN where the kernel cannot
    (no ``sch_netem``: benchmarks/hosts.py, docs/performance.md). It covers the overlay's ZeroMQ
    links only: not ZooKeeper, not UDP publishers' datagrams, not Raft's own traffic."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    link_delay_ms: float = Field(default=0, ge=0, le=10_000, allow_inf_nan=False)
    link_jitter_ms: float = Field(default=0, ge=0, le=10_000, allow_inf_nan=False)
    #: the jitter's generator is seeded with this and the process's name
    seed: int = 0

    @property
    def active(self) -> bool:
        return self.link_delay_ms > 0 or self.link_jitter_ms > 0


class MetricsSettings(BaseModel):
    """``[metrics]``: each process serves Prometheus metrics (docs/deploy.md, "Metrics") at
    ``http://host:port/metrics``; the process at index i of :meth:`Deployment.processes` (servers,
    then subscribers, then publishers, each in file order) on ``base_port + i``. ``host``: the
    address to listen on (default: the host of the process's own address). No ``base_port``: no
    metrics (``faidecs overlay up --metrics-port BASE`` sets one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_port: int | None = Field(default=None, ge=1, le=65535)
    host: str | None = None


class Deployment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    program: str
    replicas: int = Field(default=3, ge=1)
    keys: str | None = None
    insecure: bool = False
    zookeeper: str | None = None
    matcher: Matcher = "compiled"
    #: overlay: the type-merging overlay. sequencer: the baseline of the papers' comparison, every
    #: publication ordered by one (replicated, with replicas > 1) sequencer, each subscriber
    #: feeding the whole ordered stream of its types to one embedded engine.
    #: raft: the same, with positions decided by a Raft library instead (faidecs/overlay/runtime/raft.py).
    ordering: Literal["overlay", "sequencer", "raft"] = "overlay"
    #: raft: each server's Raft endpoint is its address's port plus this
    raft_port_offset: int = Field(default=1000, ge=1, le=65535)
    #: UDP publishers: each server receives datagrams at its address's port plus this
    udp_port_offset: int = Field(default=2000, ge=1, le=65535)
    latch: LatchSettings = Field(default_factory=LatchSettings)
    servers: dict[str, str]
    subscribers: dict[str, SubscriberSpec] = Field(default_factory=dict)
    publishers: dict[str, PublisherSpec] = Field(default_factory=dict)
    timing: Timing = Field(default_factory=Timing)
    durability: Durability = Field(default_factory=Durability)
    #: Prometheus endpoints of the processes (absent: none)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    #: emulated link delay (benchmarks only; absent or zero: none, at no cost)
    emulation: Emulation = Field(default_factory=Emulation)
    #: the largest publication a server decodes, in bytes (its event, encoded); larger ones are
    #: refused unread, and a publisher refuses to publish one
    max_event_bytes: int = Field(default=1 << 20, ge=1024, le=64 << 20)
    #: the folder of the file: relative paths in it are taken from there
    base: Path = Path(".")

    @field_validator("servers")
    @classmethod
    def _servers(cls, value: dict[str, str]) -> dict[str, str]:
        if not value:
            raise ValueError("at least one server")
        return {k: _address(v) for k, v in value.items()}

    @model_validator(mode="after")
    def _consistent(self) -> Deployment:
        names = [*self.servers, *self.subscribers, *self.publishers]
        for n in [self.name, *names]:
            try:
                check_process_name(n)
            except FaidecsError as exc:
                raise ValueError(str(exc)) from None
        twice = {n for n in names if names.count(n) > 1}
        if twice:
            raise ValueError(f"process {sorted(twice)[0]} is declared twice")
        addresses = [*self.servers.values(), *(s.address for s in self.subscribers.values())]
        addresses += [p.address for p in self.publishers.values()]
        shared = {a for a in addresses if addresses.count(a) > 1}
        if shared:
            raise ValueError(f"address {sorted(shared)[0]} is given to two processes")
        if self.replicas > len(self.servers):
            raise ValueError(
                f"{self.replicas} replicas per role need at least as many servers, not {len(self.servers)}"
            )
        if self.keys is None and not self.insecure:
            raise ValueError("give keys (faidecs overlay keys) or set insecure = true")
        if self.ordering == "raft":
            for server in self.servers:
                raft = self.raft_address(server)
                if int(raft.rsplit(":", 1)[1]) > 65535 or f"tcp://{raft}" in addresses:
                    raise ValueError(f"server {server}: its Raft address {raft} (raft_port_offset) is taken or no port")
        for name, pub in self.publishers.items():
            if pub.source is not None and self.ordering == "raft":
                raise ValueError(
                    f"publisher {name}: a broker source needs the overlay's ordering (Raft does not acknowledge)"
                )
        if self.udp_publishers():
            if self.ordering != "overlay":
                raise ValueError('UDP publishers need ordering = "overlay"')
            ports = [self.udp_address(server) for server in self.servers]
            for server, (host, port) in zip(self.servers, ports):
                if port > 65535 or ports.count((host, port)) > 1:
                    raise ValueError(f"server {server}: its UDP port {port} (udp_port_offset) is taken or no port")
        for name, spec in self.subscribers.items():
            if spec.peer is not None and spec.peer not in self.subscribers:
                raise ValueError(f"subscriber {name}: peer {spec.peer} is not a subscriber")
        if self.metrics.base_port is not None:
            self.check_metrics_ports(self.metrics.base_port)
        return self

    def check_metrics_ports(self, base_port: int) -> None:
        """Raises ``ValueError`` when the metrics ports from ``base_port`` on pass 65535 or take
        a process's own address."""
        names = self.processes()
        if base_port + len(names) - 1 > 65535:
            raise ValueError(f"metrics: {len(names)} processes from port {base_port} pass 65535")
        taken = {a[len("tcp://") :] for a in self.addresses().values()}
        for port, name in enumerate(names, start=base_port):
            host = self.metrics_host(name)
            if f"{host}:{port}" in taken or f"[{host}]:{port}" in taken:
                raise ValueError(f"metrics: process {name}'s port {port} is a process's address")

    # --- derived -----------------------------------------------------------------------------

    @cached_property
    def compiled(self) -> Program:
        path = self.path(self.program)
        try:
            text = path.read_text()
        except OSError as exc:
            raise DeploymentError(f"program {path}: {exc.strerror}") from None
        program = compile_program(text, str(path))
        known = {s.name for s in program.subscriptions}
        for name, spec in self.subscribers.items():
            if spec.subscription not in known:
                raise DeploymentError(
                    f"subscriber {name}: the program has no subscription {spec.subscription!r} "
                    f"(it has {', '.join(sorted(known)) or 'none'})"
                )
        return program

    @property
    def types(self) -> dict[str, EventType]:
        return dict(self.compiled.types)

    def types_source(self) -> str:
        return "".join(
            f"type {t.name}(" + ", ".join(f"{a.name}: {a.kind.value}" for a in t.attributes) + ")\n"
            for t in self.compiled.types.values()
        )

    def subscription(self, subscriber: str) -> Subscription:
        wanted = self.subscribers[subscriber].subscription
        return next(s for s in self.compiled.subscriptions if s.name == wanted)

    @property
    def sequencer_role(self) -> Role:
        """The sequencer's replica group under ``ordering = "sequencer"``: it runs the root merger
        protocol (leader, epochs, majority commit, filters per consumer) for every type at once,
        named after the first type so that messages name a declared role."""
        return role_of([min(self.compiled.types)])

    def root_role(self, type_name: str) -> Role:
        """Where a publication of this type goes."""
        return self.sequencer_role if self.ordering in ("sequencer", "raft") else role_of([type_name])

    def streams(self, subscription: Subscription) -> list[tuple[Role, tuple[int, ...], Subscription]]:
        """A subscriber's streams: one per merger its conjunctions need, or the sequencer's one."""
        if self.ordering in ("sequencer", "raft"):
            return [(self.sequencer_role, tuple(range(len(subscription.conjunctions))), subscription)]
        return split_by_role(subscription)

    @cached_property
    def roles(self) -> list[Role]:
        """Every merger role: a root per type, and each subscriber's conjunctions' ancestries."""
        if self.ordering in ("sequencer", "raft"):
            return [self.sequencer_role]
        return merger_roles(self.compiled.types, (self.subscription(name) for name in self.subscribers))

    def max_batch(self) -> int:
        """``timing.max_batch``, or fewer where that many events of ``max_event_bytes`` (and a
        mark's filter) would not fit into the transport's largest message."""
        room = MAX_MESSAGE - FILTER_BYTES
        return max(1, min(self.timing.max_batch, room // self.max_event_bytes))

    def placement(self, role: Role) -> tuple[str, ...]:
        # Asked for every publication: placed once per role.
        placed = self._placed.get(role)
        if placed is None:
            placed = self._placed[role] = place(role, sorted(self.servers), self.replicas)
        return placed

    @cached_property
    def _placed(self) -> dict[Role, tuple[str, ...]]:
        return {}

    def roster(self) -> Roster:
        """Who is who, for the authority each process checks its peers' messages with."""
        streams = {
            name: {
                role: (stream_key(part), stream_filter(part)) for role, _, part in self.streams(self.subscription(name))
            }
            for name in self.subscribers
        }
        return Roster(
            publishers=frozenset(self.publishers),
            placement={role: self.placement(role) for role in self.roles},
            streams=streams,
            joins_from={name: spec.peer for name, spec in self.subscribers.items()},
            root=self.root_role,
        )

    def address(self, process: str) -> str:
        if process in self.servers:
            return self.servers[process]
        if process in self.subscribers:
            return self.subscribers[process].address
        return self.publishers[process].address

    def raft_address(self, server: str) -> str:
        """``host:port`` of a server's Raft endpoint under ``ordering = "raft"``."""
        host, port = self.servers[server][len("tcp://") :].rsplit(":", 1)
        return f"{host}:{int(port) + self.raft_port_offset}"

    def udp_address(self, server: str) -> tuple[str, int]:
        """(host, port) where a server receives UDP publishers' datagrams."""
        host, port = self.servers[server][len("tcp://") :].rsplit(":", 1)
        return host.strip("[]"), int(port) + self.udp_port_offset

    def metrics_address(self, process: str, base_port: int | None = None) -> tuple[str, int] | None:
        """(host, port) of ``process``'s metrics endpoint, from ``base_port`` (default: the
        file's ``[metrics] base_port``); None when neither gives one."""
        base = base_port if base_port is not None else self.metrics.base_port
        if base is None:
            return None
        return self.metrics_host(process), base + self.processes().index(process)

    def metrics_host(self, process: str) -> str:
        """Where ``process`` serves its metrics: ``[metrics] host``, or its own address's host."""
        return self.metrics.host or self.address(process)[len("tcp://") :].rsplit(":", 1)[0].strip("[]")

    def udp_publishers(self) -> list[str]:
        return [n for n, p in self.publishers.items() if p.transport == "udp"]

    def addresses(self) -> dict[str, str]:
        return {p: self.address(p) for p in self.processes()}

    def processes(self) -> list[str]:
        return [*self.servers, *self.subscribers, *self.publishers]

    def path(self, relative: str) -> Path:
        p = Path(relative)
        return p if p.is_absolute() else self.base / p


def load_deployment(path: Path) -> Deployment:
    """The deployment in a TOML file, checked; errors name the file and the field."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise DeploymentError(f"{path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise DeploymentError(f"{path}: not TOML: {exc}") from None
    try:
        deployment = Deployment.model_validate({**data, "base": path.parent})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(top)"
        raise DeploymentError(f"{path}: {where}: {first['msg']}") from None
    try:
        _ = deployment.compiled  # the program and the subscribers' names are checked up front
    except DeploymentError as exc:
        raise DeploymentError(f"{path}: {exc}") from None
    return deployment


__all__ = [
    "Durability",
    "Deployment",
    "DeploymentError",
    "Emulation",
    "LatchSettings",
    "MetricsSettings",
    "PublisherSpec",
    "SubscriberSpec",
    "Timing",
    "load_deployment",
]
