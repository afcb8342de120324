"""A command that needs an optional extra says so in one line, with no traceback (issue 23:
`faidecs overlay keys` without pyzmq died with a raw ModuleNotFoundError).

Each command runs in a child Python whose ``sys.modules`` holds None for the extra's packages, so
importing them fails as on a base install. Every command checks its extra before it reads a file
or starts a process, so a deployment file that does not exist is never reached (and a regression
cannot start processes here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HIDE = "import sys\nfor name in {names!r}: sys.modules[name] = None\n"
RUN = "from faidecs.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"


def run_without(packages: tuple[str, ...], args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    code = HIDE.format(names=packages) + RUN
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


OVERLAY = ("zmq", "kazoo")
MISSING = "never.toml"  # reached only if the extra's check failed


@pytest.mark.parametrize(
    ("packages", "args", "line"),
    [
        (
            OVERLAY,
            ["overlay", "keys", "keys", "--deployment", MISSING],
            "faidecs: overlay keys needs the overlay extra (zmq is not installed): pip install 'faidecs[overlay]'",
        ),
        (
            OVERLAY,
            ["overlay", "keys", "keys", "--process", "p1"],
            "faidecs: overlay keys needs the overlay extra (zmq is not installed): pip install 'faidecs[overlay]'",
        ),
        (
            OVERLAY,
            ["overlay", "up", MISSING, "--run-dir", "run"],
            "faidecs: overlay up needs the overlay extra (zmq is not installed): pip install 'faidecs[overlay]'",
        ),
        (
            OVERLAY,
            ["overlay", "node", MISSING, "m1", "--run-dir", "run"],
            "faidecs: overlay node needs the overlay extra (zmq is not installed): pip install 'faidecs[overlay]'",
        ),
        (
            ("pyspark",),
            ["spark", "run", "--program", "p.fdc", "--events", "e.jsonl", "--out", "out"],
            "faidecs: spark run needs the spark extra (pyspark is not installed): "
            "pip install 'faidecs[spark]' (and Java 17)",
        ),
        (
            ("pyspark",),
            ["spark", "stream", "--program", "p.fdc", "--events", "in", "--out", "out"]
            + ["--checkpoint", "ck", "--order-column", "seq"],
            "faidecs: spark stream needs the spark extra (pyspark is not installed): "
            "pip install 'faidecs[spark]' (and Java 17)",
        ),
    ],
    ids=lambda value: " ".join(value[:2]) if isinstance(value, list) else None,
)
def test_a_missing_extra_is_one_line(packages: tuple[str, ...], args: list[str], line: str, tmp_path: Path) -> None:
    done = run_without(packages, args, tmp_path)
    assert (done.returncode, done.stderr, done.stdout) == (2, line + "\n", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing was made or started


def test_commands_that_need_no_extra_run_without_them(tmp_path: Path) -> None:
    """The simulator and the topology are pure Python: they run on a base install."""
    args = ["overlay", "topology", "--program", str(ROOT / "examples" / "overlay.fdc")]
    done = run_without(OVERLAY + ("pyspark",), args, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "subscribers Desk1, Desk2" in done.stdout


def test_another_missing_module_is_not_blamed_on_an_extra() -> None:
    """A module no extra installs is a bug, not a missing extra: it is raised as it is."""
    from faidecs.cli.extras import missing_extra_message

    assert missing_extra_message(ModuleNotFoundError(name="numpyy"), "run") is None
