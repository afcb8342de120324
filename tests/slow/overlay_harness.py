"""What the tests of deployments of OS processes share: the program, a ZooKeeper fixture (in
conftest.py), writing a deployment with its keys and events, and waiting for a run to settle."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from faidecs.matching.engine import Engine
from faidecs.net.certificates import create_keys
from faidecs.overlay.runtime.launcher import LocalDeployment
from faidecs.overlay.sim.report import kept_properties
from faidecs.properties import check

Deliveries = dict[str, list[tuple[int, tuple[str, ...]]]]  # subscriber -> (conjunction, relation)

PROGRAM = """\
type A(x: int)
type B(x: int)
type C(x: int)
subscription Pairs (matching FR, disposal PI): A and B
subscription Triples (matching MR, disposal I): A and B and C and A.x < B.x
"""
SUBSCRIBERS = {"s1": "Pairs", "s2": "Pairs", "s3": "Triples"}
SESSION_MS = 400
#: Each deployment takes a block of ports: servers at +1.., subscribers +10.., the publisher +19,
#: Raft endpoints +26.. (a raft_port_offset of 25).
BLOCK = 40
RAFT_OFFSET = 25
_blocks = iter(range(17100, 24000, BLOCK))


def write_deployment(
    folder: Path,
    events: int,
    *,
    rate: int,
    servers: int = 4,
    replicas: int = 3,
    later: tuple[str, ...] = (),
    extra: str = "",
    seed: int = 0,
) -> Path:
    """A deployment of ``servers`` servers, the subscribers of :data:`SUBSCRIBERS` (those in
    ``later`` join later from s1) and one publisher of ``events`` random events at ``rate``."""
    base = next(_blocks)
    rng = random.Random(seed or events)
    (folder / "program.fdc").write_text(PROGRAM)
    lines = [
        json.dumps({"id": f"e{k}", "type": rng.choice("ABC"), "attrs": {"x": rng.randrange(10)}}) for k in range(events)
    ]
    (folder / "events.jsonl").write_text("\n".join(lines) + "\n")
    names = [f"m{k}" for k in range(1, servers + 1)]
    text_servers = "".join(f'{n} = "tcp://127.0.0.1:{base + k}"\n' for k, n in enumerate(names, start=1))
    subscribers = "".join(
        f'[subscribers.{name}]\naddress = "tcp://127.0.0.1:{base + 10 + k}"\nsubscription = "{sub}"\n'
        + ('start = "later"\npeer = "s1"\n' if name in later else "")
        for k, (name, sub) in enumerate(SUBSCRIBERS.items())
    )
    text = (
        f'name = "d{base}"\nprogram = "program.fdc"\nreplicas = {replicas}\nkeys = "keys"\n'
        f"raft_port_offset = {RAFT_OFFSET}\n{extra}\n\n"
        f"[timing]\nsession_timeout = {SESSION_MS}\n\n[servers]\n{text_servers}\n{subscribers}\n"
        f'[publishers.p1]\naddress = "tcp://127.0.0.1:{base + 19}"\nevents = "events.jsonl"\nrate = {rate}\n'
    )
    path = folder / "deployment.toml"
    path.write_text(text)
    create_keys(folder / "keys", [*names, *SUBSCRIBERS, "p1"])
    return path


def settled(run: LocalDeployment, quiet: float = 1.5, timeout: float = 60) -> None:
    """The publisher is done and no subscriber delivered anything for ``quiet`` seconds."""
    run.wait_for(lambda s: s.get("p1", {}).get("done", False), timeout, "the publisher to finish")
    last: dict[str, int] = {}
    quiet_since = time.monotonic()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = {n: s.get("delivered", 0) for n, s in run.statuses().items() if n in SUBSCRIBERS}
        if now != last:
            last, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since > quiet:
            return
        time.sleep(0.1)
    raise AssertionError(f"deliveries still changing after {timeout} s: {last}")


def verified(run: LocalDeployment, published: int) -> Deliveries:
    """Each subscriber's deliveries in the run's merged log, once that log keeps every property
    the options keep, holds ``published`` distinct publications and no repeated delivery."""
    log = run.runlog()
    report = check(log, kept_properties(log.subscriptions().values()))
    assert not report.violated(), report.table()
    assert len(log.published) == published
    assert len({p.id for p in log.published}) == published
    by: Deliveries = {n: [] for n in SUBSCRIBERS}
    for d in log.delivered:
        by[d.process].append((d.conjunction, d.relation))
    for name, got in by.items():
        assert len(got) == len(set(got)), f"{name} delivered a relation twice"
    return by


def embedded(folder: Path) -> Deliveries:
    """What the embedded engine delivers on the deployment's events file, per subscriber."""
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    types, *subscriptions = PROGRAM.split("subscription")
    out: Deliveries = {}
    for name, subscription in SUBSCRIBERS.items():
        only = next("subscription" + s for s in subscriptions if s.startswith(f" {subscription} "))
        engine = Engine.from_source(types + only)
        out[name] = [(d.conjunction, tuple(d.ids)) for e in events for d in engine.publish(e)]
    return out
