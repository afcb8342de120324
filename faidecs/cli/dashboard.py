"""``faidecs dashboard RUN_DIR`` and ``overlay up --web``: the live view of a run (docs/deploy.md)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from faidecs.cli.inputs import CliError


def serve(run_dir: Path, host: str, port: int) -> Any:
    """Start the live view of ``run_dir`` and say where it is; the caller stops it."""
    from faidecs.overlay.runtime.liveview_server import LiveViewServer

    try:
        server = LiveViewServer(run_dir, host=host, port=port).start()
    except OSError as exc:
        raise CliError(f"live view on {host}:{port}: {exc.strerror or exc}") from None
    print(f"faidecs: live view of {run_dir} at {server.url}", flush=True)
    return server


def cmd_dashboard(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise CliError(f"{run_dir}: no such folder (a run folder of faidecs overlay up)")
    server = serve(run_dir, args.host, args.port)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def web_port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("a port is 0..65535 (0: any free one)")
    return value


def add_parser(sub: Any) -> None:
    dash = sub.add_parser("dashboard", help="serve a live web view of a run folder of faidecs overlay up")
    dash.add_argument("run_dir", nargs="?", default="overlay-run", help="the run folder (default overlay-run)")
    dash.add_argument("--port", type=web_port, default=8470, help="port (default 8470; 0: any free one)")
    dash.add_argument(
        "--host", "--web-host", dest="host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    dash.set_defaults(func=cmd_dashboard)


__all__ = ["add_parser", "cmd_dashboard", "serve", "web_port"]
