"""Time reading a large run log (``RunLog.read``) and judging it (``check``).

    PYTHONPATH=. python benchmarks/runlog_read.py [EVENTS]

Writes a log of EVENTS publications (default 200,000) of two types and one delivery per two
events, the way ``faidecs run --log`` writes one, then reads it back three times and prints the
best time, in seconds and in records per second, alone and with the checker's view of the run
(``RunView``: every event validated against its type).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from faidecs.properties.view import RunView
from faidecs.runs.runlog import RunLog, RunRecorder

TYPES = "type A(k: int, v: float, s: str)\ntype B(k: int, v: float, s: str)\n"


def build(n: int) -> RunLog:
    recorder = RunRecorder(TYPES, {"S": "subscription S: A and B"})
    for i in range(0, n, 2):
        recorder.publish({"id": f"a{i}", "type": "A", "attrs": {"k": i % 7, "v": i / 3, "s": "x" * 8}})
        recorder.publish({"id": f"b{i}", "type": "B", "attrs": {"k": i % 5, "v": i / 7, "s": "y" * 8}})
        recorder.deliver("S", 0, (f"a{i}", f"b{i}"))
    return recorder.finish({"S": [{"A": [], "B": []}]})


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.jsonl"
        with path.open("w", encoding="utf-8") as f:
            build(n).write(f)
        lines = sum(1 for _ in path.open(encoding="utf-8"))
        best = view = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            with path.open(encoding="utf-8") as f:
                log = RunLog.read(f, str(path))
            read = time.perf_counter() - start
            RunView(log)  # what `faidecs verify` does next: every event as the checker sees it
            best, view = min(best, read), min(view, time.perf_counter() - start)
        size = path.stat().st_size / 2**20
        print(f"read {lines:,} records ({size:.1f} MiB): {best:.3f} s, {lines / best:,.0f} records/s")
        print(f"read and view (the checker's input): {view:.3f} s")


if __name__ == "__main__":
    main()
