"""Event validation at the boundary: every bad event gives an error naming line, event and attribute."""

from __future__ import annotations

from typing import Any

import pytest

from faidecs import Engine, Event, EventError
from faidecs.matching.events import INT64_MAX, INT64_MIN, EventValidator
from faidecs.runs.replay import parse_line, replay

PROGRAM = "type T(i: int, f: float, s: str, b: bool)\ntype U()\nsubscription S: T and U\n"
GOOD: dict[str, Any] = {"i": 1, "f": 1.5, "s": "x", "b": True}


@pytest.fixture
def engine() -> Engine:
    return Engine.from_source(PROGRAM)


def ev(attrs: dict[str, Any], *, event_id: str | None = "e1", type_name: str = "T", **extra: Any) -> dict[str, Any]:
    """An event in the input JSON shape."""
    out: dict[str, Any] = {"type": type_name, "attrs": attrs, **extra}
    if event_id is not None:
        out["id"] = event_id
    return out


def reject(engine: Engine, obj: Any, line: int = 7) -> EventError:
    """The EventError validating ``obj`` at ``line`` raises."""
    with pytest.raises(EventError) as info:
        engine.validate(obj, line=line)
    return info.value


def test_valid_event(engine: Engine) -> None:
    event = engine.validate(ev(GOOD, publisher="p1", seq=3), line=2)
    assert isinstance(event, Event)
    assert (event.id, event.type, event.values) == ("e1", "T", (1, 1.5, "x", True))
    assert (event.publisher, event.seq) == ("p1", 3)
    assert event.attrs == GOOD


def test_type_without_attributes_needs_no_attrs(engine: Engine) -> None:
    assert engine.validate({"id": "u", "type": "U"}).values == ()
    assert engine.validate({"id": "u", "type": "U", "attrs": {}}).values == ()


def test_default_id_is_the_line(engine: Engine) -> None:
    assert engine.validate(ev(GOOD, event_id=None), line=12).id == "12"


def test_unknown_type(engine: Engine) -> None:
    err = reject(engine, ev(GOOD, type_name="V"))
    msg = str(err)
    assert msg.startswith("line 7, event 'e1': ")
    assert "unknown event type 'V'" in msg and "T, U" in msg
    assert (err.line, err.event_id) == (7, "e1")


def test_missing_attribute(engine: Engine) -> None:
    err = reject(engine, ev({"i": 1, "f": 1.5, "s": "x"}))
    assert str(err).startswith("line 7, event 'e1', type T, attribute 'b': missing attribute")
    assert "i: int, f: float, s: str, b: bool" in err.reason
    assert (err.line, err.event_id, err.type_name, err.attribute) == (7, "e1", "T", "b")


def test_missing_attrs_object(engine: Engine) -> None:
    err = reject(engine, {"id": "e1", "type": "T"})
    assert err.attribute == "i" and "missing attribute" in str(err)


def test_extra_attribute(engine: Engine) -> None:
    err = reject(engine, ev({**GOOD, "z": 1}))
    assert str(err).startswith("line 7, event 'e1', type T, attribute 'z': unknown attribute")
    assert err.attribute == "z"


def test_extra_attribute_on_type_without_attributes(engine: Engine) -> None:
    err = reject(engine, ev({"a": 1}, type_name="U"))
    assert err.attribute == "a" and "U has no attributes" in str(err)


@pytest.mark.parametrize(
    ("attribute", "value", "expected", "got"),
    [
        ("i", True, "expected an integer (int)", "got a boolean True"),
        ("i", False, "expected an integer (int)", "got a boolean False"),
        ("i", 1.0, "expected an integer (int)", "got a decimal 1.0"),
        ("i", 1.5, "expected an integer (int)", "got a decimal 1.5"),
        ("i", "1", "expected an integer (int)", "got a string '1'"),
        ("i", None, "expected an integer (int)", "got null None"),
        ("f", "1.5", "expected a number (float)", "got a string '1.5'"),
        ("f", True, "expected a number (float)", "got a boolean True"),
        ("f", None, "expected a number (float)", "got null"),
        ("f", [1.5], "expected a number (float)", "got a list"),
        ("s", 5, "expected a string (str)", "got an integer 5"),
        ("s", {"x": 1}, "expected a string (str)", "got an object"),
        ("b", 1, "expected true or false (bool)", "got an integer 1"),
        ("b", 0, "expected true or false (bool)", "got an integer 0"),
        ("b", "true", "expected true or false (bool)", "got a string 'true'"),
    ],
)
def test_wrong_attribute_type(engine: Engine, attribute: str, value: Any, expected: str, got: str) -> None:
    err = reject(engine, ev({**GOOD, attribute: value}))
    msg = str(err)
    assert msg.startswith(f"line 7, event 'e1', type T, attribute {attribute!r}: ")
    assert expected in msg and got in msg
    assert (err.line, err.event_id, err.type_name, err.attribute) == (7, "e1", "T", attribute)


def test_int_accepted_for_float_and_converted(engine: Engine) -> None:
    event = engine.validate(ev({**GOOD, "f": 2}))
    assert event.values[1] == 2.0 and type(event.values[1]) is float
    assert type(event.attrs["f"]) is float
    big = engine.validate(ev({**GOOD, "f": 2**70}))
    assert big.values[1] == float(2**70) and type(big.values[1]) is float


def test_values_keep_their_python_types(engine: Engine) -> None:
    event = engine.validate(ev(GOOD))
    assert [type(v) for v in event.values] == [int, float, str, bool]


@pytest.mark.parametrize("value", [INT64_MIN, INT64_MAX, 0, -1])
def test_64_bit_range_accepted(engine: Engine, value: int) -> None:
    assert engine.validate(ev({**GOOD, "i": value})).values[0] == value


@pytest.mark.parametrize("value", [INT64_MAX + 1, INT64_MIN - 1, 10**30])
def test_64_bit_range_rejected(engine: Engine, value: int) -> None:
    err = reject(engine, ev({**GOOD, "i": value}))
    assert f"integer {value} is outside the 64-bit range" in str(err)
    assert (err.event_id, err.attribute) == ("e1", "i")


@pytest.mark.parametrize(
    ("obj", "kind"),
    [([1, 2], "a list"), ("x", "a string"), (None, "null"), (5, "an integer"), (True, "a boolean")],
)
def test_non_object(engine: Engine, obj: Any, kind: str) -> None:
    err = reject(engine, obj)
    assert str(err) == f"line 7: an event must be a JSON object, not {kind}"


def test_unknown_top_level_field(engine: Engine) -> None:
    err = reject(engine, ev(GOOD, extra=1))
    msg = str(err)
    assert msg.startswith("line 7, event 'e1': ")
    assert "unknown field 'extra'" in msg and "id, type, attrs, publisher and seq" in msg


def test_missing_type_field(engine: Engine) -> None:
    err = reject(engine, {"id": "e1", "attrs": GOOD})
    assert str(err) == "line 7, event 'e1': missing field 'type'"


@pytest.mark.parametrize(("field", "value"), [("type", 3), ("attrs", [1]), ("publisher", 3), ("publisher", None)])
def test_wrong_top_level_field_type(engine: Engine, field: str, value: Any) -> None:
    obj = ev(GOOD)
    obj[field] = value
    if field == "publisher" and value is None:
        # an explicit null publisher is the same as no publisher
        assert engine.validate(obj).publisher is None
        return
    err = reject(engine, obj)
    assert f"field {field!r}" in str(err) and err.line == 7


@pytest.mark.parametrize("bad_id", [5, 1.5, True, ["e1"], {"x": 1}])
def test_non_string_id(engine: Engine, bad_id: Any) -> None:
    err = reject(engine, {"id": bad_id, "type": "T", "attrs": GOOD})
    msg = str(err)
    assert "field 'id'" in msg and "valid string" in msg
    assert msg.startswith("line 7")


def test_non_string_id_does_not_invent_an_event_id(engine: Engine) -> None:
    """An invalid id is reported as such; the message must not name the event by another id."""
    err = reject(engine, {"id": 5, "type": "T", "attrs": GOOD})
    assert err.event_id in (None, "5"), str(err)


@pytest.mark.parametrize("seq", [-1, -100])
def test_negative_seq(engine: Engine, seq: int) -> None:
    err = reject(engine, ev(GOOD, seq=seq))
    msg = str(err)
    assert msg.startswith("line 7, event 'e1': field 'seq'")
    assert "greater than or equal to 0" in msg


@pytest.mark.parametrize("seq", [1.0, "1", True])
def test_non_integer_seq(engine: Engine, seq: Any) -> None:
    err = reject(engine, ev(GOOD, seq=seq))
    assert "field 'seq'" in str(err) and "valid integer" in str(err)


def test_seq_zero_accepted(engine: Engine) -> None:
    assert engine.validate(ev(GOOD, seq=0)).seq == 0


def test_first_error_is_reported(engine: Engine) -> None:
    """With several problems, one clear error (about one attribute) is raised."""
    err = reject(engine, ev({"i": "x", "f": "y", "s": 1, "b": 2}))
    assert err.attribute in {"i", "f", "s", "b"}


def test_validator_without_line() -> None:
    """Without a line the message starts at the event."""
    engine = Engine.from_source(PROGRAM)
    validator = EventValidator(engine.types)
    with pytest.raises(EventError) as info:
        validator.validate({"id": "z", "type": "T", "attrs": {**GOOD, "i": "no"}})
    assert str(info.value).startswith("event 'z', type T, attribute 'i': ")
    with pytest.raises(EventError) as info:
        validator.validate({"type": "T", "attrs": GOOD})
    assert "no id" in str(info.value)


def test_at_line_relocates(engine: Engine) -> None:
    err = reject(engine, ev({**GOOD, "s": 1}), line=1).at_line(42)
    assert str(err).startswith("line 42, event 'e1', type T, attribute 's': ")


# --- lines of a JSON-lines stream ------------------------------------------------------------


def test_parse_line_invalid_json(engine: Engine) -> None:
    with pytest.raises(EventError) as info:
        parse_line(engine, '{"id": "e1", "type": ', 4, set())
    assert str(info.value) == "line 4, column 22: invalid JSON: Expecting value"


def test_parse_line_duplicate_id(engine: Engine) -> None:
    line = '{"id": "e1", "type": "U"}'
    with pytest.raises(EventError) as info:
        parse_line(engine, line, 9, {"e1"})
    assert str(info.value).startswith("line 9, event 'e1': duplicate event id")


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_parse_line_rejects_non_json_numbers(engine: Engine, token: str) -> None:
    """NaN and Infinity are not JSON: such a line is invalid input, not a float value."""
    line = '{"id": "e1", "type": "T", "attrs": {"i": 1, "f": ' + token + ', "s": "x", "b": true}}'
    with pytest.raises(EventError) as info:
        parse_line(engine, line, 3, set())
    assert str(info.value).startswith("line 3")


def test_replay_names_the_line_of_a_bad_event(engine: Engine) -> None:
    lines = [
        '{"id": "a", "type": "T", "attrs": {"i": 1, "f": 1, "s": "x", "b": false}}\n',
        "\n",
        '{"id": "b", "type": "T", "attrs": {"i": 1, "f": 1, "s": "x", "b": "no"}}\n',
    ]
    with pytest.raises(EventError) as info:
        replay(engine, lines, lambda d: None)
    assert str(info.value).startswith("line 3, event 'b', type T, attribute 'b': ")


def test_replay_skip_counts_rejects(engine: Engine) -> None:
    rejected: list[tuple[int, str]] = []
    delivered: list[list[str]] = []
    lines = [
        '{"type": "T", "attrs": {"i": 1, "f": 1, "s": "x", "b": false}}',
        "not json",
        '{"type": "U"}',
    ]
    summary = replay(
        engine,
        lines,
        lambda d: delivered.append(d.ids),
        on_error="skip",
        reject=lambda n, raw, err: rejected.append((n, str(err))),
    )
    assert delivered == [["1", "3"]]
    assert [n for n, _ in rejected] == [2]
    assert (summary.lines, summary.events, summary.deliveries, summary.rejected) == (3, 2, 1, 1)


def test_parse_line_cut_short_reports_the_column_on_its_own_line(engine: Engine) -> None:
    """A line cut short is reported just after its last character, not after its newline."""
    text = '{"id": "x", "type": "T"\n'
    with pytest.raises(EventError) as exc:
        parse_line(engine, text, 4, set())
    assert (exc.value.line, exc.value.column) == (4, 24)
    assert exc.value.reason == "invalid JSON: Expecting ',' delimiter"
