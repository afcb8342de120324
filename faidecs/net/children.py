"""Child OS processes of a launcher: stopping them, paused or not."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterable


def stop_processes(procs: Iterable[subprocess.Popen[bytes]], timeout: float = 10) -> None:
    """SIGTERM each live process (after SIGCONT: a paused process cannot act on SIGTERM), then
    SIGKILL those still running ``timeout`` seconds later."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGCONT)
                proc.terminate()
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
