"""The delay-difference model of seed 002: the sum of two i.i.d. Laplace variables ("2-Laplace").

The difference between the end-to-end delays of two messages sent close together is a sum of k
Laplace variables, one per broker on the path (each a difference of two i.i.d. exponential
processing times). The paper approximates it by the sum of *two* Laplace variables of scale ``b``,
whose tails are longer than those of the true k-sum, which errs on the conservative side where a
latch time is computed. Everything here is a closed form in ``b``; a scale of 0 is the degenerate
distribution at 0 (no samples yet, or a path that never reorders).

>>> round(quantile(0.95, 1.0), 6)
3.271812
>>> round(latch_time(10.0, 0.05, 5.0), 6)
27.718121
"""

from __future__ import annotations

import math

from scipy.special import lambertw


def pdf(x: float, b: float) -> float:
    """f(x) = (|x| + b) / (4b²) · e^(−|x|/b)."""
    if b <= 0:
        raise ValueError("the density of the degenerate distribution (b = 0) does not exist")
    a = abs(x)
    return (a + b) / (4 * b * b) * math.exp(-a / b)


def cdf(x: float, b: float) -> float:
    """F(x) = 1 − (2b + x)/(4b) · e^(−x/b) for x ≥ 0, and 1 − F(−x) below 0 (Eq. 3/8)."""
    if b <= 0:
        return 1.0 if x >= 0 else 0.0
    a = abs(x)
    tail = (2 * b + a) / (4 * b) * math.exp(-a / b)
    return 1.0 - tail if x >= 0 else tail


def quantile(p: float, b: float) -> float:
    """F⁻¹(p) = −b·[W₋₁(4e⁻²(p − 1)) + 2] for 0.5 ≤ p < 1, by symmetry below 0.5.

    The paper prints this formula three ways and none is right for either real branch (erratum
    E1); with t = x/b + 2 ≥ 2 the equation is −t·e^(−t) = 4e⁻²(p − 1), whose solution t ≥ 1 lies on
    the *lower* branch W₋₁. The principal branch (scipy's default) gives latch times about 40% too
    small at P_t = 0.05.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"a quantile needs 0 < p < 1, not {p}")
    if p < 0.5:
        return -quantile(1.0 - p, b)
    if b <= 0 or p == 0.5:
        return 0.0
    w = lambertw(4.0 * math.exp(-2.0) * (p - 1.0), k=-1)
    return -b * (float(w.real) + 2.0)


def violation_probability(delta: float, b: float) -> float:
    """Pr[delay(m1) − delay(m2) > δ] = 1 − F(δ): the chance that m1, sent δ before m2, arrives after
    it when nothing is latched (the value Fig. 7's third frame plots)."""
    return 1.0 - cdf(delta, b)


def latch_time(beta: float, p_t: float, delta: float) -> float:
    """τ = F⁻¹(1 − P_t) − δ (Eq. 4), clamped at 0: how long to hold a message sent δ after the
    latest missing one so that the missing one overtakes it with probability ≥ 1 − P_t."""
    if not 0.0 < p_t <= 0.5:
        raise ValueError(f"the violation bound P_t must lie in (0, 0.5], not {p_t}")
    return max(0.0, quantile(1.0 - p_t, beta) - delta)
