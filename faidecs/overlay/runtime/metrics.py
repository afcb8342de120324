"""An overlay process's Prometheus endpoint (docs/deploy.md, "Metrics").

The counters and gauges are what the process already counts for its status file
(faidecs/net/statusfile.py): twice a second the loop builds a fresh status dict and hands it over
(:attr:`NodeMetrics.status`), never changing one it handed over, and the scrape, on the HTTP
server's thread, turns the latest one into metrics. So the HTTP thread needs no lock and the loop
pays nothing per message for them; a scrape sees values at most half a second old. The latency
histograms are observed by the loop as things happen (once per commit, delivery or
acknowledgement, under prometheus-client's own lock), in seconds from timestamps the protocol
already carries (the deciding leader's clock in a decision, the send time an outbox keeps).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from prometheus_client import Histogram, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from faidecs.metrics import MetricsServer, serve_registry

#: Latency buckets in seconds: the clocks are milliseconds, a loop pass a few, a failover seconds.
BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, float("inf"))

#: What a replica turned away (its status keys, docs/deploy.md "Threat model"), as ``kind`` labels.
REPLICA_REJECTED = (
    "stale_rejected",
    "late_inputs",
    "unconfirmed",
    "overclaimed",
    "conflicting",
    "bad_acks",
    "foreign",
    "refused_connects",
)


class NodeMetrics:
    """One process's registry, its latency histograms, and its endpoint once :meth:`start` ed."""

    def __init__(self, process: str, address: tuple[str, int]):
        self.process = process
        self.address = address
        #: the latest status the loop handed over (None before the first)
        self.status: dict[str, Any] | None = None
        self.registry = CollectorRegistry()
        self.registry.register(_StatusCollector(self))
        ProcessCollector(registry=self.registry)  # process_cpu_seconds_total, memory, open fds
        self.server: MetricsServer | None = None

    def histogram(self, name: str, documentation: str, labels: Sequence[str]) -> Histogram:
        """A latency histogram in this registry, labelled ``process`` and ``labels``."""
        return Histogram(name, documentation, ["process", *labels], registry=self.registry, buckets=BUCKETS)

    def start(self) -> None:
        host, port = self.address
        self.server = serve_registry(self.registry, port, host)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None


class _StatusCollector(Collector):
    def __init__(self, owner: NodeMetrics):
        self.owner = owner

    def collect(self) -> Iterator[Metric]:
        status = self.owner.status  # one read: the loop may hand over the next meanwhile
        if status is None:
            return iter(())
        return iter(_families(self.owner.process, status))


def _counter(name: str, doc: str, labels: Sequence[str] = ()) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, labels=["process", *labels])


def _gauge(name: str, doc: str, labels: Sequence[str] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=["process", *labels])


def _families(process: str, s: dict[str, Any]) -> list[Metric]:
    """The metrics of one status snapshot (Node.status and its kinds' additions)."""
    p = [process]
    sent = _counter("faidecs_overlay_messages_sent", "Overlay messages this process sent.")
    sent.add_metric(p, s["sent"])
    received = _counter("faidecs_overlay_messages_received", "Overlay messages this process received.")
    received.add_metric(p, s["received"])
    rejected = _counter(
        "faidecs_overlay_rejected_messages", "Messages the transport or admission refused, by kind.", ["kind"]
    )
    for kind, n in sorted(s["rejected"].items()):
        rejected.add_metric([process, kind], n)
    errors = _counter("faidecs_overlay_protocol_errors", "Messages the protocol core could not place.")
    errors.add_metric(p, s["protocol_errors"])
    out: list[Metric] = [sent, received, rejected, errors]
    if "mergers" in s:
        out += _replica_families(process, s["mergers"])
    if "published" in s:
        out += _publisher_families(process, s)
    if "delivered" in s:
        out += _subscriber_families(process, s)
    return out


def _replica_families(process: str, mergers: list[dict[str, Any]]) -> list[Metric]:
    role = ["role"]
    commits = _counter(
        "faidecs_overlay_commits", "Positions of the merger's log committed, as this replica knows.", role
    )
    events = _counter(
        "faidecs_overlay_committed_events", "Events committed in the merger's log, as this replica knows.", role
    )
    log = _gauge("faidecs_overlay_log_positions", "Positions in this replica's log (decided, committed or not).", role)
    leader = _gauge("faidecs_overlay_leader", "1 if this replica is its role's leader, else 0.", role)
    epoch = _gauge("faidecs_overlay_epoch", "The role's epoch this replica is in.", role)
    buffered = _gauge("faidecs_overlay_buffered_inputs", "Inputs held by this replica, not decided yet.", role)
    fetches = _counter("faidecs_overlay_fetches", "Decided publications this replica fetched from a peer.", role)
    turned = _counter(
        "faidecs_overlay_replica_rejected", "What this replica turned away, by kind (docs/deploy.md).", [*role, "kind"]
    )
    for m in mergers:
        labels = [process, m["role"]]
        commits.add_metric(labels, m["commit"] + 1)
        events.add_metric(labels, m["events_committed"])
        log.add_metric(labels, m["log"])
        leader.add_metric(labels, 1 if m["leader"] == process else 0)
        epoch.add_metric(labels, m["epoch"])
        buffered.add_metric(labels, m["buffered"])
        fetches.add_metric(labels, m["fetches"])
        for kind in REPLICA_REJECTED:
            if kind in m:
                turned.add_metric([*labels, kind], m[kind])
    return [commits, events, log, leader, epoch, buffered, fetches, turned]


def _publisher_families(process: str, s: dict[str, Any]) -> list[Metric]:
    p = [process]
    sent = _counter("faidecs_overlay_publications_sent", "Events this publisher published (each once).")
    sent.add_metric(p, s["published"])
    done = _gauge("faidecs_overlay_publisher_done", "1 once the publisher has published its whole file.")
    done.add_metric(p, 1 if s["done"] else 0)
    out: list[Metric] = [sent, done]
    if "unacked" in s:  # an overlay publisher with an outbox (not UDP, not Raft)
        acked = _counter(
            "faidecs_overlay_publications_acknowledged", "Publications a root leader acknowledged as committed."
        )
        acked.add_metric(p, s["acknowledged"])
        resent = _counter("faidecs_overlay_publications_resent", "Publications sent again, unacknowledged.")
        resent.add_metric(p, s["resent"])
        unacked = _gauge("faidecs_overlay_unacknowledged_publications", "Publications sent, not acknowledged yet.")
        unacked.add_metric(p, s["unacked"])
        out += [acked, resent, unacked]
    return out


def _subscriber_families(process: str, s: dict[str, Any]) -> list[Metric]:
    labels = [process, s["subscription"]]
    sub = ["subscription"]
    delivered = _counter("faidecs_overlay_deliveries", "Relations this subscriber delivered (recorded).", sub)
    delivered.add_metric(labels, s["delivered"])
    fed = _counter("faidecs_overlay_fed_events", "Events released to this subscriber's engines.", sub)
    fed.add_metric(labels, s["fed"])
    checkpoints = _counter("faidecs_overlay_checkpoints", "Checkpoints this incarnation wrote.", sub)
    checkpoints.add_metric(labels, s["checkpoints"])
    started = _gauge("faidecs_overlay_subscriber_started", "1 once every stream of the subscriber started.", sub)
    started.add_metric(labels, 1 if s["started"] else 0)
    return [delivered, fed, checkpoints, started]


__all__ = ["BUCKETS", "REPLICA_REJECTED", "NodeMetrics"]
