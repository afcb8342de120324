"""examples/deployment.toml, the example deployment of examples/overlay.fdc (issue 23: there was
none), loads, and `faidecs overlay keys` and `faidecs overlay topology` accept it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faidecs.cli.main import main
from faidecs.matching.engine import Engine
from faidecs.overlay.runtime.deployment import load_deployment

ROOT = Path(__file__).resolve().parents[2]
DEPLOYMENT = ROOT / "examples" / "deployment.toml"


def test_it_loads_with_a_subscriber_per_subscription() -> None:
    d = load_deployment(DEPLOYMENT)
    assert d.compiled.subscriptions  # examples/overlay.fdc, found relative to the file
    assert sorted(d.subscribers[s].subscription for s in d.subscribers) == sorted(
        s.name for s in d.compiled.subscriptions
    )
    assert d.replicas <= len(d.servers) and d.keys is not None and not d.insecure


def test_its_events_fit_its_program() -> None:
    d = load_deployment(DEPLOYMENT)
    engine = Engine.from_source(d.path(d.program).read_text(encoding="utf-8"))
    (publisher,) = d.publishers.values()
    lines = d.path(publisher.events).read_text(encoding="utf-8").splitlines()
    deliveries = [delivery for line in lines for delivery in engine.publish(json.loads(line))]
    assert {delivery.subscription for delivery in deliveries} == {s.name for s in d.compiled.subscriptions}


def test_overlay_keys_accepts_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("zmq", reason="faidecs[overlay] is not installed")
    assert main(["overlay", "keys", str(tmp_path / "keys"), "--deployment", str(DEPLOYMENT)]) == 0
    processes = load_deployment(DEPLOYMENT).processes()
    assert capsys.readouterr().out == f"created keys for {len(processes)} processes in {tmp_path / 'keys'}\n"
    assert sorted(p.stem for p in (tmp_path / "keys" / "public").iterdir()) == sorted(processes)


def test_overlay_topology_accepts_it(capsys: pytest.CaptureFixture[str]) -> None:
    """The deployment's servers, replicas and subscriber processes, placed as `overlay up` places them."""
    assert main(["overlay", "topology", "--deployment", str(DEPLOYMENT)]) == 0
    out = capsys.readouterr().out
    d = load_deployment(DEPLOYMENT)
    lines = out.splitlines()
    assert len(lines) == len(d.roles)
    for role in d.roles:
        name = role[0] if len(role) == 1 else f"⊔[{','.join(role)}]"
        (line,) = [line for line in lines if line.split()[0] == f"[{name}]" or line.split()[0] == name]
        assert f"replicas {', '.join(d.placement(role))};" in line
    assert "subscribers desk1, desk2" in out


def test_topology_needs_one_of_program_and_deployment(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["overlay", "topology"]) == 1
    assert capsys.readouterr().err == "faidecs: give --program or --deployment (one of them)\n"
