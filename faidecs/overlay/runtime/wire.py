"""The overlay's messages as bytes, for the network transport: msgpack, format version 2.

A message is one msgpack array ``[1, code, field, ...]``: the format version, the message kind's
code (:data:`CODES`) and every field of its dataclass in declaration order, defaults included.
Each kind's layout is one :class:`msgspec.Struct` below (its *frame*, on
:mod:`faidecs.net.codec`), nested values too:

- an int, str, bool or None: itself (strings as msgpack str, UTF-8; nothing is sent as bin or ext);
- a role, ``JoinRequest.keys``: an array of strings;
- an event (:class:`EventWire`): ``[id, type, [[attribute, kind], ...], [value, ...], publisher, seq]``;
- a decision (:class:`DecisionWire`): its nine fields, in order, as an array;
- an entry of a ``ForwardBatch`` (:class:`EntryWire`): its six fields, in order, as an array;
- a filter: ``[[type, [alternative, ...]], ...]``, an alternative ``[[predicate, [type, index]], ...]``,
  a predicate ``[op, left, right]``, a value ``["attr", type, index, attribute, position, kind]``,
  ``["const", value, kind]``, ``["neg", operand, kind]`` or ``["arith", op, left, right, kind]``
  (a tagged union);
- ``JoinState``'s dicts keyed by role: arrays of ``[role, value]`` pairs (map keys are strings only).

Why this shape: positional arrays are the smallest and fastest msgpack can do, and the version
leads so that a later format can change everything after it. An event carries its type's
declaration because a merger has no program to look its type up in. Nothing is sent that the
receiver can get wrong silently: a field's absence is an error, not a default.

:func:`decode` is the gate for bytes from the network. msgspec checks every field's type and
range against the frames; what types cannot say is checked here, on the decoded structs, while
they become the core's dataclasses: roles canonical, filters as the checker would build them,
snapshots JSON data, and events valid for their declaration (reusing the input events' own
validation, after a faster check that lets through only events that validation accepts, and as it
would). Anything else raises :class:`WireError` naming the message and the field, whatever the
bytes. :func:`encode` trusts its message, which the protocol core built: what ``decode`` would
reject (a negative position, a NaN attribute) is rejected on the receiving side.

The core keeps its dataclasses rather than becoming the frames: it builds messages in its hot
loop and relies on their equality and hashing, while the frames carry the version and code ahead
of the fields (msgspec's tagged unions put the tag first) and values in their wire shapes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields as dataclass_fields
from functools import lru_cache
from typing import Annotated, Any, Final, Literal, Union, cast

import msgspec

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
from faidecs.net.codec import Frame, FrameCodec, what
from faidecs.overlay.core.messages import (
    Ack,
    Commit,
    Connect,
    Decide,
    Decision,
    Disconnect,
    Down,
    Entry,
    EntryKind,
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
    Up,
)
from faidecs.span import Span

#: 2: a Decide carries a batch of decisions; ForwardBatch (code 21). 3: Ordered (code 22), and a
#: Publish says the publication before it to the same root (prev). Processes of one deployment
#: run one version: a frame of another is refused, naming both.
VERSION: Final = 3
#: Nesting allowed in a snapshot's JSON and in a predicate's expression. Bounded so that decoding
#: cannot exhaust the Python stack; deeper than anything faidecs writes.
MAX_DEPTH: Final = 100

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # the grammar's NAME: types and attributes
_KINDS = {k.value: k for k in Kind}
_ARITH_OPS = frozenset("+-*/")
_LITERAL_KINDS = {bool: Kind.BOOL, int: Kind.INT, float: Kind.FLOAT, str: Kind.STR}


class WireError(FaidecsError):
    """Bytes that are not a well-formed overlay message (or a message that cannot be encoded)."""


# --- the wire's types ----------------------------------------------------------------------------

Nat = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]
FromM1 = Annotated[int, msgspec.Meta(ge=-1, le=INT64_MAX)]  # positions and commits: -1 is "none yet"
KindName = Literal["int", "float", "str", "bool"]
#: Caps on what one message holds, far above any deployment's: msgspec checks a container's
#: length from its header before it decodes an item, so a peer cannot make a process build
#: millions of empty values out of a few megabytes. Every container a peer's message holds is
#: capped, or of a kind only trusted processes may send (authority.py: a log, a subscriber's state).
MAX_NAME: Final = 1024  # characters of a type's or an attribute's name
MAX_TYPES: Final = 4096  # types in a role or a filter, streams of a subscriber
MAX_ATTRIBUTES: Final = 4096  # attributes of an event type
MAX_ALTERNATIVES: Final = 65536  # alternatives of one type in a filter
MAX_PREDICATES: Final = 4096  # predicates of one alternative
MAX_ENTRIES: Final = 4096  # positions of one ForwardBatch (a deployment's max_batch is at most this)
Name = Annotated[str, msgspec.Meta(max_length=MAX_NAME)]
RoleWire = Annotated[tuple[Name, ...], msgspec.Meta(max_length=MAX_TYPES)]  # canonical: checked by _role
SeqsWire = Annotated[list[Nat], msgspec.Meta(min_length=1, max_length=MAX_ENTRIES)]
KeysWire = Annotated[tuple[str, ...], msgspec.Meta(max_length=MAX_TYPES)]
Scalar = bool | int | float | str


class _Array(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """A nested value sent as an array of its fields."""


class EventWire(_Array):
    id: str
    type: Name
    attributes: Annotated[list[tuple[Name, str]], msgspec.Meta(max_length=MAX_ATTRIBUTES)]
    values: Annotated[list[Scalar], msgspec.Meta(max_length=MAX_ATTRIBUTES)]
    publisher: str | None
    seq: Nat | None


class AttrWire(_Array, tag="attr"):
    type_name: str
    index: int
    attribute: str
    position: Nat
    kind: KindName


class ConstWire(_Array, tag="const"):
    value: bool | int | float | str
    kind: KindName


class NegWire(_Array, tag="neg"):
    operand: ValueWire
    kind: KindName


class ArithWire(_Array, tag="arith"):
    op: str
    left: ValueWire
    right: ValueWire
    kind: KindName


ValueWire = Union[AttrWire, ConstWire, NegWire, ArithWire]  # noqa: UP007 (a runtime alias msgspec reads)


class PredicateWire(_Array):
    op: str
    left: ValueWire
    right: ValueWire


AlternativeWire = Annotated[list[tuple[PredicateWire, tuple[Name, int]]], msgspec.Meta(max_length=MAX_PREDICATES)]
FilterWire = Annotated[
    list[tuple[Name, Annotated[list[AlternativeWire], msgspec.Meta(max_length=MAX_ALTERNATIVES)]]],
    msgspec.Meta(max_length=MAX_TYPES),
]


class DecisionWire(_Array):
    position: Nat
    epoch: Nat
    ts: Nat
    kind: EntryKind
    source: str
    key: FromM1
    consumer: str
    request: str
    filter: FilterWire | None


class EntryWire(_Array):
    position: Nat
    ts: Nat
    kind: EntryKind
    event: EventWire | None
    request: str
    filter: FilterWire | None


EntriesWire = Annotated[list[EntryWire], msgspec.Meta(min_length=1, max_length=MAX_ENTRIES)]
#: A Decide's batch: its sender is a replica of the same role (authority.py), trusted with the log.
BatchWire = Annotated[list[DecisionWire], msgspec.Meta(min_length=1)]


# --- scalar checks -------------------------------------------------------------------------------


def _name(v: Any) -> str:
    if type(v) is not str or not _NAME.fullmatch(v):
        raise BadField(f"expected a type or attribute name, got {what(v)} {show(v)}")
    return v


def _any_int(v: int) -> int:
    if not INT64_MIN <= v <= INT64_MAX:
        raise BadField(f"integer {v} outside [{INT64_MIN}, {INT64_MAX}]")
    return v


#: Roles decoded so far, each once: a process sees a handful.
_ROLES: dict[Role, Role] = {}


def _role(v: RoleWire) -> Role:
    known = _ROLES.get(v)
    if known is not None:
        return known
    role = _canonical(v)
    if len(_ROLES) >= 1024:
        _ROLES.clear()
    _ROLES[role] = role
    return role


@lru_cache(maxsize=1024)
def _canonical(role: Role) -> Role:
    """``role`` if it is one: a process sees a handful of roles, checked once each."""
    for i, name in enumerate(role):
        try:
            _name(name)
        except BadField as bad:
            raise bad.at(i) from None
    if not role or role != role_of(role):
        raise BadField(f"role {list(role)} is not canonical: types sorted by name, each once, at least one")
    return role


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
            raise bad.at(i) from None
        if kind not in _KINDS:
            raise BadField(f"unknown attribute kind {show(kind)} of {attribute!r}").at(i)
    if len({a for a, _ in attributes}) != len(attributes):
        raise BadField(f"type {name} declares an attribute twice")
    event_type = EventType(name, tuple(Attribute(a, _KINDS[k]) for a, k in attributes))
    return event_type, EventValidator({name: event_type}), _checker(event_type)


#: The largest integer a float attribute takes on the fast path: up to 2**53 every integer is a
#: float exactly, so converting it cannot depend on how the validator rounds.
_EXACT: Final = 2**53


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate; msgspec's strict UTF-8 decoding lets none through
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


class _Events:
    """How a decoder turns an :class:`EventWire` into an :class:`Event`. With ``declared`` types
    (a deployment's), an event must be of one of them, declared exactly so, and checked before
    anything is built for it: every type's validator and checker are built here, once, and no
    peer can make the decoder build or keep more. Without (``declared`` None: tools and tests that
    read any overlay message), any well-formed declaration is taken, and what is built for it is
    cached (at most 1,024 types, then the cache starts anew)."""

    def __init__(self, declared: Mapping[str, EventType] | None):
        self.open = declared is None
        #: The fast path's table: a type's name -> its declaration as the wire has it, ``[(attribute,
        #: kind), ...]``, and its type, validator and checker. An event whose declaration is equal
        #: to its type's entry skips the name and declaration checks.
        self.known: dict[str, tuple[list[tuple[str, str]], tuple[EventType, EventValidator, Checker]]] = {}
        for name, t in (declared or {}).items():
            self.known[name] = (list(_declaration(t)), (t, EventValidator({name: t}), _checker(t)))

    def event(self, v: EventWire | list[Any]) -> Event:
        """An event, checked as :class:`EventValidator` checks one. A plainly valid event (the
        common case) takes a fast path; anything else goes through the validator itself, so that
        it alone decides what is rejected and says why. (msgspec already checked the fields'
        types; a list is taken too, for a caller that has one.)"""
        if type(v) is list:
            event_id, type_name, attributes, values, publisher, seq = v
            v = EventWire(event_id, type_name, [tuple(pair) for pair in attributes], values, publisher, seq)
        assert isinstance(v, EventWire)
        known = self.known.get(v.type)
        if known is not None:
            event_id, values, publisher = v.id, v.values, v.publisher
            if (
                v.attributes == known[0]  # equal lists of equal (attribute, kind) pairs
                and len(values) == len(v.attributes)
                and event_id
                and (event_id.isascii() or _utf8(event_id))
                and (publisher is None or publisher.isascii() or _utf8(publisher))
            ):
                event_type, _, check = known[1]
                checked = check(values)
                if checked is not None:
                    return Event(event_id, event_type, checked, publisher, v.seq)
        return self._validated(v)

    def _type(self, v: EventWire) -> tuple[EventType, EventValidator, Checker]:
        """The type ``v`` declares, with its validator and checker."""
        known = self.known.get(v.type)
        if not self.open:
            if known is None:
                raise BadField(f"type {show(v.type)} is not declared in this deployment").at("type")
            if v.attributes != known[0]:
                declared = known[1][0].declaration()
                raise BadField(f"type {v.type} is declared in this deployment as {declared}").at("attributes")
            return known[1]
        try:
            _name(v.type)
        except BadField as bad:
            raise bad.at("type") from None
        try:
            built = _declared(v.type, tuple(v.attributes))
        except BadField as bad:
            raise bad.at("attributes") from None
        if len(self.known) >= 1024:
            self.known.clear()
        self.known[v.type] = (list(v.attributes), built)
        return built

    def _validated(self, v: EventWire) -> Event:
        """An event, through :class:`EventValidator`: the slow path, and the reference for the fast one."""
        event_type, validator, _ = self._type(v)
        names = [a.name for a in event_type.attributes]
        if len(v.values) != len(names):
            raise BadField(f"{len(v.values)} values for the {len(names)} attributes of {v.type}").at("values")
        try:
            attrs = dict(zip(names, v.values))
            return validator.validate(
                {"id": v.id, "type": v.type, "attrs": attrs, "publisher": v.publisher, "seq": v.seq}
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
    # Filters are unary predicates, and those never name prev() or an aggregate.
    assert isinstance(v, ArithOp), f"{type(v).__name__} in a filter"
    return ["arith", v.op, _encode_value(v.left), _encode_value(v.right), v.kind.value]


def _encode_filter(f: Filter) -> list[Any]:
    # Sorted, so that equal filters encode to equal bytes whatever the sets' iteration order.
    def alternative(alt: Alternative) -> list[Any]:
        return [[[p.op, _encode_value(p.left), _encode_value(p.right)], [s.type_name, s.index]] for p, s in alt]

    def order(alt: Alternative) -> tuple[tuple[str, int], ...]:
        return tuple((p.text, s.index) for p, s in alt)

    return [[t, [alternative(a) for a in sorted(alts, key=order)]] for t, alts in sorted(f.alternatives.items())]


def _value(v: ValueWire, slot: Slot, depth: int) -> Value:
    """A value of a predicate on ``slot``, its kind as the checker would give it."""
    if depth > MAX_DEPTH:
        raise BadField(f"expression nested deeper than {MAX_DEPTH}")
    if type(v) is AttrWire:
        if (v.type_name, v.index) != (slot.type_name, slot.index):
            raise BadField(f"attribute of {show(v.type_name)}[{show(v.index)}] in a predicate on {slot}")
        return AttrOf(slot, _name(v.attribute), v.position, _KINDS[v.kind])
    if type(v) is ConstWire:
        value, kind = v.value, _KINDS[v.kind]
        if _LITERAL_KINDS[type(value)] is not kind:
            raise BadField(f"constant {show(value)} is not of kind {show(v.kind)}")
        if type(value) is int:
            _any_int(value)
        if type(value) is float and not math.isfinite(value):
            raise BadField(f"constant {value!r} is not a finite number")
        return Const(value, kind)
    if type(v) is NegWire:
        inner = _value(v.operand, slot, depth + 1)
        if not inner.kind.numeric or _KINDS[v.kind] is not inner.kind:
            raise BadField(f"negation of a {inner.kind.value} value as {show(v.kind)}")
        return Negate(inner, inner.kind)
    assert type(v) is ArithWire
    if v.op not in _ARITH_OPS:
        raise BadField(f"unknown arithmetic operator {show(v.op)}")
    lv, rv = _value(v.left, slot, depth + 1), _value(v.right, slot, depth + 1)
    expected = Kind.INT if lv.kind is rv.kind is Kind.INT and v.op != "/" else Kind.FLOAT
    if not (lv.kind.numeric and rv.kind.numeric) or _KINDS[v.kind] is not expected:
        raise BadField(f"{lv.kind.value} {v.op} {rv.kind.value} as {show(v.kind)}")
    return ArithOp(v.op, lv, rv, expected)


def _predicate(v: PredicateWire, slot: Slot) -> Predicate:
    op = v.op
    if op not in FLIPPED:
        raise BadField(f"unknown comparison {show(op)}")
    lv, rv = _value(v.left, slot, 1), _value(v.right, slot, 1)
    lk, rk = lv.kind, rv.kind
    if not (lk.numeric and rk.numeric or lk is rk is Kind.STR or lk is rk is Kind.BOOL and op in ("=", "!=")):
        raise BadField(f"cannot compare {lk.value} {op} {rk.value}")
    if not value_slots(lv) | value_slots(rv):
        raise BadField("the predicate involves no event")
    pred = Predicate.make(op, lv, rv, Span.unknown())
    if (pred.op, pred.left, pred.right) != (op, lv, rv):
        raise BadField(f"predicate not in canonical orientation (expected {pred.text})")
    return pred


def _alternative(v: AlternativeWire, type_name: str) -> Alternative:
    out = []
    for i, (pred, (slot_type, index)) in enumerate(v):
        try:
            if slot_type != type_name or not 0 <= index <= MAX_INSTANCE_INDEX:
                raise BadField(
                    f"slot {show([slot_type, index])} is not an instance of {type_name} (index 0..{MAX_INSTANCE_INDEX})"
                )
            out.append((_predicate(pred, Slot(type_name, index)), Slot(type_name, index)))
        except BadField as bad:
            raise bad.at(i) from None
    return tuple(out)


def _filter(v: FilterWire) -> Filter:
    alternatives: dict[str, frozenset[Alternative]] = {}
    for i, (type_name, alts) in enumerate(v):
        try:
            if _name(type_name) in alternatives:
                raise BadField(f"type {type_name} listed twice")
        except BadField as bad:
            raise bad.at(i) from None
        try:
            decoded = []
            for k, alt in enumerate(alts):
                try:
                    decoded.append(_alternative(alt, type_name))
                except BadField as bad:
                    raise bad.at(k) from None
            unique = frozenset(decoded)
            if len(unique) != len(decoded):
                raise BadField("an alternative listed twice")
            if () in unique and len(unique) > 1:  # Filter keeps "accept all" alone (filters._normal)
                raise BadField("the empty alternative (accept all) with others")
        except BadField as bad:
            raise bad.at(type_name) from None
        alternatives[type_name] = ACCEPT_ALL if unique == ACCEPT_ALL else unique
    return Filter(alternatives)


def _optional_filter(v: FilterWire | None) -> Filter | None:
    return None if v is None else _filter(v)


def _encode_optional_filter(f: Filter | None) -> list[Any] | None:
    return None if f is None else _encode_filter(f)


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
                raise bad.at(key) from None
    else:
        raise BadField(f"{what(v)} is not JSON data")


def _snapshot(v: dict[str, Any]) -> dict[str, Any]:
    _json(v, 1)
    return v


def _by_role(
    role: Callable[[RoleWire], Role], decode: Callable[[Any], Any]
) -> Callable[[list[tuple[RoleWire, Any]]], dict[Role, Any]]:
    def decode_pairs(v: list[tuple[RoleWire, Any]]) -> dict[Role, Any]:
        out: dict[Role, Any] = {}
        for i, (role_wire, value) in enumerate(v):
            try:
                key = role(role_wire)
                if key in out:
                    raise BadField(f"role {list(key)} listed twice")
                out[key] = decode(value)
            except BadField as bad:
                raise bad.at(i) from None
        return out

    return decode_pairs


def _pairs(d: dict[Role, Any]) -> list[Any]:
    return [[role, value] for role, value in d.items()]


# --- layouts ---------------------------------------------------------------------------------------


class _Field:
    """One field: its type on the wire (what msgspec checks), and how its value becomes the
    core's (``decode``, raising :class:`BadField`) and back (``encode``); None: as it is."""

    def __init__(
        self, wire: Any, decode: Callable[[Any], Any] | None = None, encode: Callable[[Any], Any] | None = None
    ):
        self.wire, self.decode, self.encode = wire, decode, encode


class _Record:
    """A dataclass of the core and the struct it travels as: ``build`` makes the dataclass of a
    decoded struct, checking what the types do not say; ``encode`` makes the struct (after the
    ``prefix`` values, the frame's version and code) of the dataclass. Both are generated code,
    one line per field, no loop and no reflection per message; only field positions and names
    of the core's dataclasses go into the source."""

    def __init__(self, cls: type, wire: type[msgspec.Struct], prefix: tuple[int, ...], fields: dict[str, _Field]):
        self.cls, self.wire, self.name = cls, wire, cls.__name__
        names = tuple(fields)
        declared = (
            cls.__struct_fields__
            if issubclass(cls, msgspec.Struct)
            else tuple(f.name for f in dataclass_fields(cast(Any, cls)))
        )
        assert names == declared, f"{cls.__name__}: layout != fields"
        namespace: dict[str, Any] = {"cls": cls, "wire": wire, "BadField": BadField}
        lines, args, encoded = ["def build(w):"], [], [str(p) for p in prefix]
        for i, (name, field) in enumerate(fields.items()):
            if field.decode is None:
                args.append(f"w.{name}")
            else:
                namespace[f"d{i}"] = field.decode
                lines += [f"    try: a{i} = d{i}(w.{name})", f"    except BadField as bad: raise bad.at({name!r})"]
                args.append(f"a{i}")
            if field.encode is None:
                encoded.append(f"m.{name}")
            else:
                namespace[f"e{i}"] = field.encode
                encoded.append(f"e{i}(m.{name})")
        lines.append(f"    return cls({', '.join(args)})")
        lines += ["def encode(m):", f"    return wire({', '.join(encoded)})"]
        exec("\n".join(lines), namespace)  # noqa: S102 - only the dataclass's own field names
        self.build: Callable[[Any], Any] = namespace["build"]
        self.encode: Callable[[Any], msgspec.Struct] = namespace["encode"]


_DECISION_FIELDS = dict(
    position=_Field(Nat),
    epoch=_Field(Nat),
    ts=_Field(Nat),
    kind=_Field(EntryKind),
    source=_Field(str),
    key=_Field(FromM1),
    consumer=_Field(str),
    request=_Field(str),
    filter=_Field(FilterWire | None, _optional_filter, _encode_optional_filter),
)
_DECISION = _Record(Decision, DecisionWire, (), _DECISION_FIELDS)
assert [(f.name, f.type) for f in msgspec.structs.fields(DecisionWire)] == [
    (name, f.wire) for name, f in _DECISION_FIELDS.items()
], "DecisionWire != its layout"


def _each(record: _Record, v: list[Any]) -> tuple[Any, ...]:
    """Every item of ``v`` built by ``record``; a bad one is named by its index."""
    out = []
    for i, item in enumerate(v):
        try:
            out.append(record.build(item))
        except BadField as bad:
            raise bad.at(i) from None
    return tuple(out)


def _decisions(v: list[DecisionWire]) -> tuple[Decision, ...]:
    return _each(_DECISION, v)


def _encode_optional_event(e: Event | None) -> list[Any] | None:
    return None if e is None else _encode_event(e)


STR, NAT, FROM_M1 = _Field(str), _Field(Nat), _Field(FromM1)
KIND, BOOL = _Field(EntryKind), _Field(bool)
FILTER = _Field(FilterWire, _filter, _encode_filter)
OPT_FILTER = _DECISION_FIELDS["filter"]
DECISION = _Field(DecisionWire, _DECISION.build, _DECISION.encode)
DECISIONS = _Field(list[DecisionWire], _decisions, lambda ds: [_DECISION.encode(d) for d in ds])
BATCH = _Field(BatchWire, _decisions, DECISIONS.encode)

#: The message kinds' codes: never renumber one; a new kind takes the next code.
CODES: Final[dict[type, int]] = {
    cls: code
    for code, cls in enumerate(
        (Publish, Connect, Disconnect, Forward, Ack, Register, Decide, Holds, Commit, EpochQuery, EpochState)
        + (NewLog, LeaderChange, Down, Up, JoinRequest, JoinState, MarkerRequest, MarkerReply, Fetch, ForwardBatch)
        + (Ordered,),
        start=1,
    )
}
#: code -> message kind
KINDS: Final[dict[int, type]] = {code: cls for cls, code in CODES.items()}


def _layouts(role: Callable[[RoleWire], Role], event: Callable[[EventWire], Event]) -> dict[type, dict[str, _Field]]:
    """Every kind's fields, with ``role`` and ``event`` deciding what roles and events are taken."""
    ROLE = _Field(RoleWire, role)  # noqa: N806 - a field like the constants above
    EVENT = _Field(EventWire, event, _encode_event)  # noqa: N806
    OPT_EVENT = _Field(  # noqa: N806
        EventWire | None, lambda v: None if v is None else event(v), _encode_optional_event
    )
    entry = _Record(
        Entry, EntryWire, (), dict(position=NAT, ts=NAT, kind=KIND, event=OPT_EVENT, request=STR, filter=OPT_FILTER)
    )

    ENTRIES = _Field(EntriesWire, lambda v: _each(entry, v), lambda es: [entry.encode(e) for e in es])  # noqa: N806
    return {
        Publish: dict(publisher=STR, seq=NAT, event=EVENT, prev=FROM_M1),
        Connect: dict(role=ROLE, consumer=STR, process=STR, after=FROM_M1),
        Disconnect: dict(role=ROLE, consumer=STR, process=STR),
        Forward: dict(
            role=ROLE, position=NAT, ts=NAT, kind=KIND, event=OPT_EVENT, consumer=STR, request=STR, filter=OPT_FILTER
        ),
        Ack: dict(role=ROLE, consumer=STR, process=STR, position=FROM_M1),
        Register: dict(role=ROLE, consumer=STR, request=STR, filter=FILTER),
        Decide: dict(role=ROLE, epoch=NAT, decisions=BATCH, commit=FROM_M1),
        Holds: dict(role=ROLE, epoch=NAT, replica=STR, length=NAT),
        Commit: dict(role=ROLE, epoch=NAT, commit=FROM_M1),
        EpochQuery: dict(role=ROLE, epoch=NAT, leader=STR),
        EpochState: dict(role=ROLE, epoch=NAT, replica=STR, log_epoch=NAT, decisions=DECISIONS, commit=FROM_M1),
        NewLog: dict(role=ROLE, epoch=NAT, decisions=DECISIONS, commit=FROM_M1),
        LeaderChange: dict(role=ROLE, leader=STR, epoch=NAT),
        Down: dict(process=STR),
        Up: dict(process=STR),
        JoinRequest: dict(joiner=STR, keys=_Field(KeysWire)),
        JoinState: dict(
            peer=STR,
            snapshots=_Field(list[tuple[RoleWire, dict[str, Any]]], _by_role(role, _snapshot), _pairs),
            positions=_Field(list[tuple[RoleWire, FromM1]], _by_role(role, lambda position: position), _pairs),
            ok=BOOL,
            marker=_Field(Nat | None),
        ),
        MarkerRequest: dict(
            role=ROLE, consumer=STR, process=STR, filter=FILTER, heartbeats=BOOL, after=_Field(FromM1 | None)
        ),
        MarkerReply: dict(role=ROLE, consumer=STR, position=FROM_M1, ts=NAT, ok=BOOL),
        Fetch: dict(role=ROLE, replica=STR, position=NAT),
        ForwardBatch: dict(role=ROLE, consumer=STR, entries=ENTRIES),
        Ordered: dict(role=ROLE, publisher=STR, seqs=_Field(SeqsWire, tuple, list)),
    }


def _frame(cls: type, fields: dict[str, _Field]) -> type[Frame]:
    """The struct a message of ``cls`` travels as: ``[version, code, fields...]``."""
    frame = msgspec.defstruct(
        f"{cls.__name__}Frame",
        [(name, f.wire) for name, f in fields.items()],
        bases=(Frame,),
        array_like=True,
        forbid_unknown_fields=True,
        module=__name__,
    )
    assert issubclass(frame, Frame)
    return frame


_OPEN = _Events(None)
_LAYOUTS = _layouts(_role, _OPEN.event)
_FRAMES = {cls: _frame(cls, _LAYOUTS[cls]) for cls in CODES}
_BY_CLASS = {cls: _Record(cls, _FRAMES[cls], (VERSION, code), _LAYOUTS[cls]) for cls, code in CODES.items()}
_BY_CODE = {code: _BY_CLASS[cls] for cls, code in CODES.items()}
_CODEC = FrameCodec(VERSION, WireError, {code: (cls.__name__, _FRAMES[cls]) for cls, code in CODES.items()})


def encode(msg: Message) -> bytes:
    """``msg`` as one msgpack array ``[VERSION, code, fields...]``."""
    record = _BY_CLASS.get(type(msg))
    if record is None:
        raise WireError(f"cannot encode {type(msg).__name__}: not an overlay message")
    return _CODEC.encode(record.name, record.encode(msg))


def decode(data: bytes) -> Message:
    """The message ``data`` holds, all of it; :class:`WireError` saying what and where otherwise.
    Any well-formed role and event type is taken: a deployment's processes decode with
    :class:`Declared` instead."""
    name, frame = _CODEC.decode(data)
    msg: Message = _CODEC.guard(name, _BY_CODE[frame.code].build, frame)
    return msg


class Declared:
    """:func:`decode` for one deployment: a role must be one of ``roles``, an event's type one of
    ``types``, declared exactly so. What a peer sends is checked against these before anything is
    built for it, and nothing it sends is kept: every type's checker is built here, at the start
    (:class:`_Events`)."""

    def __init__(self, types: Mapping[str, EventType], roles: Iterable[Role]):
        self.roles = {role: role for role in roles}
        self.events = events = _Events(types)
        layouts = _layouts(self._role, events.event)
        self._by_code = {code: _Record(cls, _FRAMES[cls], (VERSION, code), layouts[cls]) for cls, code in CODES.items()}

    def _role(self, v: RoleWire) -> Role:
        role = self.roles.get(v)
        if role is None:
            raise BadField(f"role {show(list(v))} is not one of this deployment's")
        return role

    def decode(self, data: bytes) -> Message:
        """The message ``data`` holds, of this deployment; :class:`WireError` otherwise."""
        name, frame = _CODEC.decode(data)
        msg: Message = _CODEC.guard(name, self._by_code[frame.code].build, frame)
        return msg


def kind_of(data: bytes) -> type | None:
    """The message kind ``data`` says it is, read off its head alone; None when it says none."""
    code = _CODEC.code_of(data)
    return KINDS.get(code) if code is not None else None


__all__ = ["CODES", "KINDS", "MAX_DEPTH", "VERSION", "Declared", "WireError", "decode", "encode", "kind_of"]
