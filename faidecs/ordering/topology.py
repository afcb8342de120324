"""A transit-stub router topology with propagation delays, hosts in clusters, and Dijkstra.

Lumezanu et al. evaluate sequencing atoms on a 10,000-router GT-ITM transit-stub graph. GT-ITM is
not packaged for Python, so this is a small generator of the same shape: transit domains joined
to each other, each transit router with a few stub domains hanging off it, every domain a random
connected graph (a random spanning tree, so it is connected, plus extra random edges). Delays are
per edge, uniform in a range that depends on the edge's kind (inter-transit edges are the long
ones). Hosts sit in clusters: a cluster is one random stub domain, each host on a random router of
it behind an access link, so hosts of a cluster are close (the paper's "online communities").
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass

#: (low, high) delay in ms per edge kind; GT-ITM's defaults are unitless, these are plausible WAN values
DELAYS: dict[str, tuple[float, float]] = {
    "inter_transit": (20.0, 60.0),
    "intra_transit": (5.0, 20.0),
    "stub_transit": (2.0, 8.0),
    "intra_stub": (1.0, 4.0),
}
ACCESS_DELAY = 1.0  # host to its stub router, ms


@dataclass(frozen=True, slots=True)
class TransitStubGraph:
    adjacency: list[list[tuple[int, float]]]  # router -> (neighbour, delay ms)
    transit: list[list[int]]  # transit domain -> its routers
    stubs: list[list[int]]  # stub domain -> its routers

    @property
    def routers(self) -> int:
        return len(self.adjacency)


def transit_stub(
    rng: random.Random,
    transit_domains: int = 4,
    transit_size: int = 10,
    stubs_per_transit: int = 3,
    stub_size: int = 83,
    extra_edges: float = 0.5,
) -> TransitStubGraph:
    """routers = T * t * (1 + s * n); the defaults give 4 * 10 * (1 + 3 * 83) = 10,000."""
    adjacency: list[list[tuple[int, float]]] = []

    def new_routers(n: int) -> list[int]:
        start = len(adjacency)
        adjacency.extend([] for _ in range(n))
        return list(range(start, start + n))

    def link(a: int, b: int, kind: str) -> None:
        delay = rng.uniform(*DELAYS[kind])
        adjacency[a].append((b, delay))
        adjacency[b].append((a, delay))

    def domain(nodes: list[int], kind: str) -> None:
        # a random tree keeps it connected; about extra_edges * n more edges make it meshier (avg degree ~3)
        for i in range(1, len(nodes)):
            link(nodes[i], nodes[rng.randrange(i)], kind)
        present = {(a, b) for a in nodes for b, _ in adjacency[a]}
        for _ in range(round(extra_edges * len(nodes)) if len(nodes) > 2 else 0):
            a, b = rng.sample(nodes, 2)
            if (a, b) not in present:
                present |= {(a, b), (b, a)}
                link(a, b, kind)

    transit = [new_routers(transit_size) for _ in range(transit_domains)]
    for t in transit:
        domain(t, "intra_transit")
    for i in range(1, transit_domains):  # the domains themselves form a random tree plus one extra edge each
        for j in {rng.randrange(i), rng.randrange(i)}:
            link(rng.choice(transit[i]), rng.choice(transit[j]), "inter_transit")
    stubs: list[list[int]] = []
    for t in transit:
        for router in t:
            for _ in range(stubs_per_transit):
                stub = new_routers(stub_size)
                domain(stub, "intra_stub")
                link(router, rng.choice(stub), "stub_transit")  # one uplink per stub, as GT-ITM's default
                stubs.append(stub)
    return TransitStubGraph(adjacency, transit, stubs)


def place_hosts(topology: TransitStubGraph, rng: random.Random, hosts: int, cluster_size: int) -> list[int]:
    """host -> its router: clusters of ``cluster_size`` hosts, each cluster in one random stub domain."""
    routers: list[int] = []
    while len(routers) < hosts:
        stub = rng.choice(topology.stubs)
        routers.extend(rng.choice(stub) for _ in range(min(cluster_size, hosts - len(routers))))
    return routers


def dijkstra(adjacency: list[list[tuple[int, float]]], source: int) -> list[float]:
    """Shortest-path delay from ``source`` to every router (inf where unreachable)."""
    dist = [float("inf")] * len(adjacency)
    dist[source] = 0.0
    heap = [(0.0, source)]
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue  # a stale entry: u was reached more cheaply since
        for v, w in adjacency[u]:
            if d + w < dist[v]:
                dist[v] = d + w
                heapq.heappush(heap, (d + w, v))
    return dist


def host_distances(topology: TransitStubGraph, host_routers: list[int]) -> list[list[float]]:
    """host x host unicast delay: access link, shortest router path, access link (0 to itself)."""
    by_router = {r: dijkstra(topology.adjacency, r) for r in set(host_routers)}
    return [
        [0.0 if a == b else 2 * ACCESS_DELAY + by_router[ra][rb] for b, rb in enumerate(host_routers)]
        for a, ra in enumerate(host_routers)
    ]
