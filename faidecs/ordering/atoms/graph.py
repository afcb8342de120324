"""Sequencing graphs: which atoms each group's messages traverse, and in which order.

Lumezanu et al. require C1 (all atoms of a group lie on the group's single path) and C2 (the
undirected graph formed by the paths is loop-free) but give no algorithm. Their Theorem 1 also
needs a condition the paper leaves out, C3: every edge is traversed in one direction by all groups.
Without it two messages can pass the same two atoms in opposite orders (see
``tests/unit/test_atoms.py::test_forest_without_fixed_orientation_stalls``).

Why C1 + C2 + C3 with FIFO links suffice: on a forest two paths share a contiguous segment, and
with one direction per edge both traverse it the same way, so FIFO links make them pass every
common atom in the same order. A receiver's "must come before" relation is contained in that
passage order. A cycle in it would be a cycle in the intersection graph of the paths, which are
subtrees of a tree; such intersection graphs are chordal, so a chord splits any cycle into a
shorter one that is still a cycle of the relation, down to a triangle; three pairwise intersecting
subtrees share an atom (Helly), where the three messages pass in one total order: no cycle.

Constructions here:

* ``line`` (the default): all atoms on one line in a fixed order; a group's path is the segment
  between its first and its last atom, traversed left to right; atoms of other pairs on the
  segment are transited without stamping. A subgraph of a directed path satisfies C2 and C3.
* ``compact``: the same, with a line order chosen to shorten the segments. Correct for the same
  reason, since any line order is.
* ``skip``: only the group's own atoms, in line order. Violates C2 in general (the negative
  control).

A group without double overlaps has an empty path: an ingress-only sequencer numbers it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from faidecs.ordering.atoms.overlap import AtomId, atoms_of, double_overlaps

Construction = Literal["line", "compact", "skip"]
Builder = Callable[[Mapping[str, frozenset[str]]], "SequencingGraph"]


@dataclass(frozen=True, slots=True)
class SequencingGraph:
    """Groups (topic -> members, none empty), atoms (pair -> common members) and one path per group."""

    membership: Mapping[str, frozenset[str]]
    overlaps: Mapping[AtomId, frozenset[str]]
    #: group -> atoms in traversal order; the first is the group's ingress; empty = ingress-only
    paths: Mapping[str, tuple[AtomId, ...]]

    def stamping(self, group: str) -> tuple[AtomId, ...]:
        """The atoms on ``group``'s path that number its messages (its own overlaps)."""
        return tuple(a for a in self.paths[group] if group in a)

    def header_size(self, group: str) -> int:
        """Sequence numbers on a message to ``group``: the group-local one plus one per stamping atom."""
        return 1 + len(self.stamping(group))

    def edges(self) -> set[tuple[AtomId, AtomId]]:
        """Directed edges (previous atom, next atom) over all paths."""
        return {(p[i], p[i + 1]) for p in self.paths.values() for i in range(len(p) - 1)}


def _segments(membership: Mapping[str, frozenset[str]], order: Sequence[AtomId]) -> dict[str, tuple[AtomId, ...]]:
    position = {a: i for i, a in enumerate(order)}
    paths: dict[str, tuple[AtomId, ...]] = {}
    for group in membership:
        mine = [position[a] for a in order if group in a]
        paths[group] = tuple(order[min(mine) : max(mine) + 1]) if mine else ()
    return paths


def _groups(membership: Mapping[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    return {g: m for g, m in membership.items() if m}


def line_graph(membership: Mapping[str, frozenset[str]], order: Sequence[AtomId] | None = None) -> SequencingGraph:
    """The line construction, atoms in name order unless ``order`` is given (it must list every atom)."""
    groups = _groups(membership)
    overlaps = double_overlaps(groups)
    line = list(order) if order is not None else sorted(overlaps)
    if sorted(line) != sorted(overlaps):
        raise ValueError("the line order must list every atom exactly once")
    return SequencingGraph(groups, overlaps, _segments(groups, line))


def _total_length(membership: Mapping[str, frozenset[str]], order: Sequence[AtomId]) -> int:
    return sum(len(p) for p in _segments(membership, order).values())


def _bfs_order(atoms: Sequence[AtomId], start: AtomId) -> list[AtomId]:
    # Cuthill-McKee style: atoms that share a group end up near each other, so segments stay short
    by_group: dict[str, list[AtomId]] = {}
    for a in atoms:
        for g in a:
            by_group.setdefault(g, []).append(a)
    seen: set[AtomId] = set()
    order: list[AtomId] = []
    for root in [start, *atoms]:
        if root in seen:
            continue
        seen.add(root)
        queue = deque([root])
        while queue:
            a = queue.popleft()
            order.append(a)
            for g in a:
                for b in by_group[g]:
                    if b not in seen:
                        seen.add(b)
                        queue.append(b)
    return order


def compact_line_graph(membership: Mapping[str, frozenset[str]], tries: int = 8) -> SequencingGraph:
    """A line whose order is the shortest (total path length) of name order and a few BFS orders.

    Deterministic; cost O(tries * atoms * groups).
    """
    groups = _groups(membership)
    atoms = sorted(double_overlaps(groups))
    candidates = [atoms] + [_bfs_order(atoms, s) for s in atoms[:tries]]
    best = min(candidates, key=lambda order: _total_length(groups, order))
    return line_graph(groups, best)


def skip_graph(membership: Mapping[str, frozenset[str]]) -> SequencingGraph:
    """Negative control: each group visits only its own atoms, in name order (violates C2 in general)."""
    groups = _groups(membership)
    overlaps = double_overlaps(groups)
    return SequencingGraph(groups, overlaps, {g: tuple(atoms_of(g, overlaps)) for g in groups})


def graph_from_paths(
    membership: Mapping[str, frozenset[str]], paths: Mapping[str, Sequence[AtomId]]
) -> SequencingGraph:
    """A graph with the given paths (groups not named get their own atoms in name order); not checked."""
    groups = _groups(membership)
    overlaps = double_overlaps(groups)
    full = {g: tuple(paths[g]) if g in paths else tuple(atoms_of(g, overlaps)) for g in groups}
    return SequencingGraph(groups, overlaps, full)


BUILDERS: dict[str, Builder] = {"line": line_graph, "compact": compact_line_graph, "skip": skip_graph}


def check_c1(paths: Mapping[str, Sequence[AtomId]], atoms: Mapping[AtomId, object] | frozenset[AtomId]) -> bool:
    """C1: every atom of a group lies on the group's path, which is simple and uses known atoms."""
    for group, path in paths.items():
        if len(set(path)) != len(path) or not set(path) <= set(atoms):
            return False
        if not set(atoms_of(group, frozenset(atoms))) <= set(path):
            return False
    return True


def check_c2(graph: SequencingGraph) -> bool:
    """C2: the undirected graph of the paths' edges is a forest (union-find; a repeated join is a loop)."""
    parent: dict[AtomId, AtomId] = {}

    def root(a: AtomId) -> AtomId:
        while parent.setdefault(a, a) != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    undirected = {tuple(sorted(e)) for e in graph.edges()}
    for a, b in undirected:
        ra, rb = root(a), root(b)
        if ra == rb:
            return False
        parent[ra] = rb
    return True


def check_c3(graph: SequencingGraph) -> bool:
    """C3: no edge is traversed in both directions."""
    edges = graph.edges()
    return not any((b, a) in edges for a, b in edges)
