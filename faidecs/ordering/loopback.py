"""An ordering layer as OS processes on this host: servers, subscribers and one publisher process.

The same entities as in the simulator, on :class:`~faidecs.ordering.realnet.RealNetwork`:

- multistage: ``servers`` processes ``s0, s1, ...`` host the topic managers, placed by rank ranges
  (:func:`~faidecs.ordering.multistage.placement.place_by_ranges`); each subscriber process hosts
  its subscriber ordering module at its own name; the publisher process hosts every publisher's
  client (it gets the timestamps back and hands ``<e, ts>`` to the notification service, here a
  direct message to each subscriber ENS-subscribed to the topic).
- atoms: the epoch-0 graph (every process builds it from the subscriptions, deterministically);
  atoms go to sequencing nodes by the co-location rule (``placement="colocate"``, seeded) and
  nodes to servers round robin, or atoms to servers round robin (``"round-robin"``); ingress-only
  sequencers round robin. Each subscriber process hosts its receiver.

Each subscriber process runs its layer's receiving logic and an embedded engine on what it is
notified, and writes its part of the run log (notify and deliver records, its final queues),
timed by the host's wall clock in nanoseconds; the publisher process writes the publications.
:func:`merged` merges them (:func:`~faidecs.runs.runlog.merge_runlogs`) for the property checker.

What does not fit: subscriptions are static (fixed at start; no joins or leaves), so the atoms
layer stays in epoch 0 (its configuration service, which would switch epochs, is not run), and the
multistage subscribers never run a subscription chain. Only event ids travel through the ordering
entities, as in both papers; a subscriber process reads the events' attributes from the run's
event file, standing in for the dissemination the papers leave to the notification service.

Run folder::

    plan.json  events.jsonl  keys/  logs/<process>.runlog  status/<process>.json  out/<process>.err

``python -m faidecs.ordering.loopback RUN_DIR PROCESS`` runs one process of a run folder.
"""

from __future__ import annotations

import bisect
import json
import logging
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from faidecs.errors import FaidecsError
from faidecs.grammar import compile_program
from faidecs.matching.engine import Engine
from faidecs.net.certificates import Keys, create_keys
from faidecs.net.children import stop_processes
from faidecs.net.statusfile import read_statuses
from faidecs.net.transport import Transport
from faidecs.ordering.atoms.graph import BUILDERS, SequencingGraph
from faidecs.ordering.atoms.message import EpochView, Sequenced
from faidecs.ordering.atoms.overlap import groups_of
from faidecs.ordering.atoms.placement import colocate
from faidecs.ordering.atoms.receiver import Receiver
from faidecs.ordering.atoms.sequencer import atom_address, entry_address, ingress_address, install, receiver_address
from faidecs.ordering.multistage.config import MultistageConfig
from faidecs.ordering.multistage.manager import TopicManager, tm_address
from faidecs.ordering.multistage.messages import CompletedSubVc, Dummy, EventTs, Notification
from faidecs.ordering.multistage.placement import place_by_ranges
from faidecs.ordering.multistage.publisher import Publisher
from faidecs.ordering.multistage.subscriber import EnsHooks, Subscriber
from faidecs.ordering.network import Network
from faidecs.ordering.realnet import RealNetwork
from faidecs.ordering.wire import OrderingCodec
from faidecs.runs.runlog import Delivered, Notified, Published, RunLog, merge_runlogs

LAYERS = ("multistage", "atoms")
PUBLISHER = "pub"
#: Publications made per loop pass by an unthrottled publisher before it serves its sockets.
BATCH = 200


class LoopbackError(FaidecsError):
    """A process that would not start, exited, or a run that did not finish: says which and why."""


# -- the plan: who hosts what -----------------------------------------------------------------


def _topics(types_source: str, subscriptions: Mapping[str, str]) -> tuple[list[str], dict[str, list[str]]]:
    types = compile_program(types_source, "<types>").types
    topics = {}
    for name, source in subscriptions.items():
        program = compile_program(source, f"<subscription of {name}>", known_types=types)
        topics[name] = sorted({t for s in program.subscriptions for t in s.types})
    return sorted(types), topics


def atoms_graph(plan: Mapping[str, Any]) -> SequencingGraph:
    return BUILDERS[plan["construction"]](groups_of(plan["topics"]))


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def write_plan(
    run_dir: Path,
    layer: str,
    types_source: str,
    subscriptions: Mapping[str, str],
    events: list[dict[str, Any]],
    *,
    servers: int = 3,
    rate: float = 0.0,
    placement: str = "colocate",
    construction: str = "line",
    seed: int = 0,
    keys: bool = True,
) -> dict[str, Any]:
    """Write a run folder for ``layer``; ``events`` carry ``publisher`` (a publisher's address).

    Publications are stamped with a per-publisher ``seq``; ``rate`` 0 publishes unthrottled."""
    if layer not in LAYERS:
        raise LoopbackError(f"unknown ordering layer {layer!r}; choose one of {', '.join(LAYERS)}")
    universe, topics = _topics(types_source, subscriptions)
    seqs: dict[str, int] = {}
    stamped = []
    for e in events:
        publisher = e["publisher"]
        stamped.append({**e, "seq": seqs.get(publisher, 0)})
        seqs[publisher] = seqs.get(publisher, 0) + 1
    publishers = sorted(seqs)
    server_names = [f"s{k}" for k in range(servers)]
    hosts: dict[str, str] = {p: PUBLISHER for p in publishers}
    plan: dict[str, Any] = {
        "layer": layer,
        "types": types_source,
        "subscriptions": dict(subscriptions),
        "topics": topics,
        "universe": universe,
        "rate": rate,
        "construction": construction,
        "keys": keys,
    }
    if layer == "multistage":
        for topic, server in place_by_ranges(universe, servers).items():
            hosts[tm_address(topic)] = server_names[server]
        hosts.update({p: p for p in subscriptions})
    else:
        graph = atoms_graph(plan)
        if placement == "colocate":
            node_of = colocate(graph.overlaps, random.Random(seed))
            server_of = {a: node_of[a] % servers for a in graph.overlaps}
        elif placement == "round-robin":
            server_of = {a: k % servers for k, a in enumerate(sorted(graph.overlaps))}
        else:
            raise LoopbackError(f"unknown atom placement {placement!r}: colocate or round-robin")
        hosts.update({atom_address(0, a): server_names[s] for a, s in server_of.items()})
        bare = sorted(g for g, path in graph.paths.items() if not path)
        hosts.update({ingress_address(0, g): server_names[k % servers] for k, g in enumerate(bare)})
        hosts.update({receiver_address(p): p for p in subscriptions})
    processes = [*server_names, *subscriptions, PUBLISHER]
    ports = _free_ports(len(processes))
    plan["endpoints"] = {p: f"tcp://127.0.0.1:{port}" for p, port in zip(processes, ports)}
    plan["servers"] = server_names
    plan["hosts"] = hosts
    run_dir.mkdir(parents=True, exist_ok=True)
    for sub in ("logs", "status", "out"):
        (run_dir / sub).mkdir(exist_ok=True)
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in stamped))
    (run_dir / "plan.json").write_text(json.dumps(plan, indent=1))
    if keys:
        create_keys(run_dir / "keys", processes)
    return plan


# -- one process --------------------------------------------------------------------------------


class _Clock:
    """The host's wall clock in nanoseconds, strictly increasing within this process."""

    def __init__(self) -> None:
        self.last = 0

    def __call__(self) -> int:
        self.last = max(time.time_ns(), self.last + 1)
        return self.last


@dataclass(slots=True)
class _Process:
    name: str
    plan: dict[str, Any]
    net: RealNetwork
    events: list[dict[str, Any]]
    clock: _Clock = field(default_factory=_Clock)
    log: RunLog | None = None
    expected: int = 0
    engine: Engine | None = None
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    publish: Callable[[str, str, str], None] | None = None  # (publisher, event id, topic)
    done_at: int | None = None

    def notify(self, process: str, event_id: str, topic: str) -> None:
        assert self.log is not None and self.engine is not None
        self.log.notified.append(Notified(self.clock(), process, event_id))
        for delivery in self.engine.publish(self.by_id[event_id]):
            self.log.delivered.append(Delivered(self.clock(), process, delivery.conjunction, tuple(delivery.ids)))
        if len(self.log.notified) == self.expected:
            self.done_at = self.log.notified[-1].time


def _members(plan: Mapping[str, Any]) -> dict[str, list[str]]:
    return {g: sorted(m) for g, m in groups_of(plan["topics"]).items()}


def _build_multistage(p: _Process) -> None:
    plan, net, name = p.plan, cast(Network, p.net), p.name
    universe: list[str] = plan["universe"]
    config = MultistageConfig()
    members = _members(plan)

    def above(topic: str) -> str | None:
        i = bisect.bisect_left(universe, topic)
        return universe[i - 1] if i > 0 else None

    def ens_publish(sender: str, message: Notification | Dummy) -> None:
        for member in members.get(message.topic, ()):
            net.ens(sender, member, message, entries=len(message.ts))

    for topic in universe:
        if p.net.hosts_here(tm_address(topic)):
            tm = TopicManager(topic, net, config, above)
            tm.ext = {s: frozenset(t) for s, t in plan["topics"].items() if topic in t}
            net.listen(tm.address, tm.on_message)
    if name in plan["subscriptions"]:
        hooks = EnsHooks(lambda _p, _t: None, lambda _p, _t: None, ens_publish)
        subscriber = Subscriber(name, net, config, hooks, lambda e, t: p.notify(name, e, t))
        subscriber.install(frozenset(plan["topics"][name]))

        def on_subscriber(sender: str, message: object) -> None:
            if isinstance(message, CompletedSubVc):
                subscriber.on_completed(message)
            elif isinstance(message, (Notification, Dummy)):
                subscriber.on_ens(message)
            else:
                raise TypeError(f"{name} got {message!r} from {sender}")

        net.listen(name, on_subscriber)
    publishers = {a: Publisher(a, net, ens_publish) for a, h in plan["hosts"].items() if h == name == PUBLISHER}
    for address, publisher in publishers.items():

        def on_publisher(sender: str, message: object, publisher: Publisher = publisher) -> None:
            if not isinstance(message, EventTs):
                raise TypeError(f"{publisher.name} got {message!r} from {sender}")
            publisher.on_timestamp(message)

        net.listen(address, on_publisher)
    if publishers:
        p.publish = lambda publisher, event_id, topic: publishers[publisher].publish(event_id, topic)


def _build_atoms(p: _Process) -> None:
    plan, net, name = p.plan, cast(Network, p.net), p.name
    graph = atoms_graph(plan)
    hosted = {a for a, h in plan["hosts"].items() if h == name}
    install(net, graph, 0, hosted=hosted)
    if name in plan["subscriptions"]:
        receiver = Receiver(name, p.notify)
        groups = frozenset(g for g, m in graph.membership.items() if name in m)
        receiver.since.update({t: 0 for t in groups})
        receiver.open(0, EpochView(groups, frozenset(a for a, common in graph.overlaps.items() if name in common)))
        net.listen(receiver_address(name), receiver.on_message)
    if name == PUBLISHER:

        def publish(publisher: str, event_id: str, topic: str) -> None:
            if topic in graph.membership:  # a topic nobody holds goes nowhere
                net.send(publisher, entry_address(graph, 0, topic), Sequenced(event_id, topic, 0))

        p.publish = publish


def run_process(run_dir: Path, name: str) -> None:
    """Serve one process of a run folder until SIGTERM; writes its run log and status."""
    plan = json.loads((run_dir / "plan.json").read_text())
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    keys = Keys.load(run_dir / "keys", name) if plan["keys"] else None
    codec = OrderingCodec(plan["universe"], plan["hosts"])
    transport = Transport(name, plan["endpoints"][name], plan["endpoints"], keys, codec=codec)
    net = RealNetwork(name, plan["hosts"], transport)
    p = _Process(name, plan, net, events)
    if name in plan["subscriptions"]:
        types = compile_program(plan["types"], "<types>").types
        source = plan["subscriptions"][name]
        p.engine = Engine(compile_program(source, f"<subscription of {name}>", known_types=types))
        p.log = RunLog(plan["types"], {name: source})
        mine = set(plan["topics"][name])
        p.by_id = {e["id"]: e for e in events if e["type"] in mine}
        p.expected = len(p.by_id)
        if p.expected == 0:
            p.done_at = p.clock()
    elif name == PUBLISHER:
        p.log = RunLog(plan["types"])
    (_build_multistage if plan["layer"] == "multistage" else _build_atoms)(p)
    stop = False

    def on_term(signum: int, frame: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    status_path = run_dir / "status" / f"{name}.json"

    def write_status(**extra: Any) -> None:
        record = {"ready": True, "rejected": net.rejections(), "handled": net.handled, **extra}
        if p.log is not None and name in plan["subscriptions"]:
            record |= {"notified": len(p.log.notified), "expected": p.expected, "done_at": p.done_at}
        if name == PUBLISHER and p.log is not None:
            record |= {"published": len(p.log.published), "events": len(events)}
        tmp = status_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record))
        os.replace(tmp, status_path)

    write_status()
    next_status = time.monotonic() + 0.2
    start = time.monotonic()
    rate = float(plan["rate"])
    k = 0
    done_written = False
    while not stop:
        if p.publish is not None and k < len(events):
            assert p.log is not None
            due = len(events) if rate <= 0 else min(len(events), int((time.monotonic() - start) * rate) + 1)
            for e in events[k : min(due, k + BATCH)]:
                p.log.published.append(Published(p.clock(), e))
                p.publish(e["publisher"], e["id"], e["type"])
            k = min(due, k + BATCH)
            net.flush()
        busy = p.publish is not None and k < len(events)
        net.step(0.0 if busy else 0.02)
        finished = p.done_at is not None or (name == PUBLISHER and k == len(events))
        if time.monotonic() >= next_status or (finished and not done_written):
            if finished and not done_written:
                _write_log(run_dir, name, p)
                done_written = True
            write_status(done=finished)
            next_status = time.monotonic() + 0.2
    _write_log(run_dir, name, p)
    write_status(done=p.done_at is not None or name == PUBLISHER, stopped=True)
    transport.close()


def _write_log(run_dir: Path, name: str, p: _Process) -> None:
    if p.log is None:
        return
    if p.engine is not None:
        p.log.final = {name: next(iter(p.engine.state_json().values()))}
    (run_dir / "logs" / f"{name}.runlog").write_text(p.log.dumps())


# -- the whole run ------------------------------------------------------------------------------


class LoopbackRun:
    """Starts every process of a run folder, waits for the subscribers to have everything, stops."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.plan = json.loads((run_dir / "plan.json").read_text())
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start_process(self, name: str) -> None:
        err = (self.run_dir / "out" / f"{name}.err").open("ab")
        command = [sys.executable, "-m", "faidecs.ordering.loopback", str(self.run_dir), name]
        self.procs[name] = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=err, stderr=err)

    def statuses(self) -> dict[str, dict[str, Any]]:
        return read_statuses(self.run_dir / "status")

    def wait_for(self, ready: Callable[[dict[str, dict[str, Any]]], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    tail = (self.run_dir / "out" / f"{name}.err").read_text(errors="replace")[-2000:]
                    raise LoopbackError(f"{name} exited with status {proc.returncode}:\n{tail}")
            if ready(self.statuses()):
                return
            time.sleep(0.02)
        raise LoopbackError(f"timed out after {timeout} s waiting for {what}; see {self.run_dir / 'status'}")

    def run(self, timeout: float = 60) -> dict[str, dict[str, Any]]:
        """Servers and subscribers first, then the publisher; returns the final statuses."""
        subscribers = list(self.plan["subscriptions"])
        first = [*self.plan["servers"], *subscribers]
        try:
            for name in first:
                self.start_process(name)
            self.wait_for(lambda s: all(n in s for n in first), 30, "the servers and subscribers to start")
            self.start_process(PUBLISHER)
            self.wait_for(
                lambda s: all(s.get(n, {}).get("done") for n in [*subscribers, PUBLISHER]),
                timeout,
                "every subscriber to have everything",
            )
        finally:
            self.stop()
        return self.statuses()

    def stop(self, timeout: float = 10) -> None:
        stop_processes(self.procs.values(), timeout)

    def logs(self) -> dict[str, RunLog]:
        return {
            f.stem: RunLog.read(f.read_text().splitlines(), str(f))
            for f in sorted((self.run_dir / "logs").glob("*.runlog"))
        }

    def merged(self) -> RunLog:
        return merge_runlogs(list(self.logs().items()))


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        raise SystemExit("usage: python -m faidecs.ordering.loopback RUN_DIR PROCESS")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    profile = os.environ.get("FAIDECS_PROFILE")  # a folder: where each process leaves its cProfile stats
    if profile:
        import cProfile

        where = str(Path(profile) / f"{args[1]}.prof")
        cProfile.runctx("run_process(Path(args[0]), args[1])", globals(), {"args": args}, where)
    else:
        run_process(Path(args[0]), args[1])


if __name__ == "__main__":
    main()

__all__ = ["LAYERS", "LoopbackError", "LoopbackRun", "atoms_graph", "run_process", "write_plan"]
