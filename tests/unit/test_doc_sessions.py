"""The Python sessions (``>>>``) of the docs run as shown.

Why: ``docs/dsl.md`` says ``python -m doctest docs/dsl.md`` checks its session, but nothing ran it,
and it still showed an older snapshot format. pytest collects the doctests of the library's
docstrings only (``--doctest-modules``), not of Markdown files.
"""

from __future__ import annotations

import argparse
import doctest
import re
from pathlib import Path

import pytest

from faidecs.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
#: Every docs page and the README that has a session: a page that gains one is checked too.
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
SESSIONS = [p for p in PAGES if ">>> " in p.read_text(encoding="utf-8")]


def test_some_docs_have_sessions() -> None:
    assert {p.name for p in SESSIONS} >= {"dsl.md", "semantics.md"}


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.name)
def test_doc_session(path: Path) -> None:
    result = doctest.testfile(str(path), module_relative=False, verbose=False, report=True)
    assert result.failed == 0, f"{path.name}: {result.failed} of {result.attempted} examples failed (output above)"


def subcommand(name: str) -> argparse.ArgumentParser:
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    parser: argparse.ArgumentParser = commands.choices[name]
    return parser


def test_the_run_option_table_lists_every_option() -> None:
    """docs/dsl.md's `faidecs run` table lacked --matcher, --max-queue, --max-age and --overflow
    (issue 23). The options are read from argparse, so an option added later needs its row."""
    text = (ROOT / "docs" / "dsl.md").read_text(encoding="utf-8")
    section = text[text.index("### `faidecs run`") :]
    section = section[: section.index("\n### ", 1)]
    documented = re.findall(r"^\| `(--[a-z-]+)", section, flags=re.MULTILINE)
    options = [
        option
        for action in subcommand("run")._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    ]
    assert sorted(documented) == sorted(options)
    assert len(documented) == len(set(documented))
