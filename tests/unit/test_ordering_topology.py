"""The transit-stub generator and Dijkstra behind benchmarks/ordering_seed004.py."""

from __future__ import annotations

import random
from itertools import product

from faidecs.ordering.topology import ACCESS_DELAY, dijkstra, host_distances, place_hosts, transit_stub


def floyd_warshall(adjacency: list[list[tuple[int, float]]]) -> list[list[float]]:
    n = len(adjacency)
    d = [[0.0 if i == j else float("inf") for j in range(n)] for i in range(n)]
    for u, edges in enumerate(adjacency):
        for v, w in edges:
            d[u][v] = min(d[u][v], w)
    for k, i, j in product(range(n), repeat=3):
        d[i][j] = min(d[i][j], d[i][k] + d[k][j])
    return d


def test_sizes_and_connectivity() -> None:
    top = transit_stub(random.Random(0), transit_domains=3, transit_size=4, stubs_per_transit=2, stub_size=5)
    assert top.routers == 3 * 4 * (1 + 2 * 5)
    assert len(top.stubs) == 3 * 4 * 2 and all(len(s) == 5 for s in top.stubs)
    assert all(d < float("inf") for d in dijkstra(top.adjacency, 0))  # connected
    assert all(any(v == u for v, _ in top.adjacency[w]) for u in range(top.routers) for w, _ in top.adjacency[u])


def test_dijkstra_agrees_with_floyd_warshall() -> None:
    for seed in range(3):
        top = transit_stub(random.Random(seed), transit_domains=2, transit_size=3, stubs_per_transit=2, stub_size=4)
        full = floyd_warshall(top.adjacency)
        for source in range(top.routers):
            assert all(abs(a - b) < 1e-9 for a, b in zip(dijkstra(top.adjacency, source), full[source]))


def test_hosts_of_a_cluster_share_a_stub_domain() -> None:
    rng = random.Random(1)
    top = transit_stub(rng, transit_domains=2, transit_size=3, stubs_per_transit=2, stub_size=6)
    routers = place_hosts(top, rng, hosts=10, cluster_size=4)
    assert len(routers) == 10
    stub_of = {r: i for i, s in enumerate(top.stubs) for r in s}
    for start in range(0, 10, 4):
        assert len({stub_of[r] for r in routers[start : start + 4]}) == 1
    d = host_distances(top, routers)
    assert all(d[a][a] == 0 for a in range(10))
    pairs = [(a, b) for a in range(10) for b in range(10) if a != b]
    assert all(abs(d[a][b] - d[b][a]) < 1e-9 and d[a][b] >= 2 * ACCESS_DELAY for a, b in pairs)
