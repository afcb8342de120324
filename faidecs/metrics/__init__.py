"""Prometheus exposition of the embedded engine's counters (docs/engine.md, "Metrics").

Needs ``prometheus-client`` (the ``metrics`` extra: ``pip install 'faidecs[metrics]'``)::

    from faidecs.metrics import serve

    with serve(engine, port=9400):      # http://127.0.0.1:9400/metrics while the block runs
        for event in events:
            engine.publish(event)

:class:`EngineCollector` is the collector alone, to register in a registry of one's own.
"""

from faidecs.metrics.engine_collector import EngineCollector
from faidecs.metrics.server import MetricsServer, serve, serve_registry

__all__ = ["EngineCollector", "MetricsServer", "serve", "serve_registry"]
