"""A publisher reads its events file as `faidecs run` does, and stops at the first bad line with
an error naming the file, the line and the column."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("zmq", reason="needs the overlay extra: pip install 'faidecs[overlay]'")

from faidecs.errors import FaidecsError  # noqa: E402
from faidecs.overlay.runtime.publisher_node import read_events  # noqa: E402


def test_good_lines_with_blank_ones_and_a_cr(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(
        b'{"id": "a1", "type": "A", "attrs": {"x": 1}}\r\n\n{"id": "a2",\r "type": "A", "attrs": {"x": 2}}\n'
    )
    events = list(read_events(path))
    assert [(e["id"], e["_line"]) for e in events] == [("a1", f"{path}:1"), ("a2", f"{path}:3")]


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (b'{"id": "a1", "id": "x1", "type": "A", "attrs": {}}', "line 2, column 14: duplicate key 'id'"),
        (b'{"id": "a\xff1"}', "line 2, column 10: not UTF-8 text"),
        (b'{"id": ' + b"9" * 5000 + b"}", "line 2, column 8"),
        (b"[1, 2]", "line 2: an event is a JSON object"),
    ],
)
def test_the_first_bad_line_stops_it_where_it_is(tmp_path: Path, line: bytes, words: str) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(b'{"id": "a0", "type": "A", "attrs": {"x": 1}}\n' + line + b"\n")
    with pytest.raises(FaidecsError, match=rf"^{path}: .*") as info:
        list(read_events(path))
    assert words in str(info.value)
