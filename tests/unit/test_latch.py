"""Latch-time FIFO (seed 002): the digest's acceptance tests T-002-01 … T-002-15, with its numbers.

Tolerances are the digest's (1e-6 relative) unless a test says otherwise.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import lambertw

from faidecs.ordering.latch import (
    DelayEstimator,
    HeadOfLineScheduler,
    LatchConfig,
    LatchReceiver,
    LatePolicy,
    RecordEntry,
    Stamp,
    Stamper,
    cdf,
    latch_time,
    pdf,
    quantile,
    record_overhead,
    violation_probability,
)


def close(x: float, y: float, rel: float = 1e-6) -> bool:
    return math.isclose(x, y, rel_tol=rel, abs_tol=1e-9)


# --- T-002-01 CDF / pdf ---------------------------------------------------------------------------


def test_t_002_01_cdf_and_pdf() -> None:
    for x, f in ((0, 0.5), (1, 0.7240904), (2, 0.8646647), (3, 0.9377662), (-1, 0.2759096)):
        assert close(cdf(x, 1.0), f)
    for b in (0.5, 1.0, 7.0):
        for x in (0.1, 1.0, 4.0):
            assert close(cdf(-x, b), 1.0 - cdf(x, b))
        total = quad(lambda x, b=b: pdf(x, b), -np.inf, np.inf)[0]
        mean_abs = quad(lambda x, b=b: abs(x) * pdf(x, b), -np.inf, np.inf)[0]
        variance = quad(lambda x, b=b: x * x * pdf(x, b), -np.inf, np.inf)[0]
        assert close(total, 1.0) and close(mean_abs, 1.5 * b) and close(variance, 4 * b * b)


# --- T-002-02 quantile and branch -----------------------------------------------------------------

QUANTILES = {
    0.5: 0.0,
    0.6: 0.409356,
    0.7: 0.873054,
    0.8: 1.466203,
    0.9: 2.397276,
    0.95: 3.271812,
    0.98: 4.378692,
    0.99: 5.191820,
    0.999: 7.804280,
}


@pytest.mark.parametrize(("p", "expected"), sorted(QUANTILES.items()))
def test_t_002_02_quantile(p: float, expected: float) -> None:
    for b in (1.0, 3.0):
        assert math.isclose(quantile(p, b), expected * b, rel_tol=1e-6, abs_tol=1e-6)
    assert math.isclose(cdf(quantile(p, 1.0), 1.0), p, abs_tol=1e-9)


def test_t_002_02_lower_branch_values() -> None:
    assert close(lambertw(-4 * math.exp(-2) * 0.05, k=-1).real, -5.271812)
    assert close(lambertw(-4 * math.exp(-2) * 0.2, k=-1).real, -3.466203)


def test_t_002_02_printed_variants_are_not_returned() -> None:
    """Erratum E1: the paper's three printed forms, on either branch, give none of the right values."""
    z = 4 * math.exp(-2) * (0.95 - 1)
    w0, wm1 = lambertw(z, k=0).real, lambertw(z, k=-1).real
    variants = {"Eq. 5 + W0": w0 + 2, "Eq. 5 + W-1": wm1 + 2, "appendix + W0": -(w0 - 2), "appendix + W-1": -(wm1 - 2)}
    for value, printed in zip(variants.values(), (1.9722, -3.2718, 2.0278, 7.2718)):
        assert math.isclose(value, printed, abs_tol=1e-4)  # the digest's numbers for the wrong forms
        assert not math.isclose(quantile(0.95, 1.0), value, abs_tol=1e-3)
    assert close(quantile(0.95, 1.0), 3.271812)


# --- T-002-03 / T-002-04 estimator and ring buffer ------------------------------------------------


def test_t_002_03_estimator() -> None:
    e = DelayEstimator(q=25)
    for x in (-6, 3, 9, -12, 0, 6):
        e.update(x)
    assert e.beta == 4.0
    assert close(quantile(0.95, e.beta), 13.087248)
    assert close(quantile(0.8, e.beta), 5.864814)


def test_t_002_03_estimator_monte_carlo() -> None:
    rng = np.random.default_rng(2)
    sample = rng.laplace(0, 7, 200_000) + rng.laplace(0, 7, 200_000)
    beta = 2 * np.abs(sample).sum() / (3 * sample.size)
    assert abs(beta - 7.0) < 0.05


def test_t_002_04_ring_buffer() -> None:
    e = DelayEstimator(q=25)
    xs = [float((-1) ** i * i) for i in range(30)]
    for x in xs:
        e.update(x)
    assert e.samples == tuple(xs[-25:])
    assert close(e.beta, 2 * sum(abs(x) for x in xs[-25:]) / 75)
    literal, over_q = DelayEstimator(25, literal=True), DelayEstimator(25)
    for x in (2, -4, -3):
        literal.update(x)
        over_q.update(x)
    assert close(literal.beta, 0.24) and close(over_q.beta, 2.0)


# --- T-002-05 clock offset ------------------------------------------------------------------------


def run_trace(trace: list[tuple[int, float, float]], dep_offset: float = 0.0, arr_offset: float = 0.0):  # type: ignore[no-untyped-def]
    """Feed (seq, departure, arrival) in arrival order; prev_departure from the trace itself."""
    departures = {seq: dep for seq, dep, _ in trace}
    r: LatchReceiver[int] = LatchReceiver(LatchConfig(p_t=0.05, q=25, late=LatePolicy.DELIVER))
    out = []
    for seq, dep, arr in trace:
        prev = departures.get(seq - 1)
        stamp = Stamp("p", seq, dep + dep_offset, None if prev is None else prev + dep_offset)
        deadline = r.deadline()
        if deadline is not None and deadline <= arr + arr_offset:
            out += r.poll(deadline)
        out += r.receive(stamp, seq, arr + arr_offset)
    return r, out


def test_t_002_05_clock_offset() -> None:
    rng = random.Random(5)
    trace = []
    for seq in range(300):
        dep = seq * 2.0 + rng.random()
        trace.append((seq, dep, dep + 50 + sum(rng.expovariate(0.2) for _ in range(3))))
    trace.sort(key=lambda t: t[2])
    plain, released = run_trace(trace)
    shifted, released2 = run_trace(trace, dep_offset=12345.678, arr_offset=-987.5)
    assert plain.stats.holes, "the trace has holes to latch"
    for a, b in zip(plain.estimator.samples, shifted.estimator.samples):
        assert math.isclose(a, b, abs_tol=1e-6)
    for h1, h2 in zip(plain.stats.holes, shifted.stats.holes, strict=True):
        assert math.isclose(h1.beta, h2.beta, abs_tol=1e-6)
        assert h1.delta is not None and h2.delta is not None
        assert math.isclose(h1.delta, h2.delta, abs_tol=1e-6)
        assert math.isclose(h1.tau, h2.tau, abs_tol=1e-6)
    assert [r.seq for r in released] == [r.seq for r in released2]


# --- T-002-06 / 07 / 08 latch time and violation probability --------------------------------------


def test_t_002_06_latch_time() -> None:
    assert close(latch_time(10.0, 0.05, 5.0), 27.718121)
    assert latch_time(10.0, 0.05, 40.0) == 0.0  # τ < 0: deliver at once
    assert close(quantile(0.95, 10.0) - 40.0, -7.28188, rel=1e-5)
    assert close(latch_time(4.0, 0.2, 0.0), 5.864814)
    with pytest.raises(ValueError):
        latch_time(1.0, 0.6, 0.0)  # the formula holds for P_t ≤ 0.5


def test_t_002_07_violation_probability() -> None:
    assert close(violation_probability(2.0, 4.0), 0.3790817)
    assert close(violation_probability(2.0, 2.0), 0.2759096)
    assert violation_probability(0.0, 3.0) == 0.5
    values = [violation_probability(d, 3.0) for d in np.linspace(0, 30, 50)]
    assert all(a > b for a, b in itertools.pairwise(values))


def test_t_002_08_only_the_latest_missing_message_matters() -> None:
    d7, d8, d9, d10 = 70.0, 80.0, 90.0, 95.0
    for beta in (0.5, 5.0, 50.0):
        t9, t8, t7 = (latch_time(beta, 0.05, d10 - d) for d in (d9, d8, d7))
        assert t9 >= t8 >= t7
    r: LatchReceiver[int] = LatchReceiver()
    assert r.gap(Stamp("p", 10, d10, d9), base_seq=6) == d10 - d9  # basic mode: from prev_departure


# --- T-002-09 full trace, basic mode --------------------------------------------------------------


def trace_09(m3_arrival: float) -> tuple[LatchReceiver[int], list[tuple[int, float, bool]]]:
    r: LatchReceiver[int] = LatchReceiver(LatchConfig(p_t=0.05, q=3, late=LatePolicy.DELIVER))
    out = []
    events = [(0, 0.0, 100.0, None), (1, 10.0, 112.0, 0.0), (2, 20.0, 118.0, 10.0), (4, 30.0, 125.0, 28.0)]
    events.append((3, 28.0, m3_arrival, 20.0))
    for seq, dep, arr, prev in events:
        deadline = r.deadline()
        if deadline is not None and deadline <= arr:
            out += [(x.seq, x.time, x.late) for x in r.poll(deadline)]
        out += [(x.seq, x.time, x.late) for x in r.receive(Stamp("p", seq, dep, prev), seq, arr)]
    deadline = r.deadline()
    if deadline is not None:
        out += [(x.seq, x.time, x.late) for x in r.poll(deadline)]
    return r, out


def test_t_002_09_full_trace() -> None:
    r, out = trace_09(131.0)
    assert out[:3] == [(0, 100.0, False), (1, 112.0, False), (2, 118.0, False)]
    (hole,) = r.stats.holes
    assert hole.seq == 4 and close(hole.beta, 2.0) and hole.delta == 2.0
    assert close(hole.tau, 4.543624) and close(hole.violation_probability, 0.2759096)
    assert out[3][0] == 4 and close(out[3][1], 129.543624)
    assert out[4] == (3, 131.0, True)  # late: a FIFO violation under the deliver policy
    assert r.stats.late_delivered == 1
    assert r.estimator.samples == (-4.0, -3.0, 8.0) and close(r.estimator.beta, 3.333333)


def test_t_002_09_hole_filled_in_time() -> None:
    r, out = trace_09(128.0)
    assert out[3:] == [(3, 128.0, False), (4, 128.0, False)]  # m4 follows m3 at once
    assert r.stats.late_delivered == 0


def test_t_002_09_drop_policy_counts_a_loss() -> None:
    r: LatchReceiver[int] = LatchReceiver(LatchConfig(p_t=0.05, q=3, late=LatePolicy.DROP))
    for seq, dep, arr, prev in [
        (0, 0.0, 100.0, None),
        (1, 10.0, 112.0, 0.0),
        (2, 20.0, 118.0, 10.0),
        (4, 30.0, 125.0, 28.0),
    ]:
        r.receive(Stamp("p", seq, dep, prev), seq, arr)
    assert [x.seq for x in r.poll(130.0)] == [4]
    assert r.receive(Stamp("p", 3, 28.0, 20.0), 3, 131.0) == []
    assert r.stats.late_dropped == 1 and r.stats.late_delivered == 0


# --- T-002-10 enhanced mode -----------------------------------------------------------------------


def enhanced(matching: set[int]) -> LatchReceiver[int]:
    return LatchReceiver(relevant=lambda summary: int(summary) in matching)


def test_t_002_10_enhanced_mode_selection() -> None:
    assert close(quantile(0.95, 5.0), 16.359060)
    record = (RecordEntry(7, 70.0, "7"), RecordEntry(8, 80.0, "8"), RecordEntry(9, 90.0, "9"))
    m10 = Stamp("p", 10, 95.0, 90.0, record)
    # (a) m9 does not match, m8 does: δ against m8
    r = enhanced({8})
    gap = r.gap(m10, base_seq=6)
    assert gap == 15.0 and close(r.latch_time(5.0, gap), 1.359060)
    # (b) basic mode: δ against m9
    basic: LatchReceiver[int] = LatchReceiver()
    gap = basic.gap(m10, base_seq=6)
    assert gap == 5.0 and close(basic.latch_time(5.0, gap), 11.359060)
    # (c) nothing in R matches and the hole lies inside R: no latch (E8: the prose's rule)
    assert enhanced(set()).gap(m10, base_seq=6) is None
    # (d) a record of 2 that does not cover the hole 7..9: the earliest entry, conservatively
    short = Stamp("p", 10, 95.0, 90.0, record[1:])
    r = enhanced(set())
    gap = r.gap(short, base_seq=6)
    assert gap == 15.0 and close(r.latch_time(5.0, gap), 1.359060)


def test_t_002_10_enhanced_mode_releases_at_once() -> None:
    """m10 after m6 with m7..m9 all non-matching: delivered on arrival."""
    stamper = Stamper("p", record_size=3)
    stamps = [stamper.stamp(10.0 * k, "A" if k < 7 or k == 10 else "B") for k in range(11)]
    r: LatchReceiver[int] = LatchReceiver(relevant=lambda s: s == "A")
    for k in range(7):
        assert [x.seq for x in r.receive(stamps[k], k, 100.0 + 10 * k)] == [k]
    assert [x.seq for x in r.receive(stamps[10], 10, 200.0)] == [10]
    assert r.stats.assigned_delay == 0.0


# --- T-002-11 / T-002-12 scheduler and late messages ----------------------------------------------


def test_t_002_11_nothing_overtakes_a_latched_message() -> None:
    s: HeadOfLineScheduler[str] = HeadOfLineScheduler()
    s.add(3, "m3", 0.0, 0.0)
    assert [x.seq for x in s.release(0.0)] == [3]
    s.add(5, "m5", 5.0, 50.0)  # m4 missing: latched until 50
    s.add(6, "m6", 10.0, 10.0)  # in order after m5, timer 0
    assert s.release(10.0) == [] and s.deadline() == 50.0
    s.check()
    released = s.release(50.0)
    assert [(x.seq, x.time) for x in released] == [(5, 50.0), (6, 50.0)]
    assert released[1].held == 40.0


def test_t_002_11_hole_filling_releases_the_held_ones() -> None:
    s: HeadOfLineScheduler[str] = HeadOfLineScheduler()
    s.add(3, "m3", 0.0, 0.0)
    s.release(0.0)
    s.add(5, "m5", 5.0, 50.0)
    s.add(6, "m6", 10.0, 10.0)
    s.add(4, "m4", 20.0, 20.0)
    assert [x.seq for x in s.release(20.0)] == [4, 5, 6]


def test_late_message_joins_the_pending_latch() -> None:
    """m2 missing, m3 late in front of a latched m4: the variant holds m3 until m4's latch ends
    (m2 may still come); the listing's rule (timer 0) releases m3 and m4 at once."""
    for joins, expected in ((True, [0, 1, 2, 3, 4]), (False, [0, 1, 3, 4, 2])):
        cfg = LatchConfig(p_t=0.05, q=25, late=LatePolicy.DELIVER, late_joins_latch=joins)
        r: LatchReceiver[int] = LatchReceiver(cfg)
        out = []
        # β grows from jittered arrivals, then m4 arrives before m2 and m3
        for seq, dep, arr in [(0, 0.0, 100.0), (1, 1.0, 109.0)]:
            out += r.receive(Stamp("p", seq, dep, dep - 1 if seq else None), seq, arr)
        out += r.receive(Stamp("p", 4, 4.0, 3.0), 4, 110.0)
        deadline = r.deadline()
        assert deadline is not None and deadline > 112.0
        out += r.receive(Stamp("p", 3, 3.0, 2.0), 3, 111.0)
        out += r.receive(Stamp("p", 2, 2.0, 1.0), 2, 112.0)
        out += r.poll(1000.0)
        assert [x.seq for x in out] == expected
        assert r.stats.late_delivered == (0 if joins else 1)


@pytest.mark.parametrize("policy", list(LatePolicy))
def test_t_002_12_late_message(policy: LatePolicy) -> None:
    r: LatchReceiver[int] = LatchReceiver(LatchConfig(late=policy))
    for seq in range(8):
        r.receive(Stamp("p", seq, float(seq), float(seq - 1) if seq else None), seq, 100.0 + seq + (seq % 3))
    r.receive(Stamp("p", 10, 10.0, 9.0), 10, 110.0)
    released = r.poll(10_000.0)
    assert [x.seq for x in released] == [10]
    samples = len(r.estimator.samples)
    out = r.receive(Stamp("p", 8, 8.0, 7.0), 8, 111.0)
    assert len(r.estimator.samples) == samples + 1  # the sample counts either way
    if policy is LatePolicy.DELIVER:
        assert [(x.seq, x.late) for x in out] == [(8, True)] and r.stats.late_delivered == 1
    else:
        assert out == [] and r.stats.late_dropped == 1


# --- T-002-13 / 14 / 15 ---------------------------------------------------------------------------


def test_t_002_13_record_overhead() -> None:
    assert record_overhead(5) == 80 and record_overhead(25) == 400
    stamper = Stamper("p", record_size=5)
    stamps = [stamper.stamp(float(k), "T") for k in range(8)]
    assert stamps[0].record == () and stamps[0].prev_departure is None
    assert [e.seq for e in stamps[7].record or ()] == [2, 3, 4, 5, 6]
    assert stamps[7].prev_departure == 6.0
    assert Stamper("p").stamp(0.0).record is None  # basic mode: no record


def test_t_002_14_basic_latches_at_least_as_long_as_enhanced() -> None:
    rng = random.Random(14)
    basic: LatchReceiver[int] = LatchReceiver()
    for _ in range(2000):
        y = rng.randint(0, 8)
        stamper = Stamper("p", record_size=y)
        n = rng.randint(2, 12)
        departures = np.cumsum([rng.expovariate(1.0) for _ in range(n + 1)])
        stamps = [stamper.stamp(float(d), rng.choice("AB")) for d in departures]
        enh: LatchReceiver[int] = LatchReceiver(relevant=lambda s: s == "A")
        m = stamps[n]
        base = rng.randint(0, n - 2)
        b_gap, e_gap = basic.gap(m, base), enh.gap(m, base)
        assert b_gap is not None
        beta = rng.uniform(0.1, 10)
        tau_enh = 0.0 if e_gap is None else enh.latch_time(beta, e_gap)
        assert basic.latch_time(beta, b_gap) >= tau_enh


def test_t_002_15_two_laplace_tail_on_k_sums() -> None:
    rng = np.random.default_rng(15)
    expected_ratio = [0.666, 1.000, 1.251, 1.457, 1.640, 1.806, 1.956, 2.095]
    total = np.zeros(2_000_000)
    for k in range(1, 9):
        total += rng.laplace(0.0, 1.0, total.size)
        beta = (2 / 3) * np.abs(total).mean()
        assert abs(beta - expected_ratio[k - 1]) < 0.005, k
        if k >= 2:
            # the digest's ranges, widened by the sampling error (±0.0002): for k = 2 the model is
            # exact and the expected tails are 0.05 and 0.2 themselves
            assert 0.0428 <= (total > quantile(0.95, beta)).mean() <= 0.0502, k
            assert 0.1985 <= (total > quantile(0.80, beta)).mean() <= 0.2135, k


# --- T-002-17 adaptivity --------------------------------------------------------------------------


def test_t_002_17_latch_follows_the_publication_rate() -> None:
    """A step 25 → 1200 → 25 msg/s: τ and 1 − F(δ) rise within q messages after the step up and fall
    back after the step down (δ is read from each message's stamps, β from the last 25 samples)."""
    from faidecs.ordering.latch.path import PathConfig, simulate

    low, high = 300, 1500
    config = PathConfig(publishers=1, subscribers=1, phases=((low, 0.025), (high, 1.2), (low, 0.025)))
    run = simulate(config, {"P-0.05": LatchConfig(0.05)}, seed=17)
    holes = run.stats[("s0", "P-0.05", "p0")].holes

    def window(lo: int, hi: int) -> tuple[float, float]:
        # per message, 0 where no hole (Fig. 7 over time): a mean over holes alone would pick, at
        # low rates, the rare pairs that Poisson sent close together
        inside = [h for h in holes if lo <= h.seq < hi]
        return sum(h.tau for h in inside) / (hi - lo), sum(h.violation_probability for h in inside) / (hi - lo)

    before, burst, after = window(25, low), window(low + 25, low + high), window(low + high + 25, 2 * low + high)
    # measured (seed 17): τ 1.4 / 4.1 / 1.1 ms per message, 1 − F(δ) 0.029 / 0.096 / 0.023; at
    # 25 msg/s Poisson still sends some pairs close together, so the low phases latch too
    assert burst[0] > 2 * max(before[0], after[0])
    assert burst[1] > 2 * max(before[1], after[1])
