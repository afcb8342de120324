"""Events, and their validation at the boundary.

Input events are validated once, with pydantic, against their declared type. What comes out is
an :class:`Event`: a small immutable record whose values sit in a tuple in declaration order, so
the matchers read attributes by position and never pay for validation again.

A plainly valid event given as a ``dict`` takes a fast path of exact type checks
(:mod:`faidecs.matching.fast_validation`) that gives the same :class:`Event` pydantic would; any
other input, and every invalid one, goes through pydantic, which alone says what is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from faidecs.brief import brief, digits
from faidecs.errors import EventError
from faidecs.grammar.model import EventType, Kind
from faidecs.matching.fast_validation import AttrsChecker, attrs_checker, encodes

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# Integers are bounded to 64 bits at the boundary so that every matcher (the compiled ones too)
# computes on the same values. A float attribute accepts an integer (converted to float).
_FIELD_TYPES: dict[Kind, Any] = {
    Kind.INT: Annotated[StrictInt, Field(ge=INT64_MIN, le=INT64_MAX)],
    Kind.FLOAT: float,
    Kind.STR: StrictStr,
    Kind.BOOL: bool,
}


@dataclass(frozen=True, slots=True)
class Event:
    """A validated event. ``values`` follow the attribute order of ``event_type``."""

    id: str
    event_type: EventType
    values: tuple[Any, ...]
    publisher: str | None = None
    seq: int | None = None

    @property
    def type(self) -> str:
        return self.event_type.name

    @property
    def attrs(self) -> dict[str, Any]:
        return {a.name: v for a, v in zip(self.event_type.attributes, self.values)}

    def to_json(self) -> dict[str, Any]:
        """The input JSON shape: ``{"id", "type", "attrs"}`` plus publisher/seq when set."""
        out: dict[str, Any] = {"id": self.id, "type": self.type, "attrs": self.attrs}
        if self.publisher is not None:
            out["publisher"] = self.publisher
        if self.seq is not None:
            out["seq"] = self.seq
        return out

    def __repr__(self) -> str:
        attrs = ", ".join(f"{k}={v!r}" for k, v in self.attrs.items())
        return f"{self.id}:{self.type}({attrs})"


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    id: Annotated[StrictStr, Field(min_length=1)] | None = None
    type: StrictStr
    attrs: dict[str, Any] = Field(default_factory=dict)
    publisher: StrictStr | None = None
    # Bounded to 64 bits like an int attribute: the wire and the run log store it as one.
    seq: Annotated[StrictInt, Field(ge=0, le=INT64_MAX)] | None = None


_ENVELOPE_FIELDS = frozenset(_Envelope.model_fields)

#: What a missing ``attrs`` stands for on the fast path (as the envelope's default does); never
#: written to.
_NO_ATTRS: dict[str, Any] = {}

_KIND_WORDS = {Kind.INT: "an integer", Kind.FLOAT: "a number", Kind.STR: "a string", Kind.BOOL: "true or false"}


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


@lru_cache(maxsize=1024)
def _adapter_for(event_type: EventType) -> TypeAdapter[Any]:
    """The pydantic adapter of one declared type. Building one costs far more than validating an
    event, and engines of the same program (replicas, lab runs) share their types."""
    # A TypedDict rather than a model: attribute names such as `json` or `copy` would clash with
    # BaseModel's own members.
    fields = {a.name: _FIELD_TYPES[a.kind] for a in event_type.attributes}
    schema = TypedDict(f"Event_{event_type.name}", fields)  # type: ignore[misc]
    schema.__pydantic_config__ = ConfigDict(extra="forbid", strict=True)  # type: ignore[attr-defined]
    return TypeAdapter(schema)


class EventValidator:
    """Validates input events against a set of declared types. One pydantic adapter per type
    is built once and reused."""

    def __init__(self, types: Mapping[str, EventType]):
        self._types = types
        self._adapters: dict[str, TypeAdapter[Any]] = {}
        self._checkers: dict[str, tuple[EventType, AttrsChecker]] = {}

    def _adapter(self, event_type: EventType) -> TypeAdapter[Any]:
        adapter = self._adapters.get(event_type.name)
        if adapter is None:
            adapter = self._adapters[event_type.name] = _adapter_for(event_type)
        return adapter

    def _checker(self, event_type: EventType) -> AttrsChecker:
        """Fetch (or build) the fast checker of ``event_type`` and keep it under its name: the
        shared cache hashes the whole type, which costs more than validating an event."""
        checker = attrs_checker(event_type, INT64_MIN, INT64_MAX)
        self._checkers[event_type.name] = (event_type, checker)
        return checker

    def validate(self, obj: Any, *, default_id: str | None = None, line: int | None = None) -> Event:
        """Validate one event in the input JSON shape; raise :class:`EventError` saying where and what."""
        if type(obj) is dict:
            event = self._validate_fast(obj, default_id)
            if event is not None:
                return event
        return self._validate_slow(obj, default_id=default_id, line=line)

    def _validate_fast(self, obj: dict[Any, Any], default_id: str | None) -> Event | None:
        """The event :meth:`_validate_slow` would return for ``obj`` when ``obj`` is plainly valid,
        else ``None``. Only exact types are taken (pydantic converts subclasses, which is not worth
        copying), and nothing is rejected here: a ``None`` sends the event to pydantic."""
        for key in obj:
            # Exact str keys: pydantic reads a key by its text, while `in` and `get` would let a
            # key of another type that merely compares equal stand for a field.
            if type(key) is not str or key not in _ENVELOPE_FIELDS:
                return None
        type_name = obj.get("type")
        if type(type_name) is not str:
            return None
        event_type = self._types.get(type_name)
        if event_type is None:
            return None
        event_id = obj.get("id")
        if event_id is None:
            # The default id is taken as given, unchecked but for lone surrogates.
            event_id = default_id
            if type(event_id) is not str:
                return None
        elif type(event_id) is not str or not event_id:
            return None
        if not (event_id.isascii() or encodes(event_id)):
            return None
        publisher = obj.get("publisher")
        if publisher is not None and (type(publisher) is not str or not (publisher.isascii() or encodes(publisher))):
            return None
        seq = obj.get("seq")
        # Bounded as the envelope model bounds it.
        if seq is not None and (type(seq) is not int or not 0 <= seq <= INT64_MAX):
            return None
        attrs = obj.get("attrs", _NO_ATTRS)
        if type(attrs) is not dict:  # pydantic copies dict subclasses; None is an error
            return None
        entry = self._checkers.get(type_name)
        # By identity: a type declared again under its name must not keep the old checker.
        checker = entry[1] if entry is not None and entry[0] is event_type else self._checker(event_type)
        values = checker(attrs)
        if values is None:
            return None
        return Event(event_id, event_type, values, publisher, seq)

    def _validate_slow(self, obj: Any, *, default_id: str | None = None, line: int | None = None) -> Event:
        """:meth:`validate` through pydantic alone: the reference the fast path is tested against,
        and the path of every event the fast path does not take, so of every error."""
        if not isinstance(obj, Mapping):
            raise EventError(f"an event must be a JSON object, not {_json_kind(obj)}", line=line)
        raw_id = obj.get("id")
        # Name the event in messages by its own id; by the default id only when it has none.
        shown_id = raw_id if isinstance(raw_id, str) else (default_id if raw_id is None else None)
        try:
            env = _Envelope.model_validate(dict(obj))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = brief(".".join(str(p) for p in err["loc"]))
            if err["type"] == "extra_forbidden":
                reason = f"unknown field {field}; an event has id, type, attrs, publisher and seq"
            elif err["type"] == "missing":
                reason = f"missing field {field}"
            else:
                reason = f"field {field}: {err['msg'].lower()}, got {_json_kind(err.get('input'))}"
            raise EventError(reason, line=line, event_id=shown_id) from None
        event_id = env.id if env.id is not None else default_id
        if event_id is None:
            raise EventError("the event has no id", line=line)
        event_type = self._types.get(env.type)
        if event_type is None:
            declared = ", ".join(sorted(self._types)) or "none"
            raise EventError(
                f"unknown event type {brief(env.type)} (declared types: {declared})", line=line, event_id=event_id
            )
        names = ", ".join(f"{a.name}: {a.kind.value}" for a in event_type.attributes) or "no attributes"
        for key in env.attrs:
            # pydantic reports an attribute name it cannot read (a lone surrogate) as a bad value
            # of no attribute: name it here. (No declared name has one.)
            if isinstance(key, str) and not encodes(key):
                raise EventError(
                    f"unknown attribute ({event_type.name} has {names}); its name contains a lone surrogate escape",
                    line=line,
                    event_id=event_id,
                    type_name=event_type.name,
                    attribute=key,
                )
        try:
            validated = self._adapter(event_type).validate_python(env.attrs)
        except ValidationError as exc:
            err = exc.errors()[0]
            attribute = str(err["loc"][0]) if err["loc"] else None
            if err["type"] == "extra_forbidden":
                reason = f"unknown attribute ({event_type.name} has {names})"
            elif err["type"] == "missing":
                reason = f"missing attribute ({event_type.name} has {names})"
            else:
                kinds = {a.name: a.kind for a in event_type.attributes}
                kind = kinds.get(attribute) if attribute is not None else None
                got = err.get("input")
                if kind is Kind.INT and isinstance(got, int) and not isinstance(got, bool):
                    reason = f"integer {brief(got)} is outside the 64-bit range"
                elif kind is Kind.FLOAT and isinstance(got, int) and not isinstance(got, bool) and digits(got) > 300:
                    reason = f"integer {brief(got)} is outside the range of a float (about ±1.8e308)"
                else:
                    expected = _KIND_WORDS[kind] if kind else "a valid value"
                    reason = f"expected {expected} ({kind.value if kind else '?'}), got {_json_kind(got)} {brief(got)}"
            raise EventError(
                reason, line=line, event_id=event_id, type_name=event_type.name, attribute=attribute
            ) from None
        values = tuple(validated[a.name] for a in event_type.attributes)
        for attr, value in zip(event_type.attributes, values):
            problem = _value_problem(value)
            if problem is not None:
                raise EventError(problem, line=line, event_id=event_id, type_name=event_type.name, attribute=attr.name)
        for field, text in (("id", event_id), ("publisher", env.publisher)):
            if text is not None and _value_problem(text) is not None:
                raise EventError(f"field {field!r}: {_value_problem(text)}", line=line, event_id=shown_id)
        return Event(event_id, event_type, values, env.publisher, env.seq)


def _value_problem(value: Any) -> str | None:
    """What makes a value that JSON parsers let through unusable, if anything: a non-finite
    number (``NaN``, ``Infinity``, ``1e400``) or a string with a lone surrogate, neither of which
    can be written back as valid JSON or UTF-8."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a finite number"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "string contains a lone surrogate escape"
    return None
