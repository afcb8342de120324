"""The compiled extended matcher against the extended reference matcher, under every option.

Why: the extended kernels (faidecs/matching/extended_kernel_source.py) search windows, ALL,
NONE and negations between instances incrementally (one slot bound to the arriving event), read
the queues and the negations' logs as encoded rows mirrored from the Python state, and take the
matching option and the window's duration at run time; none of that may change a relation, its
order, its delivered shape, a queue, a log or a snapshot. Each shape runs under all 21 option
combinations on seeded streams (late events and equal times included), comparing everything
observable after every event; snapshots restore across the two matchers, and a kernel that
arrives in the middle of a stream (background compilation) takes over without a difference.
One kernel serves every option combination of a shape, so the test compiles once per shape.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from faidecs import Engine
from faidecs.matching.compiled_extended_state import CompiledExtendedState
from faidecs.matching.kernel_broker import KernelHandle

TYPES = "type A(k: int, v: int, t: int)\ntype B(k: int, v: int, t: int)\ntype N(k: int, v: int, t: int)\n"
FLOAT_TYPES = TYPES.replace("t: int", "t: float")
COMBINATIONS = [(m, d) for m in ("FR", "FRC", "MR", "MRC") for d in ("I", "PI", "IP", "FP", "NONE")] + [("ALL", "NONE")]
SEEDS = 4

# (types, conjunction, window options or "", the types the stream draws from)
SHAPES: dict[str, tuple[str, str, str, str]] = {
    "window": (TYPES, "A and B and A.k = B.k", "within 3 on t", "AB"),
    "window, lateness, two instances": (
        TYPES,
        "A[0] and A[1] and B and A[0].v <= B.v",
        "within 4 on t, lateness 1",
        "AB",
    ),
    "float times, int duration": (FLOAT_TYPES, "A and B and A.v < B.v + 1", "within 2 on t", "AB"),
    "float times, float duration": (FLOAT_TYPES, "A and B", "within 1.5 on t, lateness 0.5", "AB"),
    "negation between": (
        TYPES,
        "A[1] and A[0].k = A[1].k and no N(N.k = A[0].k) between A[0] and A[1]",
        "",
        "AN",
    ),
    "absence": (TYPES, "A and no N(N.k = A.k) after A", "within 3 on t", "AN"),
    "absence with a float duration and lateness, two instances": (
        TYPES,
        "A[0] and A[1] and A[0].k = A[1].k and no N(N.v > A[1].v + 1) after A[1]",
        "within 2.5 on t, lateness 1",
        "AN",
    ),
    "absence on float times, and a negation between": (
        FLOAT_TYPES,
        "A and B and no N(N.k = A.k) after B and no N(N.v = B.v) between A and B",
        "within 3 on t",
        "ABN",
    ),
    "negation with arithmetic, in a window": (
        TYPES,
        "A and B and A.k = B.k and no N(N.v > A.v - 1 and N.k = 1) between B and A",
        "within 5 on t",
        "ABN",
    ),
}


def _stream(seed: int, types: str, floats: bool) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    t = 0
    out = []
    for i in range(rng.randint(20, 40)):
        t += rng.choice((0, 1, 1, 2))
        time: float = t - rng.randint(1, 3) if rng.random() < 0.15 else t  # late, or within lateness
        if floats:
            time += rng.choice((0.0, 0.25, 0.5))
        attrs = {"k": rng.randint(0, 1), "v": rng.randint(0, 3), "t": time}
        out.append({"id": f"e{i}", "type": rng.choice(types), "attrs": attrs})
        if rng.random() < 0.1:
            out.append({"advance": t + rng.choice((0, 1, 3))})  # a heartbeat: absences may fire
    return out


def _program(name: str, matching: str, disposal: str) -> str:
    types, conjunction, window, _ = SHAPES[name]
    options = f"matching {matching}, disposal {disposal}" + (f", {window}" if window else "")
    return types + f"subscription S ({options}): {conjunction}\n"


def _observe(engine: Engine, events: list[dict[str, Any]]) -> list[Any]:
    """After each event: its deliveries (with timeout and aggregates), the queues and the
    snapshot; ``check`` after every step."""
    seen = []
    for event in events:
        if "advance" in event:
            delivered = [d.to_json() for d in engine.advance(event["advance"])]
        else:
            delivered = [d.to_json() for d in engine.publish(event)]
        engine.check()
        seen.append((delivered, engine.state_json(), engine.snapshot()["queues"]))
    return seen


def _compiled_states(engine: Engine) -> list[CompiledExtendedState]:
    return [c for s in engine._subscriptions.values() for c in s.conjunctions if isinstance(c, CompiledExtendedState)]


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_compiled_extended_matcher_equals_the_reference(name: str) -> None:
    floats = SHAPES[name][0] is FLOAT_TYPES
    delivered = 0
    for seed in range(SEEDS):
        stream = _stream(seed, SHAPES[name][3], floats)
        for matching, disposal in COMBINATIONS:
            text = _program(name, matching, disposal)
            compiled = Engine.from_source(text, matcher="compiled", kernels="eager")
            assert compiled.matchers() == {"S": ["compiled"]}
            expected = _observe(Engine.from_source(text, matcher="reference"), stream)
            got = _observe(compiled, stream)
            assert got == expected, f"{name} {matching}+{disposal} seed {seed}"
            delivered += sum(len(step[0]) for step in got)
    assert delivered > 2 * len(COMBINATIONS)  # the streams exercise the shape


@pytest.mark.parametrize(
    "name", ["negation with arithmetic, in a window", "absence with a float duration and lateness, two instances"]
)
def test_snapshots_restore_across_the_matchers(name: str) -> None:
    """A snapshot of either matcher restores into the other, and both go on alike."""
    for seed, (matching, disposal) in enumerate(COMBINATIONS):
        stream = _stream(100 + seed, SHAPES[name][3], floats=False)
        cut = len(stream) // 2
        text = _program(name, matching, disposal)
        for first, second in (("compiled", "reference"), ("reference", "compiled")):
            engine = Engine.from_source(text, matcher=first, kernels="eager")
            _observe(engine, stream[:cut])
            restored = Engine.restore(engine.snapshot(), matcher=second, kernels="eager")
            restored.check()
            assert restored.snapshot() == engine.snapshot()
            assert _observe(restored, stream[cut:]) == _observe(engine, stream[cut:]), (matching, disposal, first)


def test_a_kernel_arriving_mid_stream_takes_over_exactly() -> None:
    """Background compilation: the state searches with the reference matcher until its kernel is
    loaded, then with the kernel, carrying queues, logs, watermark and counters over."""
    name = "negation with arithmetic, in a window"
    for seed, (matching, disposal) in enumerate(COMBINATIONS):
        stream = _stream(200 + seed, SHAPES[name][3], floats=False)
        text = _program(name, matching, disposal)
        expected = _observe(Engine.from_source(text, matcher="reference"), stream)
        engine = Engine.from_source(text, matcher="compiled", kernels="eager")
        (state,) = _compiled_states(engine)
        kernel = state.kernel
        assert kernel is not None
        state.kernel, state.handle = None, KernelHandle(kernel.source)  # as if still compiling
        engine._pending.append(state)
        cut = len(stream) // 2
        before = _observe(engine, stream[:cut])
        assert engine.matchers() == {"S": ["reference"]}
        state.handle._finish(kernel)
        assert engine.wait_for_kernels(0)
        assert engine.matchers() == {"S": ["compiled"]}
        assert before + _observe(engine, stream[cut:]) == expected, (matching, disposal)


def test_what_stays_on_the_reference_matcher() -> None:
    """Groups are not compiled: those conjunctions run on the reference matcher."""
    program = TYPES + (
        "subscription G (within 4 on t): A+ and B and count(A) >= 2\n"
        "subscription X (within 3 on t): A and no N(N.k = A.k) after A\n"
        "subscription W (matching ALL, disposal NONE, within 3 on t): A and B\n"
    )
    engine = Engine.from_source(program, matcher="compiled", kernels="eager")
    assert engine.matchers() == {"G": ["reference"], "X": ["compiled"], "W": ["compiled"]}


def test_a_match_left_in_the_queues_is_found_at_the_next_arrival() -> None:
    """After a match, the queues may hold another one without the next arriving event (here:
    disposal FP keeps the later instances of A); the kernel must then search them all, as the
    reference does, instead of only relations with the arriving event."""
    text = TYPES + (
        "subscription S (matching FR, disposal FP, within 100 on t): A[0] and A[1] and A[2] and B and A[0].k = A[2].k\n"
    )
    ks = {"b1": 0, "b2": 0, "a1": 0, "a2": 0, "a3": 1, "a4": 0, "a5": 1}
    stream = [{"id": i, "type": i[0].upper(), "attrs": {"k": k, "v": 0, "t": 1}} for i, k in ks.items()]
    expected = _observe(Engine.from_source(text, matcher="reference"), stream)
    assert [step[0] for step in expected][-2:] == [
        [{"subscription": "S", "conjunction": 0, "relation": ["a1", "a2", "a4", "b1"]}],
        [{"subscription": "S", "conjunction": 0, "relation": ["a2", "a3", "a4", "b2"]}],
    ]
    assert _observe(Engine.from_source(text, matcher="compiled", kernels="eager"), stream) == expected


def test_times_at_the_ends_of_int64() -> None:
    """Spans and deadlines beyond 64 bits: the kernel's checked arithmetic decides them as Python
    does, or hands the search to the reference matcher (an absence's deadline overflowing)."""
    big, small = 2**63 - 1, -(2**63)
    times = [small, small + 1, 0, big - 2, big - 1, big - 1, big, small, big]
    for conjunction in ("A and B", "A and no N(N.k = A.k) after A"):
        for matching, disposal in COMBINATIONS:
            text = TYPES + f"subscription S (matching {matching}, disposal {disposal}, within 3 on t): {conjunction}\n"
            stream = [
                {"id": f"e{i}", "type": "ABN"[i % 3], "attrs": {"k": 0, "v": 0, "t": t}} for i, t in enumerate(times)
            ]
            stream.insert(5, {"advance": big})
            expected = _observe(Engine.from_source(text, matcher="reference"), stream)
            assert _observe(Engine.from_source(text, matcher="compiled", kernels="eager"), stream) == expected
