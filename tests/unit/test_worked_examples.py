"""The worked examples of the semantics file (normative), through the Python API."""

from __future__ import annotations

import pytest

from faidecs import Engine


def ev(event_id: str, type_name: str, **attrs: object) -> dict[str, object]:
    return {"id": event_id, "type": type_name, "attrs": attrs}


def run(program: str, events: list[dict[str, object]]) -> tuple[list[tuple[str, list[str]]], dict[str, object]]:
    engine = Engine.from_source(program)
    delivered: list[tuple[str, list[str]]] = []
    for event in events:
        for d in engine.publish(event):
            delivered.append((event["id"], d.ids))  # type: ignore[arg-type]
        engine.check()
    return delivered, engine.state_json()


EXAMPLE1 = [ev("x1", "T1", a=1), ev("x2", "T1", a=2), ev("y1", "T2", a=3)]


def test_example1_fr_pi() -> None:
    program = "type T1(a: int)\ntype T2(a: int)\nsubscription S: T1 and T2"
    delivered, state = run(program, EXAMPLE1)
    assert delivered == [("y1", ["x1", "y1"])]
    assert state == {"S": [{"T1": ["x2"], "T2": []}]}


def test_example1_mr_i() -> None:
    program = "type T1(a: int)\ntype T2(a: int)\nsubscription S (matching MR, disposal I): T1 and T2"
    delivered, state = run(program, EXAMPLE1)
    assert delivered == [("y1", ["x2", "y1"])]
    assert state == {"S": [{"T1": ["x1"], "T2": []}]}


EXAMPLE2 = [ev("a", "T", v=5), ev("b", "T", v=3), ev("c", "T", v=4)]


def test_example2_fr_pi() -> None:
    delivered, state = run("type T(v: int)\nsubscription S: T[0].v > T[1].v", EXAMPLE2)
    assert delivered == [("b", ["a", "b"])]
    assert state == {"S": [{"T": ["c"]}]}


def test_example2_mr_pi() -> None:
    delivered, state = run("type T(v: int)\nsubscription S (matching MR): T[0].v > T[1].v", EXAMPLE2)
    assert delivered == [("c", ["c", "b"])]
    assert state == {"S": [{"T": []}]}


EXAMPLE3 = [
    ev("e1", "T1", k=1),
    ev("e2", "T1", k=7),
    ev("e3", "T1", k=3),
    ev("e4", "T1", k=8),
    ev("e5", "T1", k=5),
    ev("ea", "T2", k=11),
    ev("eb", "T2", k=7),
    ev("ec", "T2", k=8),
]


@pytest.mark.parametrize(
    ("disposal", "queues"),
    [
        ("PI", {"T1": ["e5"], "T2": []}),
        ("I", {"T1": ["e1", "e3", "e5"], "T2": ["ea"]}),
        ("IP", {"T1": ["e1"], "T2": ["ea"]}),
        ("FP", {"T1": ["e3", "e4", "e5"], "T2": ["ec"]}),
    ],
)
def test_example3_disposal(disposal: str, queues: dict[str, list[str]]) -> None:
    program = (
        "type T1(k: int)\ntype T2(k: int)\n"
        f"subscription S (matching FR, disposal {disposal}): T1[0].k = T2[0].k and T1[1].k = T2[1].k"
    )
    delivered, state = run(program, EXAMPLE3)
    assert delivered == [("ec", ["e2", "e4", "eb", "ec"])]
    assert state == {"S": [queues]}
