"""A standalone ZooKeeper server on 127.0.0.1, for tests, CI and single-machine deployments.

The overlay's processes take replica leadership and sessions from ZooKeeper
(:mod:`faidecs.overlay.runtime.zkcoordination`); this module runs one for them. It uses the Debian
package's jars (``apt-get install zookeeper``, which ``scripts/services`` does) and starts
``org.apache.zookeeper.server.ZooKeeperServerMain`` directly rather than through ``zkServer.sh``:
the script reads ``/etc/zookeeper`` and writes to ``/var/log/zookeeper``, where this server keeps
everything (its ``zoo.cfg``, its log and its data) in one folder of its own.

The tick is short (100 ms by default) because ZooKeeper only grants session timeouts between 2 and
20 ticks: the overlay wants sessions of 0.5 to 2 s, so that a crashed or paused replica loses its
leadership within about that long.

>>> with ZooKeeperServer() as zk:  # doctest: +SKIP
...     zk.address
'127.0.0.1:40123'
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from faidecs.errors import FaidecsError
from faidecs.net.children import stop_processes

#: Where the Debian package ``libzookeeper-java`` (a dependency of ``zookeeper``) puts its jars.
#: ``zookeeper.jar`` names the jars it needs (netty, jute, slf4j, ...) in its manifest's
#: Class-Path; the two logging jars bind slf4j to log4j so that the server writes a log file.
DEBIAN_JARS = Path("/usr/share/java")
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
_LOGGING_JARS = ("slf4j-log4j12.jar", "log4j-1.2.jar")
_INSTALL_HINT = "run scripts/services, or install the Debian package yourself: apt-get install zookeeper"


class ZooKeeperMissing(FaidecsError):
    """ZooKeeper's jars or Java are not installed."""


class ZooKeeperStartError(FaidecsError):
    """The server did not start, or did not answer in time (the message ends with its log)."""


@dataclass(frozen=True)
class ZooKeeperInstall:
    """How to run the installed ZooKeeper: the ``java`` executable and the class path."""

    java: str
    classpath: tuple[str, ...]


def find_zookeeper(jar_dir: Path = DEBIAN_JARS) -> ZooKeeperInstall:
    """The installed ZooKeeper (Debian's ``zookeeper`` package) and a Java to run it with.

    Raises :class:`ZooKeeperMissing`, naming ``scripts/services``, when either is missing.
    """
    jar = jar_dir / "zookeeper.jar"
    if not jar.is_file():
        raise ZooKeeperMissing(f"ZooKeeper is not installed (no {jar}): {_INSTALL_HINT}")
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else None
    if java is None or not os.access(java, os.X_OK):
        java = shutil.which("java")
    if java is None:
        raise ZooKeeperMissing(f"ZooKeeper needs Java and there is no java on PATH: {_INSTALL_HINT}")
    logging = [jar_dir / name for name in _LOGGING_JARS]
    # Without the binding the server still runs; it only logs nothing (slf4j's no-op logger).
    extra = [str(p) for p in logging] if all(p.is_file() for p in logging) else []
    return ZooKeeperInstall(java, (str(jar), *extra))


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now (another process may take it before the server does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def _port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # As the JVM binds: connections of a previous server in TIME_WAIT do not hold the port.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


_LOG4J = """\
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File={log}
log4j.appender.FILE.Append=true
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{{ISO8601}} %-5p [%t:%C{{1}}@%L] %m%n
"""


class ZooKeeperServer:
    """One standalone ZooKeeper server listening on ``127.0.0.1:port``.

    ``port``: the client port (a free one when ``None``). ``data_dir``: the server's folder, made
    if missing: its data (``version-2/``), its ``zoo.cfg``, its log ``zookeeper.log`` and the
    JVM's output ``zookeeper.out`` (attribute ``dir``); when ``None``, a temporary folder removed by
    :meth:`stop` (kept, for its log, if the server fails to start). ``tick_ms``: ZooKeeper's tick; sessions
    may ask for timeouts from ``2 * tick_ms`` to ``20 * tick_ms`` unless ``min_session_ms`` /
    ``max_session_ms`` say otherwise. ``durable``: fsync the transaction log (off by default: the
    overlay keeps only ephemeral nodes and epoch counters there, and tests want speed). ``host``:
    the address it listens on (a bridge's, for processes in other network namespaces:
    benchmarks/hosts.py).

    The server is stopped at interpreter exit if :meth:`stop` was not called; a parent killed
    with SIGKILL leaves it running (it is in the parent's process group, so a terminal's Ctrl-C
    still reaches it).
    """

    def __init__(
        self,
        port: int | None = None,
        data_dir: str | Path | None = None,
        *,
        tick_ms: int = 100,
        min_session_ms: int | None = None,
        max_session_ms: int | None = None,
        durable: bool = False,
        install: ZooKeeperInstall | None = None,
        start_timeout: float = 30.0,
        host: str = "127.0.0.1",
    ) -> None:
        self.host = host
        if tick_ms < 1:
            raise ValueError("tick_ms must be positive")
        self._given_port = port
        self.port: int | None = port
        self._given_dir = Path(data_dir).resolve() if data_dir is not None else None
        self.dir: Path | None = self._given_dir
        self.tick_ms = tick_ms
        self.min_session_ms = min_session_ms
        self.max_session_ms = max_session_ms
        self.durable = durable
        self.install = install
        self.start_timeout = start_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self._out: IO[bytes] | None = None

    # --- life cycle ----------------------------------------------------------------------------

    def start(self) -> Self:
        """Start the server and wait until it serves requests (its ``conf`` answers).

        Raises :class:`ZooKeeperMissing` when ZooKeeper is not installed and
        :class:`ZooKeeperStartError` (with the tail of its log) when it exits or does not answer
        within ``start_timeout`` seconds.
        """
        if self.process is not None:
            raise RuntimeError(f"ZooKeeper is already running at {self.address}")
        install = self.install or find_zookeeper()
        self.install = install
        if self.dir is None:
            self.dir = Path(tempfile.mkdtemp(prefix="faidecs-zk-")).resolve()
        self.dir.mkdir(parents=True, exist_ok=True)
        # A free port can be taken by someone else before the JVM binds it: try another.
        attempts = 1 if self._given_port is not None else 3
        for attempt in range(attempts):
            self.port = self._given_port if self._given_port is not None else free_port(self.host)
            if self._given_port is not None and not _port_free(self._given_port, self.host):
                raise ZooKeeperStartError(f"cannot start ZooKeeper: port {self.port} on {self.host} is already in use")
            self._launch(install)
            try:
                self._wait_until_serving()
            except ZooKeeperStartError:
                taken = "Address already in use" in self.log_tail()
                self._terminate()
                if taken and attempt + 1 < attempts:
                    continue
                if self._given_dir is None:
                    # Keep the log of a failed start: the error points at it.
                    self._given_dir = self.dir
                raise
            atexit.register(self.stop)
            return self
        raise AssertionError("unreachable")

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s) and remove a temporary folder."""
        atexit.unregister(self.stop)
        self._terminate()
        if self._given_dir is None and self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # --- what clients need ---------------------------------------------------------------------

    @property
    def address(self) -> str:
        """``HOST:PORT`` (``127.0.0.1:PORT`` by default): the connection string for kazoo's ``hosts``."""
        if self.port is None:
            raise RuntimeError("the server has no port yet: start() it first")
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self, word: str, timeout: float = 2.0) -> str:
        """The server's answer to a four-letter word (``ruok``, ``srvr``, ``stat``, ``mntr``,
        ``cons``, ``conf``: the ones :meth:`start` allows); ``""`` when it does not answer."""
        if self.port is None:
            return ""
        try:
            with socket.create_connection((self.host, self.port), timeout=timeout) as s:
                s.sendall(word.encode())
                s.shutdown(socket.SHUT_WR)
                chunks = []
                while chunk := s.recv(4096):
                    chunks.append(chunk)
        except OSError:
            return ""
        return b"".join(chunks).decode(errors="replace")

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the server's log and of the JVM's own output."""
        if self.dir is None:
            return ""
        out = []
        for name in ("zookeeper.log", "zookeeper.out"):
            path = self.dir / name
            if path.is_file():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                if text:
                    out.append(f"--- {path} (last {len(text)} lines)\n" + "\n".join(text))
        return "\n".join(out)

    # --- internals -----------------------------------------------------------------------------

    def _config(self) -> str:
        lines = [
            f"tickTime={self.tick_ms}",
            f"dataDir={self.dir}",
            f"clientPort={self.port}",
            f"clientPortAddress={self.host}",
            # The admin server is an HTTP server on port 8080: it would collide between servers.
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr,stat,mntr,cons,conf",
            # Every member of a local deployment connects from one address (default limit: 60).
            "maxClientCnxns=0",
            # Log files are preallocated in 64 MB steps by default; the overlay writes little.
            "preAllocSize=4096",
            "autopurge.snapRetainCount=3",
            "autopurge.purgeInterval=1",
        ]
        if not self.durable:
            lines.append("forceSync=no")
        if self.min_session_ms is not None:
            lines.append(f"minSessionTimeout={self.min_session_ms}")
        if self.max_session_ms is not None:
            lines.append(f"maxSessionTimeout={self.max_session_ms}")
        return "\n".join(lines) + "\n"

    def _launch(self, install: ZooKeeperInstall) -> None:
        assert self.dir is not None
        cfg = self.dir / "zoo.cfg"
        cfg.write_text(self._config())
        log4j = self.dir / "log4j.properties"
        log4j.write_text(_LOG4J.format(log=self.dir / "zookeeper.log"))
        command = [
            install.java,
            "-Xmx256m",
            "-XX:+UseSerialGC",
            # The C1 compiler alone starts the JVM faster; ZooKeeper here serves few requests.
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            f"-Dlog4j.configuration={log4j.as_uri()}",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-cp",
            os.pathsep.join(install.classpath),
            MAIN_CLASS,
            str(cfg),
        ]
        self._out = open(self.dir / "zookeeper.out", "ab")  # noqa: SIM115 (open while the server runs)
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self._out, stderr=subprocess.STDOUT)

    def _wait_until_serving(self) -> None:
        assert self.process is not None and self.dir is not None
        deadline = time.monotonic() + self.start_timeout
        while True:
            code = self.process.poll()
            if code is not None:
                raise ZooKeeperStartError(
                    f"ZooKeeper exited with status {code} while starting on port {self.port}\n{self.log_tail()}"
                )
            # conf answers once the database is loaded, and its dataDir tells our server from
            # another one that holds the port (ours then fails to bind and exits).
            if f"dataDir={self.dir / 'version-2'}\n" in self.command("conf", timeout=0.5):
                return
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(
                    f"ZooKeeper did not answer on {self.address} within {self.start_timeout:g} s\n{self.log_tail()}"
                )
            time.sleep(0.05)

    def _terminate(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            stop_processes([process])
        if self._out is not None:
            self._out.close()
            self._out = None


__all__ = [
    "DEBIAN_JARS",
    "ZooKeeperInstall",
    "ZooKeeperMissing",
    "ZooKeeperServer",
    "ZooKeeperStartError",
    "find_zookeeper",
    "free_port",
]
