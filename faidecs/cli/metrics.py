"""``--metrics-port``: the Prometheus endpoint of ``faidecs run`` (docs/engine.md, "Metrics")."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from faidecs.cli.inputs import CliError

if TYPE_CHECKING:
    from faidecs.matching.engine import Engine
    from faidecs.metrics import MetricsServer

MISSING = "--metrics-port needs prometheus-client: pip install 'faidecs[metrics]'"


def require_prometheus() -> None:
    """One line naming the extra, not a traceback, when prometheus-client is not installed."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        raise CliError(MISSING) from None


def serve_engine(engine: Engine, port: int, addr: str) -> MetricsServer:
    """Serve ``engine``'s metrics while the run lasts; says where on standard error."""
    require_prometheus()
    from faidecs.metrics import serve

    server = serve(engine, port, addr)
    print(f"faidecs: metrics on {server.url}", file=sys.stderr, flush=True)
    return server


__all__ = ["MISSING", "require_prometheus", "serve_engine"]
