"""UDP publishers' datagrams (faidecs/overlay/runtime/udp.py): pairwise keys from the deployment's
CurveZMQ key pairs, sealing, and what a receiver refuses."""

from __future__ import annotations

import os
import socket
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("cryptography", reason="needs the overlay extra: pip install 'faidecs[overlay]'")

from faidecs.errors import FaidecsError
from faidecs.matching.events import EventValidator
from faidecs.net.certificates import Keys, create_keys
from faidecs.ordering.latch.stamp import Stamp
from faidecs.overlay.core.messages import Publish
from faidecs.overlay.runtime.deployment import Deployment, DeploymentError, load_deployment
from faidecs.overlay.runtime.udp import (
    CHUNK,
    MAX_DATAGRAM,
    WINDOW,
    NonceCounter,
    ReplayWindow,
    UdpError,
    UdpReceiver,
    UdpSender,
    open_sealed,
    pair_key,
    seal,
)

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
    data = seal(key, "u", "p1", "m1", stamp, _publish(deployment), 7)
    sender, got, msg = open_sealed(key, "u", "m1", data)
    assert sender == "p1" and got == stamp and msg == _publish(deployment)
    first = seal(key, "u", "p1", "m1", Stamp("p1", 0, 1.0, None), _publish(deployment), 8)
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
        open_sealed(key, "u", "m1", seal(key, "u", "p1", "m1", stamp, _publish(deployment, publisher="p2"), 9))
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
        stranger = seal(os.urandom(32), "u", "p1", "m1", Stamp("p1", 9, 1.0, 0.5), _publish(deployment, 9), 1 << 90)
        tcp_publisher = seal(
            os.urandom(32), "u", "p2", "m1", Stamp("p2", 0, 1.0, None), _publish(deployment, 0, "p2"), 1
        )
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


# --- replays (RFC 4303 section 3.4.3): a counter per (publisher, server), a window at the server ---


def test_the_window_accepts_each_counter_once_and_reorders_within_its_width() -> None:
    w = ReplayWindow(size=8)

    def offer(n: int) -> str | None:
        why = w.check(n)
        if why is None:
            w.mark(n)
        return why

    assert [offer(n) for n in (10, 12, 11, 11, 12, 10)] == [
        None,
        None,
        None,
        "udp-replayed",
        "udp-replayed",
        "udp-replayed",
    ]
    assert offer(9) is None  # below the highest, but within the window and never seen
    assert offer(20) is None  # 20 - 12 = 8: a jump wider than the window
    assert [offer(n) for n in (12, 13, 19, 19)] == ["udp-too-old", None, None, "udp-replayed"]
    assert offer(1 << 80) is None and offer(20) == "udp-too-old"  # a restarted publisher's counters


def _receiver_and_key(deployment: Deployment) -> tuple[UdpReceiver, bytes, Counter[str]]:
    folder = deployment.path("keys")
    rejected: Counter[str] = Counter()
    receiver = UdpReceiver(deployment, "m1", Keys.load(folder, "m1"), rejected)
    return receiver, pair_key(deployment, Keys.load(folder, "p1"), "p1", "m1", "p1", "m1"), rejected


def _deliver(receiver: UdpReceiver, data: bytes, deployment: Deployment) -> None:
    """Send ``data`` to ``receiver`` and wait until it has read it (one at a time: in this order)."""
    import time

    before = receiver.received
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(data, deployment.udp_address("m1"))
    roles = {deployment.root_role("A"): None}
    deadline = time.monotonic() + 2
    while receiver.received == before and time.monotonic() < deadline:
        receiver.receive(roles)
        time.sleep(0.002)
    assert receiver.received == before + 1, "the datagram never arrived"


def test_a_receiver_drops_and_counts_replays_and_datagrams_older_than_its_window(deployment: Deployment) -> None:
    receiver, key, rejected = _receiver_and_key(deployment)
    try:

        def sealed(counter: int, seq: int) -> bytes:
            return seal(key, "u", "p1", "m1", Stamp("p1", seq, 1.0 + seq, None), _publish(deployment, seq), counter)

        base = 1 << 72
        first, second, third = sealed(base, 0), sealed(base + 2, 1), sealed(base + 1, 2)
        for data in (first, second, third):  # base + 1 after base + 2: a reordering, accepted
            _deliver(receiver, data, deployment)
        assert receiver.accepted == 3 and not rejected
        for data in (second, first, third):  # captured on the wire and sent again
            _deliver(receiver, data, deployment)
        assert receiver.accepted == 3 and rejected == Counter({"udp-replayed": 3})
        # The window moves on: base + 2 .. base + WINDOW + 1 (its WINDOW counters up to the highest).
        _deliver(receiver, sealed(base + WINDOW + 1, 3), deployment)
        _deliver(receiver, sealed(base + 3, 4), deployment)  # the lowest but one in it, never seen: accepted
        _deliver(receiver, second, deployment)  # base + 2, the lowest in it: seen
        _deliver(receiver, sealed(base + 1, 5), deployment)  # new content, but below the window
        assert receiver.accepted == 5
        assert rejected == Counter({"udp-replayed": 4, "udp-too-old": 1})
        status = receiver.status()
        assert (status["replayed"], status["too_old"], status["accepted"], status["received"]) == (4, 1, 5, 10)
    finally:
        receiver.close()


def test_a_datagram_that_does_not_authenticate_never_moves_the_window(deployment: Deployment) -> None:
    receiver, key, rejected = _receiver_and_key(deployment)
    try:
        base = 1 << 72
        ahead = seal(key, "u", "p1", "m1", Stamp("p1", 0, 1.0, None), _publish(deployment, 0), base + 10 * WINDOW)
        garbled = ahead[:-1] + bytes([ahead[-1] ^ 1])
        at = 5 + len("p1")  # the nonce: a counter changed in flight does not authenticate either
        moved = ahead[:at] + (base + 20 * WINDOW).to_bytes(12, "big") + ahead[at + 12 :]
        forged = seal(os.urandom(32), "u", "p1", "m1", Stamp("p1", 0, 1.0, None), _publish(deployment, 0), base + 30)
        for data in (garbled, moved, forged):
            _deliver(receiver, data, deployment)
        assert rejected == Counter({"udp-auth": 3}) and receiver.windows["p1"].top == -1
        # Had any of them moved the window, these would be too old, and a repeat of base + 30 a replay.
        for counter in (base, base + 30):
            _deliver(
                receiver,
                seal(key, "u", "p1", "m1", Stamp("p1", 1, 2.0, None), _publish(deployment, 1), counter),
                deployment,
            )
        assert receiver.accepted == 2 and rejected == Counter({"udp-auth": 3})
        _deliver(receiver, forged, deployment)  # a forged copy of a counter now seen: still udp-auth
        assert rejected == Counter({"udp-auth": 4}) and receiver.replayed == 0
    finally:
        receiver.close()


def test_the_latch_test_knobs_reorder_within_the_window(deployment: Deployment) -> None:
    folder = deployment.path("keys")
    receiver, _, rejected = _receiver_and_key(deployment)
    sender = UdpSender(deployment, "p1", Keys.load(folder, "p1"), swap=1.0)  # every other copy held back
    try:
        import time

        for seq in range(6):
            sender.publish(_publish(deployment, seq))
        sender.flush()
        assert sender.swapped == 3
        deadline = time.monotonic() + 2
        while receiver.received < 6 and time.monotonic() < deadline:
            receiver.receive({deployment.root_role("A"): None})
            time.sleep(0.01)
        assert receiver.accepted == 6 and not rejected
    finally:
        sender.close()
        receiver.close()


def test_a_restarted_publisher_never_reuses_a_counter(tmp_path: Path) -> None:
    clock = [1_000_000]  # microseconds; a clock that stands still, then steps back
    state = tmp_path / "state" / "p1"
    first = NonceCounter(state, lambda: clock[0])
    used = {s: [first.take(s) for _ in range(CHUNK + 5)] for s in ("m1", "m2")}  # past one reservation
    assert all(b == a + 1 for s in used for a, b in zip(used[s], used[s][1:], strict=False))
    assert first.reservations == 2 and (state / NonceCounter.FILE).exists()
    clock[0] -= 10_000  # restarted (after a crash: nothing but the mark on disk) with the clock stepped back
    second = NonceCounter(state, lambda: clock[0])
    assert min(second.take("m1"), second.take("m2")) > max(max(v) for v in used.values())
    # With no state folder (or a fresh run folder) the clock alone: each start is above the last one's
    # counters unless an incarnation sent 2**20 datagrams per microsecond it ran.
    stateless = NonceCounter(None, lambda: 5)
    taken = [stateless.take("m1") for _ in range(1000)]
    assert NonceCounter(None, lambda: 6).take("m1") > max(taken) and not list(state.glob("*.tmp"))
    fresh = NonceCounter(tmp_path / "other", lambda: clock[0] + 20_000)  # a new run folder, the clock moved on
    assert fresh.take("m1") > max(max(v) for v in used.values())
    (state / NonceCounter.FILE).write_text("garbage")
    with pytest.raises(FaidecsError, match="counter mark"):
        NonceCounter(state)


def test_a_server_that_kept_running_takes_a_restarted_publisher_and_drops_the_old_one(deployment: Deployment) -> None:
    import time

    folder = deployment.path("keys")
    receiver, _, rejected = _receiver_and_key(deployment)
    try:
        captured: list[bytes] = []  # what reached the server's socket, read off it raw
        for incarnation in range(2):
            sender = UdpSender(deployment, "p1", Keys.load(folder, "p1"), state_dir=deployment.base / "state" / "p1")
            try:
                for seq in range(3):
                    sender.publish(_publish(deployment, 3 * incarnation + seq))
            finally:
                sender.close()
            deadline = time.monotonic() + 2
            while len(captured) < 3 * (incarnation + 1) and time.monotonic() < deadline:
                try:
                    captured.append(receiver.sock.recv(MAX_DATAGRAM))
                except BlockingIOError:
                    time.sleep(0.01)
        nonces = [int.from_bytes(d[7:19], "big") for d in captured]
        assert len(nonces) == 6 and nonces == sorted(set(nonces))
        for data in captured:  # in the order sent: the restarted publisher's counters are above the first's
            _deliver(receiver, data, deployment)
        assert receiver.accepted == 6 and not rejected
        for data in captured:  # the first incarnation's now far below the window, the second's seen
            _deliver(receiver, data, deployment)
        assert rejected == Counter({"udp-too-old": 3, "udp-replayed": 3}) and receiver.accepted == 6
    finally:
        receiver.close()
