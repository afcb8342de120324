"""Placing atoms on sequencing nodes and nodes on machines (Lumezanu et al. section 3.4), and stress.

Step 1 co-locates atoms so that all the groups of a sequencing node share a member, whose own
receive load then bounds the node's (transit traffic excepted). Step 2 puts the nodes of each
group's path on nearby machines.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

from faidecs.ordering.atoms.graph import SequencingGraph
from faidecs.ordering.atoms.overlap import AtomId


def colocate(overlaps: Mapping[AtomId, frozenset[str]], rng: random.Random) -> dict[AtomId, int]:
    """Step 1: atom -> sequencing node (numbered from 0).

    (a) an atom takes every unplaced atom whose overlap is a subset of its own (largest overlaps
    first, so a superset is always the one that takes); (b) each unit picks one member of its
    overlap at random and takes every other unit whose overlap contains that member; a unit
    takes part in one such merge only ("each sequencing atom is co-located only once").
    """
    order = sorted(overlaps, key=lambda a: (-len(overlaps[a]), a))
    unit: dict[AtomId, int] = {}
    leaders: list[AtomId] = []
    for a in order:
        if a in unit:
            continue
        unit[a] = len(leaders)
        leaders.append(a)
        for b in order:
            if b not in unit and overlaps[b] <= overlaps[a]:
                unit[b] = unit[a]
    merged_into: dict[int, int] = {}
    for u, leader in enumerate(leaders):
        if u in merged_into:
            continue
        host = rng.choice(sorted(overlaps[leader]))
        merged_into[u] = u
        for v, other in enumerate(leaders):
            if v not in merged_into and host in overlaps[other]:
                merged_into[v] = u
    renumber = {u: i for i, u in enumerate(sorted(set(merged_into.values())))}
    return {a: renumber[merged_into[u]] for a, u in unit.items()}


def assign_machines(
    graph: SequencingGraph,
    node_of: Mapping[AtomId, int],
    machines: Sequence[str],
    distance: Callable[[str, str], float],
    rng: random.Random,
) -> dict[int, str]:
    """Step 2: sequencing node -> machine, group by group (in name order).

    A group none of whose nodes is placed gets one of them on a random free machine; then the
    unplaced node nearest (along the path) to a placed one goes to the free machine nearest that
    one's machine. Once every machine is taken, machines are shared.
    """
    where: dict[int, str] = {}

    def free_near(anchor: str | None) -> str:
        free = [m for m in machines if m not in where.values()] or list(machines)
        if anchor is None:
            return rng.choice(free)
        return min(free, key=lambda m: (distance(anchor, m), m))

    for group in sorted(graph.paths):
        nodes = list(dict.fromkeys(node_of[a] for a in graph.paths[group]))
        if nodes and not any(n in where for n in nodes):
            where[rng.choice(nodes)] = free_near(None)
        while any(n not in where for n in nodes):
            placed = [i for i, n in enumerate(nodes) if n in where]
            i, j = min(
                ((i, j) for i, n in enumerate(nodes) if n not in where for j in placed), key=lambda p: abs(p[0] - p[1])
            )
            where[nodes[i]] = free_near(where[nodes[j]])
    return where


def stress(node: int, graph: SequencingGraph, node_of: Mapping[AtomId, int]) -> float:
    """The share of all groups whose messages the node forwards (stamped or transited), in [0, 1]."""
    if not graph.paths:
        return 0.0
    forwarded = sum(1 for path in graph.paths.values() if any(node_of[a] == node for a in path))
    return forwarded / len(graph.paths)
