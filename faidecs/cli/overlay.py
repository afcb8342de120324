"""``faidecs overlay``: simulate a deployment of the merging overlay, draw its topology."""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from faidecs.cli.inputs import read_text
from faidecs.errors import FaidecsError
from faidecs.grammar import compile_program
from faidecs.grammar.model import EventType, Kind, Program, Subscription
from faidecs.matching.records import MATCHERS


class SpecError(FaidecsError):
    """A fault, join or leave given on the command line that cannot be read."""


_AT = re.compile(r"^(?P<who>[^@]+)@(?P<at>\d+)(?:\+(?P<dur>\d+))?(?::(?P<how>fresh))?$")


def _spec(option: str, text: str, *, duration: bool) -> tuple[list[str], int, int, bool]:
    m = _AT.match(text)
    if m is None or (duration and m["dur"] is None) or (not duration and m["dur"] is not None):
        form = "WHO@TIME+DURATION" if duration else "WHO@TIME"
        raise SpecError(f"{option} {text!r}: expected {form} (times in virtual milliseconds)")
    return m["who"].split(","), int(m["at"]), int(m["dur"] or 0), m["how"] == "fresh"


def _random_events(
    types: dict[str, EventType], count: int, publishers: int, rng: random.Random
) -> list[tuple[int, str, dict[str, Any]]]:
    values: dict[Kind, Callable[[], Any]] = {
        Kind.INT: lambda: rng.randrange(5),
        Kind.FLOAT: lambda: round(rng.uniform(0, 5), 2),
        Kind.STR: lambda: rng.choice(("a", "b", "c")),
        Kind.BOOL: lambda: rng.random() < 0.5,
    }
    out: list[tuple[int, str, dict[str, Any]]] = []
    time = 0
    names = sorted(types)
    for k in range(count):
        time += rng.randint(0, 20)
        t = types[rng.choice(names)]
        attrs = {a.name: values[a.kind]() for a in t.attributes}
        out.append((time, f"pub{rng.randint(1, publishers)}", {"id": f"e{k + 1}", "type": t.name, "attrs": attrs}))
    return out


def _read_events(path: str) -> list[tuple[int, str, dict[str, Any]]]:
    out: list[tuple[int, str, dict[str, Any]]] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SpecError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
        if not isinstance(obj, dict):
            raise SpecError(f"{path}:{number}: an event is a JSON object")
        time = obj.pop("time", 10 * len(out))
        publisher = obj.pop("publisher", "pub1")
        if not isinstance(time, int) or isinstance(time, bool) or time < 0:
            raise SpecError(f"{path}:{number}: 'time' must be a non-negative integer (virtual ms)")
        if not isinstance(publisher, str) or not publisher:
            raise SpecError(f"{path}:{number}: 'publisher' must be a non-empty string")
        event_id = obj.get("id")
        if isinstance(event_id, str) and event_id in seen:
            raise SpecError(f"{path}:{number}: duplicate event id {event_id!r} (first on line {seen[event_id]})")
        if isinstance(event_id, str):
            seen[event_id] = number
        out.append((time, publisher, obj))
    return out


def _subscribers(program: Program) -> dict[str, Subscription]:
    if not program.subscriptions:
        raise SpecError("the program has no subscription: nothing to simulate")
    return {s.name: s for s in program.subscriptions}


def _types_source(program: Program) -> str:
    return "\n".join(t.source or t.declaration() for t in program.types.values()) + "\n"


def cmd_simulate(args: argparse.Namespace) -> int:
    from faidecs.overlay.sim.generate import random_faults
    from faidecs.overlay.sim.report import render, to_json
    from faidecs.overlay.sim.scenario import Fault, Joiner, Scenario, SimConfig
    from faidecs.overlay.sim.simulator import simulate

    program = compile_program(read_text(args.program), args.program)
    subs = _subscribers(program)
    rng = random.Random(args.seed)
    publications = (
        _read_events(args.events) if args.events else _random_events(program.types, args.count, args.publishers, rng)
    )
    servers = [f"m{k}" for k in range(1, args.servers + 1)]
    faults: list[Fault] = []
    for text_ in args.crash:
        who, at, _, _ = _spec("--crash", text_, duration=False)
        faults.append(Fault("crash", at, tuple(who)))
    for text_ in args.pause:
        who, at, dur, _ = _spec("--pause", text_, duration=True)
        faults.append(Fault("pause", at, tuple(who), dur))
    for text_ in args.partition:
        who, at, dur, _ = _spec("--partition", text_, duration=True)
        faults.append(Fault("partition", at, tuple(who), dur))
    for fault in faults:
        unknown = [p for p in fault.processes if p not in servers]
        if unknown:
            raise SpecError(f"--{fault.kind}: {', '.join(unknown)} is not a server (servers: {', '.join(servers)})")
    if args.random_faults:
        window = max((t for t, _, _ in publications), default=0)
        faults += random_faults(rng, servers, list(program.types), window, args.replicas)
    joiners: list[Joiner] = []
    for text_ in args.join:
        who, at, _, fresh = _spec("--join", text_, duration=False)
        if len(who) != 1 or who[0] not in subs:
            raise SpecError(f"--join {text_!r}: {','.join(who)} is not a subscription of the program")
        peer = who[0]
        name = f"{peer}_joiner{len(joiners) + 1}"
        joiners.append(Joiner(name, replace(subs[peer], name=name).to_source(), at, None if fresh else peer))
    leavers = []
    for text_ in args.leave:
        who, at, _, _ = _spec("--leave", text_, duration=False)
        if len(who) != 1 or who[0] not in subs:
            raise SpecError(f"--leave {text_!r}: {','.join(who)} is not a subscription of the program")
        leavers.append((who[0], at))
    scenario = Scenario(
        _types_source(program),
        {name: s.source or s.to_source() for name, s in subs.items()},
        publications,
        joiners,
        faults,
        args.servers,
        leavers=leavers,
    )
    config = SimConfig(seed=args.seed, replicas=args.replicas, matcher=args.matcher)
    try:
        result = simulate(scenario, config)
    except FaidecsError:
        raise
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    everyone = dict(subs)
    everyone.update(
        {
            j.process: compile_program(j.subscription, "<joiner>", known_types=program.types).subscriptions[0]
            for j in joiners
        }
    )
    if args.log:
        with open(args.log, "w", encoding="utf-8") as f:
            result.log.write(f)
    verdict = to_json(result, everyone)
    if args.json:
        print(json.dumps(verdict, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(render(result, everyone))
    return 0 if verdict["ok"] else 1


def cmd_topology(args: argparse.Namespace) -> int:
    from faidecs.overlay.sim.topology import Topology

    if (args.program is None) == (args.deployment is None):
        raise SpecError("give --program or --deployment (one of them)")
    if args.deployment is not None:
        # The deployment's own servers, replicas and subscriber processes, placed as `overlay up` places them.
        from pathlib import Path

        from faidecs.overlay.runtime.deployment import load_deployment

        deployment = load_deployment(Path(args.deployment))
        program = deployment.compiled
        subscribers = {name: deployment.subscription(name) for name in deployment.subscribers}
        topology = Topology.of(program.types, subscribers, sorted(deployment.servers), deployment.replicas)
    else:
        program = compile_program(read_text(args.program), args.program)
        servers = [f"m{k}" for k in range(1, args.servers + 1)]
        if args.replicas > len(servers):
            raise SpecError(f"--replicas {args.replicas} needs at least as many --servers (got {len(servers)})")
        topology = Topology.of(program.types, _subscribers(program), servers, args.replicas)
    if args.dot:
        sys.stdout.write(topology.to_dot())
    else:
        sys.stdout.write(topology.describe())
    if args.png:
        topology.draw(args.png)
    return 0


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_parser(sub: Any) -> None:
    overlay = sub.add_parser(
        "overlay", help="the merging overlay: simulate a deployment, draw its mergers, run it as processes"
    )
    osub = overlay.add_subparsers(dest="overlay_command", required=True)

    sim = osub.add_parser(
        "simulate", help="run a simulated deployment and check every property (exit 1 on a violation)"
    )
    sim.add_argument("--program", required=True, help="program file: types and subscriptions (one subscriber each)")
    sim.add_argument("--seed", type=int, default=0, help="seed of delays, events and random faults (default 0)")
    sim.add_argument("--events", help="JSON lines: events, optionally with 'time' (virtual ms) and 'publisher'")
    sim.add_argument("--count", type=_count, default=40, help="without --events: random events (default 40)")
    sim.add_argument("--publishers", type=_count, default=2, help="without --events: publishers (default 2)")
    sim.add_argument("--servers", type=_count, default=4, help="server processes hosting mergers (default 4)")
    sim.add_argument("--replicas", type=_count, default=3, help="replicas per merger (default 3)")
    sim.add_argument("--crash", action="append", default=[], metavar="SERVER@T", help="crash a server at T ms")
    sim.add_argument("--pause", action="append", default=[], metavar="SERVER@T+D", help="pause a server for D ms")
    sim.add_argument(
        "--partition",
        action="append",
        default=[],
        metavar="S1,S2@T+D",
        help="cut these servers off the others for D ms",
    )
    sim.add_argument("--random-faults", action="store_true", help="add a seeded random fault schedule")
    sim.add_argument(
        "--join", action="append", default=[], metavar="SUB@T[:fresh]", help="a new subscriber to SUB joins at T ms"
    )
    sim.add_argument("--leave", action="append", default=[], metavar="SUB@T", help="SUB's subscriber leaves at T ms")
    sim.add_argument("--matcher", choices=MATCHERS, default="compiled", help="subscribers' matcher")
    sim.add_argument("--log", help="write the run log (faidecs verify reads it)")
    sim.add_argument("--json", action="store_true", help="print the report as JSON")
    sim.set_defaults(func=cmd_simulate)

    topo = osub.add_parser("topology", help="print the mergers of a program and where they run")
    topo.add_argument("--program", help="program file")
    topo.add_argument("--deployment", help="instead of --program: a deployment file, with its servers and replicas")
    topo.add_argument("--servers", type=_count, default=4, help="with --program: server processes (default 4)")
    topo.add_argument("--replicas", type=_count, default=3, help="with --program: replicas per merger (default 3)")
    topo.add_argument("--dot", action="store_true", help="print Graphviz text instead")
    topo.add_argument("--png", help="also draw the graph to this file (needs matplotlib)")
    topo.set_defaults(func=cmd_topology)

    from faidecs.cli.deploy import add_commands

    add_commands(osub)


__all__ = ["add_parser"]
