"""The ordering layers' messages as bytes, for processes on a real network: msgpack, format version 1.

A message travels in an envelope, one msgpack array ``[1, code, src, dst, field, ...]``: the format
version, the message kind's code (:data:`CODES`), the sending and the receiving entity's address
(an entity is a topic manager, an atom, a subscriber's ordering module...; one OS process hosts
several) and the message's fields in declaration order. Nested values:

- a timestamp (multistage): an array of ``[topic, value]`` pairs in topic order; a partial one (a
  chain not yet complete) may hold ``nil`` values;
- a set of topics: an array of topics in order, without repeats;
- an atom's stamps: an array of ``[group, group, number]``, the pair in name order;
- a Switch's counts ``[[group, count], ...]`` and view ``[[group, ...], [[group, group], ...]]``.

:meth:`OrderingCodec.decode` is the gate for bytes from the network. It checks every field's type
and range, that topics are the deployment's topics and addresses its addresses (when the codec was
given them), and the messages' own invariants (a notification's topic is in its timestamp, a
subscription chain carries one entry per topic of the subscription); anything else raises
:class:`OrderingWireError` naming the message and the field. Nothing is unpickled, and no msgpack
bin or ext value is accepted. :meth:`OrderingCodec.encode` trusts the message, which an entity built.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NamedTuple

import msgpack

from faidecs.errors import FaidecsError
from faidecs.fieldpath import BadField, show
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


def _what(value: Any) -> str:
    return type(value).__name__


# -- field decoders (each raises BadField; the caller adds where) ------------------------------------


def _name(v: Any) -> str:
    if type(v) is not str:
        raise BadField(f"expected a string, got {_what(v)} {show(v)}")
    if not 0 < len(v) <= MAX_NAME:
        raise BadField(f"expected 1 to {MAX_NAME} characters, got {len(v)}")
    return v


def _count(lo: int) -> Callable[[Any], int]:
    def decode(v: Any) -> int:
        if type(v) is not int:  # bool is not int here
            raise BadField(f"expected an integer, got {_what(v)} {show(v)}")
        if not lo <= v <= MAX_COUNT:
            raise BadField(f"{v} is out of range [{lo}, 2^63 - 1]")
        return v

    return decode


def _chain_kind(v: Any) -> str:
    if v not in ("pub", "sub") or type(v) is not str:
        raise BadField(f"expected 'pub' or 'sub', got {show(v)}")
    return str(v)


_natural = _count(0)
_positive = _count(1)


def _optional_natural(v: Any) -> int | None:
    return None if v is None else _natural(v)


def _array(v: Any, length: int | None = None) -> list[Any]:
    if type(v) is not list:
        raise BadField(f"expected an array, got {_what(v)} {show(v)}")
    if length is not None and len(v) != length:
        raise BadField(f"expected {length} items, got {len(v)}")
    if len(v) > MAX_ENTRIES:
        raise BadField(f"{len(v)} items, at most {MAX_ENTRIES}")
    return v


def _items(v: Any, decode: Callable[[Any], Any]) -> list[Any]:
    out = []
    for i, item in enumerate(_array(v)):
        try:
            out.append(decode(item))
        except BadField as bad:
            raise bad.at(i) from None
    return out


class _Fields:
    """Decodes one message's fields in order, naming each in errors."""

    def __init__(self, items: list[Any], names: tuple[str, ...]):
        if len(items) != len(names):
            raise BadField(f"expected {len(names)} fields ({', '.join(names)}), got {len(items)}")
        self.items, self.names = items, names

    def __call__(self, i: int, decode: Callable[[Any], Any]) -> Any:
        try:
            return decode(self.items[i])
        except BadField as bad:
            raise bad.at(self.names[i]) from None


class OrderingCodec:
    """Encodes and checks envelopes. ``topics``: the deployment's topics (any name if None);
    ``hosts``: address -> the OS process hosting it (any address if None), so that a process can
    send only from addresses it hosts (:meth:`refuse`)."""

    error = OrderingWireError

    def __init__(self, topics: Iterable[str] | None = None, hosts: Mapping[str, str] | None = None):
        self.topics = frozenset(topics) if topics is not None else None
        self.hosts = dict(hosts) if hosts is not None else None
        self._local = threading.local()

    # -- values that depend on the deployment --------------------------------------------------

    def _topic(self, v: Any) -> str:
        name = _name(v)
        if self.topics is not None and name not in self.topics:
            raise BadField(f"unknown topic {show(name)}")
        return name

    def _address(self, v: Any) -> str:
        name = _name(v)
        if self.hosts is not None and name not in self.hosts:
            raise BadField(f"unknown address {show(name)}")
        return name

    def _topic_set(self, v: Any) -> frozenset[str]:
        topics = _items(v, self._topic)
        if topics != sorted(set(topics)):
            raise BadField("topics must be in order, without repeats")
        return frozenset(topics)

    def _timestamp(self, v: Any, *, partial: bool = False) -> dict[str, Any]:
        value = _optional_natural if partial else _natural

        def pair(p: Any) -> tuple[str, Any]:
            topic, n = _array(p, 2)
            try:
                t = self._topic(topic)
            except BadField as bad:
                raise bad.at(0) from None
            try:
                return t, value(n)
            except BadField as bad:
                raise bad.at(1) from None

        pairs = _items(v, pair)
        if not pairs:
            raise BadField("a timestamp has at least one entry")
        topics = [t for t, _ in pairs]
        if topics != sorted(set(topics)):
            raise BadField("entries must be in topic order, without repeats")
        return dict(pairs)

    def _atom(self, v: Any) -> tuple[str, str]:
        g, h = _array(v, 2)
        try:
            a = self._topic(g)
        except BadField as bad:
            raise bad.at(0) from None
        try:
            b = self._topic(h)
        except BadField as bad:
            raise bad.at(1) from None
        if not a < b:
            raise BadField(f"an atom is a pair of distinct groups in name order, got {show([a, b])}")
        return a, b

    # -- messages ------------------------------------------------------------------------------

    def _create(self, f: _Fields) -> CreatePubTs:
        return CreatePubTs(f(0, _name), f(1, self._address), f(2, self._topic))

    def _fill_in(self, f: _Fields) -> FillIn:
        kind = f(0, _chain_kind)
        ts = f(1, lambda v: self._timestamp(v, partial=True))
        message = FillIn(kind, ts, f(2, self._address), f(3, _name), f(4, self._topic_set))
        if kind == "sub" and set(ts) != message.subscription:
            raise BadField("a subscription chain has one entry per topic of the subscription").at("ts")
        if kind == "pub" and message.subscription:
            raise BadField("a publication chain carries no subscription").at("subscription")
        return message

    def _event_ts(self, f: _Fields) -> EventTs:
        return EventTs(f(0, _name), f(1, self._timestamp))

    def _completed(self, f: _Fields) -> CompletedSubVc:
        return CompletedSubVc(f(0, _name), f(1, self._timestamp))

    def _update_sub(self, f: _Fields) -> UpdateSub:
        return UpdateSub(f(0, self._address), f(1, self._topic_set))

    def _notification(self, f: _Fields) -> Notification:
        message = Notification(f(0, _name), f(1, self._topic), f(2, self._timestamp))
        if message.topic not in message.ts:
            raise BadField(f"holds no entry for the event's topic {message.topic!r}").at("ts")
        return message

    def _dummy(self, f: _Fields) -> Dummy:
        message = Dummy(f(0, _name), f(1, self._topic), f(2, self._timestamp))
        if message.topic not in message.ts:
            raise BadField(f"holds no entry for the dummy's topic {message.topic!r}").at("ts")
        return message

    def _sequenced(self, f: _Fields) -> Sequenced:
        def stamp(v: Any) -> tuple[tuple[str, str], int]:
            g, h, n = _array(v, 3)
            return self._atom([g, h]), _positive(n)

        group = f(1, self._topic)
        stamps = f(4, lambda v: _items(v, stamp))
        atoms = [a for a, _ in stamps]
        if len(set(atoms)) != len(atoms):
            raise BadField("an atom stamps a message once").at("stamps")
        if any(group not in a for a in atoms):
            raise BadField("only atoms of the message's group stamp it").at("stamps")
        return Sequenced(f(0, _name), group, f(2, _natural), f(3, _natural), dict(stamps))

    def _switch(self, f: _Fields) -> Switch:
        def optional_epoch(v: Any) -> int | None:
            return None if v is None else _natural(v)

        def count(v: Any) -> tuple[str, int]:
            g, n = _array(v, 2)
            return self._topic(g), _natural(n)

        def view(v: Any) -> EpochView | None:
            if v is None:
                return None
            groups, atoms = _array(v, 2)
            try:
                gs = self._topic_set(groups)
            except BadField as bad:
                raise bad.at("groups") from None
            try:
                ats = _items(atoms, self._atom)
            except BadField as bad:
                raise bad.at("atoms") from None
            return EpochView(gs, frozenset(ats))

        counts = f(1, lambda v: _items(v, count))
        if len({g for g, _ in counts}) != len(counts):
            raise BadField("a group is counted once").at("counts")
        message = Switch(f(0, optional_epoch), dict(counts), f(2, optional_epoch), f(3, view))
        if (message.opened is None) != (message.view is None):
            raise BadField("an opened epoch comes with its view, and only then").at("view")
        return message

    # -- the gate ------------------------------------------------------------------------------

    def encode(self, envelope: Envelope) -> bytes:
        """``[VERSION, code, src, dst, fields...]``; raises OrderingWireError for anything else."""
        src, dst, m = envelope
        record = _BY_CLASS.get(type(m))
        if record is None:
            raise OrderingWireError(f"cannot encode {type(m).__name__}: not an ordering message")
        packer = getattr(self._local, "packer", None)
        if packer is None:
            packer = self._local.packer = msgpack.Packer(use_bin_type=True)
        try:
            data: bytes = packer.pack([VERSION, record[0], src, dst, *record[2](m)])
        except (TypeError, ValueError, OverflowError) as exc:
            raise OrderingWireError(f"cannot encode {type(m).__name__}: {exc}") from None
        return data

    def decode(self, data: bytes) -> Envelope:
        """The envelope ``data`` holds, checked; :class:`OrderingWireError` saying what and where otherwise."""
        try:
            items = msgpack.unpackb(
                data, raw=False, strict_map_key=True, max_bin_len=0, max_ext_len=0, ext_hook=_no_ext
            )
        except msgpack.ExtraData as exc:
            raise OrderingWireError(f"{len(exc.extra)} trailing byte(s) after the message") from None
        except Exception as exc:  # msgpack raises several kinds
            raise OrderingWireError(f"not a msgpack message ({type(exc).__name__}: {exc})") from None
        if type(items) is not list or len(items) < 4:
            raise OrderingWireError(f"expected [version, kind, src, dst, fields...], got {_what(items)} {show(items)}")
        version, code = items[0], items[1]
        if type(version) is not int or version != VERSION:
            raise OrderingWireError(f"unknown format version {show(version)} (this side reads version {VERSION})")
        record = _BY_CODE.get(code) if type(code) is int else None
        if record is None:
            raise OrderingWireError(f"unknown message kind {show(code)}")
        cls, names, _, decoder = record
        try:
            src = _Fields([items[2]], ("src",))(0, self._address)
            dst = _Fields([items[3]], ("dst",))(0, self._address)
            message = decoder(self, _Fields(items[4:], names))
        except BadField as bad:
            raise OrderingWireError(f"{cls.__name__}{'.' + bad.where() if bad.path else ''}: {bad.reason}") from None
        except Exception as exc:  # noqa: BLE001 (a bug here must cost one message, not the receiving process
            raise OrderingWireError(
                f"{cls.__name__}: internal error while decoding ({type(exc).__name__}: {exc})"
            ) from exc
        return Envelope(src, dst, message)

    def refuse(self, sender: str, envelope: Envelope) -> tuple[str, str] | None:
        """Why a process may not send this envelope, as (kind, reason); None if it may."""
        if self.hosts is not None and self.hosts.get(envelope.src) != sender:
            what = type(envelope.message).__name__
            return "impersonation", f"{what} from process {sender} claims to come from {envelope.src}"
        return None


def _no_ext(code: int, data: bytes) -> Any:
    raise ValueError(f"msgpack extension type {code}")


def _pairs(ts: Mapping[str, Any]) -> list[list[Any]]:
    return [[t, ts[t]] for t in sorted(ts)]


Record = tuple[int, tuple[str, ...], Callable[[Any], list[Any]], Callable[[OrderingCodec, _Fields], Any]]

_RECORDS: dict[type, Record] = {
    CreatePubTs: (
        1,
        ("event_id", "publisher", "topic"),
        lambda m: [m.event_id, m.publisher, m.topic],
        OrderingCodec._create,
    ),
    FillIn: (
        2,
        ("kind", "ts", "origin", "ident", "subscription"),
        lambda m: [m.kind, _pairs(m.ts), m.origin, m.ident, sorted(m.subscription)],
        OrderingCodec._fill_in,
    ),
    EventTs: (3, ("event_id", "ts"), lambda m: [m.event_id, _pairs(m.ts)], OrderingCodec._event_ts),
    CompletedSubVc: (4, ("sub_id", "ts"), lambda m: [m.sub_id, _pairs(m.ts)], OrderingCodec._completed),
    UpdateSub: (
        5,
        ("subscriber", "subscription"),
        lambda m: [m.subscriber, sorted(m.subscription)],
        OrderingCodec._update_sub,
    ),
    Notification: (
        6,
        ("event_id", "topic", "ts"),
        lambda m: [m.event_id, m.topic, _pairs(m.ts)],
        OrderingCodec._notification,
    ),
    Dummy: (7, ("sub_id", "topic", "ts"), lambda m: [m.sub_id, m.topic, _pairs(m.ts)], OrderingCodec._dummy),
    Sequenced: (
        16,
        ("event_id", "group", "epoch", "local", "stamps"),
        lambda m: [m.event_id, m.group, m.epoch, m.local, [[a[0], a[1], n] for a, n in sorted(m.stamps.items())]],
        OrderingCodec._sequenced,
    ),
    Switch: (
        17,
        ("closed", "counts", "opened", "view"),
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
_BY_CODE: dict[
    int, tuple[type, tuple[str, ...], Callable[[Any], list[Any]], Callable[[OrderingCodec, _Fields], Any]]
] = {r[0]: (cls, r[1], r[2], r[3]) for cls, r in _RECORDS.items()}

__all__ = ["CODES", "VERSION", "Envelope", "OrderingCodec", "OrderingMessage", "OrderingWireError"]
