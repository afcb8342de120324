"""LoCaPS (seed 003): the acceptance tests T-003-01 … T-003-12 of the digest
(``seeds_002_003.md`` PART D.2), on the reconstructed topologies and given path sets."""

from __future__ import annotations

import json
from typing import Any

import pytest

from faidecs.ordering.harness import Publication, Workload, run_layer
from faidecs.ordering.locaps import BrokerGraph, LocapsLayer, MultiPrefixCut, augment
from faidecs.ordering.locaps.topology import (
    condition_3,
    f_stable,
    lcp,
    locaps_ppset,
    marker_hops,
    path_stable,
    pivot,
    ppset,
    pub_stable,
)
from faidecs.properties import Property, check
from faidecs.runs.runlog import RunLog

GAPLESS = [Property.GAPLESS_FIFO_DELIVERY, Property.GAPLESS_CAUSAL_DELIVERY]


def ev(time: float, publisher: str, event_id: str, type_name: str = "A") -> Publication:
    return Publication(time, publisher, {"id": event_id, "type": type_name, "attrs": {"x": 0}})


def notified(run: Any, process: str) -> list[str]:
    return [n.event for n in run.log.notified if n.process == process]


# --- T-003-01 / 02: stability and Cond. 3 vs Cond. 1 -----------------------------------------------

SHORT = ("p", "b1", "b2", "b4")
LONG = ("p", "b1", "b3", "b5", "b6", "b4")
TWO_PATHS = BrokerGraph.of([("b1", "b2"), ("b2", "b4"), ("b1", "b3"), ("b3", "b5"), ("b5", "b6"), ("b6", "b4")])


def test_t_003_01_stability_predicates() -> None:
    knows = {"b1", "b2", "b4"}
    assert path_stable(knows, SHORT) and not path_stable(knows, LONG)
    assert condition_3(knows, [SHORT, LONG])  # Cond. 3 holds
    assert not pub_stable(knows, [SHORT, LONG])  # Cond. 1 does not
    everyone = set(TWO_PATHS.brokers)
    assert pub_stable(everyone, [SHORT, LONG]) and f_stable(everyone, {"p": [SHORT, LONG]})
    assert not f_stable(everyone, {"p": [SHORT, LONG], "q": [("q", "b7", "b4")]})
    assert sorted(map(tuple, TWO_PATHS.simple_paths("b1", "b4"))) == [SHORT[1:], LONG[1:]]


def test_t_003_02_condition_3_latency() -> None:
    # 50 ms per link; S floods from b4 at t = 0 and reaches b1 first over the short path
    hop = 50
    marker_emitted = (len(SHORT) - 2) * hop  # b4 -> b1 over 2 links
    assert marker_emitted == 100
    assert marker_emitted + (len(SHORT) - 2) * hop == 200  # the marker reaches b4
    # Cond. 1 with ack aggregation over all paths: S over the long path and the acks back
    assert 2 * (len(LONG) - 2) * hop == 400


# --- T-003-03: marker semantics on a running tree -------------------------------------------------

LINE = BrokerGraph.of([("b1", "b2"), ("b2", "b3")])


def line_run(publications: tuple[Publication, ...], **options: Any) -> Any:
    layer = LocapsLayer(LINE, {"p": "b1", "s": "b3"}, link_delay=50.0, publishers=frozenset({"p"}), **options)
    workload = Workload("type A(x: int)\n", {"s": "subscription s: A"}, frozenset(), publications, ((0.0, "s"),))
    return layer, run_layer(layer, workload, seed=1)


def test_t_003_03_marker_semantics() -> None:
    layer, run = line_run(tuple(ev(t, "p", f"e{t}") for t in (50, 99, 101, 150)))
    assert notified(run, "s") == ["e101", "e150"]  # 50 and 99: b1 did not know S
    assert layer.first_delivery["s"] == 201.0  # the starting-cut event, 100 ms after publication
    assert layer.cuts["s"]["p"] == 2  # seq of e101
    assert layer.stats.markers == 1
    assert check(run.log, GAPLESS).violated() == []
    # a second marker (say the real publisher's after a proxy's) changes nothing
    b3 = layer.brokers["b3"]
    from faidecs.ordering.locaps.layer import Marker

    layer._marker(b3, Marker("p", "s", frozenset({"A"}), "b1", 0), None)
    assert layer.cuts["s"]["p"] == 2


# --- T-003-04: the no-gap property on random trees (the slow test runs 1,000) ---------------------


def test_t_003_04_no_gaps_on_random_trees() -> None:
    import random

    from faidecs.ordering.locaps.generate import random_scenario

    for seed in range(40):
        scenario = random_scenario(random.Random(seed))
        layer = LocapsLayer(scenario.graph, scenario.attach, publishers=scenario.publishers)
        run = run_layer(layer, scenario.workload, seed=seed)
        assert check(run.log, GAPLESS).violated() == [], seed
        assert not run.missing, seed


# --- T-003-05: the causal cascade ---------------------------------------------------------------
#
# On a broker *tree* with FIFO links the cascade never fires: a subscription reaches every broker
# between the subscriber and a publisher before that publisher's marker passes it, so each of
# those brokers has already sent its own Alg. 1 marker. The counterexample needs the paper's
# general graph (S reaches bA over a short path, bB over a long one, while bB lies on p1's route
# to p2), which this runtime does not model; its timeline is written as a run log and judged.


def cascade_log(cascade: bool) -> RunLog:
    """p1@bA publishes e1 after M1; p2@bB (subscribed to p1 from the start) is handed e1 and
    publishes e2, then e3 much later. With the cascade bB sent M2 when M1 passed, before e2, so s
    gets e2; without it M2 leaves bB only when S arrives over the long path, after e2."""
    records: list[dict[str, Any]] = [
        {"record": "header", "format": "faidecs.runs.runlog/1", "types": "type A(x: int)\n"},
        {"record": "process", "process": "s", "subscription": "subscription s: A", "joined": {"time": 0, "peer": None}},
        {"record": "process", "process": "p2", "subscription": "subscription p2: A"},
    ]
    steps: list[tuple[str, dict[str, Any]]] = [
        ("publish", {"event": {"id": "e1", "type": "A", "attrs": {"x": 0}, "publisher": "p1", "seq": 0}}),
        ("notify", {"process": "p2", "event": "e1"}),
        ("publish", {"event": {"id": "e2", "type": "A", "attrs": {"x": 0}, "publisher": "p2", "seq": 0}}),
        ("notify", {"process": "s", "event": "e1"}),
    ]
    if cascade:
        steps.append(("notify", {"process": "s", "event": "e2"}))
    steps += [
        ("publish", {"event": {"id": "e3", "type": "A", "attrs": {"x": 0}, "publisher": "p2", "seq": 1}}),
        ("notify", {"process": "s", "event": "e3"}),
    ]
    for time, (kind, fields) in enumerate(steps, start=1):
        records.append({"record": kind, "time": time, **fields})
    return RunLog.read([json.dumps(r) for r in records])


def test_t_003_05_cascade_gives_gcd() -> None:
    assert check(cascade_log(cascade=True), GAPLESS).violated() == []


def test_t_003_05_without_cascade_gcd_is_violated() -> None:
    report = check(cascade_log(cascade=False), GAPLESS)
    assert report.violated() == [Property.GAPLESS_CAUSAL_DELIVERY]  # GFD holds: no gap per publisher
    assert report.results[Property.GAPLESS_CAUSAL_DELIVERY][0].events == ("e1", "e2")


def test_t_003_05_on_a_tree_the_cascade_is_not_needed() -> None:
    # bS - bB - bA: S reaches bB (p2) before bA (p1); p2 reacts to e1 with e2
    graph = BrokerGraph.of([("bS", "bB"), ("bB", "bA")])
    for cascade in (True, False):
        layer = LocapsLayer(
            graph,
            {"s": "bS", "p1": "bA", "p2": "bB"},
            link_delay=50.0,
            cascade=cascade,
            publishers=frozenset({"p1", "p2"}),
        )
        workload = Workload(
            "type A(x: int)\n",
            {"s": "subscription s: A", "p2": "subscription p2: A"},
            frozenset({"p2"}),
            (ev(150, "p1", "e1"), ev(260, "p2", "e2"), ev(400, "p2", "e3")),
            ((0.0, "s"),),
        )
        run = run_layer(layer, workload, seed=1)
        assert notified(run, "s") == ["e1", "e2", "e3"]
        assert layer.stats.cascade_markers == 0
        assert check(run.log, GAPLESS).violated() == []


# --- T-003-06: the Def. 1/2 checker on Fig. 1's histories (hand-written run logs) -----------------


def fig1_log(start: dict[str, int]) -> RunLog:
    """p1, p2, p3 publish e{j}.{1..4}; p3 was handed e2.1 before it published e3.2 (e2.1 -> e3.2).
    Process s is handed, per publisher, everything from its ``start`` on."""
    records: list[dict[str, Any]] = [
        {"record": "header", "format": "faidecs.runs.runlog/1", "types": "type A(x: int)\n"}
    ]
    for name in ("s", "p3"):
        records.append({"record": "process", "process": name, "subscription": f"subscription {name}: A"})
    time = 0

    def rec(kind: str, **fields: Any) -> None:
        nonlocal time
        time += 1
        records.append({"record": kind, "time": time, **fields})

    def pub(j: int, k: int) -> None:
        rec("publish", event={"id": f"e{j}.{k}", "type": "A", "attrs": {"x": 0}, "publisher": f"p{j}", "seq": k})

    pub(1, 1), pub(1, 2), pub(1, 3), pub(2, 1), pub(3, 1)
    rec("notify", process="p3", event="e2.1")
    pub(3, 2), pub(2, 2), pub(3, 3), pub(1, 4), pub(2, 3), pub(3, 4)
    for j in (1, 2, 3):
        for k in range(start[f"p{j}"], 5 if j != 2 else 4):
            rec("notify", process="s", event=f"e{j}.{k}")
    return RunLog.read([json.dumps(r) for r in records])


def test_t_003_06_fig1_checker() -> None:
    a = check(fig1_log({"p1": 3, "p2": 2, "p3": 2}), GAPLESS)
    assert a.violated() == []
    b = check(fig1_log({"p1": 3, "p2": 1, "p3": 3}), GAPLESS)
    assert b.violated() == [Property.GAPLESS_CAUSAL_DELIVERY]
    assert b.results[Property.GAPLESS_CAUSAL_DELIVERY][0].events == ("e2.1", "e3.2")


# --- T-003-07: Fig. 2, single prefix, the pivot as proxy ------------------------------------------

FIG2 = BrokerGraph.of(
    [
        ("p1", "b8"),
        ("b8", "b7"),
        ("b7", "b6"),
        ("b6", "b5"),
        ("b5", "b1"),
        ("b5", "b2"),
        ("b2", "b3"),
        ("b5", "b4"),
        ("b4", "b3"),
    ]
)
P1_S1 = [("p1", "b8", "b7", "b6", "b5", "b1")]
P1_S2 = [("p1", "b8", "b7", "b6", "b5", "b2", "b3"), ("p1", "b8", "b7", "b6", "b5", "b4", "b3")]


def test_t_003_07_fig2_pivot() -> None:
    assert lcp(P1_S1, P1_S2) == ("p1", "b8", "b7", "b6", "b5")
    assert pivot(P1_S1, P1_S2) == "b5"
    assert lcp([("p2", "b6", "b5", "b1")], [("p2", "b6", "b5", "b2", "b3")]) == ("p2", "b6", "b5")
    assert marker_hops(P1_S2) == 12  # Alg. 1: 6 up, 6 back
    assert marker_hops(P1_S2, start="b5") == 4  # optimised: 2 up to b5, 2 back
    assert ppset(P1_S1, P1_S2) == {"b5"}  # single prefix: |PPSet| = 1


def test_t_003_07_fig2_runtime() -> None:
    # the runtime needs a tree: one of s2's two paths (b5-b2-b3); p1's client link is a broker "p1"
    tree = BrokerGraph.of(
        [("p1", "b8"), ("b8", "b7"), ("b7", "b6"), ("b6", "b5"), ("b5", "b1"), ("b5", "b2"), ("b2", "b3")]
    )
    attach = {"p1": "p1", "p2": "b6", "s1": "b1", "s2": "b3"}
    times = {}
    for proxy in (False, True):
        layer = LocapsLayer(tree, attach, link_delay=50.0, publishers=frozenset({"p1", "p2"}), proxy=proxy)
        events = tuple(ev(t, p, f"{p}-{t}") for t in range(0, 1000, 10) for p in ("p1", "p2"))
        workload = Workload(
            "type A(x: int)\ntype B(x: int)\n",
            {"s1": "subscription s1: A and B", "s2": "subscription s2: A"},
            frozenset({"s1"}),
            events,
            ((0.0, "s2"),),
        )
        run = run_layer(layer, workload, seed=1)
        assert check(run.log, GAPLESS).violated() == []
        times[proxy] = {
            p: min(n.time for n in run.log.notified if n.process == "s2" and n.event.startswith(p))
            for p in ("p1", "p2")
        }
        marks = {p: layer.marked_at[(p, "s2")] for p in ("p1", "p2")}
        latency = layer.first_delivery["s2"] - layer.subscribed_at["s2"]
        if proxy:
            assert layer.stats.proxy_markers >= 2  # b5 for p1 and p2 first; brokers further up repeat (ignored)
            assert 200 <= latency <= 210  # 4 hops, then the next event (every 10 ms)
        else:
            assert layer.stats.proxy_markers == 0
            assert marks["p1"] == 31  # S2 reaches p1 at t = 300: its events at 0 … 300 are behind the marker
            assert latency >= 300  # p2's marker (b6, 3 hops up) is the first back
    assert all(times[True][p] < times[False][p] for p in ("p1", "p2"))  # log clock: earlier


# --- T-003-08 / 09: Fig. 3, multi prefix, partial markers -----------------------------------------

FIG3_S1 = [("p1", "b1", "b2", "b3", "b5", "b7", "b9"), ("p1", "b1", "b2", "b4", "b6", "b8", "b9")]
FIG3_S2 = [("p1", "b1", "b2", "b3", "b5", "b7", "b10"), ("p1", "b1", "b2", "b4", "b6", "b8", "b10")]


def test_t_003_08_fig3_ppset() -> None:
    assert lcp(FIG3_S1, FIG3_S2) == ("p1", "b1", "b2")
    assert pivot(FIG3_S1, FIG3_S2) == "b2"
    assert ppset(FIG3_S1, FIG3_S2) == {"b7", "b8"}
    assert marker_hops(FIG3_S2) == 12
    assert marker_hops(FIG3_S2, start="b2") == 8
    assert marker_hops(FIG3_S2, start="b7") == marker_hops(FIG3_S2, start="b8") == 2


def test_t_003_09_multi_prefix_starting_cut() -> None:
    cut = MultiPrefixCut(frozenset({"b7", "b8"}))
    assert cut.event("b7", 3, "e3") == []  # before PM(b7): discarded
    cut.marker("b7")
    assert cut.event("b7", 5, "e5") == []  # buffered
    cut.marker("b8")
    assert cut.event("b8", 4, "e4") == ["e5"]  # all buffers non-empty: the most recent, e5
    assert cut.start == 5
    assert cut.event("b7", 6, "e6") == ["e6"]
    assert cut.event("b8", 7, "e7") == ["e7"]
    assert cut.event("b8", 6, "e6") == []  # a duplicate over the other path


def test_t_003_09_nothing_before_every_partial_marker() -> None:
    cut = MultiPrefixCut(frozenset({"b7", "b8"}))
    cut.marker("b7")
    assert [cut.event("b7", k, f"e{k}") for k in range(5)] == [[]] * 5
    cut.marker("b8")
    assert cut.event("b8", 5, "e5") == ["e5"]


# --- T-003-10: PPSet on the augmented tree --------------------------------------------------------


def chain_with_side() -> BrokerGraph:
    # the base tree p..b7-b6-b5-b4-b3-b2-b1 (b1 the new subscriber's broker, b7 the root, the
    # publisher's), with a side child c of b5
    return BrokerGraph.of(
        [("b7", "b6"), ("b6", "b5"), ("b5", "b4"), ("b4", "b3"), ("b3", "b2"), ("b2", "b1"), ("b5", "c")]
    )


@pytest.mark.parametrize("f", [1, 2, 3])
def test_t_003_10_ppset_size_and_cut(f: int) -> None:
    tree = chain_with_side()
    members = locaps_ppset(tree, "b7", "b4", f)
    assert members == ["b4", "b5", "b6", "b7"][: f + 1]
    assert len(members) == f + 1
    graph = augment(tree, f, root="b7")  # skip links along root paths only
    assert tree.is_tree() and not graph.is_tree()
    assert graph.separates(members, "b7" if f < 3 else "c", "b1") or f == 3
    for path in graph.simple_paths("b7", "b1"):
        if "b7" not in members:
            assert set(path) & set(members)


def test_t_003_10_all_pairs_skip_links_bridge_the_cut_for_f_2() -> None:
    tree = chain_with_side()
    one = augment(tree, 1, root="b7", along_root_paths=False)
    assert one.separates(["b4", "b5"], "b7", "b1")  # f = 1: every path crosses {b4, b5}
    two = augment(tree, 2, root="b7", along_root_paths=False)
    members = locaps_ppset(tree, "b7", "b4", 2)
    assert members == ["b4", "b5", "b6"]
    # ... but the side child c of b5 links b7 and b3 (tree distance 3): the cut is bridged
    assert not two.separates(members, "b7", "b1")
    assert ["b7", "c", "b3", "b2", "b1"] in two.simple_paths("b7", "b1")
    assert augment(tree, 2, root="b7").separates(members, "b7", "b1")


# --- T-003-11: evaluation shapes (the benchmark has the numbers) ----------------------------------


def test_t_003_11_shapes() -> None:
    from benchmarks.locaps import coverage_curve, diameter_curve, f_curve

    a = diameter_curve(depths=(3, 5, 7, 9), distance=5)
    assert len({round(r["locaps_ms"]) for r in a}) == 1 and a[0]["locaps_ms"] == 500
    assert all(x["delta_ms"] < y["delta_ms"] for x, y in zip(a, a[1:]))
    c = coverage_curve(depth=7, probabilities=(0.0, 0.5, 1.0), samples=30)
    assert all(x["locaps_ms"] >= y["locaps_ms"] for x, y in zip(c, c[1:]))
    assert len({r["delta_ms"] for r in c}) == 1 and len({r["gryphon_ms"] for r in c}) == 1
    d = [coverage_curve(depth=k, probabilities=(1.0,), samples=10)[0]["locaps_ms"] for k in (5, 7, 9)]
    assert max(d) - min(d) < 1e-6
    e = f_curve(fs=(1, 2, 3), depth=7)
    assert all(x["locaps_ms"] < y["locaps_ms"] for x, y in zip(e, e[1:]))
    assert len({r["delta_ms"] for r in e}) == 1


# --- T-003-12: Thm. 1's counterexample ------------------------------------------------------------


def test_t_003_12_unaware_broker_makes_a_gap() -> None:
    # p@b1 - b2 - b3@s, and another subscriber o@b2 pulls p's events to b2 only. If s's broker
    # delivered e1 (pulled... to b3 by nobody: we deliver it by hand) before b1 knew S, e2 is lost
    records: list[dict[str, Any]] = [
        {"record": "header", "format": "faidecs.runs.runlog/1", "types": "type A(x: int)\n"},
        {"record": "process", "process": "s", "subscription": "subscription s: A", "joined": {"time": 0, "peer": None}},
    ]
    events = [("e1", 1), ("e2", 2), ("e3", 3)]
    for k, (eid, seq) in enumerate(events):
        records.append(
            {
                "record": "publish",
                "time": k + 1,
                "event": {"id": eid, "type": "A", "attrs": {"x": 0}, "publisher": "p", "seq": seq},
            }
        )
    records += [
        {"record": "notify", "time": 4, "process": "s", "event": "e1"},
        {"record": "notify", "time": 5, "process": "s", "event": "e3"},
    ]
    report = check(RunLog.read([json.dumps(r) for r in records]), GAPLESS)
    assert report.violated() == GAPLESS
    assert report.results[Property.GAPLESS_FIFO_DELIVERY][0].events == ("e1", "e2", "e3")
    # Alg. 1 does not deliver e1: starting-cut is ⊥ until the marker, so the events b1 sent
    # before it knew S are discarded even when another subscription pulls them to s's broker
    layer = LocapsLayer(LINE, {"p": "b1", "s": "b3", "o": "b3"}, link_delay=50.0, publishers=frozenset({"p"}))
    workload = Workload(
        "type A(x: int)\n",
        {"s": "subscription s: A", "o": "subscription o: A"},
        frozenset({"o"}),
        tuple(ev(t, "p", f"e{t}") for t in (10, 60, 120)),
        ((0.0, "s"),),
    )
    layer.proxy = False  # o at s's own broker would otherwise proxy at once
    run = run_layer(layer, workload, seed=1)
    assert notified(run, "o") == ["e10", "e60", "e120"]
    assert notified(run, "s") == ["e120"]  # e10 and e60 reached b3 before the marker: discarded
    assert layer.stats.discarded == 2
    assert check(run.log, GAPLESS).violated() == []
