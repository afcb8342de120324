"""A process's status file is written off its loop, and the last state is on disk after close."""

from __future__ import annotations

import json
import time
from pathlib import Path

from faidecs.net.statusfile import StatusFile


def test_latest_snapshot_reaches_the_file_and_close_writes_the_final_one(tmp_path: Path) -> None:
    path = tmp_path / "m1.json"
    status = StatusFile(path)
    for k in range(100):
        status.put({"k": k})
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (not path.exists() or json.loads(path.read_text())["k"] != 99):
        time.sleep(0.01)
    assert json.loads(path.read_text()) == {"k": 99}
    status.close({"k": "final"})
    assert json.loads(path.read_text()) == {"k": "final"}
    assert not status._thread.is_alive()
    assert not path.with_suffix(".tmp").exists()
