"""Topic managers placed on servers by rank ranges, as in the paper's prototype (section 5.1: ids
1-200 on server 1, 201-400 on server 2, ...), and the cross-server traffic that follows (Figs. 11,
12). Chains only climb towards higher ranks, so the first server never forwards to another one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from faidecs.ordering.network import LinkStats

TM_PREFIX = "tm:"


def place_by_ranges(topics: Iterable[str], servers: int) -> dict[str, int]:
    """Server (0-based) of each topic: ranks split into ``servers`` equal consecutive ranges."""
    ranked = sorted(set(topics))
    if servers < 1:
        raise ValueError("at least one server")
    size = -(-len(ranked) // servers) or 1
    return {topic: i // size for i, topic in enumerate(ranked)}


def forwarded_entries(
    sent: Mapping[tuple[str, str], LinkStats], placement: Mapping[str, int]
) -> dict[tuple[int, int], int]:
    """Timestamp entries carried between TMs on different servers, per (from server, to server)."""
    traffic: dict[tuple[int, int], int] = {}
    for (src, dst), stats in sent.items():
        if src.startswith(TM_PREFIX) and dst.startswith(TM_PREFIX):
            a, b = placement[src[len(TM_PREFIX) :]], placement[dst[len(TM_PREFIX) :]]
            if a != b:
                traffic[(a, b)] = traffic.get((a, b), 0) + stats.entries
    return traffic
