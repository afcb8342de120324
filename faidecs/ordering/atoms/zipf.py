"""Zipf group sizes, as in the paper's evaluation: size of rank r proportional to r^-1 / H_{n,1}."""

from __future__ import annotations

import math


def harmonic(n: int, s: float = 1.0) -> float:
    """The generalised harmonic number H_{n,s} = sum over r = 1..n of r^-s."""
    return math.fsum(math.pow(r, -s) for r in range(1, n + 1))


def zipf_sizes(hosts: int, groups: int, minimum: int = 1) -> list[int]:
    """Group sizes hosts * r^-1 / H_{hosts,1} for ranks 1..groups, rounded, at least ``minimum``.

    The paper gives no minimum; with 128 hosts rank 32 is 0.74, so one has to be chosen.
    """
    h = harmonic(hosts)
    return [max(minimum, min(hosts, round(hosts / r / h))) for r in range(1, groups + 1)]
