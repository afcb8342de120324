"""The trading example: quotes and orders over NATS JetStream into a 3-replica overlay.

One command (from the repository root, with the overlay and nats extras, nats-server and
ZooKeeper installed: ``scripts/services``)::

    python examples/trading/run.py [--dir /tmp/faidecs-trading]

What it does, in a run folder of its own:

1. starts ``nats-server -js`` (its store in the folder) and a deployment of 3 servers (every
   merger with 3 replicas), 3 subscribers and one publisher whose input is the JetStream subject
   ``trading.>`` (a durable consumer), not a file;
2. publishes ``events.jsonl`` to ``trading.quotes`` and ``trading.orders`` in file order,
   restarting the NATS server after half of it;
3. waits until the publisher has published every event and the subscribers are quiet, stops the
   deployment, and checks the run: each event published into the overlay exactly once, every
   property the subscriptions' options keep holds (``faidecs verify`` on the run folder), the two
   desks agree, and the surveillance subscriber delivered exactly what the embedded engine
   delivers on the same events.

The desks' deliveries are not compared with the embedded engine on the file: their merger
interleaves the Order and Quote streams in an order of its own (the same for both desks, which is
what the overlay promises), not the file's; the merger's order is not in the run log.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SUBSCRIBERS = {"s1": "Desk1", "s2": "Desk2", "s3": "Spike"}
SERVERS = 3
SUBJECT = "trading.>"
DEAD = "deadletters.trading"


def events() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (HERE / "events.jsonl").read_text().splitlines() if line.strip()]


def deployment_text(base_port: int, nats_port: int, count: int) -> str:
    """The deployment: servers on base_port+1.., subscribers on +11.., the publisher on +20."""
    servers = "".join(f'm{k} = "tcp://127.0.0.1:{base_port + k}"\n' for k in range(1, SERVERS + 1))
    subscribers = "".join(
        f'[subscribers.{name}]\naddress = "tcp://127.0.0.1:{base_port + 10 + k}"\nsubscription = "{sub}"\n\n'
        for k, (name, sub) in enumerate(SUBSCRIBERS.items(), start=1)
    )
    source = f"nats://127.0.0.1:{nats_port}/{SUBJECT}?durable=overlay&dead={DEAD}&ack_wait=3"
    return (
        f'name = "trading{base_port}"\nprogram = "trading.fdc"\nreplicas = 3\nkeys = "keys"\n\n'
        f"[servers]\n{servers}\n{subscribers}"
        f'[publishers.p1]\naddress = "tcp://127.0.0.1:{base_port + 20}"\nsource = "{source}"\nmax_events = {count}\n'
        "rate = 100\n"
    )


def prepare(folder: Path, base_port: int, nats_port: int) -> Path:
    """The deployment's folder: program, events, keys and deployment.toml."""
    from faidecs.net.certificates import create_keys

    folder.mkdir(parents=True, exist_ok=True)
    for name in ("trading.fdc", "events.jsonl"):
        shutil.copy(HERE / name, folder / name)
    create_keys(folder / "keys", [*(f"m{k}" for k in range(1, SERVERS + 1)), *SUBSCRIBERS, "p1"])
    path = folder / "deployment.toml"
    path.write_text(deployment_text(base_port, nats_port, len(events())))
    return path


async def _publish(port: int, batch: list[dict[str, Any]]) -> None:
    """Each event to trading.quotes or trading.orders through JetStream (retried across a restart)."""
    import nats
    import nats.errors

    from faidecs.connect.nats import ensure_stream

    nc = await nats.connect(f"nats://127.0.0.1:{port}", max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    js = nc.jetstream()
    await ensure_stream(js, SUBJECT, "TRADING")
    for event in batch:
        subject = "trading.quotes" if event["type"] == "Quote" else "trading.orders"
        while True:
            try:
                await js.publish(subject, json.dumps(event).encode(), headers={"Nats-Msg-Id": event["id"]})
                break
            except (TimeoutError, nats.errors.Error):
                await asyncio.sleep(0.1)
    await nc.close()


def expected(order: list[str]) -> dict[str, list[tuple[int, tuple[str, ...]]]]:
    """What the embedded engine delivers on the same events in the order of ids ``order``, per subscriber."""
    from faidecs import Engine

    engine = Engine.from_source((HERE / "trading.fdc").read_text(), matcher="reference")
    out: dict[str, list[tuple[int, tuple[str, ...]]]] = {name: [] for name in SUBSCRIBERS}
    by_subscription = {sub: name for name, sub in SUBSCRIBERS.items()}
    by_id = {e["id"]: e for e in events()}
    for event in (by_id[i] for i in order):
        for d in engine.publish(event):
            out[by_subscription[d.subscription]].append((d.conjunction, tuple(d.ids)))
    return out


def run(
    folder: Path,
    *,
    base_port: int = 17600,
    zookeeper: str | None = None,
    kill_publisher_at: int | None = None,
    timeout: float = 90,
) -> dict[str, Any]:
    """Run the example in ``folder``; returns what it found (raises AssertionError on a failed
    check). ``kill_publisher_at``: also SIGKILL the publisher after that many publications (past
    the NATS restart) and start it again: it goes on from its outbox."""
    from faidecs.connect.servers import NatsServer
    from faidecs.overlay.runtime.launcher import LocalDeployment
    from faidecs.overlay.sim.report import kept_properties
    from faidecs.properties import check

    all_events = events()
    half = len(all_events) // 2
    broker = NatsServer(folder / "nats")
    broker.start()
    try:
        path = prepare(folder / "deployment", base_port, broker.port or 0)
        deployment = LocalDeployment(path, folder / "run", zookeeper=zookeeper)
        try:
            deployment.start()
            asyncio.run(_publish(broker.port or 0, all_events[:half]))
            deployment.wait_for(lambda s: s.get("p1", {}).get("published", 0) >= half // 2, timeout, "a quarter")
            broker.restart()  # mid-stream: the publisher's consumer and the feeder reconnect
            print(f"trading: NATS restarted after {deployment.statuses()['p1']['published']} publications")
            asyncio.run(_publish(broker.port or 0, all_events[half:]))
            if kill_publisher_at is not None:
                deployment.wait_for(lambda s: s.get("p1", {}).get("published", 0) >= kill_publisher_at, timeout, "p1")
                deployment.signal("p1", signal.SIGKILL)
                deployment.procs["p1"].wait(10)
                print(f"trading: publisher killed after {deployment.statuses()['p1']['published']} publications")
                deployment.start_process("p1")
            deployment.wait_for(
                lambda s: s.get("p1", {}).get("done") and s["p1"].get("unacked") == 0, timeout, "every publication"
            )
            _quiet(deployment, timeout)
            publisher = deployment.statuses()["p1"]
        finally:
            deployment.stop()
    finally:
        broker.stop()

    log = deployment.runlog()
    report = check(log, kept_properties(log.subscriptions().values()))
    assert not report.violated(), report.table()
    ids = [p.id for p in log.published]
    assert sorted(ids) == sorted(e["id"] for e in all_events), "an event lost or published twice"
    got: dict[str, list[tuple[int, tuple[str, ...]]]] = {name: [] for name in SUBSCRIBERS}
    for d in log.delivered:
        got[d.process].append((d.conjunction, tuple(d.relation)))
    want = expected([p.id for p in sorted(log.published, key=lambda p: int(p.event["seq"]))])  # one publisher
    assert got["s1"] == got["s2"] and got["s1"], "the desks disagree"
    # Spike reads one type: its merger's stream is the publisher's order (the file's, but for
    # messages the broker gave again after the publisher's restart, which come after the newer
    # ones it had never handed out), so it delivers what the embedded engine delivers on the
    # events in the order published.
    assert got["s3"] == want["s3"], "s3 delivered other than the embedded engine"
    return {"published": len(ids), "delivered": {n: len(v) for n, v in got.items()}, "publisher": publisher}


def _quiet(deployment: Any, timeout: float, quiet: float = 1.5) -> None:
    last: dict[str, int] = {}
    since = time.monotonic()
    deadline = since + timeout
    while time.monotonic() < deadline:
        now = {n: s.get("delivered", 0) for n, s in deployment.statuses().items() if n in SUBSCRIBERS}
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > quiet:
            return
        time.sleep(0.1)
    raise AssertionError(f"deliveries still changing after {timeout} s: {last}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", help="run folder (default: a new temporary one)")
    parser.add_argument("--base-port", type=int, default=17600, help="the deployment's ports start here")
    args = parser.parse_args()
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="faidecs-trading-"))
    found = run(folder, base_port=args.base_port)
    print(f"trading: {found['published']} events published once each; deliveries {found['delivered']}")
    print("trading: the run verifies, the desks agree, s3 equals the embedded engine")
    print(f"trading: check the run folder again with: faidecs verify {folder / 'run'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
