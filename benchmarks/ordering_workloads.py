"""Workloads for the ordering-layer benchmarks (seed 000, Baldoni et al., section 5): power-law topic
popularity (standard Zipf, or calibrated to the paper's "X% of the topics get 80% of the
probability"), clients at geographic sites with a local popularity ranking, subscriptions drawn
without replacement, sequencing-group sizes from the co-occurrence matrix, and the netem-like
link delays of the prototype. Shared with later side-by-side benchmarks (multistage vs sequencing
atoms vs the merging overlay), so everything here is pure and seeded.

Topics are integers 0..n-1 here; rank order is id order (0 ranks highest), as in the paper's
prototype ("precedence by topic id"). :func:`topic_name` turns them into the zero-padded names the
ordering layers compare as strings.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import numpy as np

from faidecs.ordering.network import Handler, Network

#: the paper's shapes and what its text says they mean (section 5.1): 80% of the probability on
#: this fraction of the topics
PAPER_SHAPES = {"geographic": (0.901, 0.005), "spray": (0.349, 0.40)}


def topic_name(topic: int, width: int = 4) -> str:
    return str(topic).zfill(width)


def zipf(n: int, s: float) -> np.ndarray:
    """p(r) ∝ r^-s over ranks 1..n (index 0 is the most popular)."""
    weights = np.arange(1, n + 1, dtype=float) ** -s
    return weights / weights.sum()


def head_mass(p: np.ndarray, fraction: float) -> float:
    """Probability on the most popular ``fraction`` of the items (at least one item)."""
    head = max(1, round(fraction * len(p)))
    return float(np.sort(p)[::-1][:head].sum())


def calibrate(n: int, fraction: float, mass: float = 0.8) -> float:
    """The Zipf exponent that puts ``mass`` of the probability on the top ``fraction`` of ``n`` items
    (erratum E13: the paper's 0.901 and 0.349 do not). Bisection; head mass grows with s."""
    lo, hi = 0.0, 20.0
    if head_mass(zipf(n, lo), fraction) >= mass:
        return 0.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if head_mass(zipf(n, mid), fraction) < mass else (lo, mid)
    return (lo + hi) / 2


def site_ranking(n: int, sites: int, site: int) -> np.ndarray:
    """Topics in the order of their popularity at ``site``: the site's own id range first (the
    topics its server hosts), then the next sites' ranges in turn, each in id order. This is the
    geographic model: content is consumed mostly where it is produced, and the server there hosts
    its TMs."""
    size = -(-n // sites)
    ids = np.arange(n)
    return ids[np.lexsort((ids, (ids // size - site) % sites))]


def site_probabilities(n: int, sites: int, s: float) -> np.ndarray:
    """``sites`` x ``n``: row j is the popularity of each topic at site j (Zipf over its ranking)."""
    p = zipf(n, s)
    out = np.empty((sites, n))
    for j in range(sites):
        out[j, site_ranking(n, sites, j)] = p
    return out


def subscriptions(rng: np.random.Generator, probs: np.ndarray, k: int) -> np.ndarray:
    """Boolean clients x topics incidence matrix: client i subscribes ``k`` distinct topics drawn
    from ``probs[i]`` without replacement (successive sampling, via Efraimidis-Spirakis keys:
    the k largest u^(1/p) are a weighted sample without replacement). ``probs`` is clients x n."""
    clients, n = probs.shape
    k = min(k, n)
    with np.errstate(divide="ignore"):
        keys = np.log(rng.random((clients, n))) / probs  # log u / p: same order as u^(1/p)
    chosen = np.argpartition(-keys, k - 1, axis=1)[:, :k]
    a = np.zeros((clients, n), dtype=bool)
    np.put_along_axis(a, chosen, True, axis=1)
    return a


def client_probs(clients: int, n: int, s: float, sites: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Per-client popularity (clients x n) and each client's site (clients spread evenly; all 0
    with ``sites=None``, which is one global ranking by id: the paper's single-server Figs. 7/8)."""
    if sites is None:
        return np.broadcast_to(zipf(n, s), (clients, n)), np.zeros(clients, dtype=int)
    site_of = np.arange(clients) % sites
    return site_probabilities(n, sites, s)[site_of], site_of


def sg_sizes(a: np.ndarray, threshold: int = 2) -> np.ndarray:
    """|SG_T| for every topic (Def. 1): T plus the topics at least ``threshold`` subscriptions share
    with it, from the co-occurrence matrix C = AᵀA (float32 counts are exact below 2^24)."""
    af = a.astype(np.float32)
    c = af.T @ af
    np.fill_diagonal(c, 0)
    return 1 + (c >= threshold).sum(axis=1)


def sg_masks(a: np.ndarray, threshold: int = 2) -> np.ndarray:
    """topics x topics booleans: row T is SG_T."""
    af = a.astype(np.float32)
    m = (af.T @ af) >= threshold
    np.fill_diagonal(m, True)
    return m


def chain_hops(sg: np.ndarray, servers: int) -> dict[str, np.ndarray]:
    """Per publication topic T, the TM-to-TM hops of its timestamp chain under the paper's routing
    (next(ts, T): only the SG entries ranked above T) and line routing (every topic between T and
    the highest-ranked entry), and how many of them cross servers (TMs placed by id ranges)."""
    n = sg.shape[0]
    size = -(-n // servers)
    ids = np.arange(n)
    top = np.argmax(sg, axis=1)  # lowest id in SG_T: the highest-ranked entry, where chains end
    above = np.tril(sg, k=-1)  # entries ranked strictly above T
    paper = above.sum(axis=1)
    server = ids // size
    # paper routing crosses a server boundary at each hop between two entries on different servers
    paper_cross = np.zeros(n, dtype=int)
    for t in range(n):
        path = np.concatenate((np.nonzero(above[t])[0][::-1], [t]))[::-1]  # t, then entries upward
        paper_cross[t] = int((np.diff(server[path]) != 0).sum()) if len(path) > 1 else 0
    return {
        "paper": paper,
        "line": ids - top,
        "paper_cross": paper_cross,
        "line_cross": server - server[top],
    }


# -- geographic deployment: delays -------------------------------------------------------------------

#: the prototype's netem links (section 5.1), in seconds: short N(10 ms, 2 ms), long N(100 ms, 10 ms)
SHORT = (0.010, 0.002)
LONG = (0.100, 0.010)


def geo_delay(site_of: Callable[[str], int | None], local: float = 0.0) -> Callable[[str, str, random.Random], float]:
    """A link-delay function for :class:`~faidecs.ordering.network.Network` (``delay=``): addresses
    at the same site are joined by a short link, at different sites by a long one, and two TMs on
    the same server talk locally (``local`` seconds). ``site_of`` gives an address's site; TM
    addresses are recognised by their ``tm:`` prefix. Normal draws are truncated at 0."""

    def delay(src: str, dst: str, rng: random.Random) -> float:
        a, b = site_of(src), site_of(dst)
        if a is None or b is None:
            raise ValueError(f"no site for {src if a is None else dst}")
        if a == b and src.startswith("tm:") and dst.startswith("tm:"):
            return local
        mean, std = SHORT if a == b else LONG
        return max(0.0, rng.gauss(mean, std))

    return delay


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); nan for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


# -- service-time model ------------------------------------------------------------------------------


def queued(network: Network, handler: Handler, service: float, busy: list[float]) -> Handler:
    """Wrap an address's handler in a single-server FIFO queue with a fixed ``service`` time (virtual
    seconds): a message is handled when the server has finished every message that arrived before
    it, plus ``service``, and what the handler sends leaves then. ``busy`` ([free-at time]) is the
    server; give several addresses the same list to make them share one CPU. The network itself has
    no processing cost, so without this a sequencer never saturates."""

    def handle(sender: str, message: object) -> None:
        busy[0] = max(network.now, busy[0]) + service
        network.at(busy[0], lambda: handler(sender, message))

    return handle
