"""The fast path of event validation gives exactly what the pydantic path gives.

Why: :meth:`EventValidator.validate` takes plainly valid dicts through generated exact type checks
(``faidecs.matching.fast_validation``) and everything else through pydantic. Nothing may change by
it: the same :class:`Event` (values of the same Python types, an int given for a float converted as
pydantic converts it), and for every invalid input the same :class:`EventError`, word for word.
The differential test draws valid event dicts and variants broken (or only reshaped) in many ways, against
random declared types and compares ``validate`` with ``_validate_slow`` (pydantic alone); the
explicit cases pin what strict pydantic accepts, so that both paths cannot drift together.
"""

from __future__ import annotations

import enum
import math
from collections import OrderedDict, UserDict
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import event as note
from hypothesis import given, settings
from hypothesis import strategies as st

from faidecs import Event, EventError
from faidecs.grammar.model import Attribute, EventType, Kind
from faidecs.matching.events import INT64_MAX, INT64_MIN, EventValidator
from faidecs.matching.fast_validation import attrs_checker


class Str(str):
    pass


class Int(int):
    pass


class Float(float):
    pass


class Dict(dict[Any, Any]):
    pass


class Shady(dict[Any, Any]):
    """A dict subclass that, asked directly, changes every value (but the type and the attributes)
    to another of the same type; pydantic, like ``dict()``, reads the real items."""

    def __getitem__(self, key: Any) -> Any:
        return self._lie(key, super().__getitem__(key))

    def get(self, key: Any, default: Any = None) -> Any:
        return self._lie(key, super().get(key, default))

    @staticmethod
    def _lie(key: Any, value: Any) -> Any:
        if key in ("type", "attrs"):
            return value
        if type(value) is bool:
            return not value
        if type(value) in (int, float):
            return value + 1
        return value + "?" if type(value) is str else value


class Color(enum.IntEnum):
    RED = 1


class Word(str, enum.Enum):
    A = "a"


class Impostor:
    """A key that is not a str but compares equal to (and hashes like) a given name."""

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other: object) -> bool:
        return other == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Impostor({self.name!r})"


class LyingStr(str):
    """A str whose text is one thing and whose equality and hash are another name's."""

    def __new__(cls, text: str, name: str) -> LyingStr:
        out = super().__new__(cls, text)
        out.name = name  # type: ignore[attr-defined]
        return out

    def __eq__(self, other: object) -> bool:
        return other == self.name  # type: ignore[attr-defined,no-any-return]

    def __hash__(self) -> int:
        return hash(self.name)  # type: ignore[attr-defined]


#: The smallest positive int that float() cannot convert: max float plus half an ulp, which rounds
#: (to even) up to 2**1024.
FLOAT_OVERFLOW = 2**1024 - 2**970

# Attribute names: ones that clash with BaseModel members, the envelope's fields, the names the
# generated checker uses for its own variables, non-ASCII.
NAMES = ("x", "copy", "json", "id", "type", "attrs", "n0", "v1", "k0", "é", "class")
TYPE_NAMES = ("T", "U", "Quote", "attrs")

SPECIAL_STRINGS = ("", "x", "é", "\ud800", "a\udfffb", "\x00", "😀")
SPECIAL_INTS = (
    0, 1, -1, INT64_MIN, INT64_MAX, INT64_MIN - 1, INT64_MAX + 1, 2**53, 2**53 + 1, -(2**53) - 1,
    2**64 + 1, FLOAT_OVERFLOW - 1, FLOAT_OVERFLOW, -FLOAT_OVERFLOW, 10**400,
)  # fmt: skip
SPECIAL_FLOATS = (0.0, -0.0, 1.5, 1e308, 5e-324, math.inf, -math.inf, math.nan, 2.0**63)

scalars = st.one_of(
    st.sampled_from(SPECIAL_INTS),
    st.integers(),
    st.integers(-(2**1100), 2**1100),
    st.sampled_from(SPECIAL_FLOATS),
    st.floats(),
    st.sampled_from(SPECIAL_STRINGS),
    st.text(max_size=5),
    st.booleans(),
    st.none(),
)
oddities = st.sampled_from(
    [Str("x"), Int(3), Float(1.5), Color.RED, Word.A, Decimal("1.5"), Fraction(1, 2), b"x", [1], {"x": 1}, (1,), 1j]
)
values = st.one_of(scalars, scalars, scalars, oddities)


@st.composite
def declared_types(draw: st.DrawFn) -> dict[str, EventType]:
    names = draw(st.lists(st.sampled_from(TYPE_NAMES), min_size=1, max_size=3, unique=True))
    types = {}
    for name in names:
        attributes = draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=True))
        kinds = [draw(st.sampled_from(list(Kind))) for _ in attributes]
        types[name] = EventType(name, tuple(Attribute(a, k) for a, k in zip(attributes, kinds)))
    return types


#: Valid values of each kind, edges included: what the fast path must take and convert right.
VALID: dict[Kind, st.SearchStrategy[Any]] = {
    Kind.INT: st.one_of(st.integers(INT64_MIN, INT64_MAX), st.sampled_from([INT64_MIN, INT64_MAX, 0, -1])),
    Kind.FLOAT: st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(),
        st.integers(-(FLOAT_OVERFLOW - 1), FLOAT_OVERFLOW - 1),
        st.sampled_from([-0.0, 5e-324, 1e308, 2**53 + 1, INT64_MAX, FLOAT_OVERFLOW - 1]),
    ),
    Kind.STR: st.one_of(st.text(max_size=5), st.sampled_from(["", "é", "😀", "\x00"])),
    Kind.BOOL: st.booleans(),
}

#: Near misses of each kind: what a loose check would wrongly take, or take without converting.
NEAR: dict[Kind, st.SearchStrategy[Any]] = {
    Kind.INT: st.sampled_from([True, False, 1.0, Int(1), Color.RED, INT64_MIN - 1, INT64_MAX + 1, 2**64, "1", None]),
    Kind.FLOAT: st.sampled_from(
        [True, False, math.nan, math.inf, -math.inf, Float(0.5), Decimal("0.5"), FLOAT_OVERFLOW, 10**400, "1.5", None]
    ),
    Kind.STR: st.sampled_from([Str("x"), Word.A, "\ud800", "x\udcffy", b"x", 1, None]),
    Kind.BOOL: st.sampled_from([0, 1, 1.0, "true", None]),
}

#: Near misses of the envelope's fields.
FIELD_NEAR: dict[str, list[Any]] = {
    "id": ["", "\ud800", "a\udfff", Str("e"), 5, True, None],
    "type": [*TYPE_NAMES, "", 1, None],
    "publisher": ["", "\udfff", Str("p"), 5, False, None],
    "seq": [-1, True, False, Int(2), 1.0, 10**30, "1", None],
}


def odd_key(name: str) -> st.SearchStrategy[Any]:
    """A key that stands, or pretends to stand, for ``name``."""
    return st.sampled_from([Str(name), Impostor(name), LyingStr(name + "_", name), 1, None, b"x", (name,)])


MAPPINGS: dict[str, Callable[[dict[Any, Any]], Any]] = {
    "Dict": Dict,
    "Shady": Shady,
    "OrderedDict": OrderedDict,
    "MappingProxy": MappingProxyType,
    "UserDict": UserDict,
    "items": lambda d: list(d.items()),
    "None": lambda d: None,
}

#: Ways to break (or merely to reshape) a valid event; some leave it valid for pydantic only.
MUTATIONS = (
    "value", "value", "value", "missing attribute", "extra attribute", "odd attribute key", "attrs container",
    "no attrs", "id", "type", "publisher", "seq", "extra field", "odd field key", "event container",
)  # fmt: skip


@st.composite
def valid_events(draw: st.DrawFn, types: dict[str, EventType]) -> tuple[EventType, dict[str, Any]]:
    """A valid event of one of ``types``, the optional fields there or not, attributes in any order."""
    event_type = types[draw(st.sampled_from(sorted(types)))]
    # Key order is free in JSON: the fast path must not depend on it.
    order = draw(st.permutations(event_type.attributes))
    event: dict[str, Any] = {"type": event_type.name, "attrs": {a.name: draw(VALID[a.kind]) for a in order}}
    optional = {"id": st.one_of(st.just("e1"), st.text(min_size=1, max_size=3)), "publisher": st.text(max_size=3)}
    optional["seq"] = st.one_of(st.integers(0, INT64_MAX), st.integers(min_value=0))
    for field, strategy in optional.items():
        if draw(st.integers(0, 3)) > 0:
            event[field] = draw(st.one_of(strategy, st.none()))
    return event_type, event


@st.composite
def mutated(draw: st.DrawFn, event_type: EventType, valid: dict[str, Any], mutations: list[str]) -> Any:
    """A copy of the ``valid`` event, changed by ``mutations``."""
    attrs: dict[Any, Any] = dict(valid["attrs"])
    event: dict[Any, Any] = {**valid, "attrs": attrs}
    names = [a.name for a in event_type.attributes]
    wrapper: Callable[[dict[Any, Any]], Any] = dict
    for mutation in mutations:
        if mutation == "value" and names:
            attribute = draw(st.sampled_from(event_type.attributes))
            attrs[attribute.name] = draw(st.one_of(NEAR[attribute.kind], NEAR[attribute.kind], values))
        elif mutation == "missing attribute" and names:
            attrs.pop(draw(st.sampled_from(names)), None)
        elif mutation == "extra attribute":
            attrs[draw(st.sampled_from(NAMES + ("zz",)))] = draw(values)
        elif mutation == "odd attribute key" and names:
            name = draw(st.sampled_from(names))
            attrs[draw(odd_key(name))] = attrs.pop(name, 0)
        elif mutation == "attrs container":
            event["attrs"] = MAPPINGS[draw(st.sampled_from(sorted(MAPPINGS)))](attrs)
        elif mutation == "no attrs":
            event.pop("attrs", None)
        elif mutation in FIELD_NEAR:
            near = st.sampled_from(FIELD_NEAR[mutation] + [Str(event_type.name)] * (mutation == "type"))
            event[mutation] = draw(st.one_of(near, near, values))
        elif mutation == "extra field":
            event[draw(st.sampled_from(["extra", "ID", "attr", "seqs"]))] = 1
        elif mutation == "odd field key" and any(type(k) is str for k in event):
            name = draw(st.sampled_from(sorted(k for k in event if type(k) is str)))
            event[draw(odd_key(name))] = event.pop(name)
        elif mutation == "event container":
            wrapper = MAPPINGS[draw(st.sampled_from(sorted(MAPPINGS)))]
    return wrapper(event)


def shown(value: Any) -> tuple[str, str]:
    """A value with its exact type: 1, 1.0 and True, or -0.0 and 0.0, differ here."""
    return (type(value).__name__, repr(value))


def outcome(validate: Callable[[], Event]) -> tuple[Any, ...]:
    """What validation gives, in a form that two results compare equal in only when identical."""
    try:
        event = validate()
    except EventError as exc:
        return ("error", str(exc), exc.reason, exc.line, exc.event_id, exc.type_name, exc.attribute)
    return (
        "event",
        shown(event.id),
        id(event.event_type),
        tuple(shown(v) for v in event.values),
        shown(event.publisher),
        shown(event.seq),
    )


def same(validator: EventValidator, obj: Any, default_id: Any = "d", line: int | None = 7) -> tuple[Any, ...]:
    """The outcome of ``validate``, asserted equal to that of the pydantic path."""
    fast = outcome(lambda: validator.validate(obj, default_id=default_id, line=line))
    slow = outcome(lambda: validator._validate_slow(obj, default_id=default_id, line=line))
    assert fast == slow, obj
    return fast


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fast_and_pydantic_paths_agree(data: st.DataObject) -> None:
    """A valid event, then variants of it: one with each change, and a few with two. Drawing a
    variant costs less than drawing an event, and a single change is what finds a loose check."""
    types = data.draw(declared_types())
    validator = EventValidator(types)
    event_type, valid = data.draw(valid_events(types))
    default_id = data.draw(st.sampled_from(["d", "d", "d", None, "", "\ud800", Str("q"), 5]))
    line = data.draw(st.one_of(st.none(), st.integers(1, 99)))
    note(same(validator, valid, default_id, line)[0])
    pairs = data.draw(st.lists(st.lists(st.sampled_from(MUTATIONS), min_size=2, max_size=2), max_size=3))
    for mutations in [[m] for m in MUTATIONS] + pairs:
        same(validator, data.draw(mutated(event_type, valid, mutations)), default_id, line)


# --- explicit cases --------------------------------------------------------------------------------

KINDS = EventType(
    "K", (Attribute("i", Kind.INT), Attribute("f", Kind.FLOAT), Attribute("s", Kind.STR), Attribute("b", Kind.BOOL))
)
GOOD: dict[str, Any] = {"i": 1, "f": 1.5, "s": "x", "b": True}


@pytest.fixture
def validator() -> EventValidator:
    return EventValidator({"K": KINDS, "E": EventType("E", ()), "S": EventType("S", (Attribute("s", Kind.STR),))})


def ev(**attrs: Any) -> dict[str, Any]:
    return {"id": "e1", "type": "K", "attrs": {**GOOD, **attrs}}


def test_a_plain_event_does_not_touch_pydantic(validator: EventValidator, monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the fast path: valid dicts (all four kinds, envelope fields set or not) skip it."""

    def fail(*args: Any, **kwargs: Any) -> Event:
        raise AssertionError("took the pydantic path")

    monkeypatch.setattr(validator, "_validate_slow", fail)
    assert validator.validate(ev()).values == (1, 1.5, "x", True)
    assert validator.validate({**ev(f=2), "publisher": "p", "seq": 3, "id": None}, default_id="9").id == "9"
    assert validator.validate({"id": "u", "type": "E"}).values == ()
    assert validator.validate({"id": "é", "type": "E", "attrs": {}, "publisher": None, "seq": None}).publisher is None


@pytest.mark.parametrize(
    ("kind", "given", "expected"),
    [
        # float: an int is converted with float() (rounded to nearest even), -0.0 kept, an int past
        # the float range rejected.
        ("f", 3, 3.0),
        ("f", -0.0, -0.0),
        ("f", 2**53 + 1, 9007199254740992.0),
        ("f", 2**53 + 3, 9007199254740996.0),
        ("f", INT64_MAX, 9.223372036854776e18),
        ("f", 10**30, 1e30),
        ("f", FLOAT_OVERFLOW - 1, 1.7976931348623157e308),
        ("f", -(FLOAT_OVERFLOW - 1), -1.7976931348623157e308),
        ("f", FLOAT_OVERFLOW, EventError),
        ("f", 10**400, EventError),
        ("f", True, EventError),
        ("f", math.nan, EventError),
        ("f", -math.inf, EventError),
        # pydantic's strict float still takes whatever has __float__ but bool: the slow path decides.
        ("f", Float(2.5), 2.5),
        ("f", Decimal("0.1"), 0.1),
        ("f", Fraction(1, 3), 1 / 3),
        ("f", Color.RED, 1.0),
        ("f", "1.5", EventError),
        # int: 64 bits, never a bool or a float; subclasses become plain ints.
        ("i", INT64_MIN, INT64_MIN),
        ("i", INT64_MAX + 1, EventError),
        ("i", False, EventError),
        ("i", 1.0, EventError),
        ("i", Int(5), 5),
        ("i", Color.RED, 1),
        # str: no lone surrogate; subclasses become plain strs.
        ("s", "", ""),
        ("s", "\ud800", EventError),
        ("s", Str("y"), "y"),
        ("s", Word.A, "a"),
        ("s", b"x", EventError),
        # bool: True and False only.
        ("b", False, False),
        ("b", 1, EventError),
        ("b", 0, EventError),
        ("b", "true", EventError),
    ],
)
def test_what_strict_pydantic_accepts(validator: EventValidator, kind: str, given: Any, expected: Any) -> None:
    result = same(validator, ev(**{kind: given}))
    if expected is EventError:
        assert result[0] == "error"
    else:
        position = "ifsb".index(kind)
        assert result[0] == "event" and result[3][position] == shown(expected)


@pytest.mark.parametrize(
    "obj",
    [
        {"id": "e1", "type": "K", "attrs": {**GOOD, "z": 1}},
        {"id": "e1", "type": "K", "attrs": {"i": 1, "f": 1.5, "s": "x"}},
        {"id": "e1", "type": "K"},
        {"id": "e1", "type": "E", "attrs": None},
        {"id": "e1", "type": "K", "attrs": Dict(GOOD)},  # accepted (copied) by pydantic
        {"id": "e1", "type": "K", "attrs": OrderedDict(GOOD)},
        {"id": "e1", "type": "K", "attrs": MappingProxyType(GOOD)},  # rejected: not a dict
        {"id": "e1", "type": "S", "attrs": Shady(s="real")},  # accepted, with the real items
        {"id": "e1", "type": "K", "attrs": {**GOOD, 1: 2}},
        {"id": "e1", "type": "K", "attrs": {"i": 1, "f": 1.5, "s": "x", Str("b"): True}},  # accepted
        {"id": "e1", "type": "K", "attrs": {"i": 1, "f": 1.5, "s": "x", Impostor("b"): True}},
        {"id": "e1", "type": "K", "attrs": {"i": 1, "f": 1.5, "s": "x", LyingStr("zz", "b"): True}},
        {"id": "", "type": "E"},
        {"id": None, "type": "E"},
        {"id": Str("e"), "type": "E"},  # accepted, as a plain str
        {"id": "a\udc80", "type": "E"},
        {"id": 5, "type": "E"},
        {"type": Str("E")},
        {"type": "E", "publisher": "p\udfff"},
        {"type": "E", "publisher": 5},
        {"type": "E", "publisher": Str("p")},  # accepted, as a plain str
        {"type": "E", "seq": True},
        {"type": "E", "seq": -1},
        {"type": "E", "seq": 10**400},  # accepted: seq is bounded below only
        {"type": "E", "seq": Int(2)},
        {"type": "E", "seq": 1.0},
        {"type": "E", Str("seq"): 1},
        {"type": "E", Impostor("seq"): 1},
        {"type": "E", 1: 1},
        {"type": "F"},
        Dict(type="E"),
        Shady(id="real", type="E"),
        OrderedDict(type="E"),
        MappingProxyType({"type": "E"}),
        UserDict({"type": "E"}),
        [("type", "E")],
        None,
    ],
    ids=repr,
)
def test_envelope_edge_cases(validator: EventValidator, obj: Any) -> None:
    same(validator, obj)


@pytest.mark.parametrize("default_id", [None, "", "\ud800", Str("q"), 5])
def test_default_ids(validator: EventValidator, default_id: Any) -> None:
    """The default id is used as given (even empty or not a str), but a lone surrogate is refused."""
    same(validator, {"type": "E"}, default_id=default_id)
    same(validator, {"type": "E", "id": None}, default_id=default_id)


def test_a_type_declared_again_gets_its_own_checker() -> None:
    types = {"T": EventType("T", (Attribute("x", Kind.INT),))}
    validator = EventValidator(types)
    assert validator.validate({"id": "a", "type": "T", "attrs": {"x": 1}}).values == (1,)
    types["T"] = EventType("T", (Attribute("x", Kind.STR),))
    assert validator.validate({"id": "a", "type": "T", "attrs": {"x": "1"}}).values == ("1",)
    with pytest.raises(EventError):
        validator.validate({"id": "a", "type": "T", "attrs": {"x": 1}})


def test_checker_source_holds_no_attribute_name() -> None:
    """Names reach the generated code through a closure only, so no name can change the code."""
    event_type = EventType("T", (Attribute("a'): import os #", Kind.INT), Attribute("b\nc", Kind.STR)))
    check = attrs_checker(event_type, INT64_MIN, INT64_MAX)
    assert check({"a'): import os #": 1, "b\nc": "x"}) == (1, "x")
    assert check({"a'): import os #": 1, "b\nc": 2}) is None
