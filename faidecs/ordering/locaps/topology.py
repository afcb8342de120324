"""Broker graphs of LoCaPS (seed 003) and the path predicates of its Sections III and V.

A broker graph is undirected; clients (publishers, subscribers) hang off one broker each. A *path*
from a publisher to a subscriber is written as the paper writes it, a tuple of node names that
starts with the publisher (the client: its link to its broker counts as a hop, as in Fig. 2) and
ends with the subscriber's broker. Path sets are either given (the routing paths: Fig. 3 needs
them, since "all simple paths" would make detours through other subscribers' brokers count) or
all simple paths of the graph (:meth:`BrokerGraph.simple_paths`).

Subscriptions are sets of event types: ``covers(a, b)`` when ``a ⊇ b``. faidecs's unary filters
would refine that (weaker-or-equal filters on a superset of types); LoCaPS here keeps to types.

Everything here is a pure function of its inputs; the runtime (:mod:`.layer`) and the tests use it.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

Path = tuple[str, ...]


@dataclass(slots=True)
class BrokerGraph:
    """Brokers and undirected links."""

    adjacent: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, edges: Iterable[tuple[str, str]]) -> BrokerGraph:
        graph = cls()
        for a, b in edges:
            graph.link(a, b)
        return graph

    def link(self, a: str, b: str) -> None:
        self.adjacent.setdefault(a, set()).add(b)
        self.adjacent.setdefault(b, set()).add(a)

    @property
    def brokers(self) -> list[str]:
        return sorted(self.adjacent)

    def edges(self) -> list[tuple[str, str]]:
        return sorted((a, b) for a in self.adjacent for b in self.adjacent[a] if a < b)

    def is_tree(self) -> bool:
        return len(self.edges()) == len(self.adjacent) - 1 and len(self.distances(self.brokers[0])) == len(
            self.adjacent
        )

    def distances(self, source: str) -> dict[str, int]:
        """Hop counts from ``source`` (breadth-first). O(V + E)."""
        out = {source: 0}
        todo = deque([source])
        while todo:
            node = todo.popleft()
            for n in sorted(self.adjacent[node]):
                if n not in out:
                    out[n] = out[node] + 1
                    todo.append(n)
        return out

    def tree_path(self, a: str, b: str) -> list[str]:
        """The path from broker ``a`` to broker ``b`` (the shortest one; the only one on a tree)."""
        parent: dict[str, str | None] = {a: None}
        todo = deque([a])
        while todo and b not in parent:
            node = todo.popleft()
            for n in sorted(self.adjacent[node]):
                if n not in parent:
                    parent[n] = node
                    todo.append(n)
        out = [b]
        while parent[out[-1]] is not None:
            out.append(parent[out[-1]])  # type: ignore[arg-type]
        return out[::-1]

    def simple_paths(self, a: str, b: str, *, avoid: frozenset[str] = frozenset()) -> list[list[str]]:
        """Every simple path from broker ``a`` to broker ``b`` not through ``avoid`` (exponential: small graphs)."""
        out: list[list[str]] = []
        stack: list[str] = [a]

        def walk(node: str) -> None:
            if node == b:
                out.append(list(stack))
                return
            for n in sorted(self.adjacent[node]):
                if n not in stack and n not in avoid:
                    stack.append(n)
                    walk(n)
                    stack.pop()

        if a not in avoid:
            walk(a)
        return out

    def separates(self, cut: Iterable[str], a: str, b: str) -> bool:
        """Whether every path from ``a`` to ``b`` passes a broker of ``cut`` (a vertex cut). O(V + E)."""
        blocked = set(cut)
        if a in blocked or b in blocked:
            return True
        seen = {a}
        todo = deque([a])
        while todo:
            node = todo.popleft()
            for n in self.adjacent[node]:
                if n == b:
                    return False
                if n not in seen and n not in blocked:
                    seen.add(n)
                    todo.append(n)
        return True


# --- generators ----------------------------------------------------------------------------------


def binary_tree(depth: int, *, prefix: str = "b") -> BrokerGraph:
    """A complete binary tree of ``depth`` levels below the root ``b1`` (heap numbering: the
    children of ``bk`` are ``b2k`` and ``b2k+1``; the leaves are ``b2^depth`` … ``b2^(depth+1)-1``)."""
    graph = BrokerGraph({f"{prefix}1": set()})
    for k in range(2, 2 ** (depth + 1)):
        graph.link(f"{prefix}{k // 2}", f"{prefix}{k}")
    return graph


def random_tree(rng: random.Random, size: int, *, prefix: str = "b") -> BrokerGraph:
    """A random recursive tree: broker k links to a uniformly chosen earlier broker."""
    graph = BrokerGraph({f"{prefix}0": set()})
    for k in range(1, size):
        graph.link(f"{prefix}{rng.randrange(k)}", f"{prefix}{k}")
    return graph


def augment(tree: BrokerGraph, f: int, root: str, *, along_root_paths: bool = True) -> BrokerGraph:
    """The δ-fault-tolerant graph of LoCaMu (Fig. 4(b)): ``tree`` plus skip links between brokers at
    tree distance 2 … f+1. With ``along_root_paths`` (the default) only ancestor–descendant pairs are
    linked, which keeps every f+1 consecutive brokers of a root path a vertex cut; linking all pairs
    breaks that for f ≥ 2 (digest B.3 caveat, checked by T-003-10)."""
    out = BrokerGraph({b: set(n) for b, n in tree.adjacent.items()})
    depth = tree.distances(root)
    for a in tree.brokers:
        for b, d in tree.distances(a).items():
            if 2 <= d <= f + 1 and a < b:
                if not along_root_paths or abs(depth[a] - depth[b]) == d:
                    out.link(a, b)
    return out


# --- stability (Defs. 3–6) and the conditions ------------------------------------------------------


def broker_links(path: Path) -> list[tuple[str, str]]:
    """The broker-to-broker links of a path (its first node is the publisher, a client)."""
    brokers = path[1:]
    return list(zip(brokers, brokers[1:]))


def link_stable(knows: frozenset[str] | set[str], a: str, b: str) -> bool:
    """Def. 3: both ends of the link know the subscription."""
    return a in knows and b in knows


def path_stable(knows: frozenset[str] | set[str], path: Path) -> bool:
    """Def. 4: every link of the path is link-stable (a single-broker path: its broker knows)."""
    links = broker_links(path)
    return all(link_stable(knows, a, b) for a, b in links) if links else path[-1] in knows


def pub_stable(knows: frozenset[str] | set[str], paths: Sequence[Path]) -> bool:
    """Def. 5: every path from the publisher to the subscriber is path-stable."""
    return all(path_stable(knows, p) for p in paths)


def f_stable(knows: frozenset[str] | set[str], paths_by_publisher: dict[str, Sequence[Path]]) -> bool:
    """Def. 6: publisher-stable for every matching publisher."""
    return all(pub_stable(knows, paths) for paths in paths_by_publisher.values())


def condition_3(knows: frozenset[str] | set[str], paths: Sequence[Path]) -> bool:
    """Cond. 3 (necessary and sufficient for GFD and GCD): some path is path-stable."""
    return any(path_stable(knows, p) for p in paths)


# --- coverage (Defs. 7–11) -----------------------------------------------------------------------


def covers(a: frozenset[str], b: frozenset[str]) -> bool:
    """Def. 7 on type sets: every event matching ``b`` matches ``a``."""
    return a >= b


def common_prefix(paths: Iterable[Sequence[str]]) -> Path:
    """The longest common prefix of ``paths``."""
    items = [tuple(p) for p in paths]
    if not items:
        return ()
    out: list[str] = []
    for column in zip(*items):
        if any(x != column[0] for x in column):
            break
        out.append(column[0])
    return tuple(out)


def lcp(covering: Sequence[Path], new: Sequence[Path]) -> Path:
    """Def. 10's LCP(p_k, s_i, s_j): the common prefix of all paths to both subscribers."""
    return common_prefix([*covering, *new])


def pivot(covering: Sequence[Path], new: Sequence[Path]) -> str:
    """Def. 10: the last broker of the LCP."""
    return lcp(covering, new)[-1]


def ppset(covering: Sequence[Path], new: Sequence[Path]) -> frozenset[str]:
    """Def. 11, PPSet(p_k, S_i, S_j) with S_i covering: for each path the new subscriber's events
    travel, its best partial pivot, the last node of its longest pairwise common prefix with a
    path of the covering subscriber. (The paper iterates over the covering subscriber's paths;
    the new subscriber's are the ones every event it gets must cross, so they are taken here. The
    paper's examples are symmetric and give the same set either way.)"""
    out = set()
    for path in new:
        best = max((common_prefix([path, other]) for other in covering), key=len)
        out.add(best[-1])
    return frozenset(out)


def locaps_ppset(tree: BrokerGraph, publisher_broker: str, pivot_broker: str, f: int) -> list[str]:
    """Sec. VI: on the augmented tree, PPSet = the base-tree pivot and the next f brokers toward
    the publisher (fewer when the publisher's broker is closer): |PPSet| = f + 1."""
    toward = tree.tree_path(pivot_broker, publisher_broker)
    return toward[: f + 1]


def marker_hops(paths: Sequence[Path], start: str | None = None) -> int:
    """Subscription latency of Alg. 1 in hops along the shortest given path: up to the publisher
    and back (2 × the path's hops, the client link included). With ``start`` (a pivot on the
    paths), 2 × the hops between the subscriber's broker and ``start``."""
    best = (
        min(len(p) - 1 for p in paths)
        if start is None
        else min(len(p) - 1 - p.index(start) for p in paths if start in p)
    )
    return 2 * best
