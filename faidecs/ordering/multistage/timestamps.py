"""Multistage timestamps and sequencing groups (Baldoni et al., Defs. 1-4 and Fig. 15).

Topics are names; a smaller name has a higher rank (``->``), so the rank order is string order and
"T ranks above X" reads ``T < X``. A timestamp maps each topic of the publication topic's
sequencing group to a sequence number (``None`` while a chain has not filled it in yet).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

Timestamp = dict[str, int]
Partial = dict[str, "int | None"]


def sequencing_group(topic: str, subscriptions: Iterable[frozenset[str]], threshold: int = 2) -> frozenset[str]:
    """Def. 1 / Fig. 15: ``topic`` plus every topic that at least ``threshold`` subscriptions share with it."""
    counts: dict[str, int] = {}
    for subscription in subscriptions:
        if topic in subscription:
            for other in subscription:
                counts[other] = counts.get(other, 0) + 1
    return frozenset({topic} | {other for other, n in counts.items() if n >= threshold})


def comparable(a: Mapping[str, int], b: Mapping[str, int]) -> bool:
    """Def. 3: the timestamps share a topic."""
    return not a.keys().isdisjoint(b.keys())


def smaller(a: Mapping[str, int], b: Mapping[str, int]) -> bool:
    """Def. 4: comparable, no common entry larger in ``a``, and at least one smaller."""
    common = a.keys() & b.keys()
    return bool(common) and all(a[t] <= b[t] for t in common) and any(a[t] < b[t] for t in common)


def higher_ranked(ts: Mapping[str, object], topic: str) -> str | None:
    """The paper's ``next(ts, T)``: the nearest topic of ``ts`` ranked above ``topic``, if any."""
    above = [t for t in ts if t < topic]
    return max(above) if above else None


def complete(ts: Partial) -> Timestamp:
    missing = [t for t, v in ts.items() if v is None]
    if missing:
        raise ValueError(f"timestamp {ts} left entries {missing} unfilled")
    return {t: v for t, v in ts.items() if v is not None}
