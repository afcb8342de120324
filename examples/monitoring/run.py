"""The monitoring example: sensor readings over MQTT into the embedded engine, alerts out over
NATS, metrics on Prometheus.

One command (from the repository root, with the mqtt, nats and metrics extras, and mosquitto and
nats-server installed: ``scripts/services``)::

    python examples/monitoring/run.py [--seed 7] [--metrics-port 9400] [--dir DIR]

What it does, in a run folder of its own:

1. starts ``mosquitto`` and ``nats-server -js`` on free ports;
2. starts ``faidecs run --program monitoring.fdc --source mqtt://…/building/# --sink
   nats://…/alerts --metrics-port P`` as a child process: the embedded engine reads the
   building's topics in a persistent MQTT session and publishes each delivery (an alert) to the
   JetStream subject ``alerts``;
3. publishes the simulated building (``sensors.py``: readings, door and power events, and five
   malformed messages) to MQTT;
4. waits until the engine has taken every event, every alert is in the ``ALERTS`` stream and
   every malformed message is on the dead-letter topic, scrapes the metrics endpoint, stops the
   child with SIGTERM (it prints its counts) and the brokers, and prints a summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import sensors  # noqa: E402 (the simulator next to this file)

SOURCE_TOPIC = "building/#"
DEAD_TOPIC = "deadletters/building"
ALERTS = "alerts"
#: the MQTT client id of the engine's persistent session (the source's ``client_id``)
ENGINE_CLIENT = "monitoring-engine"
#: ``--max-queue``: a monitor runs for months, and readings no later reading matches stay queued
#: (under ``disposal FP`` a Rise reading leaves only once a newer one matched it); each queue
#: keeps its 8 newest events, which is more than any subscription here looks back.
MAX_QUEUE = 8


@dataclass
class Outcome:
    """What one run saw, from the outside: what it published, what came out, what it scraped."""

    published: list[sensors.Message]
    alerts: list[dict[str, Any]]  # the JSON of each message of the ALERTS stream, in order
    dead_letters: list[dict[str, Any]]  # each message of the dead-letter topic, in order
    metrics_text: str  # the last scrape, as served
    published_events: float  # faidecs_engine_published_events_total
    deliveries: dict[str, float]  # faidecs_engine_deliveries_total per subscription
    dropped: dict[str, float]  # faidecs_engine_dropped_events_total per subscription (MAX_QUEUE)
    counts_line: str  # the child's last line on stderr
    exit_code: int
    command: list[str] = field(default_factory=list)
    folder: Path = Path()
    ports: dict[str, int] = field(default_factory=dict)  # mqtt, nats, metrics


def embedded(batch: list[sensors.Message]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """What an embedded engine made as ``faidecs run`` makes it here does on the well-formed
    events of ``batch``: its deliveries in order (the JSON a sink publishes), and the events its
    bounds dropped, per subscription."""
    from faidecs import Bounds, Engine

    engine = Engine.from_source((HERE / "monitoring.fdc").read_text(), bounds=Bounds(max_queue=MAX_QUEUE))
    deliveries = [d.to_json() for event in sensors.events(batch) for d in engine.publish(event)]
    drops = {
        name: sum(c["drops"] for c in conjunctions) for name, conjunctions in engine.metrics()["subscriptions"].items()
    }
    return deliveries, drops


def expected(batch: list[sensors.Message]) -> list[dict[str, Any]]:
    """The embedded engine's deliveries on ``batch`` (:func:`embedded`)."""
    return embedded(batch)[0]


def parse_metrics(text: str) -> tuple[float, dict[str, float], dict[str, float]]:
    """Events published; deliveries and dropped events per subscription (summed over its
    conjunctions)."""
    from prometheus_client.parser import text_string_to_metric_families

    published = 0.0
    per: dict[str, dict[str, float]] = {"deliveries": {}, "dropped_events": {}}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "faidecs_engine_published_events_total":
                published = sample.value
            for what, counts in per.items():
                if sample.name == f"faidecs_engine_{what}_total":
                    name = sample.labels["subscription"]
                    counts[name] = counts.get(name, 0.0) + sample.value
    return published, per["deliveries"], per["dropped_events"]


def _scrape(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            text: str = response.read().decode()
            return text
    except OSError:
        return None  # not listening yet


def _mqtt_client(port: int, client_id: str, *, clean: bool) -> Any:
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    client = mqtt.Client(
        callback_api_version=CallbackAPIVersion.VERSION2,
        client_id=client_id,
        clean_session=clean,
        protocol=mqtt.MQTTv311,
    )
    client.connect("127.0.0.1", port)
    client.loop_start()
    return client


def _subscribe(client: Any, topic: str) -> None:
    """Subscribe at QoS 1 and wait for the broker's SUBACK."""
    acked = threading.Event()
    client.on_subscribe = lambda *args: acked.set()
    client.subscribe(topic, qos=1)
    if not acked.wait(10):
        raise RuntimeError(f"mosquitto did not acknowledge the subscription to {topic}")


def open_engine_session(port: int) -> None:
    """Create the engine's persistent MQTT session and its subscription before anything is
    published: the broker queues the building's messages for it from now on, however long the
    child takes to start (docs/connectors.md, "MQTT source")."""
    client = _mqtt_client(port, ENGINE_CLIENT, clean=False)
    _subscribe(client, SOURCE_TOPIC)
    client.disconnect()
    client.loop_stop()


class DeadLetters:
    """A subscriber to the dead-letter topic, collecting what arrives."""

    def __init__(self, port: int):
        self.received: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.client = _mqtt_client(port, "monitoring-dead-letters", clean=True)
        self.client.on_message = self._on_message
        _subscribe(self.client, DEAD_TOPIC)

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        with self._lock:
            self.received.append(json.loads(message.payload))

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.received)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def publish(port: int, batch: list[sensors.Message]) -> None:
    """Each message at QoS 1, in order, waiting for the broker's PUBACK."""
    client = _mqtt_client(port, "monitoring-building", clean=True)
    try:
        for message in batch:
            client.publish(message.topic, message.payload, qos=1).wait_for_publish(10)
    finally:
        client.disconnect()
        client.loop_stop()


async def _alerts_stored(js: Any) -> int:
    info = await js.stream_info(_stream())
    count: int = info.state.messages
    return count


def _stream() -> str:
    from faidecs.connect.nats import stream_name

    return stream_name(ALERTS)


async def _read_alerts(js: Any) -> list[dict[str, Any]]:
    """Every message of the ALERTS stream, in stream order."""
    info = await js.stream_info(_stream())
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1) if info.state.messages else ():
        message = await js.get_msg(_stream(), seq)
        out.append(json.loads(message.data))
    return out


def _child_command(mqtt_port: int, nats_port: int, metrics_port: int) -> list[str]:
    source = f"mqtt://127.0.0.1:{mqtt_port}/building/%23?dead={DEAD_TOPIC}&client_id={ENGINE_CLIENT}"
    sink = f"nats://127.0.0.1:{nats_port}/{ALERTS}"
    return [
        sys.executable, "-m", "faidecs", "run",
        "--program", str(HERE / "monitoring.fdc"),
        "--source", source,
        "--sink", sink,
        "--metrics-port", str(metrics_port),
        "--max-queue", str(MAX_QUEUE),
    ]  # fmt: skip


async def _wait_until_done(
    child: subprocess.Popen[bytes],
    js: Any,
    dead: DeadLetters,
    url: str,
    *,
    events: int,
    malformed: int,
    timeout: float,
    errors: Path,
) -> str:
    """The scrape taken once the engine has taken ``events`` events, the ALERTS stream holds as
    many alerts as the scrape counts deliveries, and ``malformed`` dead letters came; the same
    scrape twice in a row, so it is not one taken in the middle of the last event."""
    deadline = time.monotonic() + timeout
    last: str | None = None
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise RuntimeError(f"faidecs run exited with status {child.returncode}:\n{errors.read_text()}")
        text = await asyncio.to_thread(_scrape, url)
        if text is not None:
            published, deliveries, _ = parse_metrics(text)
            done = (
                published == events
                and await _alerts_stored(js) == sum(deliveries.values())
                and len(dead.snapshot()) == malformed
            )
            if done and text == last:
                return text
            last = text if done else None
        await asyncio.sleep(0.1)
    raise RuntimeError(
        f"not done after {timeout:g} s: last scrape {last!r}, {len(dead.snapshot())} dead letters\n{errors.read_text()}"
    )


async def _hold(url: str) -> None:
    """Keep everything running until SIGINT (Ctrl-C) or SIGTERM, for a Prometheus to scrape."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"monitoring: the engine serves its metrics on {url}; Ctrl-C stops everything", flush=True)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def _run(
    folder: Path, batch: list[sensors.Message], metrics_port: int | None, timeout: float, hold: bool
) -> Outcome:
    import nats

    from faidecs.connect.nats import ensure_stream
    from faidecs.connect.servers import MosquittoServer, NatsServer
    from faidecs.net.zkserver import free_port

    mosquitto = MosquittoServer(folder / "mosquitto").start()
    broker = NatsServer(folder / "nats").start()
    child: subprocess.Popen[bytes] | None = None
    dead: DeadLetters | None = None
    nc = None
    try:
        assert mosquitto.port is not None and broker.port is not None
        nc = await nats.connect(f"nats://127.0.0.1:{broker.port}")
        js = nc.jetstream()
        await ensure_stream(js, ALERTS, None)  # so that it can be read before the first alert
        open_engine_session(mosquitto.port)
        dead = DeadLetters(mosquitto.port)
        port = metrics_port if metrics_port is not None else free_port()
        command = _child_command(mosquitto.port, broker.port, port)
        errors = folder / "faidecs-run.err"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        with open(folder / "faidecs-run.out", "wb") as out, open(errors, "wb") as err:
            child = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, start_new_session=True
            )
        await asyncio.to_thread(publish, mosquitto.port, batch)
        url = f"http://127.0.0.1:{port}/metrics"
        text = await _wait_until_done(
            child,
            js,
            dead,
            url,
            events=len(sensors.events(batch)),
            malformed=len(sensors.malformed(batch)),
            timeout=timeout,
            errors=errors,
        )
        alerts = await _read_alerts(js)
        dead_letters = dead.snapshot()
        if hold:
            # Ctrl-C reaches the brokers too (they are in this terminal's process group), not
            # the child (a session of its own): it still stops as at the end of a run.
            await _hold(url)
        child.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(child.wait, 30)
        published, deliveries, dropped = parse_metrics(text)
        lines = errors.read_text().splitlines()
        return Outcome(
            published=batch,
            alerts=alerts,
            dead_letters=dead_letters,
            metrics_text=text,
            published_events=published,
            deliveries=deliveries,
            dropped=dropped,
            counts_line=lines[-1] if lines else "",
            exit_code=code,
            command=command,
            folder=folder,
            ports={"mqtt": mosquitto.port, "nats": broker.port, "metrics": port},
        )
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()
        if dead is not None:
            dead.close()
        if nc is not None:
            await nc.close()
        broker.stop()
        mosquitto.stop()


def run(
    folder: Path, *, seed: int = 7, metrics_port: int | None = None, timeout: float = 120, hold: bool = False
) -> Outcome:
    """Run the example in ``folder`` (brokers' stores and the child's output go there);
    ``hold``: once done, keep everything running until SIGINT or SIGTERM."""
    folder.mkdir(parents=True, exist_ok=True)
    return asyncio.run(_run(folder, sensors.messages(seed), metrics_port, timeout, hold))


def _describe(alert: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> str:
    def one(event_id: str) -> str:
        event = by_id[event_id]
        attrs = event["attrs"]
        clock = f"{attrs['time'] // 3600:02d}:{attrs['time'] // 60 % 60:02d}"
        if event["type"] == "Reading":
            return f"{attrs['sensor']} {attrs['celsius']} °C at {clock}"
        if event["type"] == "Door":
            return f"{attrs['room']} door {'opened' if attrs['open'] else 'closed'} at {clock}"
        return f"{attrs['room']} power {'back' if attrs['on'] else 'cut'} at {clock}"

    return f"{alert['subscription']:<16} " + ", ".join(one(i) for i in alert["relation"])


def summary(outcome: Outcome) -> str:
    by_id = {e["id"]: e for e in sensors.events(outcome.published)}
    malformed = sensors.malformed(outcome.published)
    metric_lines = [
        line
        for line in outcome.metrics_text.splitlines()
        if line.startswith(
            (
                "faidecs_engine_published_events_total",
                "faidecs_engine_deliveries_total",
                "faidecs_engine_dropped_events_total",
            )
        )
    ]
    lines = [
        f"monitoring: published {len(outcome.published)} MQTT messages: "
        f"{len(by_id)} events, {len(malformed)} malformed",
        f"monitoring: {len(outcome.alerts)} alerts on NATS subject '{ALERTS}' (stream {_stream()}):",
        *(f"  {_describe(alert, by_id)}" for alert in outcome.alerts),
        "monitoring: the alerts equal the embedded engine's deliveries on the same events: "
        + ("yes" if outcome.alerts == expected(outcome.published) else "NO"),
        f"monitoring: {len(outcome.dead_letters)} dead letters on MQTT topic '{DEAD_TOPIC}':",
        *(f"  {d['where']}: {d['error']}" for d in outcome.dead_letters),
        f"monitoring: the engine's counts at SIGTERM (exit {outcome.exit_code}): {outcome.counts_line}",
        "monitoring: metrics scraped at the end:",
        *(f"  {line}" for line in metric_lines),
        f"monitoring: the run folder (broker logs, the child's output): {outcome.folder}",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7, help="the simulator's seed (default 7)")
    parser.add_argument("--metrics-port", type=int, help="the engine's metrics port (default: a free one)")
    parser.add_argument(
        "--hold",
        action="store_true",
        help="once done, keep the brokers and the engine up until Ctrl-C (for Prometheus)",
    )
    parser.add_argument("--dir", help="run folder (default: a new temporary one)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds to wait for the run (default 120)")
    args = parser.parse_args()
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="faidecs-monitoring-"))
    outcome = run(folder, seed=args.seed, metrics_port=args.metrics_port, timeout=args.timeout, hold=args.hold)
    print(summary(outcome))
    return 0 if outcome.exit_code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
