"""Each message kind only from the processes whose role sends it (faidecs.overlay.core.authority),
screened before decoding where the kind alone says so (faidecs.overlay.runtime.codec), and decoded
only against the deployment's own roles and types (wire.Declared)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from faidecs.grammar.model import Attribute, EventType, Kind
from faidecs.matching.events import Event, EventValidator
from faidecs.merging.filters import Filter
from faidecs.overlay.core.authority import Authority
from faidecs.overlay.core.keys import merger_key, stream_filter, stream_key
from faidecs.overlay.core.messages import (
    Ack,
    Connect,
    Decide,
    Decision,
    EpochQuery,
    Fetch,
    Forward,
    Holds,
    JoinRequest,
    JoinState,
    LeaderChange,
    MarkerRequest,
    Ordered,
    Publish,
    Register,
)
from faidecs.overlay.runtime import wire
from faidecs.overlay.runtime.codec import SMALL, OverlayCodec, oversized
from faidecs.overlay.runtime.deployment import Deployment, load_deployment
from faidecs.overlay.runtime.wire import WireError

PROGRAM = "type A(x: int)\ntype B(x: int)\nsubscription P: A and B\nsubscription Q: A and A.x > 2\n"
DEPLOYMENT = """\
name = "t"
program = "p.fdc"
replicas = 2
insecure = true
[servers]
m1 = "tcp://127.0.0.1:7001"
m2 = "tcp://127.0.0.1:7002"
m3 = "tcp://127.0.0.1:7003"
m4 = "tcp://127.0.0.1:7004"
[subscribers.s1]
address = "tcp://127.0.0.1:7101"
subscription = "P"
[subscribers.s2]
address = "tcp://127.0.0.1:7102"
subscription = "P"
peer = "s1"
[subscribers.q1]
address = "tcp://127.0.0.1:7103"
subscription = "Q"
[publishers.p1]
address = "tcp://127.0.0.1:7201"
events = "e.jsonl"
"""
A, B, AB = ("A",), ("B",), ("A", "B")


@pytest.fixture(scope="module")
def d(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    folder: Path = tmp_path_factory.mktemp("authority")
    (folder / "p.fdc").write_text(PROGRAM)
    (folder / "d.toml").write_text(DEPLOYMENT)
    return load_deployment(folder / "d.toml")


def authority(d: Deployment, me: str) -> Authority:
    return Authority(me, d.roster())


def event(d: Deployment, type_name: str = "A", x: int = 1) -> Event:
    return EventValidator(d.types).validate({"id": "e1", "type": type_name, "attrs": {"x": x}})


def key(d: Deployment, subscriber: str, role: tuple[str, ...]) -> str:
    return next(stream_key(part) for r, _, part in d.streams(d.subscription(subscriber)) if r == role)


def refusal(d: Deployment, me: str, sender: str, msg: object) -> str | None:
    refused = OverlayCodec(authority(d, me)).refuse(sender, msg)  # type: ignore[arg-type]
    return refused[0] if refused is not None else None


def test_publications_from_publishers_to_their_root_replicas(d: Deployment) -> None:
    root_a = d.placement(A)[0]
    other = next(s for s in d.servers if s not in d.placement(A))
    assert refusal(d, root_a, "p1", Publish("p1", 0, event(d))) is None
    assert refusal(d, other, "p1", Publish("p1", 0, event(d))) == "unauthorised"  # hosts no [A]
    assert refusal(d, root_a, "s1", Publish("s1", 0, event(d))) == "unauthorised"  # a subscriber
    assert refusal(d, root_a, "s1", Publish("p1", 0, event(d))) == "impersonation"


def test_a_peer_replica_relays_a_publication_and_no_other_server_does(d: Deployment) -> None:
    first, peer = d.placement(A)
    stranger = next(s for s in d.servers if s not in d.placement(A))
    assert refusal(d, first, peer, Publish("p1", 0, event(d))) is None  # the answer to a Fetch
    assert refusal(d, first, stranger, Publish("p1", 0, event(d))) == "unauthorised"


def test_streams_only_from_replicas_of_a_role_the_receiver_reads(d: Deployment) -> None:
    replica = d.placement(AB)[0]
    assert refusal(d, "s1", replica, Forward(AB, 3, 0, "heartbeat")) is None
    assert refusal(d, "s1", "p1", Forward(AB, 2**62, 0, "heartbeat")) == "unauthorised"
    not_ab = next(s for s in d.servers if s not in d.placement(AB))
    assert refusal(d, "s1", not_ab, Forward(AB, 3, 0, "heartbeat")) == "unauthorised"
    root_b = d.placement(B)[0]  # q1 reads [A] only
    assert refusal(d, "q1", root_b, Forward(B, 3, 0, "heartbeat")) == "unauthorised"
    assert refusal(d, "q1", d.placement(A)[0], Forward(A, 3, 0, "heartbeat")) is None


def test_consumers_only_under_their_own_keys(d: Deployment) -> None:
    root_a = d.placement(A)[0]
    mine, theirs = key(d, "q1", A), key(d, "s1", AB)
    f = next(stream_filter(part) for r, _, part in d.streams(d.subscription("q1")) if r == A)
    assert refusal(d, root_a, "q1", Register(A, mine, "q1", f)) is None
    # the filter as it arrives off the wire is the same
    sent = wire.decode(wire.encode(Register(A, mine, "q1", f)))
    assert refusal(d, root_a, "q1", sent) is None
    # any other filter under its key would change what subscribers of that key receive
    assert refusal(d, root_a, "q1", Register(A, mine, "q1", Filter.nothing())) == "unauthorised"
    assert refusal(d, root_a, "q1", MarkerRequest(A, mine, "q1", Filter.nothing())) == "unauthorised"
    assert refusal(d, root_a, "q1", Register(A, mine, "s9", f)) == "unauthorised"  # in another's name
    assert refusal(d, root_a, "q1", Register(A, merger_key(AB), merger_key(AB), f)) == "unauthorised"
    assert refusal(d, root_a, "q1", Connect(A, mine, "q1", -1)) is None
    assert refusal(d, root_a, "q1", MarkerRequest(A, mine, "q1", f)) is None
    assert refusal(d, root_a, "q1", Ack(A, theirs, "q1", 5)) == "unauthorised"
    child = d.placement(AB)[0]  # a replica of ⊔[A,B] reads [A] under its merger key
    assert refusal(d, root_a, child, Register(A, merger_key(AB), merger_key(AB), f)) is None
    assert refusal(d, root_a, child, MarkerRequest(A, merger_key(AB), child, f)) == "unauthorised"
    assert refusal(d, root_a, "p1", Connect(A, mine, "p1", -1)) == "unauthorised"


def test_replication_only_between_replicas_of_the_role(d: Deployment) -> None:
    first, peer = d.placement(A)
    stranger = next(s for s in d.servers if s not in d.placement(A))
    decide = Decide(A, 1, (Decision(0, 1, 0, "heartbeat"),), -1)
    assert refusal(d, first, peer, decide) is None
    assert refusal(d, first, peer, Fetch(A, peer, 0)) is None
    for sender in (stranger, "p1", "s1"):
        assert refusal(d, first, sender, decide) == "unauthorised"
        assert refusal(d, first, sender, Holds(A, 1, sender, 5)) == "unauthorised"
    assert refusal(d, first, "p1", EpochQuery(A, 10**12, "p1")) == "unauthorised"
    assert refusal(d, first, peer, LeaderChange(A, peer, 9)) == "coordination"


def test_joins_between_subscribers_of_one_subscription(d: Deployment) -> None:
    assert refusal(d, "s1", "s2", JoinRequest("s2")) is None
    assert refusal(d, "s1", "q1", JoinRequest("q1")) == "unauthorised"
    assert refusal(d, "s2", "s1", JoinState("s1", {}, {})) is None  # s2 joins from s1
    assert refusal(d, "s1", "s2", JoinState("s2", {}, {})) == "unauthorised"  # s1 asked nobody


def test_a_kind_the_sender_may_not_send_is_not_decoded(d: Deployment) -> None:
    """The screen reads the kind off the head: a publisher's Decide is refused unread."""
    root_a = d.placement(A)[0]
    codec = OverlayCodec(authority(d, root_a), wire.Declared(d.types, d.roles))
    data = wire.encode(Decide(A, 1, (Decision(0, 1, 0, "heartbeat"),), -1))
    assert codec.screen("p1", data) == ("unauthorised", f"p1 may not send Decide to {root_a}")
    assert codec.screen(d.placement(A)[1], data) is None
    publish = wire.encode(Publish("p1", 0, event(d)))
    assert codec.screen("p1", publish) is None
    assert codec.screen("p1", b"\x93\x01\x01" + b"\x00" * 10) is None  # not a whole message: decoding says why


def test_a_message_larger_than_its_kind_is_not_decoded(d: Deployment) -> None:
    codec = OverlayCodec(max_event=2048)
    big = wire.encode(
        Publish("p1", 0, EventValidator(d.types).validate({"id": "e" * 4000, "type": "A", "attrs": {"x": 1}}))
    )
    kind, why = codec.screen("p1", big) or ("", "")
    assert kind == "oversized" and "a Publish of" in why and "at most 2048" in why
    holds = wire.encode(Holds(A, 1, "m" * SMALL, 1))
    assert (codec.screen("m1", holds) or ("",))[0] == "oversized"


def test_declared_decoding_takes_only_the_deployments_roles_and_types(d: Deployment) -> None:
    declared = wire.Declared(d.types, d.roles)
    assert declared.decode(wire.encode(Publish("p1", 0, event(d)))) == Publish("p1", 0, event(d))
    other = EventType("A", (Attribute("y", Kind.STR),))
    theirs = EventValidator({"A": other}).validate({"id": "e1", "type": "A", "attrs": {"y": "k"}})
    with pytest.raises(WireError, match=r"Publish.event.attributes: type A is declared in this deployment as"):
        declared.decode(wire.encode(Publish("p1", 0, theirs)))
    unknown = EventValidator({"C": EventType("C", ())}).validate({"id": "e1", "type": "C", "attrs": {}})
    with pytest.raises(WireError, match=r"Publish.event.type: type 'C' is not declared in this deployment"):
        declared.decode(wire.encode(Publish("p1", 0, unknown)))
    with pytest.raises(WireError, match=r"Holds.role: role \['B', 'C'\] is not one of this deployment's"):
        declared.decode(wire.encode(Holds(("B", "C"), 1, "m1", 0)))


def test_no_peer_makes_the_declared_decoder_build_or_keep_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    """A flood of events of made-up types builds no checker and grows no table."""
    types = {"A": EventType("A", (Attribute("x", Kind.INT),))}
    declared = wire.Declared(types, [A])
    built: list[EventType] = []
    monkeypatch.setattr(wire, "_checker", lambda t: built.append(t))
    for k in range(200):
        made_up = EventType(f"T{k}", (Attribute("x", Kind.INT),))
        e = EventValidator({made_up.name: made_up}).validate({"id": "e", "type": made_up.name, "attrs": {"x": 1}})
        with pytest.raises(WireError, match="is not declared in this deployment"):
            declared.decode(wire.encode(Publish("p1", 0, e)))
    assert built == [] and list(declared.events.known) == ["A"]


def test_containers_are_capped_before_they_are_decoded() -> None:
    """A role of 100,000 types is refused from its array header, in microseconds."""
    frame = msgspec.msgpack.encode([wire.VERSION, wire.CODES[Holds], ["A"] * 100_000, 1, "m1", 0])
    with pytest.raises(WireError, match=r"^Holds.role: expected an array of at most 4096 items, got 100000$"):
        wire.decode(frame)
    name = msgspec.msgpack.encode([wire.VERSION, wire.CODES[Holds], ["A" * 2000], 1, "m1", 0])
    with pytest.raises(WireError, match=r"^Holds.role\[0\]: expected 0 to 1024 characters, got 2000$"):
        wire.decode(name)


def test_a_publisher_stops_at_an_event_the_servers_would_refuse_unread(d: Deployment) -> None:
    small = Publish("p1", 0, event(d))
    assert oversized(small, d.max_event_bytes) is None
    big = Publish("p1", 0, EventValidator(d.types).validate({"id": "e" * 5000, "type": "A", "attrs": {"x": 1}}))
    why = oversized(big, 4096) or ""
    assert why.startswith(f"event {'e' * 5000} takes ") and why.endswith("more than max_event_bytes = 4096")
    assert OverlayCodec(max_event=4096).screen("p1", wire.encode(big)) is not None


def test_only_a_replica_of_a_root_role_acknowledges_a_publishers_publications(d: Deployment) -> None:
    root_a, child = d.placement(A)[0], d.placement(AB)[0]
    stranger = next(s for s in d.servers if s not in d.placement(A))
    assert refusal(d, "p1", root_a, Ordered(A, "p1", (0, 1))) is None
    assert refusal(d, "p1", stranger, Ordered(A, "p1", (0,))) == "unauthorised"  # not a replica of [A]
    assert refusal(d, "p1", child, Ordered(AB, "p1", (0,))) == "unauthorised"  # not a root
    assert refusal(d, "p1", root_a, Ordered(A, "p2", (0,))) == "unauthorised"  # another's publications
    assert refusal(d, "s1", root_a, Ordered(A, "s1", (0,))) == "unauthorised"  # to a subscriber
