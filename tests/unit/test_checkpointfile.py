"""Checkpoint files (faidecs/net/checkpointfile.py): written atomically, read back exactly, and a
damaged one refused naming the file, never half-read."""

from __future__ import annotations

from pathlib import Path

import pytest

from faidecs.net.checkpointfile import CheckpointError, read_checkpoint, write_checkpoint

VALUE = {"streams": [{"role": ["A", "B"], "position": 17}], "text": "é", "n": [1, 2.5, None, True]}


def test_round_trip_and_replace(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint"
    assert read_checkpoint(path) is None
    write_checkpoint(path, VALUE)
    assert read_checkpoint(path) == VALUE
    write_checkpoint(path, {"second": 2}, sync=False)
    assert read_checkpoint(path) == {"second": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]  # no temporary file left


def test_a_cut_short_write_leaves_the_old_checkpoint(tmp_path: Path) -> None:
    """A write killed before its rename leaves only a temporary file: the old checkpoint holds."""
    path = tmp_path / "checkpoint"
    write_checkpoint(path, VALUE)
    (tmp_path / "checkpoint.tmp").write_bytes(b'faidecs.checkpoint/1 99 abc\n{"half')
    assert read_checkpoint(path) == VALUE


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda b: b[:-1], "bytes of body"),  # cut short
        (lambda b: b + b" ", "bytes of body"),  # extended
        (lambda b: b[:-3] + b"9" + b[-2:], "digest"),  # one byte changed
        (lambda b: b"x" + b[1:], "not a checkpoint file"),
        (lambda b: b"", "not a checkpoint file"),
        (lambda b: b.replace(b" ", b" x", 1), "length is not a number"),
    ],
)
def test_damage_is_refused_naming_the_file(tmp_path: Path, damage: object, why: str) -> None:
    path = tmp_path / "checkpoint"
    write_checkpoint(path, VALUE)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    with pytest.raises(CheckpointError, match=why) as info:
        read_checkpoint(path)
    assert str(path) in str(info.value)
