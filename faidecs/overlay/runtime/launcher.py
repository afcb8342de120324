"""A deployment's processes on this host: start, watch, kill, stop (``faidecs overlay up/down``).

Every process runs as ``faidecs overlay node`` in its own OS process, so faults are real: a
SIGKILL ends a process without a goodbye, a SIGSTOP freezes it with its sockets open. A run folder
holds what the processes leave::

    run.json           the deployment file, the ZooKeeper address, each process's pid
    logs/<p>.runlog    each process's run log (faidecs verify reads them all); a restarted
                       process writes <p>@1.runlog, <p>@2.runlog, ... (one per incarnation)
    state/<p>/         what a process keeps to restart where it stood ([durability])
    status/<p>.json    each process's status, rewritten twice a second; the last, as it stops, says "stopped"
    out/<p>.err        each process's standard error
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from faidecs.errors import FaidecsError
from faidecs.net.children import stop_processes
from faidecs.net.processlog import incarnation_of
from faidecs.net.statusfile import read_statuses
from faidecs.overlay.runtime.deployment import Deployment, load_deployment
from faidecs.runs.runlog import RunLog, merge_runlogs


class LaunchError(FaidecsError):
    """A process that would not start or a run folder that cannot be used: says which and why."""


class LocalDeployment:
    def __init__(
        self,
        path: Path,
        run_dir: Path,
        *,
        zookeeper: str | None = None,
        prefix: Callable[[str], Sequence[str]] | None = None,
        metrics_port: int | None = None,
    ):
        """``metrics_port``: the first process's metrics port (the others' follow), instead of the
        file's ``[metrics] base_port``. ``prefix``: words put before each process's command, given its name, e.g.
        ``["ip", "netns", "exec", "host1"]`` to run it in a network namespace
        (benchmarks/hosts.py). The prefix must exec the command, so that the pid kept and
        signalled is the process's own (``ip netns exec`` does)."""
        self.path = path.resolve()
        self.prefix = prefix
        self.deployment: Deployment = load_deployment(self.path)
        self.run_dir = run_dir
        self.zookeeper = zookeeper or self.deployment.zookeeper
        self.server: Any = None
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        if metrics_port is not None:
            try:
                self.deployment.check_metrics_ports(metrics_port)
            except ValueError as exc:
                raise LaunchError(f"--metrics-port {metrics_port}: {exc}") from None
        #: each process's metrics endpoint (host, port); empty: none
        self.metrics: dict[str, tuple[str, int]] = {}
        for name in self.deployment.processes():
            where = self.deployment.metrics_address(name, metrics_port)
            if where is not None:
                self.metrics[name] = where
        for sub in ("logs", "status", "out"):
            (run_dir / sub).mkdir(parents=True, exist_ok=True)

    # --- starting -----------------------------------------------------------------------------

    def start(self) -> None:
        """ZooKeeper (unless the deployment names one), the servers, the subscribers that start
        with the run, then the publishers, once the subscribers have registered."""
        if self.zookeeper is None:
            from faidecs.net.zkserver import ZooKeeperServer

            # Its data (epochs, who ran) must outlive the processes as their disks do: with
            # sync = "always" it fsyncs its transaction log too.
            durable = self.deployment.durability.sync == "always"
            self.server = ZooKeeperServer(data_dir=self.run_dir / "zookeeper", durable=durable)
            self.server.start()
            self.zookeeper = self.server.address
        d = self.deployment
        for name in d.servers:
            self.start_process(name)
        later = {n for n, s in d.subscribers.items() if s.start == "later"}
        subscribers = [n for n in d.subscribers if n not in later]
        for name in subscribers:
            self.start_process(name)
        self.wait_for(lambda s: all(s.get(n, {}).get("started") for n in subscribers), 30, "the subscribers to start")
        for name in d.publishers:
            self.start_process(name)

    def start_process(self, name: str) -> None:
        if name in self.procs and self.procs[name].poll() is None:
            raise LaunchError(f"{name} is running already")
        (self.run_dir / "status" / f"{name}.json").unlink(missing_ok=True)
        command = [
            sys.executable,
            "-m",
            "faidecs.cli.main",
            "overlay",
            "node",
            str(self.path),
            name,
            "--zookeeper",
            str(self.zookeeper),
            "--run-dir",
            str(self.run_dir),
        ]
        if name in self.metrics:
            command += ["--metrics-port", str(self.metrics[name][1])]
        if self.prefix is not None:
            command = [*self.prefix(name), *command]
        err = (self.run_dir / "out" / f"{name}.err").open("ab")
        self.procs[name] = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        self._save()

    def _save(self) -> None:
        record = {
            "deployment": str(self.path),
            "zookeeper": self.zookeeper,
            "zookeeper_pid": self.server.process.pid
            if self.server is not None and self.server.process is not None
            else None,
            "pids": {n: p.pid for n, p in self.procs.items() if p.poll() is None},
        }
        (self.run_dir / "run.json").write_text(json.dumps(record, indent=2))

    # --- watching -----------------------------------------------------------------------------

    def statuses(self) -> dict[str, dict[str, Any]]:
        return read_statuses(self.run_dir / "status")

    def wait_for(self, ready: Callable[[dict[str, dict[str, Any]]], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            if ready(self.statuses()):
                return
            time.sleep(0.05)
        raise LaunchError(f"timed out after {timeout} s waiting for {what}; see {self.run_dir / 'out'}")

    def check_alive(self) -> None:
        """A process that exited by itself (not killed here) is an error: say which and why."""
        for name, proc in self.procs.items():
            code = proc.poll()
            if code is not None and code != 0 and code > 0:
                tail = (self.run_dir / "out" / f"{name}.err").read_text(errors="replace")[-2000:]
                raise LaunchError(f"{name} exited with status {code}:\n{tail}")

    # --- faults -------------------------------------------------------------------------------

    def signal(self, name: str, sig: signal.Signals) -> None:
        self.procs[name].send_signal(sig)
        if sig == signal.SIGKILL:
            self.procs[name].wait()
            self._save()

    # --- stopping -----------------------------------------------------------------------------

    def stop(self, timeout: float = 10) -> None:
        """SIGTERM every process (each writes its final record and leaves its ZooKeeper session),
        SIGKILL those that do not exit in time, then stop ZooKeeper if it was started here."""
        stop_processes(self.procs.values(), timeout)
        if self.server is not None:
            self.server.stop()
        self._save()

    def runlog(self) -> RunLog:
        return merged_runlog(self.run_dir)


def merged_runlog(run_dir: Path) -> RunLog:
    """The run logs of every process of a run folder, merged into one.

    The files of a process's incarnations (``<p>.runlog``, ``<p>@1.runlog``, ...: it was
    restarted) merge as one process (:func:`merge_runlogs` keeps a record they repeat once). A
    subscriber whose last incarnation's log has no ``final`` record (a node writes one when it
    stops, never when it is killed) is judged as having left at its last record: what it did after
    its last flush is not known, and it must not be held to deliveries it could not make after it
    died. A killed incarnation's file may end in a record cut short: it is left out."""
    files = sorted((run_dir / "logs").glob("*.runlog"))
    if not files:
        raise LaunchError(f"{run_dir / 'logs'}: no run logs")
    last: dict[str, int] = {}
    for f in files:
        stem, n = incarnation_of(f)
        last[stem] = max(last.get(stem, 0), n)
    read: list[tuple[str, bool, RunLog]] = []  # (file, whether its process's last incarnation, log)
    for f in sorted(files, key=incarnation_of):
        stem, n = incarnation_of(f)
        text = f.read_text()
        if not text.strip():
            continue  # killed before it wrote its first records: it did nothing to judge
        lines = text.splitlines()
        if not text.endswith("\n"):
            lines.pop()  # the record a kill cut short (a stopped process ends its last line)
        log = RunLog.read(lines, str(f))
        read.append((str(f), n == last[stem], log))
    for _, latest, log in read:
        for process in log.processes:
            if latest and process not in log.final and process not in log.left:
                times = [
                    t
                    for _, _, other in read
                    if process in other.processes
                    for t in [d.time for d in other.delivered] + [t for t, _ in other.joined.values()]
                ]
                log.left[process] = max(times, default=0)
    return merge_runlogs((name, log) for name, _, log in read)


def down(run_dir: Path, timeout: float = 10) -> list[str]:
    """Stop the processes of a run started by ``faidecs overlay up`` in another shell."""
    try:
        record = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError) as exc:
        raise LaunchError(f"{run_dir / 'run.json'}: cannot read it ({exc})") from None
    stopped = []
    pids = dict(record.get("pids", {}))
    if record.get("zookeeper_pid"):
        pids["zookeeper"] = record["zookeeper_pid"]
    for name, pid in pids.items():
        try:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGTERM)
            stopped.append(name)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + timeout
    for pid in pids.values():
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return stopped


__all__ = ["LaunchError", "LocalDeployment", "down", "merged_runlog"]
