"""A process's own run log, written as it runs (format ``faidecs.runs.runlog/1``).

Each process of a deployment writes one: the types, its own process record (a subscriber), its
publications (a publisher) or deliveries, timed by the host's wall clock in nanoseconds (made
strictly increasing within the file). ``faidecs verify`` merges the files of a run
(:func:`faidecs.runs.runlog.merge_runlogs`). Records are flushed as the process goes, so a process
killed with SIGKILL leaves a log of what it had done up to its last flush.

A process that restarts keeps what its predecessors wrote: each *incarnation* writes its own file,
``<process>.runlog`` the first, ``<process>@1.runlog``, ``<process>@2.runlog``... the next ones
('@' is not in a process name's alphabet, so the name is never ambiguous). Each file is a whole run
log with its own header, readable alone; the merge treats the incarnations of a process as one
process (:func:`faidecs.overlay.runtime.launcher.merged_runlog`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from faidecs.runs.runlog import FORMAT

# msgspec writes a record in a fraction of json.dumps's time, the same JSON (compact, UTF-8): a
# publisher and a subscriber write one per event.
_ENCODE = msgspec.json.Encoder().encode


def incarnation_path(path: Path, incarnation: int) -> Path:
    """The file of a process's ``incarnation`` (0: its first) for its first file ``path``."""
    return path if incarnation == 0 else path.with_name(f"{path.stem}@{incarnation}{path.suffix}")


def incarnation_of(path: Path) -> tuple[str, int]:
    """The first file's stem and the incarnation of a log file: ``s1@2.runlog`` -> ``("s1", 2)``."""
    stem, at, n = path.stem.rpartition("@")
    return (stem, int(n)) if at and n.isdigit() else (path.stem, 0)


class _Delivered(msgspec.Struct):
    record: str
    process: str = ""
    id: str | None = None


_DECODE_DELIVERED = msgspec.json.Decoder(_Delivered).decode


def recorded_deliveries(path: Path, process: str, since: tuple[int, int], before: int) -> set[str]:
    """The ids of the deliveries ``process`` recorded in its incarnations' logs (first file
    ``path``) from incarnation ``since[0]`` at byte ``since[1]`` up to incarnation ``before``
    (excluded): what a restarted subscriber's predecessors delivered after its checkpoint. A last
    line a kill cut short was never recorded whole, and is not counted."""
    out: set[str] = set()
    first, offset = since
    for incarnation in range(first, before):
        try:
            with incarnation_path(path, incarnation).open("rb") as f:
                f.seek(offset if incarnation == first else 0)
                data = f.read()
        except FileNotFoundError:
            continue
        for line in data.split(b"\n")[:-1]:  # the last piece is empty or cut short
            if b'"deliver"' not in line:
                continue
            record = _DECODE_DELIVERED(line)
            if record.record == "deliver" and record.process == process and record.id is not None:
                out.add(record.id)
    return out


class ProcessLog:
    def __init__(self, path: Path, types_source: str, process: str, subscription: str | None):
        """Write the log of this incarnation of ``process``: ``path`` if there is none yet, else
        the next incarnation's file beside it (never truncating a predecessor's)."""
        self.incarnation = 0
        while True:
            self.path = incarnation_path(path, self.incarnation)
            try:
                self.file = self.path.open("xb")
                break
            except FileExistsError:
                self.incarnation += 1
        self.last = 0
        self.process = process
        self._write({"record": "header", "format": FORMAT, "types": types_source})
        self.subscription = subscription
        self.process_written = False
        self.pending_join: dict[str, Any] | None = None

    def now(self) -> int:
        self.last = max(self.last + 1, time.time_ns())
        return self.last

    def start(self, joined_from: str | None = None, joining: bool = False, at: int | None = None) -> None:
        """The process record of a subscriber; ``joining``: it starts while the run goes on."""
        if self.subscription is None or self.process_written:
            return
        record: dict[str, Any] = {"record": "process", "process": self.process, "subscription": self.subscription}
        if joining:
            record["joined"] = {"time": at if at is not None else self.now(), "peer": joined_from}
        self._write(record)
        self.process_written = True

    def publish(self, event: Mapping[str, Any]) -> None:
        self._write({"record": "publish", "time": self.now(), "event": dict(event)})

    def deliver(self, conjunction: int, relation: tuple[str, ...], delivery: str | None = None) -> None:
        """A delivery; ``delivery``: its id (the same relation delivered again after a restart has
        the same one, and the merge keeps it once)."""
        record: dict[str, Any] = {
            "record": "deliver",
            "time": self.now(),
            "process": self.process,
            "conjunction": conjunction,
            "relation": list(relation),
        }
        if delivery is not None:
            record["id"] = delivery
        self._write(record)

    def final(self, queues: list[dict[str, list[str]]]) -> None:
        self._write({"record": "final", "process": self.process, "queues": queues})

    def _write(self, record: Mapping[str, Any]) -> None:
        self.file.write(_ENCODE(record) + b"\n")

    def flush(self) -> None:
        self.file.flush()

    def sync(self) -> int:
        """Flush and ``fsync``: what it holds survives a power loss. Returns the file's size, where
        the next record will start."""
        self.file.flush()
        os.fsync(self.file.fileno())
        return self.file.tell()

    def close(self) -> None:
        self.file.close()


__all__ = ["ProcessLog", "incarnation_of", "incarnation_path", "recorded_deliveries"]
