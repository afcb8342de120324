"""A process's status file, written off the process loop.

`faidecs overlay status` and `up --watch` read one JSON file per process. Writing it from the loop
cost a process 20-65 ms per write on a machine whose disk was busy (measured with cProfile in
`os.replace` and `open`), during which no message was handled: a latency tail of the whole merger.
The loop now hands the latest snapshot to a writer thread; a snapshot not yet written when the
next one comes is skipped, since only the latest matters.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any


class StatusFile:
    def __init__(self, path: Path):
        self.path = path
        self._latest: dict[str, Any] | None = None
        self._closed = False
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=f"status {path.stem}", daemon=True)
        self._thread.start()

    def put(self, status: dict[str, Any]) -> None:
        """Hand over a snapshot; returns at once."""
        with self._ready:
            self._latest = status
            self._ready.notify()

    def close(self, final: dict[str, Any]) -> None:
        """Stop the writer and write ``final`` before returning (readers see the last state)."""
        with self._ready:
            self._closed = True
            self._latest = None
            self._ready.notify()
        self._thread.join()
        self._write(final)

    def _run(self) -> None:
        while True:
            with self._ready:
                while self._latest is None and not self._closed:
                    self._ready.wait()
                status, self._latest = self._latest, None
            if status is None:  # closed
                return
            self._write(status)

    def _write(self, status: dict[str, Any]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(status))
        tmp.replace(self.path)  # readers never see half a file


def read_statuses(folder: Path) -> dict[str, dict[str, Any]]:
    """Each process's status file in ``folder`` (process -> its JSON), skipping one being replaced."""
    out: dict[str, dict[str, Any]] = {}
    for f in folder.glob("*.json"):
        try:
            out[f.stem] = json.loads(f.read_text())
        except (OSError, ValueError):
            continue  # being replaced right now
    return out
