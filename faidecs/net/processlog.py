"""A process's own run log, written as it runs (format ``faidecs.runs.runlog/1``).

Each process of a deployment writes one: the types, its own process record (a subscriber), its
publications (a publisher) or deliveries, timed by the host's wall clock in nanoseconds (made
strictly increasing within the file). ``faidecs verify`` merges the files of a run
(:func:`faidecs.runs.runlog.merge_runlogs`). Records are flushed as the process goes, so a process
killed with SIGKILL leaves a log of what it had done up to its last flush.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from faidecs.runs.runlog import FORMAT

# msgspec writes a record in a fraction of json.dumps's time, the same JSON (compact, UTF-8): a
# publisher and a subscriber write one per event.
_ENCODE = msgspec.json.Encoder().encode


class ProcessLog:
    def __init__(self, path: Path, types_source: str, process: str, subscription: str | None):
        self.file = path.open("wb")
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

    def deliver(self, conjunction: int, relation: tuple[str, ...]) -> None:
        self._write(
            {
                "record": "deliver",
                "time": self.now(),
                "process": self.process,
                "conjunction": conjunction,
                "relation": list(relation),
            }
        )

    def final(self, queues: list[dict[str, list[str]]]) -> None:
        self._write({"record": "final", "process": self.process, "queues": queues})

    def _write(self, record: Mapping[str, Any]) -> None:
        self.file.write(_ENCODE(record) + b"\n")

    def flush(self) -> None:
        self.file.flush()

    def close(self) -> None:
        self.file.close()


__all__ = ["ProcessLog"]
