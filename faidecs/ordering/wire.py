"""The ordering layers' messages as bytes, for processes on a real network: msgpack, format version 1.

A message travels in an envelope, one msgpack array ``[1, code, src, dst, field, ...]``: the format
version, the message kind's code (:data:`CODES`), the sending and the receiving entity's address
(an entity is a topic manager, an atom, a subscriber's ordering module...; one OS process hosts
several) and the message's fields in declaration order. Each kind's layout is one
:class:`msgspec.Struct` (its frame, on :mod:`faidecs.net.codec`, as the overlay's messages are).
Nested values:

- a timestamp (multistage): an array of ``[topic, value]`` pairs in topic order; a partial one (a
  chain not yet complete) may hold ``nil`` values;
- a set of topics: an array of topics in order, without repeats;
- an atom's stamps: an array of ``[group, group, number]``, the pair in name order;
- a Switch's counts ``[[group, count], ...]`` and view ``[[group, ...], [[group, group], ...]]``.

:meth:`OrderingCodec.decode` is the gate for bytes from the network. msgspec checks every field's
type and range against the frames; the codec then checks that topics are the deployment's topics
and addresses its addresses (when it was given them), and the messages' own invariants (a
notification's topic is in its timestamp, a subscription chain carries one entry per topic of the
subscription); anything else raises :class:`OrderingWireError` naming the message and the field.
Nothing is unpickled, and no msgpack bin or ext value is accepted. :meth:`OrderingCodec.encode`
trusts the message, which an entity built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Final, Literal, NamedTuple, TypeVar

import msgspec

from faidecs.errors import FaidecsError
from faidecs.fieldpath import BadField, show
from faidecs.net.codec import Frame, FrameCodec
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

VERSION: Final = 1
#: Longest address, topic or identifier accepted (a peer's bytes may hold a huge string).
MAX_NAME: Final = 256
#: Largest counter or sequence number (msgpack's signed 64-bit range; counters start at zero).
MAX_COUNT: Final = 2**63 - 1
#: Most entries in a timestamp, a set of topics or a list of stamps.
MAX_ENTRIES: Final = 100_000

OrderingMessage = (
    CreatePubTs | FillIn | EventTs | CompletedSubVc | UpdateSub | Notification | Dummy | Sequenced | Switch
)


class OrderingWireError(FaidecsError):
    """Bytes that are not a well-formed ordering message: says which message and which field."""


class Envelope(NamedTuple):
    src: str
    dst: str
    message: Any


# -- the wire's types ---------------------------------------------------------------------------------

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME)]
Natural = Annotated[int, msgspec.Meta(ge=0, le=MAX_COUNT)]
Positive = Annotated[int, msgspec.Meta(ge=1, le=MAX_COUNT)]
Topics = Annotated[list[Name], msgspec.Meta(max_length=MAX_ENTRIES)]
Stamp = Annotated[list[tuple[Name, Natural]], msgspec.Meta(max_length=MAX_ENTRIES)]
PartialStamp = Annotated[list[tuple[Name, Natural | None]], msgspec.Meta(max_length=MAX_ENTRIES)]


class _Frame(Frame):
    src: Name
    dst: Name


class CreatePubTsFrame(_Frame):
    event_id: Name
    publisher: Name
    topic: Name


class FillInFrame(_Frame):
    kind: Literal["pub", "sub"]
    ts: PartialStamp
    origin: Name
    ident: Name
    subscription: Topics


class EventTsFrame(_Frame):
    event_id: Name
    ts: Stamp


class CompletedSubVcFrame(_Frame):
    sub_id: Name
    ts: Stamp


class UpdateSubFrame(_Frame):
    subscriber: Name
    subscription: Topics


class NotificationFrame(_Frame):
    event_id: Name
    topic: Name
    ts: Stamp


class DummyFrame(_Frame):
    sub_id: Name
    topic: Name
    ts: Stamp


class SequencedFrame(_Frame):
    event_id: Name
    group: Name
    epoch: Natural
    local: Natural
    stamps: Annotated[list[tuple[Name, Name, Positive]], msgspec.Meta(max_length=MAX_ENTRIES)]


class ViewWire(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    groups: Topics
    atoms: Annotated[list[tuple[Name, Name]], msgspec.Meta(max_length=MAX_ENTRIES)]


class SwitchFrame(_Frame):
    closed: Natural | None
    counts: Annotated[list[tuple[Name, Natural]], msgspec.Meta(max_length=MAX_ENTRIES)]
    opened: Natural | None
    view: ViewWire | None


T = TypeVar("T")


def _at(step: str | int, decode: Callable[[Any], T], value: Any) -> T:
    try:
        return decode(value)
    except BadField as bad:
        raise bad.at(step) from None


def _ordered(topics: list[str]) -> None:
    if topics != sorted(set(topics)):
        raise BadField("topics must be in order, without repeats")


class OrderingCodec:
    """Encodes and checks envelopes. ``topics``: the deployment's topics (any name if None);
    ``hosts``: address -> the OS process hosting it (any address if None), so that a process can
    send only from addresses it hosts (:meth:`refuse`)."""

    error = OrderingWireError

    def __init__(self, topics: Iterable[str] | None = None, hosts: Mapping[str, str] | None = None):
        self.topics = frozenset(topics) if topics is not None else None
        self.hosts = dict(hosts) if hosts is not None else None

    # -- values that depend on the deployment --------------------------------------------------

    def _topic(self, name: str) -> str:
        if self.topics is not None and name not in self.topics:
            raise BadField(f"unknown topic {show(name)}")
        return name

    def _address(self, name: str) -> str:
        if self.hosts is not None and name not in self.hosts:
            raise BadField(f"unknown address {show(name)}")
        return name

    def _topic_set(self, topics: list[str]) -> frozenset[str]:
        for i, topic in enumerate(topics):
            _at(i, self._topic, topic)
        _ordered(topics)
        return frozenset(topics)

    def _timestamp(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        for i, (topic, _) in enumerate(pairs):
            try:
                self._topic(topic)
            except BadField as bad:
                raise bad.at(0).at(i) from None
        if not pairs:
            raise BadField("a timestamp has at least one entry")
        topics = [t for t, _ in pairs]
        if topics != sorted(set(topics)):
            raise BadField("entries must be in topic order, without repeats")
        return dict(pairs)

    def _atom(self, g: str, h: str) -> tuple[str, str]:
        a, b = _at(0, self._topic, g), _at(1, self._topic, h)
        if not a < b:
            raise BadField(f"an atom is a pair of distinct groups in name order, got {show([a, b])}")
        return a, b

    # -- messages ------------------------------------------------------------------------------

    def _create(self, f: CreatePubTsFrame) -> CreatePubTs:
        return CreatePubTs(f.event_id, _at("publisher", self._address, f.publisher), _at("topic", self._topic, f.topic))

    def _fill_in(self, f: FillInFrame) -> FillIn:
        ts = _at("ts", self._timestamp, f.ts)
        origin = _at("origin", self._address, f.origin)
        message = FillIn(f.kind, ts, origin, f.ident, _at("subscription", self._topic_set, f.subscription))
        if f.kind == "sub" and set(ts) != message.subscription:
            raise BadField("a subscription chain has one entry per topic of the subscription").at("ts")
        if f.kind == "pub" and message.subscription:
            raise BadField("a publication chain carries no subscription").at("subscription")
        return message

    def _event_ts(self, f: EventTsFrame) -> EventTs:
        return EventTs(f.event_id, _at("ts", self._timestamp, f.ts))

    def _completed(self, f: CompletedSubVcFrame) -> CompletedSubVc:
        return CompletedSubVc(f.sub_id, _at("ts", self._timestamp, f.ts))

    def _update_sub(self, f: UpdateSubFrame) -> UpdateSub:
        return UpdateSub(
            _at("subscriber", self._address, f.subscriber), _at("subscription", self._topic_set, f.subscription)
        )

    def _notification(self, f: NotificationFrame) -> Notification:
        message = Notification(f.event_id, _at("topic", self._topic, f.topic), _at("ts", self._timestamp, f.ts))
        if message.topic not in message.ts:
            raise BadField(f"holds no entry for the event's topic {message.topic!r}").at("ts")
        return message

    def _dummy(self, f: DummyFrame) -> Dummy:
        message = Dummy(f.sub_id, _at("topic", self._topic, f.topic), _at("ts", self._timestamp, f.ts))
        if message.topic not in message.ts:
            raise BadField(f"holds no entry for the dummy's topic {message.topic!r}").at("ts")
        return message

    def _sequenced(self, f: SequencedFrame) -> Sequenced:
        group = _at("group", self._topic, f.group)
        stamps: dict[tuple[str, str], int] = {}
        for i, (g, h, n) in enumerate(f.stamps):
            try:
                atom = self._atom(g, h)
            except BadField as bad:
                raise bad.at(i).at("stamps") from None
            if atom in stamps:
                raise BadField("an atom stamps a message once").at("stamps")
            if group not in atom:
                raise BadField("only atoms of the message's group stamp it").at("stamps")
            stamps[atom] = n
        return Sequenced(f.event_id, group, f.epoch, f.local, stamps)

    def _switch(self, f: SwitchFrame) -> Switch:
        counts: dict[str, int] = {}
        for i, (g, n) in enumerate(f.counts):
            try:
                topic = _at(0, self._topic, g)
            except BadField as bad:
                raise bad.at(i).at("counts") from None
            if topic in counts:
                raise BadField("a group is counted once").at("counts")
            counts[topic] = n
        view = None
        if f.view is not None:
            try:
                groups = _at("groups", self._topic_set, f.view.groups)
            except BadField as bad:
                raise bad.at("view") from None
            atoms = []
            for i, (g, h) in enumerate(f.view.atoms):
                try:
                    atoms.append(self._atom(g, h))
                except BadField as bad:
                    raise bad.at(i).at("atoms").at("view") from None
            view = EpochView(groups, frozenset(atoms))
        if (f.opened is None) != (view is None):
            raise BadField("an opened epoch comes with its view, and only then").at("view")
        return Switch(f.closed, counts, f.opened, view)

    # -- the gate ------------------------------------------------------------------------------

    def encode(self, envelope: Envelope) -> bytes:
        """``[VERSION, code, src, dst, fields...]``; raises OrderingWireError for anything else."""
        src, dst, m = envelope
        record = _BY_CLASS.get(type(m))
        if record is None:
            raise OrderingWireError(f"cannot encode {type(m).__name__}: not an ordering message")
        code, frame, fields, _ = record
        return _CODEC.encode(type(m).__name__, frame(VERSION, code, src, dst, *fields(m)))

    def decode(self, data: bytes) -> Envelope:
        """The envelope ``data`` holds, checked; :class:`OrderingWireError` saying what and where otherwise."""
        name, frame = _CODEC.decode(data)
        assert isinstance(frame, _Frame)
        build = _BY_CODE[frame.code]

        def checked() -> Envelope:
            src = _at("src", self._address, frame.src)
            dst = _at("dst", self._address, frame.dst)
            return Envelope(src, dst, build(self, frame))

        envelope: Envelope = _CODEC.guard(name, checked)
        return envelope

    def screen(self, sender: str, data: bytes) -> tuple[str, str] | None:
        """Nothing is refused unread: every process of an ordering deployment may send every
        kind, and an envelope's size is what its layer's state makes it (the transport caps it)."""
        return None

    def refuse(self, sender: str, envelope: Envelope) -> tuple[str, str] | None:
        """Why a process may not send this envelope, as (kind, reason); None if it may."""
        if self.hosts is not None and self.hosts.get(envelope.src) != sender:
            what = type(envelope.message).__name__
            return "impersonation", f"{what} from process {sender} claims to come from {envelope.src}"
        return None


def _pairs(ts: Mapping[str, Any]) -> list[list[Any]]:
    return [[t, ts[t]] for t in sorted(ts)]


#: message class -> (code, frame, the frame's fields of a message, the check that builds one)
_RECORDS: dict[type, tuple[int, type[_Frame], Callable[[Any], list[Any]], Callable[[OrderingCodec, Any], Any]]] = {
    CreatePubTs: (1, CreatePubTsFrame, lambda m: [m.event_id, m.publisher, m.topic], OrderingCodec._create),
    FillIn: (
        2,
        FillInFrame,
        lambda m: [m.kind, _pairs(m.ts), m.origin, m.ident, sorted(m.subscription)],
        OrderingCodec._fill_in,
    ),
    EventTs: (3, EventTsFrame, lambda m: [m.event_id, _pairs(m.ts)], OrderingCodec._event_ts),
    CompletedSubVc: (4, CompletedSubVcFrame, lambda m: [m.sub_id, _pairs(m.ts)], OrderingCodec._completed),
    UpdateSub: (5, UpdateSubFrame, lambda m: [m.subscriber, sorted(m.subscription)], OrderingCodec._update_sub),
    Notification: (
        6,
        NotificationFrame,
        lambda m: [m.event_id, m.topic, _pairs(m.ts)],
        OrderingCodec._notification,
    ),
    Dummy: (7, DummyFrame, lambda m: [m.sub_id, m.topic, _pairs(m.ts)], OrderingCodec._dummy),
    Sequenced: (
        16,
        SequencedFrame,
        lambda m: [m.event_id, m.group, m.epoch, m.local, [[a[0], a[1], n] for a, n in sorted(m.stamps.items())]],
        OrderingCodec._sequenced,
    ),
    Switch: (
        17,
        SwitchFrame,
        lambda m: [
            m.closed,
            [[g, n] for g, n in sorted(m.counts.items())],
            m.opened,
            None if m.view is None else [sorted(m.view.groups), [list(a) for a in sorted(m.view.atoms)]],
        ],
        OrderingCodec._switch,
    ),
}
#: message class -> its kind's code on the wire
CODES: Final = {cls: r[0] for cls, r in _RECORDS.items()}
_BY_CLASS = _RECORDS
_BY_CODE = {r[0]: r[3] for r in _RECORDS.values()}
_CODEC = FrameCodec(
    VERSION,
    OrderingWireError,
    {r[0]: (cls.__name__, r[1]) for cls, r in _RECORDS.items()},
    shape="[version, kind, src, dst, fields...]",
)

__all__ = ["CODES", "VERSION", "Envelope", "OrderingCodec", "OrderingMessage", "OrderingWireError"]
