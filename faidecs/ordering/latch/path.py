"""A best-effort, reordering path for the latch layer: publishers → a chain of brokers → subscribers.

Each broker handles each message on its own (the parallel matching and forwarding that seed 002
names as the main cause of FIFO violations), so its processing time is an independent exponential
draw per message and hop: the end-to-end variable delay is hypoexponential, the delay difference a
sum of ``hops`` Laplace variables. A broker may drop a message (``loss``); the last broker forwards
only to subscribers whose topics include the message's (content-based routing, so a subscriber
also sees holes for messages it never gets). Every node has its own clock offset: nothing needs
synchronised clocks.

Each subscriber runs several receiver variants side by side on the same arrivals (as the paper's
receivers ran several protocol instances on one stream), one process of the run log each: a
``None`` variant hands every message on as it arrives, the others through a
:class:`~faidecs.ordering.latch.receiver.LatchReceiver` per publisher. The run log has the
publications (publisher and seq) and, per variant, the ``notify`` records of what its latch stage
released; ``faidecs verify`` counts the FIFO violations on it (Notification FIFO Order).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import partial

from faidecs.ordering.latch.receiver import LatchConfig, LatchReceiver, LatchStats
from faidecs.ordering.latch.stamp import Stamp, Stamper
from faidecs.ordering.network import Network
from faidecs.runs.runlog import RunLog, RunRecorder


@dataclass(frozen=True, slots=True)
class PathConfig:
    hops: int = 3  # brokers between a publisher and a subscriber
    hop_mean: float = 5.0  # mean processing time per broker (ms), exponential; 0: no reordering
    link: float = 0.0  # constant delay per link (ms): shifts every message alike
    loss: float = 0.0  # probability that a broker drops a message
    publishers: int = 2
    subscribers: int = 2
    #: per publisher, (messages, rate in messages per ms) phases of Poisson publications
    phases: tuple[tuple[int, float], ...] = ((100, 1.2),)
    topics: int = 1  # event types T0..; each publication picks one uniformly
    match: float = 1.0  # the fraction of the topics each subscriber takes (at least one)
    record: int = 0  # publication record size y (0: basic mode)
    clock_skew: float = 1000.0  # each node's clock is off by up to this much (ms)
    #: per-hop processing: "exp" (the paper's fit, the digest's idealised model) or "spiky", a
    #: two-phase mixture with the same mean: most messages fast, a few (``slow_share``) ten times
    #: slower than the mean, the shape of seed 002's measured differences (a spike at 0, long tails)
    hop_model: str = "exp"
    slow_share: float = 0.05


@dataclass(slots=True)
class PathRun:
    config: PathConfig
    log: RunLog
    #: (subscriber, variant, publisher) -> the latch receiver's counters
    stats: dict[tuple[str, str, str], LatchStats] = field(default_factory=dict)
    #: (subscriber, publisher) -> messages for the subscriber that the path lost
    lost: dict[tuple[str, str], int] = field(default_factory=dict)
    #: (subscriber, publisher) -> messages for the subscriber that the path delivered
    arrived: dict[tuple[str, str], int] = field(default_factory=dict)


def process_name(subscriber: str, variant: str) -> str:
    return f"{subscriber}.{variant}"


def simulate(config: PathConfig, variants: dict[str, LatchConfig | None], *, seed: int) -> PathRun:
    """One seeded run; every variant sees the same arrivals."""
    if config.hops < 1:
        raise ValueError("a path has at least one broker")
    rng = random.Random(seed)
    losses = random.Random(f"{seed}:loss")  # loss draws apart, so a loss rate changes no delay
    topics = [f"T{k}" for k in range(config.topics)]
    publishers = [f"p{k}" for k in range(config.publishers)]
    subscribers = [f"s{k}" for k in range(config.subscribers)]
    brokers = [f"b{k}" for k in range(1, config.hops + 1)]
    wanted = {s: frozenset(rng.sample(topics, max(1, round(config.match * len(topics))))) for s in subscribers}
    offsets = {node: rng.uniform(-config.clock_skew, config.clock_skew) for node in publishers + subscribers}

    types_source = "".join(f"type {t}(n: int)\n" for t in topics)
    processes = {
        process_name(s, v): f"subscription S: {' or '.join(sorted(wanted[s]))}" for s in subscribers for v in variants
    }
    recorder = RunRecorder(types_source, processes)
    run = PathRun(config, recorder.log)

    if config.hop_model not in ("exp", "spiky"):
        raise ValueError(f"hop_model is exp or spiky, not {config.hop_model!r}")
    slow_mean = 10.0 * config.hop_mean
    fast_mean = config.hop_mean * (1.0 - 10.0 * config.slow_share) / (1.0 - config.slow_share)

    def hop_delay(src: str, dst: str, r: random.Random) -> float:
        if config.hop_mean <= 0:
            return config.link
        if config.hop_model == "exp":
            return config.link + r.expovariate(1.0 / config.hop_mean)
        mean = slow_mean if r.random() < config.slow_share else fast_mean
        return config.link + r.expovariate(1.0 / mean)

    net = Network(rng, delay=hop_delay)
    for s in subscribers:
        net.override[(brokers[-1], s)] = config.link  # the last hop is a link, not a broker

    receivers: dict[tuple[str, str, str], LatchReceiver[str]] = {}
    for s in subscribers:
        for v, cfg in variants.items():
            if cfg is None:
                continue
            for p in publishers:
                relevant = wanted[s].__contains__ if config.record > 0 else None
                receivers[(s, v, p)] = LatchReceiver(cfg, relevant)
                run.stats[(s, v, p)] = receivers[(s, v, p)].stats
    scheduled: dict[tuple[str, str, str], float] = {}

    def arm(key: tuple[str, str, str]) -> None:
        # one timer per receiver and deadline: the head's latch end, on the subscriber's clock
        deadline = receivers[key].deadline()
        if deadline is not None and scheduled.get(key) != deadline:
            scheduled[key] = deadline
            net.at(deadline - offsets[key[0]], partial(expire, key, deadline))

    def expire(key: tuple[str, str, str], deadline: float) -> None:
        now = max(deadline, net.now + offsets[key[0]])
        for r in receivers[key].poll(now):
            recorder.notify(process_name(key[0], key[1]), r.item)
        arm(key)

    def at_subscriber(s: str, src: str, message: tuple[Stamp, str]) -> None:
        stamp, event_id = message
        run.arrived[(s, stamp.publisher)] = run.arrived.get((s, stamp.publisher), 0) + 1
        local = net.now + offsets[s]
        for v, cfg in variants.items():
            if cfg is None:
                recorder.notify(process_name(s, v), event_id)
                continue
            key = (s, v, stamp.publisher)
            for r in receivers[key].receive(stamp, event_id, local):
                recorder.notify(process_name(s, v), r.item)
            arm(key)

    def at_broker(k: int, src: str, message: tuple[Stamp, str, str]) -> None:
        stamp, event_id, topic = message
        if config.loss > 0 and losses.random() < config.loss:
            for s in subscribers:
                if topic in wanted[s]:
                    run.lost[(s, stamp.publisher)] = run.lost.get((s, stamp.publisher), 0) + 1
            return
        if k + 1 < len(brokers):
            net.ens(brokers[k], brokers[k + 1], message)
            return
        for s in subscribers:
            if topic in wanted[s]:
                net.ens(brokers[k], s, (stamp, event_id))

    for k, b in enumerate(brokers):
        net.listen(b, partial(at_broker, k))
    for s in subscribers:
        net.listen(s, partial(at_subscriber, s))

    stampers = {p: Stamper(p, config.record) for p in publishers}

    def publish(p: str, seq: int, topic: str) -> None:
        event_id = f"{p}-{seq}"
        recorder.publish({"id": event_id, "type": topic, "attrs": {"n": seq}, "publisher": p, "seq": seq})
        stamp = stampers[p].stamp(net.now + offsets[p], topic)
        net.ens(p, brokers[0], (stamp, event_id, topic))

    for p in publishers:
        time, seq = 0.0, 0
        for count, rate in config.phases:
            for _ in range(count):
                time += rng.expovariate(rate)
                net.at(time, partial(publish, p, seq, rng.choice(topics)))
                seq += 1
    net.run()
    recorder.finish({})
    return run
