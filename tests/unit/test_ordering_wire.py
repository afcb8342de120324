"""The ordering layers' wire codec (``faidecs/ordering/wire.py``): every message round-trips, and
malformed bytes raise OrderingWireError naming the message and the field, whatever the bytes."""

from __future__ import annotations

import random
from typing import Any

import msgpack
import pytest

from faidecs.ordering.atoms.message import EpochView, Sequenced, Switch
from faidecs.ordering.multistage.messages import (
    CompletedSubVc,
    CreatePubTs,
    Dummy,
    EventTs,
    FillIn,
    Notification,
    UpdateSub,
)
from faidecs.ordering.wire import CODES, VERSION, Envelope, OrderingCodec, OrderingWireError

TOPICS = ["A", "B", "C"]
HOSTS = {"tm:A": "s0", "tm:B": "s0", "tm:C": "s1", "pub": "pub", "p0": "p0", "atoms/recv/p0": "p0"}
CODEC = OrderingCodec(TOPICS, HOSTS)

MESSAGES: list[Any] = [
    CreatePubTs("e1", "pub", "B"),
    FillIn("pub", {"A": None, "B": 3}, "pub", "e1"),
    FillIn("sub", {"A": 1, "C": None}, "p0", "p0#1", frozenset({"A", "C"})),
    EventTs("e1", {"A": 0, "B": 3}),
    CompletedSubVc("p0#1", {"A": 1, "C": 2}),
    UpdateSub("p0", frozenset({"A"})),
    UpdateSub("p0", frozenset()),
    Notification("e1", "B", {"A": 0, "B": 3}),
    Dummy("p0#1", "C", {"A": 1, "C": 2}),
    Sequenced("e1", "A", 0),
    Sequenced("e2", "B", 3, 7, {("A", "B"): 4, ("B", "C"): 9}),
    Switch(0, {"A": 3}, 1, EpochView(frozenset({"A", "B"}), frozenset({("A", "B")}))),
    Switch(2, {}, None, None),
]


def raw(code: int, *fields: Any, src: str = "tm:A", dst: str = "tm:B", version: int = VERSION) -> bytes:
    return msgpack.packb([version, code, src, dst, *fields])


def fails(data: bytes, *needles: str) -> str:
    with pytest.raises(OrderingWireError) as info:
        CODEC.decode(data)
    text = str(info.value)
    for needle in needles:
        assert needle in text, text
    return text


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_round_trip(message: Any) -> None:
    envelope = Envelope("tm:A", "p0", message)
    assert CODEC.decode(CODEC.encode(envelope)) == envelope


def test_every_message_kind_has_a_code_and_is_exercised() -> None:
    assert {type(m) for m in MESSAGES} == set(CODES)
    assert len(set(CODES.values())) == len(CODES)


def test_envelope_errors() -> None:
    fails(b"\xc1", "not a msgpack message")
    fails(CODEC.encode(Envelope("tm:A", "p0", MESSAGES[0])) + b"\x00", "trailing")
    fails(msgpack.packb({"a": 1}), "expected [version")
    fails(raw(1, "e1", "pub", "B", version=2), "format version 2")
    fails(raw(99, "e1"), "unknown message kind 99")
    fails(raw(1, "e1", "pub", "B", src="tm:Z"), "CreatePubTs.src", "unknown address")
    fails(raw(1, "e1", "pub", "B", dst=""), "CreatePubTs.dst", "1 to 256")
    fails(raw(1, "e1", "pub"), "CreatePubTs: missing field(s) topic")
    fails(
        msgpack.packb([VERSION, 1, "tm:A", "tm:B", b"e1", "pub", "B"], use_bin_type=True),
        "CreatePubTs.event_id: expected a string, got bytes",
    )
    fails(
        raw(1, "e1", "pub", "B", "C"),
        "CreatePubTs: 1 extra field(s) after its 5 (src, dst, event_id, publisher, topic)",
    )


def test_multistage_field_errors() -> None:
    fails(raw(1, "e1", "pub", "Z"), "CreatePubTs.topic", "unknown topic 'Z'")
    fails(raw(1, 7, "pub", "B"), "CreatePubTs.event_id", "expected a string")
    fails(raw(1, "x" * 300, "pub", "B"), "CreatePubTs.event_id", "300")
    fails(raw(2, "put", [["A", 1]], "pub", "e1", []), "FillIn.kind", "expected one of ['pub', 'sub']")
    fails(raw(2, "pub", [["A", -1]], "pub", "e1", []), "FillIn.ts[0][1]", "integer -1 outside [0, ")
    fails(raw(2, "pub", [["A", True]], "pub", "e1", []), "FillIn.ts[0][1]", "expected an integer")
    fails(raw(2, "pub", [["B", 1], ["A", 1]], "pub", "e1", []), "FillIn.ts", "topic order")
    fails(raw(2, "pub", [["A", 1], ["A", 2]], "pub", "e1", []), "FillIn.ts", "repeats")
    fails(raw(2, "pub", [], "pub", "e1", []), "FillIn.ts", "at least one entry")
    fails(raw(2, "pub", [["A", 1]], "pub", "e1", ["A"]), "FillIn.subscription", "no subscription")
    fails(raw(2, "sub", [["A", None]], "p0", "s", ["A", "B"]), "FillIn.ts", "one entry per topic")
    fails(raw(2, "sub", [["A", None]], "p0", "s", ["B", "A"]), "FillIn.subscription", "in order")
    fails(raw(3, "e1", [["A", None]]), "EventTs.ts[0][1]", "expected an integer")
    fails(raw(3, "e1", [["A", 2**63]]), "EventTs.ts[0][1]")
    fails(raw(3, "e1", {"A": 1}), "EventTs.ts", "expected an array")
    fails(raw(4, "s", [["A"]]), "CompletedSubVc.ts[0]: expected an array of 2 items, got 1")
    fails(raw(5, "nobody", ["A"]), "UpdateSub.subscriber", "unknown address")
    fails(raw(6, "e1", "C", [["A", 1]]), "Notification.ts", "no entry for the event's topic")
    fails(raw(7, "s", "C", [["A", 1]]), "Dummy.ts", "no entry")


def test_atoms_field_errors() -> None:
    fails(raw(16, "e", "A", -1, 0, []), "Sequenced.epoch", "integer -1 outside [0, ")
    fails(raw(16, "e", "A", 0, 0, [["B", "A", 1]]), "Sequenced.stamps[0]", "name order")
    fails(raw(16, "e", "A", 0, 0, [["A", "B", 0]]), "Sequenced.stamps[0][2]", "integer 0 outside [1, ")
    fails(raw(16, "e", "A", 0, 0, [["A", "B", 1], ["A", "B", 2]]), "Sequenced.stamps", "once")
    fails(raw(16, "e", "C", 0, 0, [["A", "B", 1]]), "Sequenced.stamps", "group")
    fails(raw(16, "e", "A", 0, 0, [["A", "Q", 1]]), "Sequenced.stamps[0][1]", "unknown topic")
    fails(raw(17, 0, [["A", 1], ["A", 2]], None, None), "Switch.counts", "once")
    fails(raw(17, 0, [], 1, None), "Switch.view", "opened epoch")
    fails(raw(17, 0, [], 1, [["B", "A"], []]), "Switch.view.groups", "in order")
    fails(raw(17, "0", [], None, None), "Switch.closed", "expected an integer")


def test_refuses_senders_claiming_addresses_of_other_processes() -> None:
    envelope = Envelope("tm:C", "p0", EventTs("e1", {"A": 1}))
    assert CODEC.refuse("s1", envelope) is None
    refused = CODEC.refuse("s0", envelope)
    assert refused is not None and refused[0] == "impersonation"
    assert OrderingCodec().refuse("anyone", envelope) is None  # no hosts given: any address


def test_random_garbage_never_escapes_as_another_exception() -> None:
    rng = random.Random(7)
    good = [CODEC.encode(Envelope("tm:A", "p0", m)) for m in MESSAGES]
    for _ in range(3000):
        data = bytearray(rng.choice(good))
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            CODEC.decode(bytes(data))
        except OrderingWireError:
            pass


def test_encode_refuses_what_is_not_an_ordering_message() -> None:
    with pytest.raises(OrderingWireError, match="not an ordering message"):
        CODEC.encode(Envelope("a", "b", object()))
