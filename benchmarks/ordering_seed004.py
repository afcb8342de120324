"""Sequencing atoms (seed 004, Lumezanu, Spring, Bhattacharjee, Middleware 2006): the paper's
evaluation (Figs. 3-8) on faidecs.ordering.atoms.

    PYTHONPATH=. .venv/bin/python benchmarks/ordering_seed004.py [--quick] [--out benchmarks/results]

Everything is a static computation over a seeded topology and seeded memberships, as in the
paper (propagation delay only, no queueing, no losses), so the figures are virtual milliseconds
and ratios, not a machine's speed.

1. Latency stretch (Fig. 3) and RDP (Fig. 4): a transit-stub topology (faidecs.ordering.topology,
   10,000 routers) with 128 hosts in clusters of 8; Zipf group sizes; the sequencing graph
   (line or compact line), atoms co-located (placement.colocate), sequencing nodes mapped to
   hosts (placement.assign_machines, the paper's step 2). Each member sends one message to each
   of its groups: sender -> first atom's machine -> ... -> last atom's machine -> destination,
   against sender -> destination unicast.
2. Sequencing nodes vs groups (Fig. 5) and stress (Fig. 6), Zipf sizes, 1-64 groups.
3. Atoms on a message's path / hosts (Fig. 7).
4. Atoms and sequencing nodes vs occupancy (Fig. 8): 128 hosts, 32 groups, each host in each
   group with probability p.

Writes ordering_seed004.json, .md and .png.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import machine  # noqa: E402

from faidecs.ordering.atoms.graph import BUILDERS, SequencingGraph, line_graph  # noqa: E402
from faidecs.ordering.atoms.overlap import AtomId, double_overlaps  # noqa: E402
from faidecs.ordering.atoms.placement import assign_machines, colocate, stress  # noqa: E402
from faidecs.ordering.atoms.zipf import zipf_sizes  # noqa: E402
from faidecs.ordering.topology import DELAYS, host_distances, place_hosts, transit_stub  # noqa: E402

MIN_SIZE = 2  # B10: a group needs two members to have an order to agree on (and a sender-receiver pair)
HOSTS = 128
CLUSTER = 8
#: line and compact are order-safe; skip violates C2 (it stalls) and is shown only as a lower bound on path length
CONSTRUCTIONS = ("line", "compact", "skip")


def hosts(n: int) -> list[str]:
    return [f"h{i:03d}" for i in range(n)]


#: two readings of "sizes proportional to r^-1 / H_{n,1}" (the constant is not given), both at least MIN_SIZE
SIZINGS = ("harmonic", "largest=n")


def sizes(sizing: str, n: int, groups: int) -> list[int]:
    """harmonic: n r^-1 / H_n (the digest's reading; 23.6, 11.8, 7.9, ..., below 1 from rank 43 with n = 128);
    largest=n: n r^-1 (the top group holds every host; 2 at rank 64 with n = 128, the paper's largest count)."""
    if sizing == "harmonic":
        return zipf_sizes(n, groups, MIN_SIZE)
    return [max(MIN_SIZE, min(n, round(n / r))) for r in range(1, groups + 1)]


def zipf_membership(rng: random.Random, n: int, groups: int, sizing: str) -> dict[str, frozenset[str]]:
    """Groups of Zipf sizes (rank r: ``sizes``), members drawn uniformly from the n hosts."""
    names = hosts(n)
    return {f"G{r:02d}": frozenset(rng.sample(names, k)) for r, k in enumerate(sizes(sizing, n, groups))}


def occupancy_membership(rng: random.Random, n: int, groups: int, p: float) -> dict[str, frozenset[str]]:
    names = hosts(n)
    return {f"G{r:02d}": frozenset(h for h in names if rng.random() < p) for r in range(groups)}


def pct(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100])."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))] if ordered else 0.0


def node_stress(graph: SequencingGraph, node_of: Mapping[AtomId, int]) -> dict[int, float]:
    """Stress of every sequencing node in one pass (placement.stress does one node per call)."""
    count: Counter[int] = Counter()
    for path in graph.paths.values():
        count.update({node_of[a] for a in path})
    return {n: count[n] / len(graph.paths) for n in set(node_of.values())}


# -- 1. latency stretch and RDP --


def build(construction: str, membership: Mapping[str, frozenset[str]], rng: random.Random) -> tuple[SequencingGraph, dict[AtomId, int]]:
    """The graph and the co-location (step 1). ``node-line`` is a line whose order keeps each
    sequencing node's atoms together (nodes in number order): still a line, so still correct, but a
    path visits each node's machine once instead of bouncing between machines."""
    node_of = colocate(double_overlaps(membership), rng)
    if construction == "node-line":
        return line_graph(membership, sorted(node_of, key=lambda a: (node_of[a], a))), node_of
    return BUILDERS[construction](membership), node_of


def stretch_run(
    graph: SequencingGraph, node_of: Mapping[AtomId, int], dist: list[list[float]], rng: random.Random
) -> tuple[dict[str, list[tuple[float, float]]], int]:
    """destination -> (sequenced ms, unicast ms) of every message it gets; and the sequencing nodes used.

    Each member of each group sends it one message: sender -> the machines of the group's path in
    order -> destination, each hop a shortest path (distribution is a unicast from the last atom).
    """
    names = hosts(len(dist))
    index = {h: i for i, h in enumerate(names)}
    where = assign_machines(graph, node_of, names, lambda a, b: dist[index[a]][index[b]], rng)
    per_dest: dict[str, list[tuple[float, float]]] = {}
    for group in sorted(graph.membership):
        members = sorted(graph.membership[group])
        path = graph.paths[group]
        # an ingress-only sequencer (no double overlap) is not placed by step 2: on a random member
        chain = [index[where[node_of[a]]] for a in path] if path else [index[rng.choice(members)]]
        inside = sum(dist[a][b] for a, b in zip(chain, chain[1:]))
        for s in members:
            for t in members:
                if s != t:
                    sequenced = dist[index[s]][chain[0]] + inside + dist[chain[-1]][index[t]]
                    per_dest.setdefault(t, []).append((sequenced, dist[index[s]][index[t]]))
    return per_dest, len(where)


def latency(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(4)
    started = time.perf_counter()
    top = transit_stub(rng, stub_size=args.stub_size)
    routers = place_hosts(top, rng, HOSTS, CLUSTER)
    dist = host_distances(top, routers)
    setup = time.perf_counter() - started
    unicast = [dist[a][b] for a in range(HOSTS) for b in range(HOSTS) if a != b]
    rows: list[dict[str, Any]] = []
    scatter: list[tuple[float, float]] = []
    cdfs: dict[str, list[float]] = {}
    for sizing in SIZINGS:
        for groups in (8, 16, 32, 64):
            for construction in (*CONSTRUCTIONS, "node-line"):
                stretch: list[float] = []  # per destination: mean sequenced / mean unicast
                mean_rdp: list[float] = []  # per destination: mean of its messages' RDPs
                rdp: list[tuple[float, float]] = []  # per message: (unicast, RDP)
                machines: list[int] = []
                for seed in range(args.seeds):
                    membership = zipf_membership(random.Random(seed), HOSTS, groups, sizing)
                    place = random.Random(1000 + seed)
                    graph, node_of = build(construction, membership, place)
                    per_dest, used = stretch_run(graph, node_of, dist, place)
                    machines.append(used)
                    for msgs in per_dest.values():
                        stretch.append(statistics.fmean(x for x, _ in msgs) / statistics.fmean(u for _, u in msgs))
                        mean_rdp.append(statistics.fmean(x / u for x, u in msgs))
                        rdp += [(u, x / u) for x, u in msgs]
                ratios = [r for _, r in rdp]
                row = {
                    "sizing": sizing,
                    "groups": groups,
                    "construction": construction,
                    "destinations": len(stretch),
                    "sequencing_nodes_mean": round(statistics.fmean(machines), 1),
                    "stretch": {f"p{q}": round(pct(stretch, q), 2) for q in (10, 50, 90, 100)},
                    "mean_rdp_per_destination": {f"p{q}": round(pct(mean_rdp, q), 2) for q in (50, 90, 100)},
                    "rdp": {f"p{q}": round(pct(ratios, q), 2) for q in (50, 90, 99, 100)},
                }
                if construction in ("line", "node-line"):
                    cdfs[f"{sizing} {construction} {groups}"] = [round(x, 3) for x in sorted(stretch)]
                    if groups == 64 and sizing == SIZINGS[-1] and construction == "node-line":
                        scatter = rdp
                print(json.dumps(row), flush=True)
                rows.append(row)
    bins = [(0.0, 10.0), (10.0, 25.0), (25.0, 50.0), (50.0, 100.0), (100.0, 150.0), (150.0, float("inf"))]
    rdp_bins = []
    for lo, hi in bins:
        inside = [r for u, r in scatter if lo <= u < hi]
        if inside:
            rdp_bins.append(
                {"unicast_ms": f"{lo:g}-{hi:g}", "messages": len(inside), "median": round(statistics.median(inside), 2),
                 "p90": round(pct(inside, 90), 2), "max": round(max(inside), 2)}
            )
    return {
        "topology": {
            "routers": top.routers,
            "transit_domains": len(top.transit),
            "transit_routers": sum(len(t) for t in top.transit),
            "stub_domains": len(top.stubs),
            "edges": sum(len(a) for a in top.adjacency) // 2,
            "delays_ms": DELAYS,
            "hosts": HOSTS,
            "cluster_size": CLUSTER,
            "unicast_ms": {"min": round(min(unicast), 1), "median": round(statistics.median(unicast), 1),
                           "max": round(max(unicast), 1)},
            "setup_s": round(setup, 2),
        },
        "seeds": args.seeds,
        "rows": rows,
        "rdp_vs_unicast": rdp_bins,
        "cdf": cdfs,
        "scatter": [(round(u, 1), round(r, 2)) for u, r in scatter[:: max(1, len(scatter) // 3000)]],
    }


# -- 2. sequencing nodes and stress vs groups --


def nodes_vs_groups(args: argparse.Namespace, sizing: str) -> list[dict[str, Any]]:
    rows = []
    counts = list(range(1, 65)) if not args.quick else [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64]
    for groups in counts:
        nodes: list[int] = []
        atoms: list[int] = []
        ingress_only: list[int] = []
        stresses: dict[str, list[float]] = {"line": [], "compact": []}
        for run in range(args.runs):
            rng = random.Random(run)
            membership = zipf_membership(rng, HOSTS, groups, sizing)
            overlaps = double_overlaps(membership)
            node_of = colocate(overlaps, rng)
            nodes.append(len(set(node_of.values())))
            atoms.append(len(overlaps))
            ingress_only.append(sum(1 for g in membership if not any(g in a for a in overlaps)))
            for construction, values in stresses.items():
                graph = BUILDERS[construction](membership)
                by_node = node_stress(graph, node_of)
                if run == 0 and by_node:  # the one-pass count is placement.stress
                    assert all(abs(stress(n, graph, node_of) - s) < 1e-12 for n, s in by_node.items())
                values += by_node.values()
        row: dict[str, Any] = {
            "groups": groups,
            "atoms_mean": round(statistics.fmean(atoms), 1),
            "nodes_mean": round(statistics.fmean(nodes), 2),
            "nodes_p10": pct(nodes, 10),
            "nodes_p90": pct(nodes, 90),
            "ingress_only_mean": round(statistics.fmean(ingress_only), 1),
        }
        for construction, values in stresses.items():
            row[f"stress_{construction}"] = (
                {"mean": round(statistics.fmean(values), 3), "p90": round(pct(values, 90), 3), "max": round(max(values), 3)}
                if values
                else None
            )
        rows.append(row)
    return rows


# -- 3. atoms on a path / hosts --


def path_ratio(args: argparse.Namespace, sizing: str) -> list[dict[str, Any]]:
    rows = []
    for n in (32, 64, 128):
        for groups in (8, 16, 32, 64):
            for construction in CONSTRUCTIONS:
                ratios: list[float] = []
                stamping: list[float] = []
                for run in range(args.runs // 5):
                    graph = BUILDERS[construction](zipf_membership(random.Random(run), n, groups, sizing))
                    for g, members in graph.membership.items():  # one message per member (sender)
                        ratios += [len(graph.paths[g]) / n] * len(members)
                        stamping += [len(graph.stamping(g)) / n] * len(members)
                rows.append({
                    "hosts": n, "groups": groups, "construction": construction,
                    "p50": round(pct(ratios, 50), 3), "p90": round(pct(ratios, 90), 3), "max": round(max(ratios), 3),
                    "stamping_max": round(max(stamping), 3),
                })
    return rows


# -- 4. occupancy --


def occupancy(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for step in range(0, 21):
        p = step / 20
        atoms: list[int] = []
        distinct: list[int] = []
        nodes: list[int] = []
        for run in range(args.runs_occupancy):
            rng = random.Random(run)
            overlaps = double_overlaps(occupancy_membership(rng, HOSTS, 32, p))
            atoms.append(len(overlaps))
            distinct.append(len(set(overlaps.values())))
            nodes.append(len(set(colocate(overlaps, rng).values())))
        rows.append({
            "occupancy": p, "atoms_mean": round(statistics.fmean(atoms), 1),
            "distinct_overlaps_mean": round(statistics.fmean(distinct), 1),
            "nodes_mean": round(statistics.fmean(nodes), 2), "nodes_p10": pct(nodes, 10), "nodes_p90": pct(nodes, 90),
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a smaller topology and fewer runs (under a minute)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    # the paper: 10,000 routers, 100 runs per point of Fig. 5
    args.stub_size = 20 if args.quick else 83  # routers = 40 * (1 + 3 * stub_size): 2,440 or 10,000
    args.seeds = 2 if args.quick else 5
    args.runs = 20 if args.quick else 100
    args.runs_occupancy = 5 if args.quick else 20
    started = time.perf_counter()
    result: dict[str, Any] = {"machine": machine(), "quick": args.quick, "min_group_size": MIN_SIZE}
    steps: list[tuple[str, Any]] = [("latency", lambda: latency(args))]
    for sizing in SIZINGS:
        steps.append((f"nodes_vs_groups {sizing}", lambda s=sizing: nodes_vs_groups(args, s)))
        steps.append((f"path_ratio {sizing}", lambda s=sizing: path_ratio(args, s)))
    steps.append(("occupancy", lambda: occupancy(args)))
    result["step_s"] = {}
    for name, step in steps:
        t = time.perf_counter()
        result[name] = step()
        result["step_s"][name] = round(time.perf_counter() - t, 1)
        print(f"{name}: {time.perf_counter() - t:.1f} s", flush=True)
    result["runtime_s"] = round(time.perf_counter() - started, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "-quick" if args.quick else ""
    (args.out / f"ordering_seed004{suffix}.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
