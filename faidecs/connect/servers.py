"""Real brokers on 127.0.0.1 for tests and examples: ``nats-server -js`` and ``mosquitto``.

Each runs on a free port in a folder of its own (its store, config and log), and can be
stopped and started again on the same port with the same folder: the JetStream store and
mosquitto's persistence file survive, so a restart is a real broker restart (streams,
consumers, sessions and queued messages come back). Both are Debian packages that
``scripts/services`` installs.

>>> with NatsServer() as nats:  # doctest: +SKIP
...     nats.url("quotes")
'nats://127.0.0.1:40123/quotes'
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from faidecs.errors import FaidecsError
from faidecs.net.children import stop_processes
from faidecs.net.zkserver import free_port

_INSTALL_HINT = "run scripts/services, or install the Debian packages yourself: apt-get install nats-server mosquitto"


class BrokerStartError(FaidecsError):
    """A broker is not installed, exited while starting, or did not listen in time."""


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class _Server:
    """One broker process; subclasses say how to run it."""

    program = ""
    name = ""

    def __init__(self, folder: str | Path | None = None, *, start_timeout: float = 15.0):
        self._given = Path(folder).resolve() if folder is not None else None
        self.dir: Path | None = self._given
        self.port: int | None = None
        self.start_timeout = start_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self._out: IO[bytes] | None = None

    def _command(self, executable: str) -> list[str]:
        raise NotImplementedError

    def start(self) -> Self:
        """Start (on the port of the last start, if any) and wait until it accepts connections."""
        if self.process is not None:
            raise RuntimeError(f"{self.name} is already running on port {self.port}")
        executable = shutil.which(self.program) or shutil.which(self.program, path="/usr/sbin:/usr/local/sbin")
        if executable is None:
            raise BrokerStartError(f"{self.program} is not installed: {_INSTALL_HINT}")
        if self.dir is None:
            self.dir = Path(tempfile.mkdtemp(prefix=f"faidecs-{self.program}-")).resolve()
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.port is None:
            self.port = free_port()
        self._out = open(self.dir / "server.out", "ab")  # noqa: SIM115 (open while the server runs)
        self.process = subprocess.Popen(
            self._command(executable), stdin=subprocess.DEVNULL, stdout=self._out, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + self.start_timeout
        while not _listening(self.port):
            code = self.process.poll()
            if code is not None or time.monotonic() > deadline:
                self._terminate()
                what = (
                    f"exited with status {code}"
                    if code is not None
                    else f"did not listen within {self.start_timeout:g} s"
                )
                raise BrokerStartError(f"{self.name} {what} on port {self.port}\n{self.log_tail()}")
            time.sleep(0.05)
        atexit.register(self.stop)
        return self

    def restart(self) -> None:
        """Stop (cleanly: the store is saved) and start again on the same port and folder."""
        self._terminate()
        self.start()

    def kill(self) -> None:
        """SIGKILL: a crash, with only what the broker had written to disk kept."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
        self._terminate()

    def stop(self) -> None:
        """Stop, and remove a temporary folder."""
        atexit.unregister(self.stop)
        self._terminate()
        if self._given is None and self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def _terminate(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            stop_processes([process])
        if self._out is not None:
            self._out.close()
            self._out = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        out = []
        for name in ("server.log", "server.out"):
            path = self.dir / name if self.dir is not None else None
            if path is not None and path.is_file():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                if text:
                    out.append(f"--- {path}\n" + "\n".join(text))
        return "\n".join(out)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


class NatsServer(_Server):
    """``nats-server -js`` with its JetStream store in ``DIR/jetstream``."""

    program = "nats-server"
    name = "nats-server"

    def _command(self, executable: str) -> list[str]:
        assert self.dir is not None and self.port is not None
        return [
            executable,
            "-js",
            "-a", "127.0.0.1",
            "-p", str(self.port),
            "-sd", str(self.dir / "jetstream"),
            "-l", str(self.dir / "server.log"),
            "--server_name", f"faidecs-test-{self.port}",
        ]  # fmt: skip

    def url(self, subject: str, query: str = "") -> str:
        """``nats://127.0.0.1:PORT/subject[?query]``."""
        return f"nats://127.0.0.1:{self.port}/{subject}" + (f"?{query}" if query else "")


class MosquittoServer(_Server):
    """``mosquitto`` with persistence (sessions, subscriptions, queued messages) in ``DIR/``."""

    program = "mosquitto"
    name = "mosquitto"

    def _command(self, executable: str) -> list[str]:
        assert self.dir is not None and self.port is not None
        config = self.dir / "mosquitto.conf"
        config.write_text(
            "\n".join(
                [
                    f"listener {self.port} 127.0.0.1",
                    # Started as root, mosquitto would switch to the user mosquitto, who cannot
                    # write this folder: stay who we are.
                    f"user {pwd.getpwuid(os.getuid()).pw_name}",
                    "allow_anonymous true",
                    "persistence true",
                    f"persistence_location {self.dir}/",
                    "persistence_file mosquitto.db",
                    # Saved on a clean stop anyway; also every second, for a crash.
                    "autosave_interval 1",
                    # Every message of a persistent session is kept while its client is away.
                    "max_queued_messages 0",
                    f"log_dest file {self.dir}/server.log",
                    "log_type error",
                    "log_type warning",
                    "log_type notice",
                    "log_type information",
                ]
            )
            + "\n"
        )
        return [executable, "-c", str(config)]

    def url(self, topic: str, query: str = "") -> str:
        """``mqtt://127.0.0.1:PORT/topic[?query]``."""
        return f"mqtt://127.0.0.1:{self.port}/{topic}" + (f"?{query}" if query else "")


__all__ = ["BrokerStartError", "MosquittoServer", "NatsServer"]
