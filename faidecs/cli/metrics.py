"""``--metrics-port``: the Prometheus endpoint of ``faidecs run`` (docs/engine.md, "Metrics"), and
the check that the ``metrics`` extra is there before a command with metrics reads or starts anything."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from faidecs.matching.engine import Engine
    from faidecs.metrics import MetricsServer


def require_prometheus() -> None:
    """Raises ModuleNotFoundError when prometheus-client is not installed: ``faidecs``'s main
    turns it into one line naming the extra (cli/extras.py)."""
    import prometheus_client  # noqa: F401


def serve_engine(engine: Engine, port: int, addr: str) -> MetricsServer:
    """Serve ``engine``'s metrics while the run lasts; says where on standard error."""
    from faidecs.metrics import serve

    server = serve(engine, port, addr)
    print(f"faidecs: metrics on {server.url}", file=sys.stderr, flush=True)
    return server


__all__ = ["require_prometheus", "serve_engine"]
