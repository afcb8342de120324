"""The extended language's matcher against a brute-force oracle, under every option, on seeded
streams: groups with aggregates, negation between instances, windows (late events included),
absences, ALL and NONE (docs/semantics.md, "The extended language")."""

from __future__ import annotations

import os
import random
from typing import Any

import pytest

from faidecs import Engine
from tests.unit.extended_oracle import Ev, Shape, World, run

TYPES = "type A(k: int, v: int, t: int)\ntype B(k: int, v: int, t: int)\ntype N(k: int, v: int, t: int)\n"
RUNS = int(os.environ.get("FAIDECS_EXTENDED_RUNS", "25"))
COMBINATIONS = [(m, d) for m in ("FR", "FRC", "MR", "MRC") for d in ("I", "PI", "IP", "FP", "NONE")] + [("ALL", "NONE")]


def _between(world: World, a: Ev, b: Ev, k: int) -> bool:
    low, high = sorted((a["arrival"], b["arrival"]))
    return any(low < n["arrival"] < high and n["k"] == k for n in world.logged)


def _after(world: World, a: Ev, duration: int) -> bool:
    deadline = a["t"] + duration
    if not world.watermark > deadline:
        return True  # not valid yet: treated as "something negated" by the caller
    return any(n["arrival"] > a["arrival"] and n["t"] <= deadline and n["k"] == a["k"] for n in world.logged)


SHAPES: dict[str, tuple[Shape, Any]] = {
    "group": (
        Shape(
            "A+ and B and A.k = B.k and prev(A).v <= A.v and count(A) >= 2",
            [("A", "+"), ("B", 0)],
            lambda b, w: (
                len(b[0]) >= 2
                and all(a["k"] == b[1]["k"] for a in b[0])
                and all(x["v"] <= y["v"] for x, y in zip(b[0], b[0][1:]))
            ),
        ),
        lambda e: True,
    ),
    "group filter and sum": (
        Shape("A+ and A.v > 0 and sum(A.v) >= 4", [("A", "+")], lambda b, w: sum(a["v"] for a in b[0]) >= 4),
        lambda e: e["v"] > 0,
    ),
    "negation": (
        Shape(
            "A[1] and A[0].k = A[1].k and no N(N.k = A[0].k) between A[0] and A[1]",
            [("A", 0), ("A", 1)],
            lambda b, w: b[0]["k"] == b[1]["k"] and not _between(w, b[0], b[1], b[0]["k"]),
            negated=("N",),
        ),
        lambda e: True,
    ),
    "window": (
        Shape("A and B and A.k = B.k", [("A", 0), ("B", 0)], lambda b, w: b[0]["k"] == b[1]["k"], window=(3, "t")),
        lambda e: True,
    ),
    "absence": (
        Shape(
            "A and no N(N.k = A.k) after A",
            [("A", 0)],
            lambda b, w: not _after(w, b[0], 3),
            negated=("N",),
            absence=lambda b: b[0],
            window=(3, "t"),
        ),
        lambda e: True,
    ),
    "group in a window": (
        Shape(
            "A+ and B and count(A) >= 2 and max(A.v) < B.v",
            [("A", "+"), ("B", 0)],
            lambda b, w: len(b[0]) >= 2 and max(a["v"] for a in b[0]) < b[1]["v"],
            window=(4, "t"),
        ),
        lambda e: True,
    ),
}


def _stream(seed: int, types: str, jitter: bool) -> list[Ev]:
    rng = random.Random(seed)
    t = 0
    out = []
    for i in range(rng.randint(4, 14)):
        t += rng.choice((0, 1, 1, 2))
        late = jitter and rng.random() < 0.15
        out.append(
            {
                "id": f"e{i}",
                "type": rng.choice(types),
                "k": rng.randint(0, 1),
                "v": rng.randint(0, 3),
                "t": t - rng.randint(1, 3) if late else t,
                "arrival": i,
            }
        )
    return out


def _engine_run(shape: Shape, matching: str, disposal: str, stream: list[Ev]) -> list[tuple[list[str], bool]]:
    options = f"matching {matching}, disposal {disposal}"
    if shape.window is not None:
        options += f", within {shape.window[0]} on {shape.window[1]}"
    engine = Engine.from_source(TYPES + f"subscription S ({options}): {shape.source}", matcher="reference")
    out = []
    for e in stream:
        attrs = {"k": e["k"], "v": e["v"], "t": e["t"]}
        for d in engine.publish({"id": e["id"], "type": e["type"], "attrs": attrs}):
            out.append((d.ids, d.timeout))
    return out


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_extended_matcher_equals_the_oracle(name: str) -> None:
    shape, admit = SHAPES[name]
    types = (
        "".join(dict.fromkeys(t for t, _ in shape.slots)) + "".join(shape.negated) + ("B" if name == "negation" else "")
    )
    delivered = 0
    for seed in range(RUNS):
        stream = _stream(seed, types, jitter=shape.window is not None)
        for matching, disposal in COMBINATIONS:
            expected = run(shape, matching, disposal, stream, admit)
            got = _engine_run(shape, matching, disposal, stream)
            assert got == expected, (
                f"{name} {matching}+{disposal} seed {seed}: stream "
                f"{[(e['id'], e['type'], e['k'], e['v'], e['t']) for e in stream]}"
            )
            delivered += len(got)
    assert delivered > RUNS  # the streams exercise the shapes: deliveries happen
