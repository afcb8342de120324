"""RealNetwork (``faidecs/ordering/realnet.py``): two networks in one test process over loopback TCP
(no keys). Local sends stay local, remote ones arrive in FIFO order, timers run on the wall clock,
and what a peer gets wrong (malformed bytes, an address it does not host, a destination not hosted
here, a message its handler cannot take) is counted, never raised."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

zmq = pytest.importorskip("zmq", reason="needs the overlay extra: pip install 'faidecs[overlay]'")

from faidecs.net.transport import Transport
from faidecs.ordering.multistage.messages import CreatePubTs, EventTs
from faidecs.ordering.realnet import RealNetwork
from faidecs.ordering.wire import Envelope, OrderingCodec

HOSTS = {"tm:A": "a", "tm:B": "a", "p0": "b", "p1": "b"}


@pytest.fixture
def pair() -> Iterator[tuple[RealNetwork, RealNetwork]]:
    codec = OrderingCodec(["A", "B"], HOSTS)
    ta = Transport("a", "tcp://127.0.0.1:*", {}, None, codec=codec)
    tb = Transport("b", "tcp://127.0.0.1:*", {}, None, codec=codec)
    ta.addresses = {"a": ta.endpoint, "b": tb.endpoint}
    tb.addresses = dict(ta.addresses)
    yield RealNetwork("a", HOSTS, ta), RealNetwork("b", HOSTS, tb)
    ta.close()
    tb.close()


def pump(nets: tuple[RealNetwork, ...], until: Any, limit: float = 5.0) -> None:
    deadline = time.monotonic() + limit
    while not until():
        assert time.monotonic() < deadline, "timed out"
        for net in nets:
            net.step(0.005)


def test_local_and_remote_fifo_and_timers(pair: tuple[RealNetwork, RealNetwork]) -> None:
    a, b = pair
    got: list[tuple[str, str, Any]] = []
    a.listen("tm:B", lambda src, m: got.append(("tm:B", src, m)))
    b.listen("p0", lambda src, m: got.append(("p0", src, m)))
    with pytest.raises(Exception, match="hosted by b"):
        a.listen("p0", lambda src, m: None)
    for k in range(50):
        a.send("tm:A", "p0", EventTs(f"e{k}", {"A": k}))
    a.send("tm:A", "tm:B", CreatePubTs("x", "p1", "A"))
    fired: list[float] = []
    a.at(a.now + 0.05, lambda: fired.append(a.now))
    pump((a, b), lambda: len(got) == 51 and fired)
    assert got[0] == ("tm:B", "tm:A", CreatePubTs("x", "p1", "A"))  # local: at the sender's next step
    assert [m.event_id for _, _, m in got[1:]] == [f"e{k}" for k in range(50)]
    assert fired[0] >= 0.05
    assert a.rejections() == {} and b.rejections() == {}
    assert a.sent[("tm:A", "p0")].messages == 50


def test_rejections_are_counted_not_raised(pair: tuple[RealNetwork, RealNetwork]) -> None:
    a, b = pair
    b.listen("p0", lambda src, m: (_ for _ in ()).throw(ValueError("cannot take it")))
    assert a.transport is not None
    a.transport.send("b", Envelope("p1", "p0", EventTs("e", {"A": 1})))  # p1 is b's, not a's
    a.transport.send("b", Envelope("tm:A", "tm:B", EventTs("e", {"A": 1})))  # tm:B is not hosted by b
    a.transport.send("b", Envelope("tm:A", "p1", EventTs("e", {"A": 1})))  # nothing listens on p1
    a.transport.send("b", Envelope("tm:A", "p0", EventTs("e", {"A": 1})))  # the handler raises
    sock = a.transport.outs["b"]
    sock.send(b"\x93\x01\x02", zmq.NOBLOCK)  # not an envelope
    pump((a, b), lambda: sum(b.rejections().values()) == 5)
    assert b.rejections() == {"impersonation": 1, "misrouted": 1, "unheard": 1, "handler": 1, "malformed": 1}
    b.step(0.01)  # and it goes on
