"""Event lines that once gave a traceback, a lost event or a flood: each is now an EventError
naming its line (and column), and under ``--on-error skip`` the run goes on past it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from faidecs import Engine, EventError
from faidecs.cli.main import main
from faidecs.runs import event_lines
from faidecs.runs.event_lines import LongLine, read_lines
from faidecs.runs.replay import parse_line

PROGRAM = "type T(i: int, f: float, s: str)\ntype U()\nsubscription S: T and U\n"


def good(event_id: str, **attrs: object) -> bytes:
    return json.dumps({"id": event_id, "type": "T", "attrs": {"i": 1, "f": 1.0, "s": "x", **attrs}}).encode()


def t_line(i: bytes = b"1", f: bytes = b"1.0", s: bytes = b'"x"', extra: bytes = b"") -> bytes:
    return b'{"id": "e", "type": "T", "attrs": {"i": ' + i + b', "f": ' + f + b', "s": ' + s + extra + b"}}"


#: (line, what the error says, its column) for every case of issue 20 on event lines.
CASES = [
    (t_line(i=b"9" * 5000), "integer of 5,000 digits, more than the limit of 1,000", 41),
    (t_line(i=b"9" * 2000), "integer of 2,000 digits, more than the limit of 1,000", 41),
    (b"[" * 100_000 + b"]" * 100_000, "JSON nested more than 64 deep", 65),
    (t_line(i=b"[" * 70 + b"]" * 70), "JSON nested more than 64 deep", 103),  # 2 objects + 63 lists
    (t_line(s=b'"x\xff"'), "not UTF-8 text: invalid start byte (byte 0xff)", 61),
    (b'{"id": "r1", "id": "x1", "type": "U"}', "duplicate key 'id': a key may appear once in an object", 14),
    (b'{"type": "U", "attrs": {"a": 1, "a": 2}}', "duplicate key 'a': a key may appear once in an object", 33),
    (b'{"id": "e", "type": "U", "attrs": {"x": NaN}}', "invalid JSON: NaN is not a JSON value", 41),
    (b'{"id": "e", "type": "U"', "invalid JSON: Expecting ',' delimiter", 24),
]


@pytest.fixture
def engine() -> Engine:
    return Engine.from_source(PROGRAM, matcher="reference")


@pytest.mark.parametrize(("raw", "reason", "column"), CASES, ids=range(len(CASES)))
def test_each_bad_line_is_an_error_at_its_column(engine: Engine, raw: bytes, reason: str, column: int) -> None:
    with pytest.raises(EventError) as info:
        parse_line(engine, raw, 3, set())
    assert (info.value.reason, info.value.line, info.value.column) == (reason, 3, column)


def test_a_bare_cr_is_whitespace_not_a_line_break(engine: Engine) -> None:
    stream = io.BytesIO(b'{"id": "c",\r"type": "U"}\n')
    lines = list(read_lines(stream))
    assert len(lines) == 1
    assert parse_line(engine, lines[0], 1, set()).id == "c"


def test_a_cr_inside_a_string_is_an_error_in_its_line(engine: Engine) -> None:
    with pytest.raises(EventError) as info:
        parse_line(engine, t_line(s=b'"a\rb"'), 1, set())
    assert info.value.reason == "invalid JSON: Invalid control character at" and info.value.column == 61


def test_long_values_are_shortened_in_messages(engine: Engine) -> None:
    with pytest.raises(EventError) as info:
        parse_line(engine, t_line(i=b'"' + b"z" * 500_000 + b'"'), 1, set())
    assert len(str(info.value)) < 300 and "(500,000 characters)" in str(info.value)


def test_an_integer_too_large_for_a_float_is_out_of_range(engine: Engine) -> None:
    with pytest.raises(EventError) as info:
        parse_line(engine, t_line(f=b"1" * 400), 1, set())
    assert info.value.attribute == "f"
    assert info.value.reason.startswith("integer 11111111111111111111… (400 digits) is outside the range of a float")


def test_a_surrogate_attribute_name_is_named(engine: Engine) -> None:
    with pytest.raises(EventError) as info:
        parse_line(engine, t_line(extra=b', "\\ud800": 1'), 1, set())
    assert info.value.attribute == "\ud800" and info.value.reason.startswith("unknown attribute")


@pytest.mark.parametrize("kind", ["i", "f"])
def test_publish_of_a_huge_integer_is_an_event_error(engine: Engine, kind: str) -> None:
    attrs: dict[str, object] = {"i": 1, "f": 1.0, "s": "x", kind: 10**5000}
    with pytest.raises(EventError) as info:
        engine.publish({"id": "e", "type": "T", "attrs": attrs})
    assert info.value.attribute == kind and "(5,001 digits)" in info.value.reason


def test_seq_is_bounded_to_64_bits(engine: Engine) -> None:
    with pytest.raises(EventError) as info:
        engine.validate({"id": "e", "type": "U", "seq": 2**63})
    assert "less than or equal to 9223372036854775807" in info.value.reason


def test_a_line_over_the_limit_is_skipped_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_lines, "MAX_LINE_BYTES", 100)
    stream = io.BytesIO(b"a" * 99 + b"\n" + b"b" * 100 + b"\n" + b"c" * 1000 + b"\nlast")
    lines = list(read_lines(stream))
    assert lines[:2] == [b"a" * 99 + b"\n", b"b" * 100 + b"\n"]
    assert isinstance(lines[2], LongLine) and lines[2].size == 1000
    assert lines[3] == b"last"


def test_run_skip_rejects_every_bad_line_and_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every case in one file, good lines between them: all bad ones rejected, the good ones run."""
    program = tmp_path / "p.fdc"
    program.write_text(PROGRAM)
    body = [good("g0")]
    for k, (raw, _, _) in enumerate(CASES):
        body += [raw, json.dumps({"id": f"u{k}", "type": "U"}).encode()]
    body.append(b'{"id": "long", "type": "U", "attrs": {"x": "' + b"z" * (2 << 20) + b'"}}')
    events = tmp_path / "e.jsonl"
    events.write_bytes(b"\n".join(body) + b"\n")
    assert main(["run", "--program", str(program), "--events", str(events), "--on-error", "skip"]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(d)["relation"] for d in out.splitlines()] == [["g0", "u0"]]
    assert err.splitlines()[-1].startswith(f"faidecs: {1 + len(CASES)} events, 1 deliveries, {len(CASES) + 1} rejected")
    records = [json.loads(r) for r in Path(f"{events}.rejects.jsonl").read_text().splitlines()]
    assert [r["line"] for r in records] == [2 + 2 * k for k in range(len(CASES))] + [len(body)]
    assert all("column" in r for r in records[:-1])
    assert records[-1]["error"].startswith("line of 2,097,") and records[-1]["input_bytes"] > 2 << 20
    assert max(len(json.dumps(r)) for r in records) < 3000
    assert max(len(line) for line in err.splitlines()) < 300
