"""``faidecs overlay keys|up|down|status|node``: the overlay as processes (docs/deploy.md)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any


def need_overlay_extra() -> None:
    """Fail before anything starts when the overlay extra is missing: ``overlay up`` would start
    ZooKeeper and children that die one by one. ``faidecs.cli.main`` turns the
    ModuleNotFoundError into one line naming ``pip install 'faidecs[overlay]'``."""
    import importlib

    for package in ("zmq", "kazoo"):  # ZeroMQ first: every process needs it, keys too
        importlib.import_module(package)


def cmd_keys(args: argparse.Namespace) -> int:
    need_overlay_extra()
    from faidecs.net.certificates import create_keys
    from faidecs.overlay.runtime.deployment import load_deployment

    names = list(args.process)
    if args.deployment:
        names += load_deployment(Path(args.deployment)).processes()
    if not names:
        print("faidecs: name processes with --process or give --deployment", file=sys.stderr)
        return 2
    created = create_keys(Path(args.folder), names)
    kept = sorted(set(names) - set(created))
    print(f"created keys for {len(created)} processes in {args.folder}" + (f"; kept {', '.join(kept)}" if kept else ""))
    return 0


def cmd_node(args: argparse.Namespace) -> int:
    need_overlay_extra()
    from faidecs.overlay.runtime.deployment import load_deployment
    from faidecs.overlay.runtime.nodes import open_node

    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {args.process} %(levelname)s %(message)s")
    run_dir = Path(args.run_dir)
    deployment = load_deployment(Path(args.deployment))
    zookeeper = args.zookeeper or deployment.zookeeper
    if zookeeper is None:
        print("faidecs: give --zookeeper or set zookeeper in the deployment file", file=sys.stderr)
        return 2
    for sub in ("logs", "status"):
        (run_dir / sub).mkdir(parents=True, exist_ok=True)
    metrics = deployment.metrics_address(args.process)
    if args.metrics_port is not None:
        metrics = (deployment.metrics_host(args.process), args.metrics_port)
    if metrics is not None:
        from faidecs.cli.metrics import require_prometheus

        require_prometheus()
    node = open_node(
        deployment,
        args.process,
        zookeeper,
        log_dir=run_dir / "logs",
        status_dir=run_dir / "status",
        state_dir=run_dir / "state" / args.process,
        metrics=metrics,
    )
    profile = os.environ.get("FAIDECS_PROFILE")  # a folder: where each process leaves its cProfile stats
    if profile:
        import cProfile

        cProfile.runctx("node.run()", globals(), {"node": node}, str(Path(profile) / f"{args.process}.prof"))
    else:
        node.run()
    return 0


def status_table(statuses: dict[str, dict[str, Any]], previous: dict[str, dict[str, Any]] | None = None) -> str:
    """Per merger replica: role, leader, epoch, state, the events its committed stream holds and
    how many it committed per second since ``previous``, the commit position (which also counts
    the marks, upmarks and heartbeats a merger logs: a heartbeat every 50 ms of quiet, so it grows
    while nothing is published), buffered inputs; per client: deliveries or publications."""
    lines = [
        f"{'process':<10} {'merger':<24} {'leader':<8} {'epoch':>5} {'state':<10} "
        f"{'events':>8} {'events/s':>8} {'position':>8} {'buffered':>8}"
    ]
    for name in sorted(statuses):
        s = statuses[name]
        before = (previous or {}).get(name)
        elapsed = s["time"] - before["time"] if before else 0.0
        for m in s.get("mergers", []):
            old = next((x for x in before.get("mergers", []) if x["role"] == m["role"]), None) if before else None
            events = m["events_committed"]
            rate = (events - old["events_committed"]) / elapsed if old and elapsed > 0 else 0.0
            lines.append(
                f"{name:<10} {m['role']:<24} {m['leader'] or '-':<8} {m['epoch']:>5} {m['status']:<10} "
                f"{events:>8} {rate:>8.0f} {m['commit']:>8} {m['buffered']:>8}"
            )
        if "delivered" in s:
            lines.append(
                f"{name:<10} subscriber: {s['delivered']} deliveries" + ("" if s.get("started") else " (starting)")
            )
        if "published" in s:
            lines.append(f"{name:<10} publisher: {s['published']} events" + (" (done)" if s.get("done") else ""))
        if s.get("rejected"):
            lines.append(f"{name:<10} rejected messages: {s['rejected']}")
    return "\n".join(lines) + "\n"


def cmd_up(args: argparse.Namespace) -> int:
    """Start the deployment and stay in the foreground (ZooKeeper, when started here, lives as
    long as this command) until every process has stopped (``overlay down`` from another shell)
    or Ctrl-C, which stops them all."""
    need_overlay_extra()
    from faidecs.overlay.runtime.launcher import LocalDeployment

    run = LocalDeployment(
        Path(args.deployment), Path(args.run_dir), zookeeper=args.zookeeper, metrics_port=args.metrics_port
    )
    if run.metrics:
        from faidecs.cli.metrics import require_prometheus

        require_prometheus()
    web = None
    if args.web is not None:
        from faidecs.cli.dashboard import serve

        web = serve(Path(args.run_dir), args.web_host, args.web)
    try:
        run.start()
        for name, (host, port) in run.metrics.items():
            print(f"faidecs: {name} metrics on http://{host}:{port}/metrics", flush=True)
        print(
            f"faidecs: {len(run.procs)} processes up; run folder {args.run_dir}; "
            f"stop with Ctrl-C or: faidecs overlay down {args.run_dir}",
            flush=True,
        )
        previous: dict[str, dict[str, Any]] | None = None
        while any(p.poll() is None for p in run.procs.values()):
            if args.watch:
                statuses = run.statuses()
                sys.stdout.write("\x1b[2J\x1b[H" + status_table(statuses, previous))
                sys.stdout.flush()
                previous = statuses
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        run.stop()
        if web is not None:
            web.stop()
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    from faidecs.overlay.runtime.launcher import down

    stopped = down(Path(args.run_dir))
    print(f"faidecs: stopped {', '.join(stopped) or 'nothing (no process was running)'}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:

    folder = Path(args.run_dir) / "status"
    statuses = {f.stem: json.loads(f.read_text()) for f in sorted(folder.glob("*.json"))}
    if args.json:
        print(json.dumps(statuses, indent=2))
    else:
        sys.stdout.write(status_table(statuses))
    return 0 if statuses else 1


def add_commands(osub: Any) -> None:
    from faidecs.cli.dashboard import web_port

    keys = osub.add_parser("keys", help="create CurveZMQ key pairs for a deployment's processes")
    keys.add_argument("folder", help="key folder (public/ and private/ are made inside)")
    keys.add_argument("--deployment", help="a deployment file: a key pair for each of its processes")
    keys.add_argument("--process", action="append", default=[], help="a process name (repeatable)")
    keys.set_defaults(func=cmd_keys)

    up = osub.add_parser("up", help="run a deployment's processes on this host until they stop or Ctrl-C")
    up.add_argument("deployment", help="deployment file (TOML)")
    up.add_argument("--run-dir", default="overlay-run", help="folder for logs and status (default overlay-run)")
    up.add_argument("--zookeeper", help="host:port of a running ZooKeeper (default: start one on loopback)")
    up.add_argument("--watch", action="store_true", help="show the live status, refreshed every second")
    up.add_argument("--web", type=web_port, metavar="PORT", help="serve the live view on this port (docs/deploy.md)")
    up.add_argument("--web-host", default="127.0.0.1", help="address the live view listens on (default 127.0.0.1)")
    up.add_argument(
        "--metrics-port",
        type=int,
        metavar="BASE",
        help="Prometheus metrics: process i on BASE + i ([metrics] base_port)",
    )
    up.set_defaults(func=cmd_up)

    dn = osub.add_parser("down", help="stop the processes of a run started by overlay up")
    dn.add_argument("run_dir", nargs="?", default="overlay-run")
    dn.set_defaults(func=cmd_down)

    st = osub.add_parser("status", help="print the status of a running deployment")
    st.add_argument("run_dir", nargs="?", default="overlay-run")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_status)

    node = osub.add_parser("node", help="run one process of a deployment (overlay up runs these)")
    node.add_argument("deployment", help="deployment file (TOML)")
    node.add_argument("process", help="the process to run")
    node.add_argument("--zookeeper", help="host:port (default: the deployment file's)")
    node.add_argument("--run-dir", default="overlay-run", help="folder for its run log and status")
    node.add_argument("--metrics-port", type=int, help="serve its Prometheus metrics on this port ([metrics])")
    node.set_defaults(func=cmd_node)


__all__ = ["add_commands", "need_overlay_extra", "status_table"]
