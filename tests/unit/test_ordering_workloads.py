"""The pure pieces of benchmarks/ordering_workloads.py: calibration (erratum E13), site rankings,
sampling without replacement, |SG_T| from the co-occurrence matrix, chain hops, delays."""

from __future__ import annotations

import random

import numpy as np
import pytest
from ordering_workloads import (  # noqa: E402
    calibrate,
    chain_hops,
    geo_delay,
    head_mass,
    sg_masks,
    sg_sizes,
    site_ranking,
    subscriptions,
    zipf,
)

from faidecs.ordering.multistage import sequencing_group  # noqa: E402


def test_paper_shapes_do_not_give_the_papers_head_mass_but_calibrated_ones_do() -> None:
    assert head_mass(zipf(1000, 0.901), 0.005) == pytest.approx(0.2316, abs=1e-3)  # not 80% (E13)
    geo, spray = calibrate(1000, 0.005), calibrate(1000, 0.40)
    assert geo == pytest.approx(1.71, abs=0.01) and spray == pytest.approx(0.83, abs=0.01)
    assert head_mass(zipf(1000, geo), 0.005) == pytest.approx(0.8, abs=1e-6)
    assert head_mass(zipf(1000, spray), 0.40) == pytest.approx(0.8, abs=1e-6)


def test_site_ranking_puts_the_sites_own_range_first() -> None:
    assert site_ranking(10, 5, 3).tolist() == [6, 7, 8, 9, 0, 1, 2, 3, 4, 5]


def test_subscriptions_are_k_distinct_topics_following_the_law() -> None:
    p = np.broadcast_to(zipf(50, 1.0), (4000, 50))
    a = subscriptions(np.random.default_rng(1), p, 5)
    assert (a.sum(axis=1) == 5).all()
    freq = a.mean(axis=0)
    assert freq[0] > freq[10] > freq[49]  # popular topics are picked more often
    assert subscriptions(np.random.default_rng(1), p[:3], 50).all()  # k = n: everything


def test_sg_sizes_match_the_layers_definition() -> None:
    rng = np.random.default_rng(2)
    a = subscriptions(rng, np.broadcast_to(zipf(30, 0.7), (40, 30)), 4)
    subs = [frozenset(str(t).zfill(2) for t in np.nonzero(row)[0]) for row in a]
    for threshold in (1, 2):
        expected = [len(sequencing_group(str(t).zfill(2), subs, threshold)) for t in range(30)]
        assert sg_sizes(a, threshold).tolist() == expected


def test_chain_hops_paper_vs_line_routing() -> None:
    sg = np.eye(6, dtype=bool)
    sg[5, [0, 3]] = True  # SG_5 = {0, 3, 5}
    hops = chain_hops(sg, servers=3)  # servers {0,1} {2,3} {4,5}
    assert hops["paper"][5] == 2 and hops["line"][5] == 5
    assert hops["paper_cross"][5] == 2 and hops["line_cross"][5] == 2
    assert hops["paper"][:5].tolist() == [0] * 5
    assert sg_masks(np.ones((3, 4), dtype=bool)).all()


def test_geo_delay_short_long_local() -> None:
    sites = {"c0": 0, "tm:0001": 0, "tm:0002": 0, "tm:0500": 2}.get
    delay, rng = geo_delay(sites), random.Random(0)
    assert delay("tm:0001", "tm:0002", rng) == 0.0
    short = [delay("c0", "tm:0001", rng) for _ in range(500)]
    long = [delay("c0", "tm:0500", rng) for _ in range(500)]
    assert 0.009 < float(np.mean(short)) < 0.011 and 0.095 < float(np.mean(long)) < 0.105
    assert min(short) >= 0.0
