"""The live view's web server: one page, its state as JSON, sampled off the request threads.

The standard library's ``ThreadingHTTPServer`` is enough for a page a few operators open: no
dependency, nothing to fetch from the internet (the page's script and SVG are inline). A thread
samples the run folder (:class:`~faidecs.overlay.runtime.liveview.LiveView`) every half second,
as often as the processes rewrite their status files, so that rates exist before a page asks
and do not depend on how many pages poll. Routes:

    /            the page (liveview.html); it polls /state once a second and redraws in place
    /state       the latest state, JSON (``faidecs.liveview/1``)
"""

from __future__ import annotations

import json
import logging
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path
from typing import Any

from faidecs.overlay.runtime.liveview import LiveView

log = logging.getLogger(__name__)

SAMPLE_EVERY_S = 0.5


def page() -> bytes:
    return files("faidecs.overlay.runtime").joinpath("liveview.html").read_bytes()


class LiveViewServer:
    """Serves the live view of ``run_dir`` on ``host:port`` (port 0: any free one) until :meth:`stop`."""

    def __init__(self, run_dir: Path, *, host: str = "127.0.0.1", port: int = 0, every: float = SAMPLE_EVERY_S) -> None:
        self.view = LiveView(run_dir)
        self.every = every
        self._state = b"{}"
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._page = page()
        self._sample()  # the first request already has a state
        self.httpd = ThreadingHTTPServer((host, port), self._handler())
        self.httpd.daemon_threads = True
        self._threads = [
            threading.Thread(target=self.httpd.serve_forever, name="liveview http", daemon=True),
            threading.Thread(target=self._sampling, name="liveview sampler", daemon=True),
        ]

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"

    def start(self) -> LiveViewServer:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        for t in self._threads:
            t.join()

    def state(self) -> bytes:
        with self._lock:
            return self._state

    def _sample(self) -> None:
        try:
            state: dict[str, Any] = self.view.sample()
            data = json.dumps(state, ensure_ascii=False, allow_nan=False).encode()  # the page's JSON.parse refuses NaN
        except Exception as exc:  # whatever a run folder holds, the page says so and goes on
            log.exception("live view: sampling %s failed", self.view.run_dir)
            state = {
                "format": "faidecs.liveview/1",
                "run_dir": str(self.view.run_dir),
                "time": time.time(),
                "sample": self.view.samples,
                "problems": [f"reading the run folder failed: {type(exc).__name__}: {exc}"],
                "roles": [],
                "subscribers": [],
                "publishers": [],
            }
            data = json.dumps(state, ensure_ascii=False).encode()
        with self._lock:
            self._state = data

    def _sampling(self) -> None:
        while not self._stopping.wait(self.every):
            self._sample()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # the name http.server calls
                path = self.path.split("?", 1)[0]
                if path in ("/", "/index.html"):
                    self._send(server._page, "text/html; charset=utf-8")
                elif path == "/state":
                    self._send(server.state(), "application/json")
                else:
                    self.send_error(HTTPStatus.NOT_FOUND, "the live view serves / and /state")

            def _send(self, body: bytes, kind: str) -> None:
                self.send_response(HTTPStatus.OK)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the page went away mid-answer

            def log_message(self, format: str, *args: Any) -> None:  # http.server's signature
                log.debug("live view: " + format, *args)

        return Handler


__all__ = ["SAMPLE_EVERY_S", "LiveViewServer", "page"]
