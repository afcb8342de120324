"""The compiled matcher against the reference matcher (the oracle), on random programs and streams.

Why: the compiled kernels search incrementally, keep queues as encoded rows and take the
options at run time; none of that may change a relation, its order or a queue. Each example
draws one program structure and runs it under all 16 option combinations (one kernel serves
them all, so an example costs one compilation per conjunction) over several streams, comparing
deliveries and queue states after every event, through ``publish`` and through ``publish_batch``
cut at random points.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from stepwise import Delivered, as_batch, per_event  # noqa: E402
from strategies import DISPOSALS, MATCHINGS, Event, between, draw_programs, draw_streams, program_text  # noqa: E402

from faidecs import Engine

# Every example compiles its conjunctions once; the count of structures is kept small (the suite's
# budget: 12 under the default profile, 25 before issue 24) and the runs per structure high (16
# option combinations x 2 streams, each also cut into batches).


@settings(max_examples=min(12, max(6, (settings.default.max_examples or 100) // 8)), deadline=None)
@given(st.data())
def test_compiled_matcher_agrees_with_reference_under_every_option(data: st.DataObject) -> None:
    spec = data.draw(st.builds(lambda: None).flatmap(lambda _: st.composite(draw_programs)(max_subs=2)))
    streams = [data.draw(st.composite(draw_streams)(spec.types, max_events=30)) for _ in range(2)]
    for matching in MATCHINGS:
        for disposal in DISPOSALS:
            subs = [replace(s, matching=matching, disposal=disposal) for s in spec.subs]
            text = program_text(spec.types, subs)
            for stream in streams:
                reference = Engine.from_source(text, matcher="reference")
                compiled = Engine.from_source(text, matcher="compiled")
                expected, expected_states = per_event(reference, stream)
                got, got_states = per_event(compiled, stream)
                assert got == expected, (matching, disposal)
                assert got_states == expected_states, (matching, disposal)
                assert compiled.snapshot() == reference.snapshot()
                # The same stream in batches cut at random points, mixed with single events.
                batched = Engine.from_source(text, matcher="compiled")
                flat: list[Delivered] = []
                k = 0
                while k < len(stream):
                    size = data.draw(st.integers(1, 12))
                    chunk = stream[k : k + size]
                    if size == 1:
                        flat += [(d.subscription, d.conjunction, tuple(d.ids)) for d in batched.publish(chunk[0])]
                    else:
                        flat += as_batch(batched, chunk)
                    batched.check()
                    assert batched.state_json() == expected_states[k + len(chunk) - 1]
                    k += len(chunk)
                assert flat == [d for step in expected for d in step]


@settings(max_examples=min(6, max(4, (settings.default.max_examples or 100) // 16)), deadline=None)
@given(st.data())
def test_restoring_across_matchers_continues_identically(data: st.DataObject) -> None:
    """A snapshot taken by one matcher restores into the other, and both go on alike."""
    spec = data.draw(st.composite(draw_programs)(max_subs=2))
    stream = data.draw(st.composite(draw_streams)(spec.types, max_events=30))
    cut = between(data.draw, 0, len(stream))
    for first, second in (("compiled", "reference"), ("reference", "compiled")):
        engine = Engine.from_source(spec.text, matcher=first)
        per_event(engine, stream[:cut])
        restored = Engine.restore(engine.snapshot(), matcher=second)
        restored.check()
        assert restored.snapshot() == engine.snapshot()
        assert per_event(restored, stream[cut:]) == per_event(engine, stream[cut:])


CHAINS = [
    # Sequences: the search's failure memo applies below each slot (see kernel_source._memo_fixed).
    "type A(t: int)\ntype B(t: int)\ntype C(t: int)\ntype D(t: int)\n"
    "subscription S: A.t < B.t and B.t < C.t and C.t < D.t and D.t - A.t <= 6\n",
    # Instance chains of one type between other types: the memo must not apply where the next
    # instance's candidates depend on the previous one.
    "type A(t: int)\ntype B(t: int)\n"
    "subscription S: A.t < B[0].t and B[0].t < B[1].t and B[1].t < B[2].t and B[2].t - A.t <= 5\n",
]


@settings(max_examples=min(40, max(15, (settings.default.max_examples or 100) // 4)), deadline=None)
@given(st.data())
def test_chains_agree_with_reference_under_every_option(data: st.DataObject) -> None:
    """Chains of ordering predicates, where the compiled search remembers failed subtrees."""
    program = CHAINS[data.draw(st.integers(0, len(CHAINS) - 1))]
    types = sorted({line.split()[1].split("(")[0] for line in program.splitlines() if line.startswith("type")})
    size = data.draw(st.integers(5, 40))
    stream: list[Event] = []
    for k in range(size):
        name = data.draw(st.sampled_from(types))
        stream.append({"id": f"e{k}", "type": name, "attrs": {"t": data.draw(st.integers(0, 8))}})
    for matching in MATCHINGS:
        for disposal in DISPOSALS:
            text = program.replace("subscription S:", f"subscription S (matching {matching}, disposal {disposal}):")
            expected = per_event(Engine.from_source(text, matcher="reference"), stream)
            assert per_event(Engine.from_source(text, matcher="compiled"), stream) == expected, (matching, disposal)
