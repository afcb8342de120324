"""Versioned msgpack framing on msgspec, shared by the wire formats of the overlay
(:mod:`faidecs.overlay.runtime.wire`) and of the ordering layers (:mod:`faidecs.ordering.wire`).

A message is one msgpack array ``[version, code, field, ...]``: the format version, the message
kind's code and its fields in order. Each kind is described once, as a :class:`msgspec.Struct`
with ``array_like=True`` whose first two fields are ``version`` and ``code`` (:class:`Frame`);
msgspec decodes and type-checks the bytes against it in C, strictly (no bin or ext value where a
string is expected, a bool is not an int, integers within their ``Meta`` bounds, no missing or
extra field). msgspec's tagged unions cannot dispatch on the second element, so the kind is read
first (off the first three bytes, or with a two-field head), then the frame with that kind's decoder.

Why msgspec: one declaration per message drives both the checks and the errors, and decoding into
typed structs is faster than unpacking into lists and checking every field in Python.

:class:`FrameCodec` turns every failure into the wire module's error (a
:class:`~faidecs.errors.FaidecsError`) naming the message kind and the field path, e.g.
``Decide.decision.position: expected an integer, got a boolean``: a msgspec error's path is
translated into the frame's field names (:func:`explain`), and what the modules check beyond
types (:class:`~faidecs.fieldpath.BadField`) is reported the same way (:meth:`FrameCodec.fail`).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Generic, TypeVar

import msgspec
from msgspec import inspect as mi

from faidecs.errors import FaidecsError
from faidecs.fieldpath import BadField, show

#: The largest message a process reads: ZeroMQ refuses a larger one before it is read (a join's
#: snapshots are the largest). Here, not in the transport, so that what has to fit into it (a
#: deployment's batches) is checked without pyzmq.
MAX_MESSAGE = 256 << 20

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class Frame(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """The first two elements of every message; a kind's frame adds its fields after them."""

    version: int
    code: int


class _Head(msgspec.Struct, array_like=True):
    """``[version, code, ...]``, the rest skipped: which decoder to use."""

    version: Any
    code: Any


_WORDS: dict[type, str] = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", bytes: "bytes"}
_WORDS.update({list: "an array", dict: "a map", type(None): "nil", tuple: "an array"})
_WORDS.update({msgspec.msgpack.Ext: "an extension", datetime.datetime: "a timestamp"})


def what(value: Any) -> str:
    """The kind of a decoded value, as errors say it: ``an integer``, ``a map``..."""
    return _WORDS.get(type(value), type(value).__name__)


_AT = re.compile(r"^(?P<reason>.*?)(?: - at (?:`key` in )?`\$(?P<path>[^`]*)`)?$", re.DOTALL)
_STEP = re.compile(r"\[(\d+|\.\.\.)\]|\.([A-Za-z_][A-Za-z0-9_]*)")
_LENGTH = re.compile(r"Expected `array` of (?:(at least|at most) )?length (\d+), got (\d+)")
_CAP = re.compile(r"Expected `array` of length (<=|>=) (\d+)")
_MISSING = object()
_BOUNDS = {"<=": "at most", ">=": "at least"}


def _expected(info: mi.Type) -> str:
    if isinstance(info, mi.IntType):
        return "an integer"
    if isinstance(info, mi.StrType):
        return "a string"
    if isinstance(info, mi.BoolType):
        return "a boolean"
    if isinstance(info, mi.FloatType):
        return "a float"
    if isinstance(info, mi.NoneType):
        return "nil"
    if isinstance(info, mi.LiteralType):
        return f"one of {sorted(info.values, key=str)}"
    if isinstance(info, mi.DictType):
        return "a map"
    if isinstance(info, mi.UnionType):
        return " or ".join(_expected(t) for t in info.types)
    return "an array"


#: Messages larger than this are not decoded a second time to explain what is wrong with them.
EXPLAIN_LIMIT = 1 << 20


def _array_length(data: bytes) -> int | None:
    """The length of the msgpack array that ``data`` starts with, read off its header alone."""
    if not data:
        return None
    first = data[0]
    if first >> 4 == 9:  # fixarray
        return first & 0x0F
    if first == 0xDC and len(data) >= 3:  # array 16
        return int.from_bytes(data[1:3], "big")
    if first == 0xDD and len(data) >= 5:  # array 32
        return int.from_bytes(data[1:5], "big")
    return None


def _count_reason(names: Sequence[str], count: int) -> str:
    """What is wrong with ``count`` fields where ``names`` are expected."""
    if count < len(names):
        return f"missing field(s) {', '.join(names[max(count, 0) :])}"
    return f"{count - len(names)} extra field(s) after its {len(names)} ({', '.join(names)})"


def _fields(info: mi.StructType) -> list[str]:
    return [f.name for f in info.fields]


def _reason(info: mi.Type, value: Any, message: str, key: bool) -> str:
    """What is wrong with ``value`` where ``info`` is expected, in the words of the codecs' errors."""
    if key:
        return f"map key {show(value)} is not a string" if value is not _MISSING else "a map key is not a string"
    if isinstance(info, mi.UnionType):
        tagged = [t for t in info.types if isinstance(t, mi.StructType) and t.tag is not None]
        if tagged and message.startswith("Invalid value"):
            tags = sorted(str(t.tag) for t in tagged)
            return f"expected an array tagged one of {tags}, got tag {message[len('Invalid value ') :]}"
        others = [t for t in info.types if not isinstance(t, mi.NoneType)]
        if len(others) == 1 and value is not None:  # an optional value: what is wrong with the value
            return _reason(others[0], value, message, key)
    length = _LENGTH.match(message)
    if length is not None and isinstance(info, mi.StructType) and isinstance(value, list):
        names = _fields(info)
        offset = 1 if info.tag is not None else 0
        if issubclass(info.cls, Frame):  # version and code: the head, not the message's fields
            names, offset = names[2:], 2
        return _count_reason(names, len(value) - offset)
    cap = _CAP.match(message)
    if cap is not None:
        bound, n = cap.groups()
        size = f", got {len(value)}" if type(value) is list else ""
        return f"expected an array of {_BOUNDS[bound]} {n} items{size}"
    if length is not None:
        bound, n, got = length.groups()
        return f"expected an array of {f'{bound} ' if bound else ''}{n} items, got {got}"
    if value is _MISSING:
        return message[:1].lower() + message[1:]
    if isinstance(info, mi.IntType) and type(value) is int:
        lo = INT64_MIN if info.ge is None else info.ge
        hi = INT64_MAX if info.le is None else info.le
        return f"integer {value} outside [{lo}, {hi}]"
    if isinstance(info, mi.LiteralType):
        return f"expected one of {sorted(info.values, key=str)}, got {what(value)} {show(value)}"
    if isinstance(info, mi.StrType) and type(value) is str and info.max_length is not None:
        return f"expected {info.min_length or 0} to {info.max_length} characters, got {len(value)}"
    if isinstance(info, mi.StrType) and type(value) is str:  # a length or pattern constraint
        return message[:1].lower() + message[1:] + f", got {show(value)}"
    return f"expected {_expected(info)}, got {what(value)}"


@lru_cache(maxsize=256)
def _type_info(frame: type) -> mi.Type:
    """msgspec's description of ``frame``, once per frame: a peer may send many bad messages."""
    return mi.type_info(frame)


def explain(error: msgspec.ValidationError, frame: type, items: Any) -> BadField:
    """``error``, raised decoding ``frame``, as a :class:`BadField` whose path names the frame's
    fields; ``items``: the same bytes decoded without a type (``_MISSING`` where unknown)."""
    text = str(error)
    match = _AT.match(text)
    assert match is not None
    reason, path = match["reason"], match["path"] or ""
    key = "`key` in `$" in text
    info: mi.Type = _type_info(frame)
    value = items
    steps: list[str | int] = []
    for number, name in _STEP.findall(path):
        while isinstance(info, mi.UnionType):  # the member the value is of
            member = _member(info, value)
            if member is info:
                break
            info = member
        index = int(number) if number and number != "..." else None
        if isinstance(info, mi.UnionType) and index == 0:  # the tag of a tagged union's member: unknown
            break
        if isinstance(info, mi.StructType) and index is not None:
            offset = 1 if info.tag is not None else 0
            field = info.fields[index - offset] if index >= offset else None
            steps.append(field.name if field is not None else "tag")
            info = field.type if field is not None else mi.AnyType()
        elif isinstance(info, mi.StructType):
            field = next(f for f in info.fields if f.encode_name == name)
            steps.append(field.name)
            info = field.type
            index = None
        elif isinstance(info, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
            steps.append(index if index is not None else "...")
            info = info.item_type
        elif isinstance(info, mi.TupleType) and index is not None:
            steps.append(index)
            info = info.item_types[index]
        elif isinstance(info, mi.DictType):
            steps.append("...")
            info = info.value_type
            value = _MISSING
            continue
        else:  # a path msgspec gave that the type does not have: say it as msgspec did
            steps.append(index if index is not None else name)
            info = mi.AnyType()
        if index is not None and type(value) is list and index < len(value):
            value = value[index]
        else:
            value = _MISSING
    while isinstance(info, mi.UnionType) and not key:
        member = _member(info, value)
        if member is info or isinstance(member, mi.UnionType):
            break
        if isinstance(member, mi.StructType) and reason.startswith("Invalid value"):
            break  # an unknown tag: the union itself says what it takes
        info = member
    if key:  # the path leads to the map: its first key that is not a string
        value = next((k for k in value if type(k) is not str), _MISSING) if type(value) is dict else _MISSING
    bad = BadField(_reason(info, value, reason, key))
    for step in reversed(steps):
        bad.at(step)
    return bad


def _member(info: mi.UnionType, value: Any) -> mi.Type:
    """The member of ``info`` that ``value`` was meant to be."""
    members = [t for t in info.types if not isinstance(t, mi.NoneType)]
    if value is None and len(members) < len(info.types):
        return mi.NoneType()
    tagged = [t for t in members if isinstance(t, mi.StructType) and t.tag is not None]
    if tagged:
        tag = value[0] if type(value) is list and value else _MISSING
        found = next((t for t in tagged if t.tag == tag), None)
        return found if found is not None else info
    if len(members) == 1:
        return members[0]
    return info


E = TypeVar("E", bound=FaidecsError)


class FrameCodec(Generic[E]):
    """Decodes ``[version, code, fields...]`` into the frame of kind ``code``, raising ``error``.

    ``kinds``: code -> (the message's name, its frame). ``version``: the format version this side
    reads and writes. ``shape``: what a message looks like, for the error about one that does not."""

    def __init__(
        self,
        version: int,
        error: type[E],
        kinds: Mapping[int, tuple[str, type[Frame]]],
        shape: str = "a message [version, kind, fields...]",
    ):
        self.version, self.shape = version, shape
        self.error = error
        self.kinds = dict(kinds)
        self._head = msgspec.msgpack.Decoder(_Head)
        self._decoders: dict[int, tuple[str, type[Frame], msgspec.msgpack.Decoder[Any]]] = {
            code: (name, frame, msgspec.msgpack.Decoder(frame)) for code, (name, frame) in self.kinds.items()
        }
        self._encoder = msgspec.msgpack.Encoder()

    def encode(self, name: str, frame: msgspec.Struct) -> bytes:
        """``frame`` as bytes; ``error`` if msgpack cannot carry a value (an int beyond 64 bits...)."""
        try:
            return self._encoder.encode(frame)
        except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as exc:
            raise self.error(f"cannot encode {name}: {exc}") from None

    def decode(self, data: bytes) -> tuple[str, Frame]:
        """The message's name and its frame, type-checked; ``error`` saying what and where otherwise."""
        # The common case read off the bytes, without decoding the head: a fixarray, the version
        # and the code as positive fixints (every code is below 128, and no frame has 16 fields).
        kind = self._decoders.get(data[2]) if len(data) > 2 and data[0] >> 4 == 9 and data[1] == self.version else None
        if kind is None:
            kind = self._kind(data)
        name, frame, decoder = kind
        try:
            return name, decoder.decode(data)
        except msgspec.ValidationError as exc:
            # A wrong number of fields is said from the array's header: explaining it from the
            # decoded items would decode a peer's frame of millions of items in full.
            count = _array_length(data)
            names = frame.__struct_fields__[2:]
            if count is not None and count != len(names) + 2:
                raise self.fail(name, BadField(_count_reason(names, count - 2))) from None
            items = self._untyped(data)
            try:
                # Past the limit (no items to follow), or on a path this module cannot follow:
                # msgspec's own words, with their path into the message.
                bad = explain(exc, frame, items) if items is not _MISSING else BadField(str(exc))
            except Exception:
                bad = BadField(str(exc))
            raise self.fail(name, bad) from None
        except msgspec.DecodeError as exc:
            raise self._malformed(data, exc) from None
        except Exception as exc:  # UnicodeDecodeError, RecursionError...
            raise self.error(f"not a msgpack message ({type(exc).__name__}: {exc})") from None

    def code_of(self, data: bytes) -> int | None:
        """The kind's code ``data`` starts with, read off its head alone (the rest is not decoded);
        None when it is not one of this format's kinds."""
        if len(data) > 2 and data[0] >> 4 == 9 and data[1] == self.version and data[2] in self._decoders:
            return data[2]
        try:
            head = self._head.decode(data)
        except Exception:  # noqa: BLE001 - not a frame: the decoding says why, if it is tried
            return None
        code = head.code
        return code if type(code) is int and head.version == self.version and code in self._decoders else None

    def _kind(self, data: bytes) -> tuple[str, type[Frame], msgspec.msgpack.Decoder[Any]]:
        """The kind ``data`` says it is, from a decoded head; ``error`` if none."""
        try:
            head = self._head.decode(data)
        except msgspec.ValidationError:
            raise self._not_a_frame(data) from None
        except msgspec.DecodeError as exc:
            raise self._malformed(data, exc) from None
        except Exception as exc:  # msgspec.DecodeError, RecursionError, UnicodeDecodeError...
            raise self.error(f"not a msgpack message ({type(exc).__name__}: {exc})") from None
        version, code = head.version, head.code
        if type(version) is not int or version != self.version:
            raise self.error(f"unknown format version {show(version)} (this side reads version {self.version})")
        kind = self._decoders.get(code) if type(code) is int else None
        if kind is None:
            raise self.error(f"unknown message kind {show(code)}")
        return kind

    def fail(self, name: str, bad: BadField) -> E:
        """The error for ``bad``, found in message ``name``."""
        return self.error(f"{name}{'.' + bad.where() if bad.path else ''}: {bad.reason}")

    def guard(self, name: str, build: Callable[..., Any], *args: Any) -> Any:
        """``build(*args)``, its :class:`BadField` as :meth:`fail` says it, any other exception as
        an internal error: a bug in a check must cost one message, not the receiving process.
        (Arguments rather than a closure: the overlay calls it for every message it receives.)"""
        try:
            return build(*args)
        except BadField as bad:
            raise self.fail(name, bad) from None
        except Exception as exc:
            raise self.error(f"{name}: internal error while decoding ({type(exc).__name__}: {exc})") from exc

    def _untyped(self, data: bytes) -> Any:
        """``data`` decoded without a type, to explain what is wrong with it; ``_MISSING`` for
        messages over :data:`EXPLAIN_LIMIT`, which are not decoded a second time."""
        if len(data) > EXPLAIN_LIMIT:
            return _MISSING
        try:
            return msgspec.msgpack.decode(data)
        except Exception as exc:
            raise self.error(f"not a msgpack message ({type(exc).__name__}: {exc})") from None

    def _malformed(self, data: bytes, exc: msgspec.DecodeError) -> E:
        trailing = re.search(r"trailing characters \(byte (\d+)\)", str(exc))
        if trailing is not None:
            return self.error(f"{len(data) - int(trailing[1])} trailing byte(s) after the message")
        return self.error(f"not a msgpack message ({type(exc).__name__}: {exc})")

    def _not_a_frame(self, data: bytes) -> E:
        items = self._untyped(data)
        if items is _MISSING:
            return self.error(f"expected {self.shape}, got {len(data)} bytes of something else")
        return self.error(f"expected {self.shape}, got {what(items)} {show(items)}")


__all__ = ["MAX_MESSAGE", "INT64_MAX", "INT64_MIN", "Frame", "FrameCodec", "explain", "what"]
