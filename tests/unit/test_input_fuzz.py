"""Fuzzing the event-line and snapshot readers: whatever the input, the answer is an event (or a
restored engine) or the project's error with a position (a line, and a column or a field; a
snapshot error's field path) — never another exception.

Two kinds of input, each bounded to a few seconds: Hypothesis's (JSON-ish text and bytes, and
arbitrary values in a snapshot's fields), and a seeded mutation corpus built from the cases of
issue 20 and valid lines and snapshots, bit-flipped, cut, duplicated, nested and stretched."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_event_lines import CASES as LINE_CASES
from test_snapshot_input import snapshot

from faidecs import Engine, EventError, SnapshotError
from faidecs.runs.replay import parse_line

PROGRAM = "type T(i: int, f: float, s: str, b: bool)\ntype U()\nsubscription S: T and U\n"
ENGINE = Engine.from_source(PROGRAM, matcher="reference")
GOOD = [
    b'{"id": "e1", "type": "T", "attrs": {"i": 1, "f": 2.5, "s": "x:y", "b": true}, "seq": 3}',
    b'{"type": "U", "publisher": "p", "attrs": {}}',
    b'{"id": "e2", "type": "T", "attrs": {"i": -9223372036854775808, "f": 1e308, "s": "\\u00e9", "b": false}}',
]
SEEDS = GOOD + [raw for raw, _, _ in LINE_CASES]


def answer(raw: bytes | str) -> None:
    """Parse one line; an EventError must name its line."""
    try:
        parse_line(ENGINE, raw, 5, set())
    except EventError as err:
        assert err.line == 5 and str(err).startswith("line 5")


def mutate(rng: random.Random, raw: bytes) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        at = rng.randint(0, len(data))
        if op == 0 and data:
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            del data[at:]
        elif op == 2:
            data[at:at] = rng.choice([b"9" * rng.choice([20, 400, 1001, 5000]), b"[" * 80, b"\r", b"\xff", b"\\ud800"])
        elif op == 3:
            piece = data[at : at + rng.randint(1, 20)]
            data[at:at] = piece
        elif op == 4:
            data[at:at] = rng.choice([b'"id": "x", ', b'"attrs": {}, ', b"NaN", b'"\x00"', b":", b","])
        else:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return bytes(data)


def test_mutated_event_lines() -> None:
    rng = random.Random(20)
    for _ in range(3000):
        answer(mutate(rng, rng.choice(SEEDS)))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(attrs=st.dictionaries(st.sampled_from(["i", "f", "s", "b", "x", "\ud800"]), JSON, max_size=5), extra=JSON)
def test_generated_events(attrs: dict[str, Any], extra: Any) -> None:
    event = {"id": "e", "type": "T", "attrs": attrs, "seq": extra}
    answer(json.dumps(event))
    try:
        ENGINE.validate(event, line=5)
    except EventError as err:
        assert err.line == 5


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80) | st.text(max_size=80))
def test_arbitrary_lines(raw: bytes | str) -> None:
    answer(raw)


SNAPSHOT = snapshot()


def restore(snap: Any) -> None:
    """Restore, then publish once (some errors used to wait for that); a SnapshotError must say where."""
    try:
        engine = Engine.restore(snap, matcher="reference")
    except SnapshotError as err:
        assert str(err)
        return
    engine.publish({"id": "u9", "type": "U", "attrs": {"k": 1, "a": 1}})


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every field path in a snapshot."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, (*prefix, k))
    elif isinstance(value, list):
        for k, v in enumerate(value):
            out += paths(v, (*prefix, k))
    return out


PATHS = paths(SNAPSHOT)[1:]
ODD = [True, None, -1, 2**53 + 1, 10**30, 1.5, "x", [], {}, [[1]], {"@clock": 1}, 10**5000]


def test_mutated_snapshots() -> None:
    rng = random.Random(20)
    for _ in range(1500):
        snap = copy.deepcopy(SNAPSHOT)
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(PATHS)
            target: Any = snap
            try:
                for step in path[:-1]:
                    target = target[step]
                if rng.random() < 0.2 and isinstance(target, dict):
                    del target[path[-1]]
                else:
                    target[path[-1]] = rng.choice(ODD)
            except (KeyError, IndexError, TypeError):
                continue  # an earlier change took the path away
        restore(snap)


@settings(max_examples=200, deadline=None)
@given(path=st.sampled_from(PATHS), value=JSON)
def test_generated_snapshot_fields(path: tuple[Any, ...], value: Any) -> None:
    snap = copy.deepcopy(SNAPSHOT)
    target: Any = snap
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    restore(snap)
