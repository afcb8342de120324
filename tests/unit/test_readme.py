"""The README's first program is the example file it names, and its Python snippet prints what its
comment shows (issue 23: the README showed two quotes where the file has three, and the snippet
published one event and printed nothing)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from faidecs.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.MULTILINE | re.DOTALL)


def test_the_first_program_is_the_example_file() -> None:
    section = README[README.index("## A first program") :]
    program = re.search(r"^```\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)
    assert program is not None
    assert program.group(1) == (ROOT / "examples" / "stock.fdc").read_text(encoding="utf-8")


def test_the_python_snippet_prints_the_deliveries_its_comment_shows(tmp_path: Path) -> None:
    (snippet,) = blocks("python")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", snippet], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    printed = [ast.literal_eval(line) for line in done.stdout.splitlines()]
    # The comment shows the first delivery.
    comment = snippet[snippet.index("# {") + 2 :]
    first = ast.literal_eval(comment[: comment.index("}") + 1])
    assert printed[0] == first
    assert f"{len(printed) - 1} more" in comment
    # Those of `faidecs run` on the same files.
    out = tmp_path / "deliveries.jsonl"
    examples = ROOT / "examples"
    args = ["--program", str(examples / "stock.fdc"), "--events", str(examples / "stock.jsonl"), "--out", str(out)]
    assert main(["run", *args]) == 0
    assert printed == [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
