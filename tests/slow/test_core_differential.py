"""Differential tests against a peer: the queries CORE (through pycer) and faidecs both express give
the same complex events on seeded streams (tests/core_peer.py has the harness and the cases,
docs/peers-core.md the correspondence). pycer runs in its own interpreter, made by scripts/pycer
(which ./scripts/test runs); without it these tests fail, saying how to make it."""

from __future__ import annotations

import dataclasses
import os

import pytest
from core_peer import CASES, Outcome, PeerMissing, compare_all, time_window

# One worker for the module: pycer's servers bind fixed ports, so two at once would only retry.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("pycer")]

# 20 streams of 30 events per case: 360 streams, 10,800 events (and the noise between streams).
SEGMENTS = int(os.environ.get("FAIDECS_CORE_SEGMENTS", "20"))
LENGTH = 30


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome] | PeerMissing:
    """Every case's outcome, from one CORE process; or why CORE cannot run (each test then fails
    with it: a missing peer is a failure, not a skip)."""
    try:
        _, found = compare_all(CASES, seed=0, segments=SEGMENTS, length=LENGTH)
    except PeerMissing as exc:
        return exc
    return {case.name: outcome for case, outcome in zip(CASES, found)}


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_core_and_faidecs_give_the_same_complex_events(outcomes: dict[str, Outcome] | PeerMissing, name: str) -> None:
    if isinstance(outcomes, PeerMissing):
        pytest.fail(str(outcomes), pytrace=False)
    outcome = outcomes[name]
    assert outcome.mismatch is None, str(outcome.mismatch)
    # The streams exercise the query: a case that never matches would compare nothing.
    assert outcome.complex_events >= 10, f"{name}: only {outcome.complex_events} complex events compared"


def test_a_mistranslation_is_caught_and_shrunk() -> None:
    """The comparison can fail: CEQL's attribute window is strict (last - first < d) where faidecs's
    is not, so translating WITHIN 4 [ts] as within 4 on ts (not 3) delivers the pairs exactly 4
    apart, which CORE does not; the failure shows a stream of just such a pair."""
    right = next(c for c in CASES if c.name == "sequence")
    wrong = dataclasses.replace(
        right,
        name="sequence, window off by one",
        ceql=f"SELECT * FROM S WHERE A ; B {time_window(4)[0]}",
        options="matching ALL, disposal NONE, within 4 on ts",
    )
    try:
        _, (outcome,) = compare_all([wrong], seed=0, segments=5, length=30)
    except PeerMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    mismatch = outcome.mismatch
    assert mismatch is not None
    assert mismatch.core_only == []
    assert len(mismatch.faidecs_only) == 1
    ((_, (first, last)),) = mismatch.faidecs_only
    times = {a["pos"]: a["ts"] for _, a in mismatch.events}
    assert times[last] - times[first] == 4
    # Shrunk: the A, the B, and at most three events between them with a time step of at least 1
    # (the B's own step is at most 3); any other event could go.
    assert len(mismatch.events) <= 5, str(mismatch)
