"""An HTTP endpoint serving one registry's metrics, for as long as its owner runs."""

from __future__ import annotations

import threading
from types import TracebackType

from prometheus_client.exposition import start_http_server
from prometheus_client.registry import CollectorRegistry

from faidecs.errors import FaidecsError
from faidecs.matching.engine import Engine
from faidecs.metrics.engine_collector import EngineCollector


class MetricsServer:
    """Prometheus's text exposition of ``registry`` at ``http://addr:port/metrics``, served by a
    daemon thread until :meth:`close` (or the end of a ``with`` block)."""

    def __init__(self, registry: CollectorRegistry, port: int, addr: str = "127.0.0.1"):
        """``port`` 0: any free port (:attr:`port` says which). Raises :class:`FaidecsError`
        naming the address when it cannot listen there."""
        self.registry = registry
        try:
            self._server, self._thread = start_http_server(port, addr=addr, registry=registry)
        except OSError as exc:
            raise FaidecsError(f"metrics: cannot listen on {addr}:{port}: {exc.strerror or exc}") from None
        self.addr = addr
        self.port: int = self._server.server_port

    @property
    def url(self) -> str:
        host = f"[{self.addr}]" if ":" in self.addr else self.addr
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def serve_registry(registry: CollectorRegistry, port: int, addr: str = "127.0.0.1") -> MetricsServer:
    """Serve ``registry`` (its own, not prometheus-client's global one) on ``addr:port``."""
    return MetricsServer(registry, port, addr)


def serve(
    engine: Engine,
    port: int,
    addr: str = "127.0.0.1",
    *,
    lock: threading.Lock | threading.RLock | None = None,
) -> MetricsServer:
    """Serve ``engine``'s metrics (:class:`EngineCollector`, with ``lock``) on ``addr:port``,
    in a registry of their own."""
    registry = CollectorRegistry()
    registry.register(EngineCollector(engine, lock=lock))
    return MetricsServer(registry, port, addr)


__all__ = ["MetricsServer", "serve", "serve_registry"]
