"""Emulated link delay (``[emulation]`` in a deployment, faidecs.net.transport.LinkDelay): each
frame is held until max(the link's previous due time, now + delay + uniform jitter), so a link
stays FIFO; jitter stays in its bounds and is seeded; off means no delay at all; bad settings are
refused with the field's name. Used by benchmarks/hosts.py where the kernel has no netem."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from faidecs.net.transport import LinkDelay
from faidecs.overlay.runtime.deployment import DeploymentError, load_deployment


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_a_frame_is_due_after_the_delay_and_not_before() -> None:
    clock = Clock()
    d = LinkDelay(5, 0, clock=clock)
    assert d.wait_ms() > 10**6 and d.due() == []  # nothing held: nothing to wake up for
    due = d.hold("b", b"x", 1)
    assert due == pytest.approx(100.005)
    assert d.wait_ms() == 5
    clock.t = 100.0049
    assert d.due() == [] and d.wait_ms() == 1  # rounded up, never early
    clock.t = 100.005
    assert d.due() == [("b", b"x", 1)]
    assert d.due() == [] and d.held_frames == 0


def test_each_link_stays_fifo_under_jitter_and_jitter_stays_in_bounds() -> None:
    clock = Clock()
    d = LinkDelay(1, 4, seed=7, clock=clock)
    dues: dict[str, list[float]] = {"b": [], "c": []}
    sent: dict[str, list[bytes]] = {"b": [], "c": []}
    for k in range(2000):
        link = "bc"[k % 2]
        data = f"{k}".encode()
        sent[link].append(data)
        raw_low, raw_high = clock.t + 0.001, clock.t + 0.005
        due = d.hold(link, data, 1)
        previous = dues[link][-1] if dues[link] else 0.0
        assert due >= raw_low - 1e-12
        # Either its own draw (within [delay, delay + jitter]) or its predecessor's due time.
        assert due <= raw_high + 1e-12 or due == previous
        assert due >= previous
        dues[link].append(due)
        clock.t += 0.0003
    got: dict[str, list[bytes]] = {"b": [], "c": []}
    while d.held_frames:
        clock.t += 0.0005
        for link, data, _ in d.due():
            got[link].append(data)
    assert got == sent  # FIFO per link, nothing lost


def test_the_jitter_is_seeded() -> None:
    def dues(seed: int) -> list[float]:
        clock = Clock()
        d = LinkDelay(2, 3, seed=seed, clock=clock)
        out = []
        for k in range(50):
            out.append(d.hold(f"l{k}", b"", 1))  # one frame per link: the draws themselves
        return out

    assert dues(1) == dues(1)
    assert dues(1) != dues(2)
    assert all(100.002 <= x <= 100.005 for x in dues(3))
    assert max(dues(3)) - min(dues(3)) > 0.0015  # spread over the jitter's range


def test_forget_drops_what_was_held_for_that_link_only() -> None:
    clock = Clock()
    d = LinkDelay(10, 0, clock=clock)
    d.hold("b", b"1", 1)
    d.hold("c", b"2", 1)
    d.forget("b")
    d.hold("b", b"3", 1)  # after the peer came back: a new link
    clock.t += 1
    assert d.due() == [("c", b"2", 1), ("b", b"3", 1)]


def test_bad_delays_are_refused() -> None:
    for delay, jitter in ((-1, 0), (0, -1), (float("nan"), 0), (1, float("inf"))):
        with pytest.raises(ValueError, match="finite and not negative"):
            LinkDelay(delay, jitter)


def test_the_transport_sends_at_once_without_a_delay_and_holds_with_one(tmp_path: Path) -> None:
    zmq = pytest.importorskip("zmq", reason="needs the overlay extra: pip install 'faidecs[overlay]'")
    from faidecs.net.transport import Transport
    from faidecs.net.zkserver import free_port
    from faidecs.overlay.core.messages import Ack
    from faidecs.overlay.runtime.codec import OVERLAY_CODEC

    port = free_port()
    context = zmq.Context()
    addresses = {"a": "tcp://127.0.0.1:1", "b": f"tcp://127.0.0.1:{port}"}
    b = Transport("b", f"tcp://127.0.0.1:{port}", addresses, None, context=context, codec=OVERLAY_CODEC)
    plain = Transport("a", "tcp://127.0.0.1:*", addresses, None, context=context, codec=OVERLAY_CODEC)
    delayed = Transport(
        "a", "tcp://127.0.0.1:*", addresses, None, context=context, codec=OVERLAY_CODEC, delay=LinkDelay(150)
    )
    try:
        assert plain.delay is None
        plain.send("b", Ack(("A",), "k", "a", 1))
        got = b.receive(2000)
        assert [m.position for _, m in got] == [1]
        start = time.monotonic()
        delayed.send_many("b", [Ack(("A",), "k", "a", 2), Ack(("A",), "k", "a", 3)])
        delayed.send("b", Ack(("A",), "k", "a", 4))
        assert delayed.sent == 0 and b.receive(50) == []
        received: list[int] = []
        while len(received) < 3 and time.monotonic() - start < 5:
            # At most 20 ms: once every frame is released, wait_ms() is "none held" (2**30 ms),
            # and a receive that missed one would otherwise sleep for good (a hang, seen once).
            time.sleep(min(delayed.delay.wait_ms(), 20) / 1000 if delayed.delay else 0)
            delayed.release()
            received += [m.position for _, m in b.receive(20)]
        assert received == [2, 3, 4]
        assert time.monotonic() - start >= 0.15
        assert delayed.sent == 3
    finally:
        for t in (b, plain, delayed):
            t.close()
        context.term()


# --- the deployment's [emulation] table -------------------------------------------------------

PROGRAM = "type A(x: int)\ntype B(x: int)\nsubscription P: A and B\n"
BASE = """\
name = "t"
program = "p.fdc"
replicas = 1
insecure = true
[servers]
m1 = "tcp://127.0.0.1:7001"
[subscribers.s1]
address = "tcp://127.0.0.1:7101"
subscription = "P"
"""


def _load(tmp_path: Path, emulation: str) -> object:
    (tmp_path / "p.fdc").write_text(PROGRAM)
    (tmp_path / "d.toml").write_text(BASE + emulation)
    return load_deployment(tmp_path / "d.toml")


def test_emulation_is_off_unless_asked_for(tmp_path: Path) -> None:
    d = _load(tmp_path, "")
    assert not d.emulation.active  # type: ignore[attr-defined]
    d = _load(tmp_path, "[emulation]\nlink_delay_ms = 0\n")
    assert not d.emulation.active  # type: ignore[attr-defined]
    d = _load(tmp_path, "[emulation]\nlink_delay_ms = 1.5\nlink_jitter_ms = 3\nseed = 4\n")
    e = d.emulation  # type: ignore[attr-defined]
    assert e.active and (e.link_delay_ms, e.link_jitter_ms, e.seed) == (1.5, 3, 4)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("link_delay_ms = -1", "emulation.link_delay_ms: Input should be greater than or equal to 0"),
        ("link_jitter_ms = -0.5", "emulation.link_jitter_ms: Input should be greater than or equal to 0"),
        ("link_delay_ms = 20000", "emulation.link_delay_ms: Input should be less than or equal to 10000"),
        ("link_delay_ms = nan", "emulation.link_delay_ms: Input should be a finite number"),
        ('link_delay_ms = "fast"', "emulation.link_delay_ms: Input should be a valid number"),
        ("delay = 5", "emulation.delay: Extra inputs are not permitted"),
    ],
)
def test_bad_emulation_settings_name_the_field(tmp_path: Path, table: str, message: str) -> None:
    with pytest.raises(DeploymentError, match=message):
        _load(tmp_path, f"[emulation]\n{table}\n")


def test_a_node_with_emulation_delays_its_links(tmp_path: Path) -> None:
    pytest.importorskip("zmq", reason="needs the overlay extra: pip install 'faidecs[overlay]'")
    pytest.importorskip("kazoo", reason="needs the overlay extra: pip install 'faidecs[overlay]'")
    from faidecs.overlay.runtime.node import Node

    for table, delayed in (("", False), ("[emulation]\nlink_delay_ms = 2\nlink_jitter_ms = 1\n", True)):
        d = _load(tmp_path, table)
        node = Node(d, "m1", "127.0.0.1:1", log_dir=tmp_path)  # type: ignore[arg-type]
        try:
            assert (node.transport.delay is not None) is delayed
            if delayed:
                assert node.transport.delay is not None
                assert (node.transport.delay.delay, node.transport.delay.jitter) == (0.002, 0.001)
        finally:
            node.log.close()
            node.transport.close()
