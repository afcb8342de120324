"""The monitoring example (examples/monitoring/run.py) end to end: the simulated building published
to a real mosquitto, read by a `faidecs run --source mqtt://… --sink nats://… --metrics-port`
child process; the alerts read back from a real nats-server's JetStream are the embedded engine's
deliveries on the same events, the dead letters are the malformed messages, and the scraped
metrics count what the run did."""

from __future__ import annotations

import base64
import importlib.util
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("nats")  # the `nats` extra
pytest.importorskip("paho.mqtt")  # the `mqtt` extra
pytest.importorskip("prometheus_client")  # the `metrics` extra

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("monitoring_run", ROOT / "examples" / "monitoring" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _payload(dead_letter: dict[str, object]) -> bytes:
    if "payload_base64" in dead_letter:
        return base64.b64decode(str(dead_letter["payload_base64"]))
    return str(dead_letter["payload"]).encode()


def test_alerts_over_nats_are_the_embedded_engines_deliveries(tmp_path: Path) -> None:
    example = _example()
    # Another seed than the one command's below: other readings, other alerts (three Rises).
    outcome = example.run(tmp_path, seed=11)
    sensors = example.sensors
    events = sensors.events(outcome.published)
    malformed = sensors.malformed(outcome.published)
    assert len(malformed) == 5 and len(events) > 150

    # Alerts: the same subscriptions, relations and order as the embedded engine on the events
    # (with the run's bounds).
    want, drops = example.embedded(outcome.published)
    assert outcome.alerts == want
    # Every subscription of the program fires (the simulator's incidents are scripted).
    assert {a["subscription"] for a in outcome.alerts} == {"Rise", "HotWithDoorOpen", "CoolingLost"}

    # Dead letters: exactly the malformed messages, in the order published, with their topics.
    assert [_payload(d) for d in outcome.dead_letters] == [m.payload for m in malformed]
    assert [d["where"].split(",")[0] for d in outcome.dead_letters] == [f"topic {m.topic}" for m in malformed]

    # Metrics scraped from the child: events published, deliveries and drops per subscription.
    assert outcome.published_events == len(events)
    assert outcome.deliveries == dict(Counter(a["subscription"] for a in want))
    assert outcome.dropped == drops and drops["Rise"] > 0

    # The child stopped cleanly at SIGTERM and counted the same.
    assert outcome.exit_code == 0
    assert outcome.counts_line == (
        f"faidecs: {len(events)} events taken, {len(want)} deliveries, {len(malformed)} dead-lettered, "
        "0 duplicates dropped"
    )
    # Everything stopped: nothing listens any more on the brokers' and the metrics' ports.
    assert set(outcome.ports) == {"mqtt", "nats", "metrics"}
    for port in outcome.ports.values():
        with socket.socket() as s, pytest.raises(ConnectionRefusedError):
            s.connect(("127.0.0.1", port))


def test_the_one_command_prints_the_summary_its_readme_shows(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "monitoring" / "run.py"), "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    readme = (ROOT / "examples" / "monitoring" / "README.md").read_text(encoding="utf-8")
    shown = readme.split("the run folder differs):\n\n```\n", 1)[1].split("```", 1)[0]
    # All but the last line, which names the run folder.
    *summary, folder = result.stdout.splitlines()
    *shown_summary, shown_folder = shown.splitlines()
    assert summary == shown_summary
    assert folder == shown_folder.replace("/tmp/faidecs-monitoring-…", str(tmp_path))
    assert "the alerts equal the embedded engine's deliveries on the same events: yes" in result.stdout
