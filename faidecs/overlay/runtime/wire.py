"""The overlay's messages as bytes, for the network transport: msgpack, format version 1.

A message is one msgpack array ``[1, code, field, ...]``: the format version, the message kind's
code (:data:`CODES`) and every field of its dataclass in declaration order, defaults included.
Values nested in fields:

- an int, str, bool or None: itself (strings as msgpack str, UTF-8; nothing is sent as bin or ext);
- a role, ``JoinRequest.keys``: an array of strings;
- an event: ``[id, type, [[attribute, kind], ...], [value, ...], publisher, seq]``;
- a decision: its nine fields, in order, as an array;
- a filter: ``[[type, [alternative, ...]], ...]``, an alternative ``[[predicate, [type, index]], ...]``,
  a predicate ``[op, left, right]``, a value ``["attr", type, index, attribute, position, kind]``,
  ``["const", value, kind]``, ``["neg", operand, kind]`` or ``["arith", op, left, right, kind]``;
- ``JoinState``'s dicts keyed by role: arrays of ``[role, value]`` pairs (map keys are strings only).

Why this shape: positional arrays are the smallest and fastest msgpack can do, and the version
leads so that a later format can change everything after it. An event carries its type's
declaration because a merger has no program to look its type up in. Nothing is sent that the
receiver can get wrong silently: a field's absence is an error, not a default.

:func:`decode` is the gate for bytes from the network: it checks every field's type and range
(reusing the input events' own validation for events, after a faster check that lets through
only events that validation accepts, and as it would) and raises :class:`WireError` for anything
else, whatever the bytes. :func:`encode` trusts its message, which the protocol core built: what
``decode`` would reject (a negative position, a NaN attribute) is rejected on the receiving side.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable
from dataclasses import fields as dataclass_fields
from functools import lru_cache
from operator import attrgetter
from typing import Any, Final, NamedTuple, get_args

import msgpack

from faidecs.errors import EventError, FaidecsError
from faidecs.fieldpath import BadField, show
from faidecs.grammar.checker import MAX_INSTANCE_INDEX
from faidecs.grammar.model import (
    FLIPPED,
    ArithOp,
    Attribute,
    AttrOf,
    Const,
    EventType,
    Kind,
    Negate,
    Predicate,
    Slot,
    Value,
    value_slots,
)
from faidecs.matching.events import INT64_MAX, INT64_MIN, Event, EventValidator
from faidecs.merging.filters import ACCEPT_ALL, Alternative, Filter
from faidecs.merging.roles import Role, role_of
from faidecs.overlay.core.messages import (
    Ack,
    Commit,
    Connect,
    Decide,
    Decision,
    Disconnect,
    Down,
    EntryKind,
    EpochQuery,
    EpochState,
    Fetch,
    Forward,
    Holds,
    JoinRequest,
    JoinState,
    LeaderChange,
    MarkerReply,
    MarkerRequest,
    Message,
    NewLog,
    Publish,
    Register,
    Up,
)
from faidecs.span import Span

VERSION: Final = 1
#: Nesting allowed in a snapshot's JSON and in a predicate's expression. Bounded so that decoding
#: cannot exhaust the Python stack; deeper than anything faidecs writes.
MAX_DEPTH: Final = 100

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # the grammar's NAME: types and attributes
_KINDS = {k.value: k for k in Kind}
_ENTRY_KINDS = frozenset(get_args(EntryKind))
_ARITH_OPS = frozenset("+-*/")
_LITERAL_KINDS = {bool: Kind.BOOL, int: Kind.INT, float: Kind.FLOAT, str: Kind.STR}


class WireError(FaidecsError):
    """Bytes that are not a well-formed overlay message (or a message that cannot be encoded)."""


_TYPE_WORDS = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", bytes: "bytes"}
_TYPE_WORDS.update({list: "an array", dict: "a map", type(None): "nil"})


def _what(value: Any) -> str:
    return _TYPE_WORDS.get(type(value), type(value).__name__)


# --- scalar fields ---------------------------------------------------------------------------------

Decoder = Callable[[Any], Any]


def _str(v: Any) -> str:
    if type(v) is not str:
        raise BadField(f"expected a string, got {_what(v)}")
    return v


def _name(v: Any) -> str:
    if type(v) is not str or not _NAME.fullmatch(v):
        raise BadField(f"expected a type or attribute name, got {_what(v)} {show(v)}")
    return v


def _bool(v: Any) -> bool:
    if type(v) is not bool:
        raise BadField(f"expected a boolean, got {_what(v)}")
    return v


def _int(lo: int) -> Decoder:
    """An integer in ``[lo, 2**63)``; never a bool (``type(True) is not int``)."""

    def decode(v: Any) -> int:
        if type(v) is not int:
            raise BadField(f"expected an integer, got {_what(v)}")
        if not lo <= v <= INT64_MAX:
            raise BadField(f"integer {v} outside [{lo}, {INT64_MAX}]")
        return v

    return decode


_any_int, _nat = _int(INT64_MIN), _int(0)
_from_m1 = _int(-1)  # positions and commits, where -1 means "none yet"


def _optional(decode: Decoder) -> Decoder:
    return lambda v: None if v is None else decode(v)


_opt_nat = _optional(_nat)
_opt_from_m1 = _optional(_from_m1)


def _array(v: Any, what: str, length: int | None = None) -> list[Any]:
    if type(v) is not list or (length is not None and len(v) != length):
        raise BadField(f"expected {what}, got {_what(v)}" + (f" of {len(v)}" if type(v) is list else ""))
    return v


#: Roles decoded so far, each once: a process sees a handful. A list equal to one is that role.
_ROLES: dict[Role, Role] = {}


def _role(v: Any) -> Role:
    if type(v) is list:
        try:
            known = _ROLES.get(tuple(v))
        except TypeError:  # something unhashable in it
            known = None
        if known is not None:
            return known
    role = _checked_role(v)
    if len(_ROLES) >= 1024:
        _ROLES.clear()
    _ROLES[role] = role
    return role


def _checked_role(v: Any) -> Role:
    names = _array(v, "a role (an array of type names)")
    for i, name in enumerate(names):
        if type(name) is not str:
            raise BadField(f"expected a type name, got {_what(name)}").at(i)
    return _canonical(tuple(names))


@lru_cache(maxsize=1024)
def _canonical(role: Role) -> Role:
    """``role`` if it is one: a process sees a handful of roles, checked once each."""
    for i, name in enumerate(role):
        try:
            _name(name)
        except BadField as bad:
            raise bad.at(i)
    if not role or role != role_of(role):
        raise BadField(f"role {list(role)} is not canonical: types sorted by name, each once, at least one")
    return role


def _entry_kind(v: Any) -> EntryKind:
    if type(v) is not str or v not in _ENTRY_KINDS:
        raise BadField(f"expected one of {sorted(_ENTRY_KINDS)}, got {_what(v)} {show(v)}")
    return v  # type: ignore[return-value]


def _strs(v: Any) -> tuple[str, ...]:
    items = _array(v, "an array of strings")
    for i, s in enumerate(items):
        if type(s) is not str:
            raise BadField(f"expected a string, got {_what(s)}").at(i)
    return tuple(items)


# --- events ----------------------------------------------------------------------------------------


_DECLARATIONS: dict[int, tuple[EventType, tuple[tuple[str, str], ...]]] = {}


def _declaration(event_type: EventType) -> tuple[tuple[str, str], ...]:
    # By identity, not by an lru_cache: hashing an EventType costs more than encoding the event.
    # The entry holds the type, so its id cannot be reused while cached.
    hit = _DECLARATIONS.get(id(event_type))
    if hit is not None and hit[0] is event_type:
        return hit[1]
    if len(_DECLARATIONS) >= 1024:
        _DECLARATIONS.clear()
    declaration = tuple((a.name, a.kind.value) for a in event_type.attributes)
    _DECLARATIONS[id(event_type)] = (event_type, declaration)
    return declaration


Checker = Callable[[list[Any]], tuple[Any, ...] | None]


@lru_cache(maxsize=1024)
def _declared(name: str, attributes: tuple[tuple[str, str], ...]) -> tuple[EventType, EventValidator, Checker]:
    """One type (and its validator and checker) per declaration: events of a type share them."""
    for i, (attribute, kind) in enumerate(attributes):
        try:
            _name(attribute)
        except BadField as bad:
            raise bad.at(i)
        if kind not in _KINDS:
            raise BadField(f"unknown attribute kind {show(kind)} of {attribute!r}").at(i)
    if len({a for a, _ in attributes}) != len(attributes):
        raise BadField(f"type {name} declares an attribute twice")
    event_type = EventType(name, tuple(Attribute(a, _KINDS[k]) for a, k in attributes))
    return event_type, EventValidator({name: event_type}), _checker(event_type)


#: The fast path's cache: a type's name -> its declaration as the wire has it, ``[[attribute, kind],
#: ...]``, and what :func:`_declared` returned for it. The last declaration decoded for each name;
#: an event whose declaration is equal to it skips the name and declaration checks.
_KNOWN: dict[str, tuple[list[list[str]], tuple[EventType, EventValidator, Checker]]] = {}

#: The largest integer a float attribute takes on the fast path: up to 2**53 every integer is a
#: float exactly, so converting it cannot depend on how the validator rounds.
_EXACT: Final = 2**53


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate; msgpack's strict UTF-8 decoding lets none through
        return False
    return True


def _checker(event_type: EventType) -> Checker:
    """A function that takes ``values``, as many as ``event_type`` has attributes, and returns
    them as the validator would (a tuple, an integer given for a float converted to float) when
    they are plainly valid, or ``None`` when the validator has to look: it accepts a subset of what
    :class:`EventValidator` accepts, with equal results, and rejects nothing itself.

    Generated code: one line or two per attribute, no loop and no call per attribute. Only the
    positions and the kinds (an enum) go into the source, never a name from the peer."""
    names = [f"v{i}" for i in range(len(event_type.attributes))]
    lines = ["def check(values):", f"    [{', '.join(names)}] = values"]
    for v, attribute in zip(names, event_type.attributes):
        kind = attribute.kind
        if kind is Kind.INT:  # an int, not a bool, within 64 bits
            lines.append(f"    if type({v}) is not int or not {INT64_MIN} <= {v} <= {INT64_MAX}: return None")
        elif kind is Kind.FLOAT:  # a finite float, or an int that is exactly a float
            lines.append(f"    if type({v}) is float:\n        if not isfinite({v}): return None")
            lines.append(f"    elif type({v}) is int and {-_EXACT} <= {v} <= {_EXACT}: {v} = float({v})")
            lines.append("    else: return None")
        elif kind is Kind.STR:  # a str without a lone surrogate
            lines.append(f"    if type({v}) is not str or not ({v}.isascii() or utf8({v})): return None")
        else:
            assert kind is Kind.BOOL, kind
            lines.append(f"    if type({v}) is not bool: return None")
    lines.append(f"    return ({''.join(n + ', ' for n in names)})")
    namespace: dict[str, Any] = {"type": type, "int": int, "float": float, "str": str, "bool": bool}
    namespace.update(isfinite=math.isfinite, utf8=_utf8)
    exec("\n".join(lines), namespace)  # noqa: S102 - only positions and kinds in the source
    check: Checker = namespace["check"]
    return check


def _encode_event(e: Event) -> list[Any]:
    return [e.id, e.event_type.name, _declaration(e.event_type), e.values, e.publisher, e.seq]


def _event(v: Any) -> Event:
    """An event, checked as :class:`EventValidator` checks one. A plainly valid event (the common
    case) takes a fast path; anything else goes through the validator itself, so that it alone
    decides what is rejected and says why."""
    if type(v) is list and len(v) == 6:
        event_id, type_name, declaration, values, publisher, seq = v
        known = _KNOWN.get(type_name) if type(type_name) is str else None
        if (
            known is not None
            and declaration == known[0]  # list == list: equal lists of equal strings, nothing else
            and type(values) is list
            and len(values) == len(declaration)
            and type(event_id) is str
            and event_id
            and (event_id.isascii() or _utf8(event_id))
            and (publisher is None or type(publisher) is str and (publisher.isascii() or _utf8(publisher)))
            and (seq is None or type(seq) is int and 0 <= seq <= INT64_MAX)
        ):
            event_type, _, check = known[1]
            checked = check(values)
            if checked is not None:
                return Event(event_id, event_type, checked, publisher, seq)
    return _validated_event(v)


def _validated_event(v: Any) -> Event:
    """An event, through :class:`EventValidator`: the slow path, and the reference for the fast one."""
    event_id, type_name, declaration, values, publisher, seq = _array(
        v, "an event [id, type, attributes, values, publisher, seq]", 6
    )
    try:
        _name(type_name)
    except BadField as bad:
        raise bad.at("type")
    attributes = []
    for i, pair in enumerate(_array(declaration, "an array of [attribute, kind]")):
        if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str or type(pair[1]) is not str:
            raise BadField(f"expected [attribute, kind], got {show(pair)}").at(i).at("attributes")
        attributes.append((pair[0], pair[1]))
    try:
        known = _declared(type_name, tuple(attributes))
    except BadField as bad:
        raise bad.at("attributes")
    if len(_KNOWN) >= 1024:
        _KNOWN.clear()
    _KNOWN[type_name] = ([[a, k] for a, k in attributes], known)
    event_type, validator, _ = known
    names = [a.name for a in event_type.attributes]
    if len(_array(values, "an array of attribute values")) != len(names):
        raise BadField(f"{len(values)} values for the {len(names)} attributes of {type_name}").at("values")
    try:
        _opt_nat(seq)  # the validator bounds seq below only
    except BadField as bad:
        raise bad.at("seq")
    try:
        return validator.validate(
            {"id": event_id, "type": type_name, "attrs": dict(zip(names, values)), "publisher": publisher, "seq": seq}
        )
    except EventError as exc:
        raise BadField(f"invalid event: {exc}") from None


# --- filters ---------------------------------------------------------------------------------------


def _encode_value(v: Value) -> list[Any]:
    if isinstance(v, AttrOf):
        return ["attr", v.slot.type_name, v.slot.index, v.attribute, v.position, v.kind.value]
    if isinstance(v, Const):
        return ["const", v.value, v.kind.value]
    if isinstance(v, Negate):
        return ["neg", _encode_value(v.operand), v.kind.value]
    return ["arith", v.op, _encode_value(v.left), _encode_value(v.right), v.kind.value]


def _encode_filter(f: Filter) -> list[Any]:
    # Sorted, so that equal filters encode to equal bytes whatever the sets' iteration order.
    def alternative(alt: Alternative) -> list[Any]:
        return [[[p.op, _encode_value(p.left), _encode_value(p.right)], [s.type_name, s.index]] for p, s in alt]

    def order(alt: Alternative) -> tuple[tuple[str, int], ...]:
        return tuple((p.text, s.index) for p, s in alt)

    return [[t, [alternative(a) for a in sorted(alts, key=order)]] for t, alts in sorted(f.alternatives.items())]


def _kind(v: Any) -> Kind:
    if type(v) is not str or v not in _KINDS:
        raise BadField(f"expected a kind {sorted(_KINDS)}, got {show(v)}")
    return _KINDS[v]


def _value(v: Any, slot: Slot, depth: int) -> Value:
    """A value of a predicate on ``slot``, its kind as the checker would give it."""
    if depth > MAX_DEPTH:
        raise BadField(f"expression nested deeper than {MAX_DEPTH}")
    tag = v[0] if type(v) is list and v else None
    if tag == "attr":
        _, type_name, index, attribute, position, kind = _array(v, "[attr, type, index, attribute, position, kind]", 6)
        if [type_name, index] != [slot.type_name, slot.index] or type(index) is not int:
            raise BadField(f"attribute of {show(type_name)}[{show(index)}] in a predicate on {slot}")
        return AttrOf(slot, _name(attribute), _nat(position), _kind(kind))
    if tag == "const":
        _, value, kind = _array(v, "[const, value, kind]", 3)
        if type(value) not in _LITERAL_KINDS or _LITERAL_KINDS[type(value)] is not _kind(kind):
            raise BadField(f"constant {show(value)} is not of kind {show(kind)}")
        if type(value) is int:
            _any_int(value)
        if type(value) is float and not math.isfinite(value):
            raise BadField(f"constant {value!r} is not a finite number")
        return Const(value, _KINDS[kind])
    if tag == "neg":
        _, operand, kind = _array(v, "[neg, operand, kind]", 3)
        inner = _value(operand, slot, depth + 1)
        if not inner.kind.numeric or _kind(kind) is not inner.kind:
            raise BadField(f"negation of a {inner.kind.value} value as {show(kind)}")
        return Negate(inner, inner.kind)
    if tag == "arith":
        _, op, left, right, kind = _array(v, "[arith, op, left, right, kind]", 5)
        if type(op) is not str or op not in _ARITH_OPS:
            raise BadField(f"unknown arithmetic operator {show(op)}")
        lv, rv = _value(left, slot, depth + 1), _value(right, slot, depth + 1)
        expected = Kind.INT if lv.kind is rv.kind is Kind.INT and op != "/" else Kind.FLOAT
        if not (lv.kind.numeric and rv.kind.numeric) or _kind(kind) is not expected:
            raise BadField(f"{lv.kind.value} {op} {rv.kind.value} as {show(kind)}")
        return ArithOp(op, lv, rv, expected)
    raise BadField(f"expected a value [attr|const|neg|arith, ...], got {show(v)}")


def _predicate(v: Any, slot: Slot) -> Predicate:
    op, left, right = _array(v, "a predicate [op, left, right]", 3)
    if type(op) is not str or op not in FLIPPED:
        raise BadField(f"unknown comparison {show(op)}")
    lv, rv = _value(left, slot, 1), _value(right, slot, 1)
    lk, rk = lv.kind, rv.kind
    if not (lk.numeric and rk.numeric or lk is rk is Kind.STR or lk is rk is Kind.BOOL and op in ("=", "!=")):
        raise BadField(f"cannot compare {lk.value} {op} {rk.value}")
    if not value_slots(lv) | value_slots(rv):
        raise BadField("the predicate involves no event")
    pred = Predicate.make(op, lv, rv, Span.unknown())
    if (pred.op, pred.left, pred.right) != (op, lv, rv):
        raise BadField(f"predicate not in canonical orientation (expected {pred.text})")
    return pred


def _alternative(v: Any, type_name: str) -> Alternative:
    out = []
    for i, item in enumerate(_array(v, "an alternative (an array of [predicate, slot])")):
        try:
            pred, slot = _array(item, "[predicate, [type, index]]", 2)
            slot_type, index = _array(slot, "a slot [type, index]", 2)
            if slot_type != type_name or type(index) is not int or not 0 <= index <= MAX_INSTANCE_INDEX:
                raise BadField(f"slot {show(slot)} is not an instance of {type_name} (index 0..{MAX_INSTANCE_INDEX})")
            out.append((_predicate(pred, Slot(type_name, index)), Slot(type_name, index)))
        except BadField as bad:
            raise bad.at(i)
    return tuple(out)


def _filter(v: Any) -> Filter:
    alternatives: dict[str, frozenset[Alternative]] = {}
    for i, entry in enumerate(_array(v, "a filter (an array of [type, alternatives])")):
        try:
            type_name, alts = _array(entry, "[type, alternatives]", 2)
            if _name(type_name) in alternatives:
                raise BadField(f"type {type_name} listed twice")
        except BadField as bad:
            raise bad.at(i)
        try:
            decoded = []
            for k, alt in enumerate(_array(alts, "an array of alternatives")):
                try:
                    decoded.append(_alternative(alt, type_name))
                except BadField as bad:
                    raise bad.at(k)
            unique = frozenset(decoded)
            if len(unique) != len(decoded):
                raise BadField("an alternative listed twice")
            if () in unique and len(unique) > 1:  # Filter keeps "accept all" alone (filters._normal)
                raise BadField("the empty alternative (accept all) with others")
        except BadField as bad:
            raise bad.at(type_name)
        alternatives[type_name] = ACCEPT_ALL if unique == ACCEPT_ALL else unique
    return Filter(alternatives)


# --- composite fields ------------------------------------------------------------------------------


def _json(v: Any, depth: int) -> None:
    """JSON data, as an engine snapshot is."""
    t = type(v)
    if t is str or t is bool or v is None:
        return
    if t is int:
        _any_int(v)
    elif t is float:
        if not math.isfinite(v):
            raise BadField(f"{v!r} is not a finite number")
    elif t is list or t is dict:
        if depth > MAX_DEPTH:
            raise BadField(f"nested deeper than {MAX_DEPTH}")
        for key, item in v.items() if t is dict else enumerate(v):
            if type(key) is not str and t is dict:
                raise BadField(f"map key {show(key)} is not a string")
            try:
                _json(item, depth + 1)
            except BadField as bad:
                raise bad.at(key)
    else:
        raise BadField(f"{_what(v)} is not JSON data")


def _snapshot(v: Any) -> dict[str, Any]:
    if type(v) is not dict:
        raise BadField(f"expected a snapshot (a map), got {_what(v)}")
    _json(v, 1)
    return v


def _by_role(decode: Decoder) -> Decoder:
    def decode_pairs(v: Any) -> dict[Role, Any]:
        out: dict[Role, Any] = {}
        for i, pair in enumerate(_array(v, "an array of [role, value]")):
            try:
                role, value = _array(pair, "[role, value]", 2)
                key = _role(role)
                if key in out:
                    raise BadField(f"role {list(key)} listed twice")
                out[key] = decode(value)
            except BadField as bad:
                raise bad.at(i)
        return out

    return decode_pairs


def _pairs(d: dict[Role, Any]) -> list[Any]:
    return [[role, value] for role, value in d.items()]


class _Field(NamedTuple):
    decode: Decoder
    encode: Callable[[Any], Any] | None = None  # None: msgpack takes the value as it is


def _builder(cls: type, n: int) -> Callable[[tuple[Decoder, ...], list[Any]], Any]:
    """``build(decoders, values)``: ``cls`` of the ``n`` values, each through its decoder, a
    :class:`BadField` going up as it is. Generated code, to spare the loop over the fields (about a
    seventh of the time decoding a ``Forward`` took). Only ``n`` goes into the source."""
    ds, vs = ", ".join(f"d{i}" for i in range(n)), ", ".join(f"v{i}" for i in range(n))
    args = ", ".join(f"d{i}(v{i})" for i in range(n))
    source = f"def build(decoders, values):\n    [{ds}] = decoders\n    [{vs}] = values\n    return cls({args})"
    namespace: dict[str, Any] = {"cls": cls}
    exec(source, namespace)  # noqa: S102
    build: Callable[[tuple[Decoder, ...], list[Any]], Any] = namespace["build"]
    return build


class _Record:
    """The layout of one dataclass: its fields' codecs in declaration order, fixed up front so
    that encoding and decoding never reflect on the class."""

    def __init__(self, cls: type, prefix: tuple[int, ...], **codecs: _Field):
        names = tuple(codecs)
        assert names == tuple(f.name for f in dataclass_fields(cls)), f"{cls.__name__}: layout != fields"
        self.cls, self.names, self.prefix = cls, names, list(prefix)
        self.decoders = tuple(c.decode for c in codecs.values())
        self.encoders = tuple((len(prefix) + i, c.encode) for i, c in enumerate(codecs.values()) if c.encode)
        self.get: Callable[[Any], tuple[Any, ...]] = (
            attrgetter(*names) if len(names) > 1 else lambda obj: (getattr(obj, names[0]),)
        )
        self.build = _builder(cls, len(names))

    def encode(self, obj: Any) -> list[Any]:
        out = [*self.prefix, *self.get(obj)]
        for i, encode in self.encoders:
            out[i] = encode(out[i])
        return out

    def decode(self, values: list[Any]) -> Any:
        if len(values) == len(self.names):
            try:
                return self.build(self.decoders, values)
            except BadField:
                pass  # the decoders are pure: the loop below meets the problem again and names its field
        if len(values) != len(self.names):
            if len(values) < len(self.names):
                raise BadField(f"missing field(s) {', '.join(self.names[len(values) :])}")
            raise BadField(
                f"{len(values) - len(self.names)} extra field(s) after its {len(self.names)} ({', '.join(self.names)})"
            )
        args = []
        for name, decode, value in zip(self.names, self.decoders, values):
            try:
                args.append(decode(value))
            except BadField as bad:
                raise bad.at(name)
        return self.cls(*args)


# Not exported: the field codecs the layouts below are written in.
STR, NAT, FROM_M1 = _Field(_str), _Field(_nat), _Field(_from_m1)
ROLE, KIND = _Field(_role), _Field(_entry_kind)
OPT_FILTER = _Field(_optional(_filter), lambda f: None if f is None else _encode_filter(f))

_DECISION = _Record(
    Decision,
    (),
    position=NAT,
    epoch=NAT,
    ts=NAT,
    kind=KIND,
    source=STR,
    key=FROM_M1,
    consumer=STR,
    request=STR,
    filter=OPT_FILTER,
)


def _decision(v: Any) -> Decision:
    decision: Decision = _DECISION.decode(_array(v, "a decision (an array of its fields)"))
    return decision


def _decisions(v: Any) -> tuple[Decision, ...]:
    out = []
    for i, item in enumerate(_array(v, "an array of decisions")):
        try:
            out.append(_decision(item))
        except BadField as bad:
            raise bad.at(i)
    return tuple(out)


DECISION = _Field(_decision, _DECISION.encode)
DECISIONS = _Field(_decisions, lambda ds: [_DECISION.encode(d) for d in ds])
EVENT = _Field(_event, _encode_event)
OPT_EVENT = _Field(_optional(_event), lambda e: None if e is None else _encode_event(e))
FILTER = _Field(_filter, _encode_filter)

#: The message kinds' codes: never renumber one; a new kind takes the next code.
CODES: Final[dict[type, int]] = {
    cls: code
    for code, cls in enumerate(
        (Publish, Connect, Disconnect, Forward, Ack, Register, Decide, Holds, Commit, EpochQuery, EpochState)
        + (NewLog, LeaderChange, Down, Up, JoinRequest, JoinState, MarkerRequest, MarkerReply, Fetch),
        start=1,
    )
}
_LAYOUTS: dict[type, dict[str, _Field]] = {
    Publish: dict(publisher=STR, seq=NAT, event=EVENT),
    Connect: dict(role=ROLE, consumer=STR, process=STR, after=FROM_M1),
    Disconnect: dict(role=ROLE, consumer=STR, process=STR),
    Forward: dict(
        role=ROLE, position=NAT, ts=NAT, kind=KIND, event=OPT_EVENT, consumer=STR, request=STR, filter=OPT_FILTER
    ),
    Ack: dict(role=ROLE, consumer=STR, process=STR, position=FROM_M1),
    Register: dict(role=ROLE, consumer=STR, request=STR, filter=FILTER),
    Decide: dict(role=ROLE, epoch=NAT, decision=DECISION, commit=FROM_M1),
    Holds: dict(role=ROLE, epoch=NAT, replica=STR, length=NAT),
    Commit: dict(role=ROLE, epoch=NAT, commit=FROM_M1),
    EpochQuery: dict(role=ROLE, epoch=NAT, leader=STR),
    EpochState: dict(role=ROLE, epoch=NAT, replica=STR, log_epoch=NAT, decisions=DECISIONS, commit=FROM_M1),
    NewLog: dict(role=ROLE, epoch=NAT, decisions=DECISIONS, commit=FROM_M1),
    LeaderChange: dict(role=ROLE, leader=STR, epoch=NAT),
    Down: dict(process=STR),
    Up: dict(process=STR),
    JoinRequest: dict(joiner=STR, keys=_Field(_strs)),
    JoinState: dict(
        peer=STR,
        snapshots=_Field(_by_role(_snapshot), _pairs),
        positions=_Field(_by_role(_from_m1), _pairs),
        ok=_Field(_bool),
        marker=_Field(_opt_nat),
    ),
    MarkerRequest: dict(
        role=ROLE, consumer=STR, process=STR, filter=FILTER, heartbeats=_Field(_bool), after=_Field(_opt_from_m1)
    ),
    MarkerReply: dict(role=ROLE, consumer=STR, position=FROM_M1, ts=NAT, ok=_Field(_bool)),
    Fetch: dict(role=ROLE, replica=STR, position=NAT),
}
_BY_CLASS = {cls: _Record(cls, (VERSION, code), **_LAYOUTS[cls]) for cls, code in CODES.items()}
_BY_CODE = {code: _BY_CLASS[cls] for cls, code in CODES.items()}


#: One packer per thread: a packer is a third faster than ``packb`` but keeps a buffer between calls.
_local = threading.local()


def encode(msg: Message) -> bytes:
    """``msg`` as one msgpack array ``[VERSION, code, fields...]``."""
    record = _BY_CLASS.get(type(msg))
    if record is None:
        raise WireError(f"cannot encode {type(msg).__name__}: not an overlay message")
    packer = getattr(_local, "packer", None)
    if packer is None:
        packer = _local.packer = msgpack.Packer(use_bin_type=True)
    try:
        data: bytes = packer.pack(record.encode(msg))
    except (TypeError, ValueError, OverflowError) as exc:  # e.g. an int beyond 64 bits
        raise WireError(f"cannot encode {type(msg).__name__}: {exc}") from None
    return data


def _no_ext(code: int, data: bytes) -> Any:
    raise ValueError(f"msgpack extension type {code}")


def decode(data: bytes) -> Message:
    """The message ``data`` holds, all of it; :class:`WireError` saying what and where otherwise."""
    try:
        # No field is binary or an extension: any such byte string is refused while unpacking.
        items = msgpack.unpackb(data, raw=False, strict_map_key=True, max_bin_len=0, max_ext_len=0, ext_hook=_no_ext)
    except msgpack.ExtraData as exc:
        raise WireError(f"{len(exc.extra)} trailing byte(s) after the message") from None
    except Exception as exc:  # msgpack raises several kinds (ValueError, StackError, UnicodeDecodeError...)
        raise WireError(f"not a msgpack message ({type(exc).__name__}: {exc})") from None
    if type(items) is not list or len(items) < 2:
        raise WireError(f"expected a message [version, kind, fields...], got {_what(items)} {show(items)}")
    version, code = items[0], items[1]
    if type(version) is not int or version != VERSION:
        raise WireError(f"unknown format version {show(version)} (this side reads version {VERSION})")
    record = _BY_CODE.get(code) if type(code) is int else None
    if record is None:
        raise WireError(f"unknown message kind {show(code)}")
    name = record.cls.__name__
    try:
        msg: Message = record.decode(items[2:])
    except BadField as bad:
        raise WireError(f"{name}{'.' + bad.where() if bad.path else ''}: {bad.reason}") from None
    except Exception as exc:  # a bug here must cost one message, not the receiving process
        raise WireError(f"{name}: internal error while decoding ({type(exc).__name__}: {exc})") from exc
    return msg


__all__ = ["CODES", "MAX_DEPTH", "VERSION", "WireError", "decode", "encode"]
