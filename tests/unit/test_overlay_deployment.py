"""Deployment files are checked up front and every mistake names the file and the field; key
folders hold a pair per process and keep existing pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from faidecs.cli.main import main
from faidecs.net.certificates import KeyMaterialError, Keys, create_keys
from faidecs.overlay.runtime.deployment import DeploymentError, load_deployment

PROGRAM = "type A(x: int)\ntype B(x: int)\nsubscription P: A and B\n"
GOOD = """\
name = "t"
program = "p.fdc"
replicas = 2
keys = "keys"
[servers]
m1 = "tcp://127.0.0.1:7001"
m2 = "tcp://127.0.0.1:7002"
[subscribers.s1]
address = "tcp://127.0.0.1:7101"
subscription = "P"
[publishers.p1]
address = "tcp://127.0.0.1:7201"
events = "e.jsonl"
"""


def _load(tmp_path: Path, text: str) -> object:
    (tmp_path / "p.fdc").write_text(PROGRAM)
    (tmp_path / "d.toml").write_text(text)
    return load_deployment(tmp_path / "d.toml")


def test_a_publisher_may_read_a_nats_subject(tmp_path: Path) -> None:
    d = _load(tmp_path, GOOD.replace('events = "e.jsonl"', 'source = "nats://h:4222/q?durable=d"\nmax_events = 9'))
    publisher = d.publishers["p1"]  # type: ignore[attr-defined]
    assert (publisher.events, publisher.source, publisher.max_events) == (None, "nats://h:4222/q?durable=d", 9)


def test_a_good_file_gives_roles_placement_and_addresses(tmp_path: Path) -> None:
    d = _load(tmp_path, GOOD)
    assert d.roles == [("A",), ("B",), ("A", "B")]  # type: ignore[attr-defined]
    assert d.placement(("A", "B")) == ("m1", "m2")  # type: ignore[attr-defined]
    assert d.addresses()["s1"] == "tcp://127.0.0.1:7101"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "change,message",
    [
        (
            ('m2 = "tcp://127.0.0.1:7002"', 'm2 = "127.0.0.1:7002"'),
            "servers: Value error, '127.0.0.1:7002' is not a tcp://host:port address",
        ),
        (('subscription = "P"', 'subscription = "Q"'), "subscriber s1: the program has no subscription 'Q' (it has P)"),
        (("replicas = 2", "replicas = 3"), "3 replicas per role need at least as many servers, not 2"),
        (('keys = "keys"', ""), "give keys (faidecs overlay keys) or set insecure = true"),
        (
            ('address = "tcp://127.0.0.1:7201"', 'address = "tcp://127.0.0.1:7101"'),
            "address tcp://127.0.0.1:7101 is given to two processes",
        ),
        (("[publishers.p1]", '[publishers."p 1"]'), "process name 'p 1'"),
        (("replicas = 2", "replicas = 2\ncolour = 1"), "colour: Extra inputs are not permitted"),
        (('program = "p.fdc"', 'program = "nope.fdc"'), "nope.fdc: No such file or directory"),
        (("replicas = 2", "replicas = [2"), "not TOML"),
        (('events = "e.jsonl"', ""), "give events (a file) or source (a nats:// URL), one of them"),
        (('events = "e.jsonl"', 'events = "e.jsonl"\nsource = "nats://h/q"'), "give events (a file) or source"),
        (('events = "e.jsonl"', 'source = "nats://h/q?bogus=1"'), "nats://h/q?bogus=1: unknown option 'bogus'"),
        (('events = "e.jsonl"', 'source = "mqtt://h/q"'), "mqtt://h/q: a publisher reads NATS JetStream only"),
        (('events = "e.jsonl"', 'events = "e.jsonl"\nmax_events = 5'), "max_events goes with source"),
        (
            ('events = "e.jsonl"', 'source = "nats://h/q"\ntransport = "udp"'),
            "a publisher with a broker source needs transport",
        ),
        (
            ('events = "e.jsonl"', 'source = "nats://h/q"', "replicas = 2", 'replicas = 2\nordering = "raft"'),
            "publisher p1: a broker source needs the overlay's ordering",
        ),
    ],
)
def test_mistakes_name_the_file_and_the_field(tmp_path: Path, change: tuple[str, ...], message: str) -> None:
    text = GOOD
    for old, new in zip(change[::2], change[1::2]):
        text = text.replace(old, new)
    with pytest.raises(DeploymentError) as err:
        _load(tmp_path, text)
    assert "d.toml" in str(err.value) or "nope.fdc" in str(err.value)
    assert message in str(err.value)


def test_keys_for_a_deployment_and_existing_pairs_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _load(tmp_path, GOOD)
    assert main(["overlay", "keys", str(tmp_path / "keys"), "--deployment", str(tmp_path / "d.toml")]) == 0
    assert sorted(f.stem for f in (tmp_path / "keys" / "public").glob("*.key")) == ["m1", "m2", "p1", "s1"]
    before = (tmp_path / "keys" / "private" / "m1.key_secret").read_bytes()
    assert create_keys(tmp_path / "keys", ["m1", "m3"]) == ["m3"]
    assert (tmp_path / "keys" / "private" / "m1.key_secret").read_bytes() == before
    keys = Keys.load(tmp_path / "keys", "m1")
    assert sorted(keys.peers.values()) == ["m1", "m2", "m3", "p1", "s1"]
    with pytest.raises(KeyMaterialError, match="no key pair for process m9"):
        Keys.load(tmp_path / "keys", "m9")


def test_metrics_ports_follow_the_processes_order(tmp_path: Path) -> None:
    d = _load(tmp_path, GOOD + "[metrics]\nbase_port = 9400\n")
    ports = {p: d.metrics_address(p) for p in d.processes()}  # type: ignore[attr-defined]
    assert ports == {
        "m1": ("127.0.0.1", 9400),
        "m2": ("127.0.0.1", 9401),
        "s1": ("127.0.0.1", 9402),
        "p1": ("127.0.0.1", 9403),
    }
    assert d.metrics_address("p1", 9500) == ("127.0.0.1", 9503)  # type: ignore[attr-defined]
    plain = _load(tmp_path, GOOD)
    assert plain.metrics_address("m1") is None  # type: ignore[attr-defined]
    listen = _load(tmp_path, GOOD + '[metrics]\nbase_port = 9400\nhost = "0.0.0.0"\n')
    assert listen.metrics_address("s1") == ("0.0.0.0", 9402)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "metrics,message",
    [
        ("base_port = 65534", "metrics: 4 processes from port 65534 pass 65535"),
        ("base_port = 7100", "metrics: process m2's port 7101 is a process's address"),
        ("base_port = 0", "metrics.base_port: Input should be greater than or equal to 1"),
        ("port = 9400", "metrics.port: Extra inputs are not permitted"),
    ],
)
def test_bad_metrics_settings_name_the_field(tmp_path: Path, metrics: str, message: str) -> None:
    with pytest.raises(DeploymentError, match=message):
        _load(tmp_path, GOOD + f"[metrics]\n{metrics}\n")
