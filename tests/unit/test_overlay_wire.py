"""The overlay's wire format (``faidecs/overlay/runtime/wire.py``).

Every message kind survives ``decode(encode(m))`` (hand-written edge cases and generated
messages), and ``decode`` turns every malformed input into a :class:`WireError` that names the
message kind and field: bytes cut short or followed by more, arbitrary bytes, and valid messages
with one part replaced (by hand, one case per check, and at random).
"""

from __future__ import annotations

import contextlib
import copy
import math
import random
import re
from typing import Any
from unittest import mock

import hypothesis
import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from faidecs.fieldpath import BadField
from faidecs.grammar import compile_program
from faidecs.grammar.model import ArithOp, Attribute, AttrOf, Const, EventType, Kind, Negate, Predicate, Slot, Value
from faidecs.matching.engine import Engine
from faidecs.matching.events import INT64_MAX, INT64_MIN, Event, EventValidator
from faidecs.merging.filters import ACCEPT_ALL, Alternative, Filter
from faidecs.overlay.core.messages import (
    Ack,
    Commit,
    Connect,
    Decide,
    Decision,
    Disconnect,
    Down,
    Entry,
    EpochQuery,
    EpochState,
    Fetch,
    Forward,
    ForwardBatch,
    Holds,
    JoinRequest,
    JoinState,
    LeaderChange,
    MarkerReply,
    MarkerRequest,
    Message,
    NewLog,
    Ordered,
    Publish,
    Register,
    Send,
    Up,
)
from faidecs.overlay.runtime import wire as wire_module
from faidecs.overlay.runtime.wire import CODES, MAX_DEPTH, VERSION, WireError, decode, encode
from faidecs.overlay.sim.generate import random_deployment
from faidecs.overlay.sim.scenario import SimConfig
from faidecs.overlay.sim.simulator import Simulation, simulate
from faidecs.span import Span

PROGRAM = compile_program(
    "type A(x: int, y: float, s: str, b: bool)\ntype B(z: int)\ntype T()\n"
    'subscription S: A.x > 3 and A.y * 2 < -A.x + 1 and B.z = A.x and A.s = "q😀" and A.b = true\n'
    "subscription U: A.x != 2 and B[0].z < B[1].z or T[0]\n"
)
VALIDATOR = EventValidator(PROGRAM.types)
FILTER = Filter.of(PROGRAM.subscriptions[0].conjunctions[0])
FILTERS = [Filter.of(c) for s in PROGRAM.subscriptions for c in s.conjunctions]
WIDE = FILTERS[0].union(FILTERS[1]).union(FILTERS[2])  # several alternatives per type, and accept-all


def event(type_name: str = "A", publisher: str | None = "p", seq: int | None = 7, **attrs: Any) -> Event:
    defaults: dict[str, dict[str, Any]] = {"A": {"x": 5, "y": 1.5, "s": "s", "b": True}, "B": {"z": 1}, "T": {}}
    values = defaults[type_name] | attrs
    obj = {"id": "e1", "type": type_name, "attrs": values, "publisher": publisher, "seq": seq}
    return VALIDATOR.validate({k: v for k, v in obj.items() if v is not None})


def snapshot() -> dict[str, Any]:
    engine = Engine.from_source(
        "type A(x: int, y: float)\ntype B(z: int)\nsubscription S: A.x = B.z\n"
        "subscription P (partition by x): A.x > 0 and A.y < 2.5\n",
        matcher="reference",
    )
    for i, (t, attrs) in enumerate([("A", {"x": 1, "y": -0.0}), ("A", {"x": 2, "y": 1e300}), ("B", {"z": 9})]):
        engine.publish({"id": f"e{i}", "type": t, "attrs": attrs})
    return engine.snapshot()


R1, R2 = ("A",), ("A", "B")
DECISION = Decision(0, 1, 2, "event", "p", 7)
EXAMPLES: list[Message] = [
    Publish("p", 0, event()),
    Publish("𝔭ub😀", INT64_MAX, event(x=INT64_MIN, y=-0.0, s="\U0010ffff😀é", b=False, seq=None, publisher=None)),
    Publish("p", 1, event(x=INT64_MAX, y=1e300)),
    Publish("p", 2, event("T", seq=0)),
    Connect(R2, "c", "m1", -1),
    Disconnect(R1, "c", "m1"),
    Forward(R2, 0, 0, "heartbeat"),
    Forward(R1, INT64_MAX, INT64_MAX, "event", event(y=5e-324), "c"),
    Forward(R1, 3, 10, "mark", None, "c", "r", FILTER),
    Forward(R1, 3, 10, "upmark", None, "c", "r", Filter.nothing()),
    Ack(R2, "c", "s1", -1),
    Register(R1, "c", "r", WIDE),
    Register(("A", "B", "T"), "c", "r", Filter({"T": ACCEPT_ALL})),
    MarkerRequest(R2, "c", "s1", WIDE),
    MarkerRequest(R2, "c", "s1", FILTER, heartbeats=True, after=-1),
    MarkerRequest(R1, "c", "s1", Filter.nothing(), after=INT64_MAX),
    MarkerReply(R2, "c", -1, 0, False),
    MarkerReply(R1, "c", 12, 40, True),
    Fetch(R1, "m2", 0),
    Fetch(R2, "m3", INT64_MAX),
    Ordered(R1, "p1", (0, 5, INT64_MAX)),
    ForwardBatch(R1, "c", (Entry(4, 11, "event", event()), Entry(5, 11, "heartbeat"))),
    ForwardBatch(R2, "c", (Entry(6, 12, "event", event(y=5e-324)), Entry(7, 12, "mark", None, "r", FILTER))),
    Decide(R1, 0, (DECISION,), -1),
    Decide(R2, 4, (Decision(8, 4, 12, "event", "p", 3), Decision(9, 4, 12, "mark", "", -1, "k", "s1", FILTER)), 8),
    Holds(R1, 2, "m2", 0),
    Commit(R1, 2, 5),
    EpochQuery(R1, 3, "m1"),
    EpochState(R1, 3, "m2", 2, (), -1),
    EpochState(R2, 3, "m2", 2, (DECISION, Decision(1, 1, 3, "upmark", "L", 0, "k", "r", WIDE)), 1),
    NewLog(R1, 3, (DECISION,), 0),
    LeaderChange(R1, "m3", 1),
    Down("m1"),
    Up(""),
    JoinRequest("s2"),
    JoinRequest("s2", ("k1", "k2")),
    JoinState("s1", {}, {}, ok=False),
    JoinState("s1", {R1: snapshot(), R2: {"nested": [{"a": [1, -0.0, None, True, "x"]}]}}, {R1: 3, R2: -1}, marker=9),
]


def test_examples_cover_every_kind() -> None:
    assert {type(m) for m in EXAMPLES} == set(CODES)
    assert sorted(CODES.values()) == list(range(1, len(CODES) + 1))


@pytest.mark.parametrize("msg", EXAMPLES, ids=lambda m: type(m).__name__)
def test_round_trip(msg: Message) -> None:
    data = encode(msg)
    back = decode(data)
    assert back == msg
    assert type(back) is type(msg)
    assert encode(back) == data  # deterministic: filters' sets are written in a fixed order
    assert msgpack.unpackb(data)[:2] == [VERSION, CODES[type(msg)]]


def test_round_trip_keeps_what_equality_does_not_see() -> None:
    back = decode(encode(EXAMPLES[1]))
    assert isinstance(back, Publish)
    assert math.copysign(1.0, back.event.values[1]) == -1.0  # -0.0 == 0.0
    assert back.event.event_type.attributes == EXAMPLES[1].event.event_type.attributes  # type: ignore[union-attr]
    assert back.event.attrs == {"x": INT64_MIN, "y": -0.0, "s": "\U0010ffff😀é", "b": False}
    assert (back.event.publisher, back.event.seq) == (None, None)
    join = decode(encode(EXAMPLES[-1]))
    assert isinstance(join, JoinState)
    assert list(join.snapshots[R1]) == list(snapshot())  # key order matters to Engine.restore
    Engine.restore(join.snapshots[R1], matcher="reference")


def test_decoded_filter_still_filters() -> None:
    back = decode(encode(Register(R1, "c", "r", FILTER)))
    assert isinstance(back, Register)
    assert back.filter.passes(event(x=5, y=-10.0, s="q😀", b=True))
    assert not back.filter.passes(event(x=5, y=-10.0, s="q😀", b=False))
    assert back.filter.passes(event("B"))


# --- generated messages --------------------------------------------------------------------------

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,4}", fullmatch=True)
texts = st.text(max_size=8)
ints = st.integers(INT64_MIN, INT64_MAX)
nats = st.integers(0, INT64_MAX)
from_m1 = st.integers(-1, INT64_MAX)
finite = st.floats(allow_nan=False, allow_infinity=False)
roles = st.lists(names, min_size=1, max_size=3, unique=True).map(lambda r: tuple(sorted(r)))
entry_kinds = st.sampled_from(["event", "mark", "upmark", "heartbeat"])
VALUES: dict[Kind, st.SearchStrategy[Any]] = {
    Kind.INT: ints,
    Kind.FLOAT: finite,
    Kind.STR: texts,
    Kind.BOOL: st.booleans(),
}


@st.composite
def events(draw: st.DrawFn) -> Event:
    attrs = draw(st.lists(names, max_size=4, unique=True))
    kinds = [draw(st.sampled_from(list(Kind))) for _ in attrs]
    event_type = EventType(draw(names), tuple(Attribute(a, k) for a, k in zip(attrs, kinds)))
    values = tuple(draw(VALUES[k]) for k in kinds)
    publisher, seq = draw(st.none() | texts), draw(st.none() | nats)
    return Event(draw(st.text(min_size=1, max_size=8)), event_type, values, publisher, seq)


# Filters over one schema (positions and kinds as a type A(i: int, f: float, s: str, b: bool)).
SCHEMA = {Kind.INT: ("i", 0), Kind.FLOAT: ("f", 1), Kind.STR: ("s", 2), Kind.BOOL: ("b", 3)}


def numeric(slot: Slot) -> st.SearchStrategy[Value]:
    leaves = st.one_of(
        st.sampled_from([Kind.INT, Kind.FLOAT]).map(lambda k: AttrOf(slot, *SCHEMA[k], k)),
        ints.map(lambda v: Const(v, Kind.INT)),
        finite.map(lambda v: Const(v, Kind.FLOAT)),
    )

    def nodes(inner: st.SearchStrategy[Value]) -> st.SearchStrategy[Value]:
        def arith(op: str, left: Value, right: Value) -> Value:
            kind = Kind.INT if left.kind is right.kind is Kind.INT and op != "/" else Kind.FLOAT
            return ArithOp(op, left, right, kind)

        return inner.map(lambda v: Negate(v, v.kind)) | st.builds(arith, st.sampled_from("+-*/"), inner, inner)

    return st.recursive(leaves, nodes, max_leaves=4)


@st.composite
def predicates(draw: st.DrawFn, slot: Slot) -> Predicate:
    kind = draw(st.sampled_from(list(Kind)))
    left: Value
    right: Value
    if kind.numeric:
        op = draw(st.sampled_from(["<", ">", "<=", ">=", "=", "!="]))
        left, right = AttrOf(slot, *SCHEMA[kind], kind), draw(numeric(slot))
    else:
        op = draw(st.sampled_from(["=", "!="] if kind is Kind.BOOL else ["<", "=", "!="]))
        left, right = AttrOf(slot, *SCHEMA[kind], kind), Const(draw(VALUES[kind]), kind)
    if draw(st.booleans()):
        left, right = right, left  # make() puts it in canonical orientation
    return Predicate.make(op, left, right, Span.unknown())


@st.composite
def filters(draw: st.DrawFn) -> Filter:
    out: dict[str, frozenset[Alternative]] = {}
    for type_name in draw(st.lists(names, max_size=3, unique=True)):
        alts = set()
        for _ in range(draw(st.integers(1, 3))):
            slot = Slot(type_name, draw(st.integers(0, 255)))
            alts.add(tuple((p, slot) for p in draw(st.lists(predicates(slot), max_size=3))))
        out[type_name] = ACCEPT_ALL if () in alts else frozenset(alts)
    return Filter(out)


json_data = st.recursive(
    st.none() | st.booleans() | ints | finite | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
snapshots = st.dictionaries(texts, json_data, max_size=3)
opt_filters = st.none() | filters()
decisions = st.builds(Decision, nats, nats, nats, entry_kinds, texts, from_m1, texts, texts, opt_filters)
entries = st.builds(Entry, nats, nats, entry_kinds, st.none() | events(), texts, opt_filters)

messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(Publish, texts, nats, events()),
    st.builds(Connect, roles, texts, texts, from_m1),
    st.builds(Disconnect, roles, texts, texts),
    st.builds(Forward, roles, nats, nats, entry_kinds, st.none() | events(), texts, texts, opt_filters),
    st.builds(ForwardBatch, roles, texts, st.lists(entries, min_size=1, max_size=3).map(tuple)),
    st.builds(Ack, roles, texts, texts, from_m1),
    st.builds(Register, roles, texts, texts, filters()),
    st.builds(Decide, roles, nats, st.lists(decisions, min_size=1, max_size=3).map(tuple), from_m1),
    st.builds(Holds, roles, nats, texts, nats),
    st.builds(Commit, roles, nats, from_m1),
    st.builds(EpochQuery, roles, nats, texts),
    st.builds(EpochState, roles, nats, texts, nats, st.lists(decisions, max_size=3).map(tuple), from_m1),
    st.builds(NewLog, roles, nats, st.lists(decisions, max_size=3).map(tuple), from_m1),
    st.builds(LeaderChange, roles, texts, nats),
    st.builds(Down, texts),
    st.builds(Up, texts),
    st.builds(JoinRequest, texts, st.lists(texts, max_size=3).map(tuple)),
    st.builds(
        JoinState,
        texts,
        st.dictionaries(roles, snapshots, max_size=2),
        st.dictionaries(roles, from_m1, max_size=2),
        st.booleans(),
        st.none() | nats,
    ),
)


@given(messages)
def test_generated_round_trip(msg: Message) -> None:
    data = encode(msg)
    assert decode(data) == msg
    assert encode(decode(data)) == data


def test_simulated_runs_survive_the_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every message of simulated deployments (faults, joiners) goes through bytes and back, and
    the runs go on with the decoded copies."""
    send = Simulation._send
    kinds: set[type] = set()

    def through_the_wire(self: Simulation, src: str, sends: list[Send]) -> None:
        copies = []
        for dst, msg in sends:
            data = encode(msg)
            copy = decode(data)
            assert copy == msg and encode(copy) == data
            kinds.add(type(msg))
            copies.append((dst, copy))
        send(self, src, copies)

    monkeypatch.setattr(Simulation, "_send", through_the_wire)
    for seed in range(3):
        simulate(random_deployment(random.Random(seed)), SimConfig(seed=seed, matcher="reference"))
    assert {Publish, Forward, Decide, Register, EpochState} <= kinds


def decodes_or_rejects(data: bytes) -> None:
    """The contract a receiver relies on: a message, or a WireError (not a bug in the decoder)."""
    try:
        msg = decode(data)
    except WireError as exc:
        assert "internal error" not in str(exc)
    else:
        assert type(msg) in CODES


@given(st.binary(max_size=64))
def test_arbitrary_bytes(data: bytes) -> None:
    decodes_or_rejects(data)


@given(st.binary(max_size=16))
def test_arbitrary_bytes_after_a_header(data: bytes) -> None:
    for code in CODES.values():
        decodes_or_rejects(bytes([0x90 | 4, VERSION, code]) + data)  # fixarray of 4: version, kind, 2 fields


anything = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=5,
)


@given(st.sampled_from(EXAMPLES) | messages, st.data())
def test_one_part_replaced(msg: Message, data: st.DataObject) -> None:
    """A valid message with one nested part (anywhere) replaced by any msgpack value."""
    items = msgpack.unpackb(encode(msg))
    node = items
    while True:
        index = data.draw(st.integers(0, len(node) - 1))
        child = node[index]
        if not (isinstance(child, list) and child and data.draw(st.booleans())):
            break
        node = child
    node[index] = data.draw(anything)
    decodes_or_rejects(msgpack.packb(items))


# --- malformed input, one check at a time ---------------------------------------------------------


def wire(msg: Message) -> list[Any]:
    items: list[Any] = msgpack.unpackb(encode(msg))
    return items


def rejects(items: Any, *words: str) -> str:
    data = items if isinstance(items, bytes) else msgpack.packb(items, use_bin_type=True)
    with pytest.raises(WireError) as info:
        decode(data)
    message = str(info.value)
    for word in words:
        assert word in message
    assert "internal error" not in message
    return message


@pytest.mark.parametrize("msg", EXAMPLES, ids=lambda m: type(m).__name__)
def test_truncated(msg: Message) -> None:
    data = encode(msg)
    for cut in range(len(data)):
        rejects(data[:cut], "not a msgpack message")


def test_trailing_bytes() -> None:
    data = encode(EXAMPLES[0])
    rejects(data + b"\x00", "1 trailing byte")
    rejects(data + data, "trailing")


def test_not_a_message() -> None:
    rejects(b"", "not a msgpack message")
    rejects(msgpack.packb({"version": 1}), "expected a message")
    rejects(msgpack.packb([1]), "expected a message")
    rejects(msgpack.packb("hello"), "expected a message")
    rejects(b"\xa2\xff\xfe", "not a msgpack message")  # a string that is not UTF-8
    rejects(b"\x91" * 100_000 + b"\xc0", "not a msgpack message")  # nested beyond msgpack's stack


@pytest.mark.parametrize("version", [0, 1, 2, 4, -1, True, 3.0, "3", None])
def test_wrong_version(version: Any) -> None:
    rejects([version, *wire(Down("m1"))[1:]], "unknown format version")


@pytest.mark.parametrize("code", [0, len(CODES) + 1, 99, -1, True, "Down", None, 2**64 - 1])
def test_unknown_kind(code: Any) -> None:
    rejects([VERSION, code, "m1"], "unknown message kind")


def test_missing_and_extra_fields() -> None:
    items = wire(Connect(R2, "c", "m1", 3))
    assert rejects(items[:-1], "Connect: missing field(s) after") == "Connect: missing field(s) after"
    rejects(items[:3], "Connect: missing field(s) consumer, process, after")
    assert rejects([*items, 0]) == "Connect: 1 extra field(s) after its 4 (role, consumer, process, after)"
    decision = wire(Decide(R1, 0, (DECISION,), -1))
    decision[4][0] = decision[4][0][:-1]
    rejects(decision, "Decide.decisions[0]: missing field(s) filter")
    event_items = wire(EXAMPLES[0])
    event_items[4] = [*event_items[4], None]
    rejects(event_items, "Publish.event: 1 extra field(s) after its 6 (id, type, attributes, values, publisher, seq)")


def test_wrong_field_type() -> None:
    items = wire(Connect(R2, "c", "m1", 3))
    items[3] = ["A", "B"]
    rejects(items, "Connect.consumer: expected a string, got an array")
    items = wire(Connect(R2, "c", "m1", 3))
    items[5] = 3.0
    rejects(items, "Connect.after: expected an integer, got a float")
    items = wire(JoinState("s1", {}, {}, ok=False))
    items[5] = 0
    rejects(items, "JoinState.ok: expected a boolean, got an integer")
    items = wire(JoinRequest("j", ("a", "b")))
    items[3][1] = 5
    rejects(items, "JoinRequest.keys[1]: expected a string, got an integer")


def test_bool_is_not_an_int() -> None:
    items = wire(Ack(R1, "c", "s1", 1))
    items[5] = True
    assert rejects(items) == "Ack.position: expected an integer, got a boolean"
    items = wire(Decide(R1, 0, (DECISION,), -1))
    items[4][0][0] = False
    assert rejects(items) == "Decide.decisions[0].position: expected an integer, got a boolean"
    items = wire(JoinState("s1", {}, {R1: 1}, marker=2))
    items[4][0][1] = True
    rejects(items, "JoinState.positions[0][1]: expected an integer, got a boolean")


@pytest.mark.parametrize(
    ("msg", "index", "value", "where"),
    [
        (Holds(R1, 2, "m2", 0), 3, -1, "Holds.epoch"),
        (Holds(R1, 2, "m2", 0), 3, 2**63, "Holds.epoch"),
        (Holds(R1, 2, "m2", 0), 5, -1, "Holds.length"),
        (Commit(R1, 2, 5), 4, -2, "Commit.commit"),
        (Commit(R1, 2, 5), 4, 2**64 - 1, "Commit.commit"),
        (Forward(R1, 3, 10, "heartbeat"), 3, -1, "Forward.position"),
        (Forward(R1, 3, 10, "heartbeat"), 4, -(2**63), "Forward.ts"),
        (Publish("p", 0, event()), 3, -1, "Publish.seq"),
        (JoinState("s1", {}, {}, marker=0), 6, -1, "JoinState.marker"),
    ],
)
def test_int_out_of_range(msg: Message, index: int, value: int, where: str) -> None:
    items = wire(msg)
    items[index] = value
    rejects(items, f"{where}: integer {value} outside")


def test_int_boundaries_accepted() -> None:
    assert decode(encode(Commit(R1, INT64_MAX, -1))) == Commit(R1, INT64_MAX, -1)
    items = wire(Decide(R1, 0, (DECISION,), -1))
    items[4][0][5] = -2  # Decision.key: -1 is "none"
    rejects(items, "Decide.decisions[0].key: integer -2 outside [-1, ")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_float_in_event(value: float) -> None:
    items = wire(Forward(R1, 0, 0, "event", event()))
    items[6][3][1] = value  # values[1]: A.y
    rejects(items, "Forward.event: invalid event:", "attribute 'y'", "not a finite number")


@pytest.mark.parametrize(
    ("index", "value", "words"),
    [
        (0, "", ("invalid event", "id")),
        (0, None, ("Publish.event.id: expected a string, got nil",)),
        (1, "A.B", ("Publish.event.type: expected a type or attribute name",)),
        (2, [["x", "int"], ["x", "float"], ["s", "str"], ["b", "bool"]], ("declares an attribute twice",)),
        (
            2,
            [["x", "int"], ["y", "decimal"], ["s", "str"], ["b", "bool"]],
            ("event.attributes[1]", "unknown attribute"),
        ),
        (
            2,
            [["x", "int"], ["y", "float"], ["s", "str"], "b"],
            ("event.attributes[3]: expected an array, got a string",),
        ),
        (3, [5, 1.5, "s"], ("3 values for the 4 attributes of A",)),
        (3, [True, 1.5, "s", True], ("attribute 'x'", "expected an integer")),
        (3, [2**63, 1.5, "s", True], ("attribute 'x'", "outside the 64-bit range")),
        (3, [5, 1.5, "s", 1], ("attribute 'b'", "expected true or false")),
        (3, [5, 1.5, 7, True], ("attribute 's'", "expected a string")),
        (4, 5, ("publisher",)),
        (5, -1, ("Publish.event.seq: integer -1 outside",)),
        (5, 2**63, ("Publish.event.seq: integer 9223372036854775808 outside",)),
    ],
)
def test_malformed_event(index: int, value: Any, words: tuple[str, ...]) -> None:
    items = wire(Publish("p", 0, event()))
    items[4][index] = value
    rejects(items, "Publish.event", *words)


@pytest.mark.parametrize(
    ("role", "words"),
    [
        (["B", "A"], "not canonical"),
        (["A", "A"], "not canonical"),
        ([], "not canonical"),
        (["A b"], "expected a type or attribute name"),
        (["A", 1], "Connect.role[1]: expected a string, got an integer"),
        ("A", "Connect.role: expected an array, got a string"),
    ],
)
def test_non_canonical_role(role: Any, words: str) -> None:
    items = wire(Connect(R2, "c", "m1", 3))
    items[2] = role
    rejects(items, "Connect.role", words)


def test_entry_kind() -> None:
    items = wire(Forward(R1, 3, 10, "heartbeat"))
    items[5] = "beat"
    rejects(items, "Forward.kind: expected one of ['event', 'heartbeat', 'mark', 'upmark'], got a string 'beat'")


def test_extension_and_binary_types_are_refused() -> None:
    for value, word in (
        (msgpack.ExtType(1, b"x"), "an extension"),
        (msgpack.Timestamp(1), "a timestamp"),
        (b"b", "bytes"),
    ):
        items: list[Any] = wire(Down("m1"))
        items[2] = value
        assert rejects(items) == f"Down.process: expected a string, got {word}"
    items = wire(JoinRequest("j", ("a",)))
    items[3] = [b""]  # an empty bin passes msgpack's length limit: the field check refuses it
    rejects(items, "JoinRequest.keys[0]: expected a string, got bytes")


def test_malformed_snapshots() -> None:
    def with_snapshot(value: Any) -> list[Any]:
        items = wire(JoinState("s1", {R1: {}}, {R1: 0}))
        items[3][0][1] = value
        return items

    rejects(with_snapshot([1]), "JoinState.snapshots[0][1]: expected a map, got an array")
    rejects(with_snapshot({"q": [1, {"f": math.nan}]}), "JoinState.snapshots[0].q[1].f: nan is not a finite number")
    rejects(with_snapshot({"q": 2**63}), "JoinState.snapshots[0].q: integer 9223372036854775808 outside")
    rejects(with_snapshot({"q": b""}), "bytes is not JSON data")
    deep: Any = 1
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    rejects(with_snapshot({"q": deep}), f"nested deeper than {MAX_DEPTH}")
    rejects(msgpack.packb(with_snapshot({1: 2})), "JoinState.snapshots[0][1]: map key 1 is not a string")
    items = wire(JoinState("s1", {}, {R1: 0, R2: 1}))
    items[4][1][0] = ["A"]
    rejects(items, "JoinState.positions[1]: role ['A'] listed twice")
    items[4][1] = [["B", "A"], 1]
    rejects(items, "JoinState.positions[1]: role ['B', 'A'] is not canonical")


# Filters: FILTER's wire form is [["A", [alternative]], ["B", [[]]]], alternative = [[pred, slot], ...],
# predicates sorted by text: '-A[0].x + 1 > A[0].y * 2', 'A[0].b = true', 'A[0].s = "q😀"', 'A[0].x > 3'.


def filter_items() -> list[Any]:
    return wire(Register(R1, "c", "r", FILTER))


def test_filter_wire_shape() -> None:
    f = filter_items()[5]
    assert [t for t, _ in f] == ["A", "B"]
    assert f[1][1] == [[]]
    assert f[0][1][0][3] == [[">", ["attr", "A", 0, "x", 0, "int"], ["const", 3, "int"]], ["A", 0]]


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        ((0, 1, 0, 3, 0, 0), "<>", "unknown comparison '<>'"),
        ((0, 1, 0, 3, 0), ["<", ["const", 3, "int"], ["attr", "A", 0, "x", 0, "int"]], "canonical orientation"),
        ((0, 1, 0, 3, 0), [">", ["const", 3, "int"], ["const", 4, "int"]], "involves no event"),
        ((0, 1, 0, 3, 0, 2), ["const", "3", "int"], "constant '3' is not of kind 'int'"),
        ((0, 1, 0, 3, 0, 2), ["const", True, "int"], "constant True is not of kind 'int'"),
        ((0, 1, 0, 3, 0, 2), ["const", 2**63, "int"], "integer 9223372036854775808 outside"),
        ((0, 1, 0, 3, 0, 2), ["const", math.inf, "float"], "inf is not a finite number"),
        ((0, 1, 0, 3, 0, 2), ["const", "3", "str"], "cannot compare int > str"),
        ((0, 1, 0, 3, 0, 2), ["neg", ["const", "3", "str"], "str"], "negation of a str value"),
        ((0, 1, 0, 3, 0, 2), ["arith", "%", ["const", 1, "int"], ["const", 1, "int"], "int"], "unknown arithmetic"),
        ((0, 1, 0, 3, 0, 2), ["arith", "/", ["const", 1, "int"], ["const", 1, "int"], "int"], "int / int as 'int'"),
        (
            (0, 1, 0, 3, 0, 2),
            ["pow", 2],
            "expected an array tagged one of ['arith', 'attr', 'const', 'neg'], got tag 'pow'",
        ),
        ((0, 1, 0, 3, 0, 1), ["attr", "A", 1, "x", 0, "int"], "attribute of 'A'[1] in a predicate on A[0]"),
        ((0, 1, 0, 3, 0, 1), ["attr", "A", 0, "x", -1, "int"], "integer -1 outside"),
        (
            (0, 1, 0, 3, 0, 1),
            ["attr", "A", 0, "x", 0, "long"],
            "left.kind: expected one of ['bool', 'float', 'int', 'str']",
        ),
        ((0, 1, 0, 3, 1), ["B", 0], "slot ['B', 0] is not an instance of A"),
        ((0, 1, 0, 3, 1), ["A", 256], "is not an instance of A (index 0..255)"),
        ((0, 1, 0, 3), "pred", "expected an array, got a string"),
        ((1, 1), [[], []], "an alternative listed twice"),
        ((1, 0), "A", "type A listed twice"),
        ((1, 0), "B-2", "expected a type or attribute name"),
    ],
)
def test_malformed_filter(path: tuple[int, ...], value: Any, words: str) -> None:
    items = filter_items()
    node = items[5]
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    rejects(items, "Register.filter", words)


def test_accept_all_stands_alone() -> None:
    items = filter_items()
    items[5][0][1].append([])
    rejects(items, "Register.filter.A: the empty alternative (accept all) with others")


def test_deep_expression() -> None:
    value: Any = ["attr", "A", 0, "x", 0, "int"]
    for _ in range(MAX_DEPTH):
        value = ["neg", value, "int"]
    items = filter_items()
    items[5][0][1][0][3][0][1] = value
    rejects(items, f"expression nested deeper than {MAX_DEPTH}")


def test_error_names_the_nested_field() -> None:
    items = wire(EpochState(R2, 3, "m2", 2, (DECISION, Decision(1, 1, 3, "mark", "L", 0, "k", "r", FILTER)), 1))
    items[6][1][8][0][1][0][3][0][2] = ["const", "3", "int"]
    assert rejects(items) == "EpochState.decisions[1].filter.A[0][3]: constant '3' is not of kind 'int'"


def test_encode_refuses_what_msgpack_cannot_carry() -> None:
    with pytest.raises(WireError, match="cannot encode Commit"):
        encode(Commit(R1, 2**64, 0))
    with pytest.raises(WireError, match="cannot encode Down"):
        encode(Down("\ud800"))
    with pytest.raises(WireError, match="not an overlay message"):
        encode(DECISION)  # type: ignore[arg-type]


def test_a_decoder_bug_costs_one_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """The safety net under the checks: whatever goes wrong while decoding, the receiver gets a
    WireError (which it logs) rather than an exception that would stop it."""

    def broken(value: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(wire_module._BY_CODE[CODES[Down]], "build", broken)
    with pytest.raises(WireError, match=r"^Down: internal error while decoding \(RuntimeError: a bug\)$"):
        decode(encode(Down("m1")))


# --- events: the fast path agrees with the validator ---------------------------------------------
#
# `decode` checks a plainly valid event itself and leaves anything else to EventValidator. The
# reference here is `decode` with that fast path off (its cache of known declarations forgets
# everything), so that every event goes through the validator as it did before the fast path.


class _Forgetful(dict[str, Any]):
    def __setitem__(self, key: str, value: Any) -> None:
        pass


def decode_through_validator(data: bytes) -> Message | WireError:
    with mock.patch.object(wire_module._OPEN, "known", _Forgetful()):
        try:
            return decode(data)
        except WireError as exc:
            return exc


def decode_counting(data: bytes) -> tuple[Message | WireError, int]:
    """What ``decode`` gives, and how many times it asked the validator."""
    validate = EventValidator.validate
    calls = []

    def counted(self: EventValidator, *args: Any, **kwargs: Any) -> Event:
        calls.append(1)
        return validate(self, *args, **kwargs)

    with mock.patch.object(EventValidator, "validate", counted):
        try:
            return decode(data), len(calls)
        except WireError as exc:
            return exc, len(calls)


def exactly(e: Event) -> tuple[Any, ...]:
    """What ``==`` does not see: each value's type, and -0.0 apart from 0.0 (``repr``)."""
    scalars = (e.id, *e.values, e.publisher, e.seq)
    return (e.event_type, e.event_type.attributes, *((type(x), repr(x)) for x in scalars))


DECLARATIONS: dict[str, list[tuple[str, Kind]]] = {
    "A": [("x", Kind.INT), ("y", Kind.FLOAT), ("s", Kind.STR), ("b", Kind.BOOL)],
    "F": [("f", Kind.FLOAT), ("g", Kind.FLOAT)],
    "B": [("z", Kind.INT)],
    "T": [],
}
PLAIN = {Kind.INT: 5, Kind.FLOAT: 1.5, Kind.STR: "s", Kind.BOOL: True}
INT_EDGES = [0, -1, 2**53, 2**53 + 1, -(2**53), -(2**53) - 1, INT64_MAX, INT64_MIN, INT64_MAX + 1, 2**64 - 1]
FLOAT_EDGES = [0.0, -0.0, 1e308, -1e308, 1.7976931348623157e308, 5e-324, math.inf, -math.inf, math.nan]
TEXT_EDGES = ["", "😀", "\U0010ffff", "é\x00"]
OTHERS = [True, False, 1.0, 1, "1", None, [], {}]
#: Values at the edges of each kind or just beyond, and of the wrong kinds; msgpack carries all.
EDGES: dict[Kind | str, list[Any]] = {
    Kind.INT: [*INT_EDGES, *OTHERS],
    Kind.FLOAT: [*FLOAT_EDGES, *INT_EDGES, *OTHERS],
    Kind.STR: [*TEXT_EDGES, *OTHERS],
    Kind.BOOL: [*OTHERS, 0],
    "id": ["e", "😀", *TEXT_EDGES, 5, None, True, ["e"]],
    "publisher": ["p", None, *TEXT_EDGES, 5, True, ["p"]],
    "seq": [None, 0, -1, INT64_MAX, INT64_MAX + 1, 2**64 - 1, True, False, 1.0, "1"],
}
FIELDS = {"id": 0, "publisher": 4, "seq": 5}


def raw_event(type_name: str, values: list[Any] | None = None) -> list[Any]:
    """``[id, type, declaration, values, publisher, seq]`` of a plain event of ``type_name``."""
    attributes = DECLARATIONS[type_name]
    plain = [PLAIN[kind] for _, kind in attributes]
    return ["e1", type_name, [[n, k.value] for n, k in attributes], plain if values is None else values, "p", 7]


def plainly_valid(raw: list[Any]) -> bool:
    """Whether the fast path is to take ``raw``, given that the validator accepts it: all but an
    integer for a float attribute that is not exactly a float."""
    # The kinds of the declaration the event carries: a generated event may carry another
    # well-formed declaration than its type's usual one (e.g. B with ``x: float``).
    kinds = [Kind(kind) for _, kind in raw[2]]
    return not any(k is Kind.FLOAT and type(v) is int and abs(v) > 2**53 for k, v in zip(kinds, raw[3]))


def agrees_with_the_validator(raw: list[Any], forward: bool) -> str:
    """Check that ``decode`` of a message carrying ``raw`` gives what the validator gives: an
    equal message whose event has values of the same types (an int given for a float converted,
    -0.0 kept), or the same rejection; and that it asks the validator only about an event that is
    not plainly valid. Return which of these it was."""
    if forward:
        items = [VERSION, CODES[Forward], ["A"], 1, 2, "event", raw, "c", "", None]
    else:
        items = [VERSION, CODES[Publish], "p", 0, raw]
    data = msgpack.packb(items, use_bin_type=True)
    expected = decode_through_validator(data)
    with contextlib.suppress(WireError):
        decode(data)  # the first of a declaration primes the fast path (a valid declaration, that is)
    got, validations = decode_counting(data)
    if isinstance(expected, WireError):
        assert isinstance(got, WireError), f"accepted {got}, which the validator rejects: {expected}"
        assert str(got) == str(expected)
        return "rejected"
    assert not isinstance(got, WireError), got
    assert got == expected and type(got) is type(expected)
    assert isinstance(got, Publish | Forward) and isinstance(expected, Publish | Forward)
    assert got.event is not None and expected.event is not None
    assert exactly(got.event) == exactly(expected.event)
    assert validations == (0 if plainly_valid(raw) else 1)
    return "accepted, fast" if validations == 0 else "accepted, by the validator"


@pytest.mark.parametrize(
    ("type_name", "position", "value"),
    [
        (type_name, i, value)
        for type_name, attributes in DECLARATIONS.items()
        for i, (_, kind) in enumerate(attributes)
        for value in EDGES[kind]
    ]
    + [("A", field, value) for field in FIELDS for value in EDGES[field]],
)
def test_edge_values_agree_with_the_validator(type_name: str, position: int | str, value: Any) -> None:
    """Each edge value in each place, the rest plain."""
    raw = raw_event(type_name)
    if isinstance(position, str):
        raw[FIELDS[position]] = value
    else:
        raw[3][position] = value
    for forward in (False, True):
        agrees_with_the_validator(copy.deepcopy(raw), forward)


MSGPACK_INTS = st.integers(INT64_MIN, 2**64 - 1)  # all that msgpack carries
texts_utf8 = st.text(st.characters(codec="utf-8"), max_size=6)
GOOD = {
    Kind.INT: ints,
    Kind.FLOAT: finite | st.integers(-(2**53), 2**53),
    Kind.STR: texts_utf8,
    Kind.BOOL: st.booleans(),
}
wire_scalars = st.none() | st.booleans() | MSGPACK_INTS | st.floats() | texts_utf8 | st.lists(MSGPACK_INTS, max_size=1)


@st.composite
def raw_events(draw: st.DrawFn) -> list[Any]:
    """An event as the wire has it, ``[id, type, declaration, values, publisher, seq]``: plain
    values but in up to two places (attributes or fields) an edge value, of the place's kind or
    another, or any msgpack scalar; sometimes a broken declaration."""
    type_name = draw(st.sampled_from(sorted(DECLARATIONS)))
    attributes = DECLARATIONS[type_name]
    raw = raw_event(type_name, [draw(GOOD[kind]) for _, kind in attributes])
    places: list[int | str] = [*range(len(attributes)), *FIELDS]
    for place in draw(st.lists(st.sampled_from(places), max_size=2, unique=True)):
        edges = EDGES[place] if isinstance(place, str) else EDGES[attributes[place][1]]
        value = draw(st.sampled_from(edges) | st.sampled_from(edges) | wire_scalars)
        if isinstance(place, str):
            raw[FIELDS[place]] = value
        else:
            raw[3][place] = value
    if attributes and draw(st.integers(0, 19)) == 0:
        raw[2][-1] = draw(
            st.sampled_from([["y", "int"], ["x", "float"], ["y", "decimal"], "y", ["y"], ["y", "float", "x"]])
            | st.just({"y": "float"})
        )
    if draw(st.integers(0, 19)) == 0:
        raw[3] = raw[3][:-1] if raw[3] and draw(st.booleans()) else [*raw[3], 1]
    if draw(st.integers(0, 19)) == 0:  # another type of the same shape, or not a type name at all
        raw[1] = draw(st.sampled_from([type_name + "2", "A.B", "", 5, None]))
    return raw


@given(raw_events(), st.booleans())
def test_generated_events_agree_with_the_validator(raw: list[Any], forward: bool) -> None:
    hypothesis.event(agrees_with_the_validator(raw, forward))


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([INT64_MIN, -0.0, "", False], [INT64_MIN, -0.0, "", False]),
        ([INT64_MAX, 1e308, "\U0010ffff😀", True], [INT64_MAX, 1e308, "\U0010ffff😀", True]),
        ([0, 1, "s", True], [0, 1.0, "s", True]),  # an integer for a float: converted
        ([0, -(2**53), "s", True], [0, -(2.0**53), "s", True]),
    ],
)
def test_plain_events_skip_the_validator(values: list[Any], expected: list[Any]) -> None:
    items = wire(Publish("p", 0, event()))
    decode(msgpack.packb(items))
    items[4][3] = values
    got, validations = decode_counting(msgpack.packb(items))
    assert isinstance(got, Publish) and validations == 0
    assert [(type(v), repr(v)) for v in got.event.values] == [(type(v), repr(v)) for v in expected]


@pytest.mark.parametrize(
    ("index", "value", "words"),
    [
        (0, "e\ud800", "field 'id': input should be a valid string, unable to parse raw data as a unicode string"),
        (4, "p\udfff", "field 'publisher': string contains a lone surrogate"),
        (3, [5, 1.5, "\ud83d", True], "attribute 's': string contains a lone surrogate"),
        (3, [INT64_MIN - 1, 1.5, "s", True], "attribute 'x': integer -9223372036854775809 is outside"),
        (3, [5, 2**53 + 1, "s", True], None),  # not exactly a float: the validator converts it
        (3, [5, 10**400, "s", True], "attribute 'y'"),
    ],
)
def test_what_msgpack_cannot_carry_still_meets_the_validator(index: int, value: Any, words: str | None) -> None:
    """Values no msgpack bytes decode to (strict UTF-8, 64-bit integers), given to the event
    decoder directly: the fast path leaves them to the validator."""
    raw = wire(Publish("p", 0, event()))[4]
    wire_module._OPEN.event(list(raw))  # primes the fast path
    raw[index] = value
    if words is None:
        assert wire_module._OPEN.event(raw).values[1] == float(2**53 + 1)
        return
    with pytest.raises(BadField, match=f"invalid event: .*{re.escape(words)}"):
        wire_module._OPEN.event(raw)


def test_head_in_any_msgpack_form() -> None:
    """The kind is read off the first bytes when they are the usual fixints; a head written
    otherwise (msgpack allows wider integers and arrays) decodes the same through msgspec."""
    data = encode(Down("m1"))
    assert data[:3] == bytes([0x93, VERSION, CODES[Down]])
    wide = b"\xdc\x00\x03\xcc" + bytes([VERSION]) + b"\xd0" + bytes([CODES[Down]]) + data[3:]
    assert decode(wide) == Down("m1")
    assert rejects(b"\x93\xcc\x04" + data[2:]) == f"unknown format version 4 (this side reads version {VERSION})"
