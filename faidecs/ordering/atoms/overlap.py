"""Double overlaps: the pairs of groups that need their own sequence-number space.

Only receivers that belong to both of two groups can see their messages in different orders, and a
disagreement needs two of them, so a pair of groups with at least two common members gets an atom
(Lumezanu et al., Middleware 2006, section 3). A group is the set of processes subscribed to one
topic; groups are named by their topic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import combinations

#: an atom is named by the pair of groups it sequences, smaller name first
AtomId = tuple[str, str]


def atom_id(g: str, h: str) -> AtomId:
    return (g, h) if g < h else (h, g)


def groups_of(subscriptions: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    """Each topic's group: the processes subscribed to it (topics nobody holds have none)."""
    groups: dict[str, set[str]] = {}
    for process, topics in subscriptions.items():
        for topic in topics:
            groups.setdefault(topic, set()).add(process)
    return {topic: frozenset(members) for topic, members in groups.items()}


def double_overlaps(membership: Mapping[str, frozenset[str]]) -> dict[AtomId, frozenset[str]]:
    """Every pair of groups with at least two common members, mapped to the common members.

    Cost: one set intersection per pair of groups.
    """
    atoms: dict[AtomId, frozenset[str]] = {}
    for g, h in combinations(sorted(membership), 2):
        common = membership[g] & membership[h]
        if len(common) >= 2:
            atoms[(g, h)] = common
    return atoms


def atoms_of(group: str, atoms: Mapping[AtomId, frozenset[str]] | frozenset[AtomId]) -> list[AtomId]:
    """The atoms that sequence ``group``'s messages, in name order."""
    return sorted(a for a in atoms if group in a)
