"""The ```python and ```sh examples of the docs pages, the README and examples/*/README.md, read
and run as scripts (issue 23: "docs/dsl.md and every other page's examples run in CI").

A block runs unless an HTML comment right before it says why not, and a command of a shell block
whose comment says ``(exit N)`` must exit N::

    <!-- example: fragment (engine, source and sink are those of the block above) -->
    <!-- example: needs a NATS server (tests/slow/test_connect_nats.py runs it) -->
    <!-- example: slow, Spark (tests/slow/test_doc_examples_slow.py runs it) -->
    <!-- example: skip "faidecs overlay up", "faidecs overlay down": need ZooKeeper and OS processes -->

Every path the comment names must exist. ``PATH runs it`` claims that PATH runs the block: PATH
holds the block's text or reads the page. ``PATH has it`` claims that PATH holds the block's text.
A ``synopsis`` marker runs the commands without their ``[optional]`` parts.
``skip "PREFIX", ...`` (shell blocks) leaves out the commands that start with a PREFIX and runs
the others; ``slow "PREFIX", ...`` leaves them to the slow tier; each PREFIX must start some
command. A block may have several marker lines. A block marked for
``tests/slow/test_doc_examples_slow.py`` runs there, in the slow tier. Shell commands run in order
in one temporary folder holding a copy of ``examples/`` and ``benchmarks/``, so a later command
reads what an earlier one wrote; ``faidecs`` is this checkout's. The ``$ command`` transcripts of
the language-less blocks run too (:func:`run_transcripts`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "README.md",
    *sorted((ROOT / "examples").glob("*/README.md")),
]
SLOW_TEST = "tests/slow/test_doc_examples_slow.py"

_BLOCK = re.compile(r"^```(python|sh)\n(.*?)^```", flags=re.MULTILINE | re.DOTALL)
_MARKER = re.compile(r"<!-- example: (.*) -->")
_PATH = re.compile(r"(?<![\w/.-])((?:docs|tests|examples|benchmarks|scripts|faidecs|\.ci)/[\w./-]*[\w])")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence
    language: str  # python or sh
    text: str
    markers: tuple[str, ...]  # the texts of the <!-- example: ... --> lines right before it

    @property
    def name(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"

    @property
    def is_session(self) -> bool:
        """A ``>>>`` session: tests/unit/test_doc_sessions.py runs it with doctest."""
        return self.text.lstrip().startswith(">>>")

    def prefixes(self, kind: str) -> list[str]:
        """The command prefixes of the ``skip "..."`` (or ``slow "..."``) markers."""
        return [
            prefix
            for marker in self.markers
            if marker.startswith(f'{kind} "')
            for prefix in re.findall(r'"([^"]+)"', marker.split(":", 1)[0])
        ]

    @property
    def runs_here(self) -> bool:
        """Runs in the unit tier: no marker, or markers that only leave some commands out."""
        return all(m.startswith(('skip "', 'slow "')) for m in self.markers)

    @property
    def runs_slow(self) -> bool:
        """Runs in tests/slow/test_doc_examples_slow.py, whole or the commands the unit tier leaves out."""
        return any(f"{SLOW_TEST} runs it" in m for m in self.markers)


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _BLOCK.finditer(text):
        before = text[: match.start()]
        markers: list[str] = []
        for line in reversed(before.rstrip("\n").split("\n")):  # the lines right before the fence
            marker = _MARKER.fullmatch(line)
            if marker is None:
                break
            markers.insert(0, marker.group(1))
        found.append(
            Block(
                page,
                before.count("\n") + 1,
                match.group(1),
                match.group(2),
                tuple(markers),
            )
        )
    return [b for b in found if not b.is_session]


def all_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(page)]


def _squeezed(text: str) -> str:
    """Text without indentation or blank lines, for finding a block inside a file."""
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())


def marker_problems(block: Block) -> list[str]:
    """What is wrong with the block's marker: a path that does not exist, a claim that does not hold,
    a skip prefix that starts no command."""
    problems = []
    text = " ".join(block.markers)
    for path in _PATH.findall(text):
        if not (ROOT / path).exists():
            problems.append(f"names {path}, which does not exist")
    for path, verb in re.findall(r"([\w./-]+) (runs|has) it\b", text):
        if not (ROOT / path).is_file() or path == SLOW_TEST:
            continue  # the slow test runs every block whose marker says so
        held = _squeezed(block.text) in _squeezed((ROOT / path).read_text(encoding="utf-8"))
        reads = block.page.name in (ROOT / path).read_text(encoding="utf-8")
        if not (held or (verb == "runs" and reads)):
            what = "hold the block's text" if verb == "has" else "hold the block's text or read " + block.page.name
            problems.append(f"says {path} {verb} it, but {path} does not {what}")
    commands = shell_commands(block.text)
    for prefix in block.prefixes("skip") + block.prefixes("slow"):
        if not any(c.startswith(prefix) for c in commands):
            problems.append(f'leaves out "{prefix}", which starts no command of the block')
    if block.prefixes("slow") and not block.runs_slow:
        problems.append(f"leaves commands to the slow tier, but does not say {SLOW_TEST} runs it")
    return problems


def shell_commands(text: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, ``#`` comments and comment-only
    lines dropped."""
    return [command for command, _ in commented_commands(text)]


def commented_commands(text: str) -> list[tuple[str, str]]:
    """The commands of a shell block, each with the comments on its lines and on the comment-only
    lines under it."""
    found: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        code, _, comment = raw.partition(" #") if not raw.lstrip().startswith("#") else ("", "", raw)
        code = code.rstrip()
        if not code.strip() and found and not pending:
            found[-1] = (found[-1][0], f"{found[-1][1]} {comment.lstrip('# ')}".strip())
            continue
        if code.endswith("\\"):
            pending += code[:-1].strip() + " "
            continue
        command = (pending + code.strip()).strip()
        pending = ""
        if command:
            found.append((command, comment.lstrip("# ").strip()))
    return found


def without_options(command: str) -> str:
    """A synopsis without its ``[optional]`` parts (which may nest: ``[--master local[2]]``)."""
    while True:
        shorter = re.sub(r"\s*\[[^\[\]]*\]", "", command)
        if shorter == command:
            return command
        command = shorter


def expected_status(comment: str) -> int:
    """A command whose comment says ``(exit N)`` or ``(exit N: ...)`` exits N; any other, 0."""
    shown = re.search(r"\(exit (\d+)\b", comment)
    return int(shown.group(1)) if shown else 0


def workdir(tmp: Path) -> Path:
    """A folder with a copy of the files the examples read, and ``faidecs`` on the PATH."""
    for name in ("examples", "benchmarks"):
        shutil.copytree(ROOT / name, tmp / name, ignore=shutil.ignore_patterns("__pycache__", "keys", "run"))
    bin_dir = tmp / ".bin"
    bin_dir.mkdir()
    faidecs = bin_dir / "faidecs"
    faidecs.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m faidecs "$@"\n', encoding="utf-8")
    faidecs.chmod(0o755)
    return tmp


def environment(tmp: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{tmp / '.bin'}{os.pathsep}{os.environ['PATH']}"}


def run_block(block: Block, tmp: Path, slow: bool = False, timeout: float = 300) -> None:
    """Run the block in ``tmp`` (made by :func:`workdir`); fail with the output of what failed.
    ``slow``: with the commands of ``slow "..."`` markers (the slow tier)."""
    env = environment(tmp)
    if block.language == "python":
        done = subprocess.run(
            [sys.executable, "-c", block.text], cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, f"{block.name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        check_printed(block, done.stdout)
        return
    left_out = block.prefixes("skip") + ([] if slow else block.prefixes("slow"))
    for command, comment in commented_commands(block.text):
        if any(m.startswith("synopsis") for m in block.markers):
            command = without_options(command)
        if any(command.startswith(prefix) for prefix in left_out):
            continue
        done = subprocess.run(["sh", "-c", command], cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == expected_status(comment), (
            f"{block.name}: `{command}` exited {done.returncode}, the page says {expected_status(comment)}:\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )


def check_printed(block: Block, stdout: str) -> None:
    """A ``print(...)  # OUTPUT`` line shows what the block prints: OUTPUT, or ``FIRST, N more``
    for N + 1 lines starting with FIRST."""
    shown = [
        line.split("#", 1)[1].strip()
        for line in block.text.splitlines()
        if line.lstrip().startswith("print(") and "#" in line
    ]
    if not shown:
        return
    assert len(shown) == 1, f"{block.name}: more than one print shows its output"
    lines = stdout.splitlines()
    more = re.fullmatch(r"(.*), (\d+) more", shown[0])
    if more:
        assert lines[0] == more.group(1), f"{block.name} printed {lines[0]!r}, the page shows {more.group(1)!r}"
        assert len(lines) == int(more.group(2)) + 1, f"{block.name} printed {len(lines)} lines:\n{stdout}"
    else:
        assert lines == [shown[0]], f"{block.name} printed {stdout!r}, the page shows {shown[0]!r}"


# --- transcripts: "$ command" lines and the output under them, in blocks without a language -------


@dataclass(frozen=True)
class Fence:
    """A fenced block of a page: its language (empty for none), text, line and the line before it."""

    line: int
    language: str
    text: str
    before: str


def fences(page: Path) -> list[Fence]:
    found: list[Fence] = []
    lines = page.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        opening = re.fullmatch(r"(`{3,})([^`]*)", lines[i])
        if opening:
            fence = opening.group(1)
            end = next(j for j in range(i + 1, len(lines)) if re.fullmatch(rf"{fence}`*\s*", lines[j]))
            before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            found.append(Fence(i + 1, opening.group(2).strip(), "\n".join(lines[i + 1 : end]) + "\n", before))
            i = end
        i += 1
    return found


_FILE_INTRO = re.compile(r"`([\w.-]+\.(?:fdc|jsonl|json|toml))`(?:,[^`]*)?:$")


def transcript_pages() -> list[Path]:
    return [p for p in PAGES if any(f.text.startswith("$ ") for f in fences(p) if not f.language)]


def transcript_marker_problems(page: Path) -> list[str]:
    """The paths named by the markers of the page's transcripts that do not exist."""
    return [
        f"{page.relative_to(ROOT)}:{fence.line} names {path}, which does not exist"
        for fence in fences(page)
        if not fence.language and (marker := _MARKER.fullmatch(fence.before))
        for path in _PATH.findall(marker.group(1))
        if not (ROOT / path).exists()
    ]


def run_transcripts(page: Path, tmp: Path) -> list[str]:
    """Run the ``$`` commands of the page's language-less blocks in order in ``tmp`` (made by
    :func:`workdir`), after writing each block introduced by a line ending in ```NAME`:`` to NAME;
    return how each command's output (stdout and stderr as they interleave) differs from the page's.
    A command whose page shows ``(exit N)`` in its comment must exit N; a block after an
    ``<!-- example: ... -->`` line is not run."""
    env = {**environment(tmp), "PYTHONUNBUFFERED": "1"}
    problems = []
    for fence in fences(page):
        if fence.language:
            continue
        if not fence.text.startswith("$ "):
            named = _FILE_INTRO.search(fence.before)
            if named:
                (tmp / named.group(1)).write_text(fence.text, encoding="utf-8")
            continue
        if _MARKER.fullmatch(fence.before):
            continue
        parts = re.split(r"^\$ (.*)\n", fence.text, flags=re.MULTILINE)
        for command, shown in zip(parts[1::2], parts[2::2], strict=True):
            code, _, comment = command.partition(" #")
            done = subprocess.run(
                ["sh", "-c", code], cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            where = f"{page.relative_to(ROOT)}:{fence.line}: `{code.strip()}`"
            if done.stdout != shown:
                problems.append(f"{where} printed\n{done.stdout}the page shows\n{shown}")
            if done.returncode != expected_status(comment):
                problems.append(f"{where} exited {done.returncode}, the page says {expected_status(comment)}")
    return problems
