"""UDP publishers' datagrams (faidecs/overlay/runtime/udp.py): pairwise keys from the deployment's
CurveZMQ key pairs, sealing, and what a receiver refuses."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("cryptography", reason="needs the overlay extra: pip install 'faidecs[overlay]'")

from faidecs.matching.events import EventValidator
from faidecs.net.certificates import Keys, create_keys
from faidecs.ordering.latch.stamp import Stamp
from faidecs.overlay.core.messages import Publish
from faidecs.overlay.runtime.deployment import Deployment, DeploymentError, load_deployment
from faidecs.overlay.runtime.udp import UdpError, UdpReceiver, UdpSender, open_sealed, pair_key, seal

TEXT = """\
name = "u"
program = "p.fdc"
replicas = 1
keys = "keys"
udp_port_offset = 3
[servers]
m1 = "tcp://127.0.0.1:{port}"
[publishers.p1]
address = "tcp://127.0.0.1:{pport}"
events = "e.jsonl"
transport = "udp"
[publishers.p2]
address = "tcp://127.0.0.1:{qport}"
events = "e.jsonl"
"""


@pytest.fixture
def deployment(tmp_path: Path) -> Deployment:
    (tmp_path / "p.fdc").write_text("type A(x: int)\nsubscription S: A\n")
    port = 30000 + os.getpid() % 20000
    (tmp_path / "d.toml").write_text(TEXT.format(port=port, pport=port + 1, qport=port + 2))
    create_keys(tmp_path / "keys", ["m1", "p1", "p2"])
    return load_deployment(tmp_path / "d.toml")


def _publish(d: Deployment, seq: int = 0, publisher: str = "p1") -> Publish:
    event = EventValidator(d.types).validate(
        {"id": f"e{seq}", "type": "A", "attrs": {"x": 1}, "publisher": publisher, "seq": seq}
    )
    return Publish(publisher, seq, event)


def test_both_ends_derive_the_same_pair_key(deployment: Deployment) -> None:
    folder = deployment.path("keys")
    p1, m1 = Keys.load(folder, "p1"), Keys.load(folder, "m1")
    at_publisher = pair_key(deployment, p1, "p1", "m1", "p1", "m1")
    at_server = pair_key(deployment, m1, "m1", "p1", "p1", "m1")
    assert at_publisher == at_server and len(at_publisher) == 32
    assert pair_key(deployment, Keys.load(folder, "p2"), "p2", "m1", "p2", "m1") != at_server


def test_sealed_datagrams_open_only_with_the_key_for_their_receiver(deployment: Deployment) -> None:
    key = os.urandom(32)
    stamp = Stamp("p1", 3, 12.5, 10.0)
    data = seal(key, "u", "p1", "m1", stamp, _publish(deployment))
    sender, got, msg = open_sealed(key, "u", "m1", data)
    assert sender == "p1" and got == stamp and msg == _publish(deployment)
    first = seal(key, "u", "p1", "m1", Stamp("p1", 0, 1.0, None), _publish(deployment))
    assert open_sealed(key, "u", "m1", first)[1].prev_departure is None
    for wrong in [
        lambda: open_sealed(os.urandom(32), "u", "m1", data),
        lambda: open_sealed(key, "u", "m2", data),
        lambda: open_sealed(key, "v", "m1", data),
        lambda: open_sealed(key, "u", "m1", data[:-1] + bytes([data[-1] ^ 1])),
    ]:
        with pytest.raises(UdpError) as exc:
            wrong()
        assert exc.value.kind == "udp-auth"
    with pytest.raises(UdpError) as exc:  # sealed right, but for another publisher's event
        open_sealed(key, "u", "m1", seal(key, "u", "p1", "m1", stamp, _publish(deployment, publisher="p2")))
    assert exc.value.kind == "udp-refused"


def test_a_receiver_counts_and_drops_what_it_refuses(deployment: Deployment) -> None:
    folder = deployment.path("keys")
    rejected: Counter[str] = Counter()
    receiver = UdpReceiver(deployment, "m1", Keys.load(folder, "m1"), rejected)
    sender = UdpSender(deployment, "p1", Keys.load(folder, "p1"))
    try:
        roles = {deployment.root_role("A"): None}
        for seq in range(3):
            sender.publish(_publish(deployment, seq))
        stranger = seal(os.urandom(32), "u", "p1", "m1", Stamp("p1", 9, 1.0, 0.5), _publish(deployment, 9))
        tcp_publisher = seal(os.urandom(32), "u", "p2", "m1", Stamp("p2", 0, 1.0, None), _publish(deployment, 0, "p2"))
        for junk in [stranger, tcp_publisher, b"", b"FDU1", b"hello world"]:
            sender.sock.sendto(junk, deployment.udp_address("m1"))
        import time

        got: list[Publish] = []
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and (len(got) < 3 or sum(rejected.values()) < 5):
            got += receiver.receive(roles)
            time.sleep(0.01)
        assert [p.seq for p in got] == [0, 1, 2]
        assert rejected == Counter({"udp-auth": 2, "udp-malformed": 3})
    finally:
        sender.close()
        receiver.close()


def test_udp_publishers_need_the_overlay_ordering(tmp_path: Path, deployment: Deployment) -> None:
    text = (deployment.base / "d.toml").read_text().replace('keys = "keys"', 'keys = "keys"\nordering = "sequencer"')
    (deployment.base / "d2.toml").write_text(text)
    with pytest.raises(DeploymentError, match="overlay"):
        load_deployment(deployment.base / "d2.toml")
    assert not Deployment.model_validate(
        {"name": "x", "program": "p", "insecure": True, "replicas": 1, "servers": {"m": "tcp://h:1"}}
    ).udp_publishers()
