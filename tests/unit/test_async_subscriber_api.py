"""``AsyncSubscriber`` without a deployment running: what it says at start when it cannot be the
subscriber it was asked to be, that ``faidecs.overlay`` imports it without the overlay extra, and
that docs/deploy.md shows the example file as it is. Its deliveries on real processes are
tested in tests/slow/test_async_subscriber.py."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_overlay_imports_neither_zmq_nor_kazoo() -> None:
    code = "import sys, faidecs.overlay; print(sorted(m for m in sys.modules if m.split('.')[0] in ('zmq', 'kazoo')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_docs_show_the_example_as_it_is() -> None:
    docs = (ROOT / "docs" / "deploy.md").read_text()
    section = docs[docs.index("## Subscribers in an asyncio application") :]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    example = (ROOT / "examples" / "async_subscriber.py").read_text()
    assert block.group(1).strip() in example


def _deployment(folder: Path) -> Path:
    (folder / "program.fdc").write_text("type A(x: int)\nsubscription S: A\n")
    (folder / "deployment.toml").write_text(
        'name = "d"\nprogram = "program.fdc"\nreplicas = 1\ninsecure = true\n\n'
        '[servers]\nm1 = "tcp://127.0.0.1:1"\n\n'
        '[subscribers.s1]\naddress = "tcp://127.0.0.1:2"\nsubscription = "S"\n'
    )
    return folder / "deployment.toml"


def _start(path: Path, process: str, run_dir: Path, zookeeper: str | None) -> None:
    from faidecs.overlay import AsyncSubscriber

    async def main() -> None:
        async with AsyncSubscriber(path, process, run_dir=run_dir, zookeeper=zookeeper):
            raise AssertionError("it started")

    asyncio.run(main())


def test_a_process_that_is_not_a_subscriber_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("zmq", reason="needs the overlay extra: pip install 'faidecs[overlay]'")
    from faidecs import FaidecsError

    with pytest.raises(FaidecsError, match=r"m1 is not a subscriber of deployment d \(its subscribers: s1\)"):
        _start(_deployment(tmp_path), "m1", tmp_path / "run", "127.0.0.1:1")


def test_no_zookeeper_is_refused_with_where_to_give_one(tmp_path: Path) -> None:
    pytest.importorskip("zmq", reason="needs the overlay extra: pip install 'faidecs[overlay]'")
    from faidecs import FaidecsError

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("{}")
    with pytest.raises(FaidecsError, match=r"no ZooKeeper for s1: pass zookeeper=.*run\.json has none"):
        _start(_deployment(tmp_path), "s1", tmp_path / "run", None)
    assert [t for t in threading.enumerate() if t.name.startswith("faidecs-subscriber")] == []
