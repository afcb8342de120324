"""A Prometheus collector that reads an engine's own counters when it is scraped.

The engine counts events, deliveries, drops and queue lengths anyway (:meth:`Engine.metrics`);
the collector reads them on the scrape, so publishing pays nothing for being watched.

The scrape runs on the HTTP server's thread while another thread publishes. The engine is not
thread safe, but reading its counters is, in CPython, but for one case: a dict the publisher
grows while the scrape iterates it (a partitioned conjunction's first event of a new value),
which raises ``RuntimeError``; the collector then reads again (up to :data:`ATTEMPTS` times).
Without a lock each value is one the engine held during the scrape, but a scrape in the middle
of a ``publish`` may see some conjunctions after the event and others before it. Give ``lock``
(and hold the same lock around each ``publish``) for scrapes that each see one moment between
two publications; the engine's hot path then pays one uncontended lock per publish.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from faidecs.matching.engine import Engine
from faidecs.matching.records import Metrics

#: reads of :meth:`Engine.metrics` a scrape tries while the publisher grows a dict under it
ATTEMPTS = 20

_LABELS = ["subscription", "conjunction"]


def _families() -> tuple[CounterMetricFamily, CounterMetricFamily, CounterMetricFamily, GaugeMetricFamily]:
    # Counter families take their name without "_total"; the exposition adds it.
    return (
        CounterMetricFamily("faidecs_engine_published_events", "Events the embedded engine accepted."),
        CounterMetricFamily(
            "faidecs_engine_deliveries", "Relations delivered, per subscription and conjunction.", labels=_LABELS
        ),
        CounterMetricFamily(
            "faidecs_engine_dropped_events",
            "Events dropped by bounds (max_queue with drop-oldest, max_age), per subscription and conjunction.",
            labels=_LABELS,
        ),
        GaugeMetricFamily(
            "faidecs_engine_queued_events",
            "Events queued now, per subscription, conjunction and event type.",
            labels=[*_LABELS, "type"],
        ),
    )


class EngineCollector(Collector):
    """The counters of ``engine`` as Prometheus metrics (docs/engine.md, "Metrics"); ``lock``:
    held while they are read (see the module's docstring)."""

    def __init__(self, engine: Engine, *, lock: threading.Lock | threading.RLock | None = None):
        self.engine = engine
        self.lock = lock

    def read(self) -> Metrics:
        """:meth:`Engine.metrics`, read safely from another thread than the publisher's."""
        if self.lock is not None:
            with self.lock:
                return self.engine.metrics()
        for _ in range(ATTEMPTS - 1):
            try:
                return self.engine.metrics()
            except RuntimeError:  # a dict grew while read: the publisher is still at it
                continue
        return self.engine.metrics()

    def describe(self) -> Iterator[Metric]:
        """The families without samples: registering checks names without reading the engine."""
        return iter(_families())

    def collect(self) -> Iterator[Metric]:
        metrics = self.read()
        published, deliveries, drops, queued = _families()
        published.add_metric([], metrics["published"])
        for name, conjunctions in metrics["subscriptions"].items():
            for k, c in enumerate(conjunctions):
                labels = [name, str(k)]
                deliveries.add_metric(labels, c["deliveries"])
                drops.add_metric(labels, c["drops"])
                for type_name, length in c["queues"].items():
                    queued.add_metric([*labels, type_name], length)
        return iter((published, deliveries, drops, queued))


__all__ = ["ATTEMPTS", "EngineCollector"]
