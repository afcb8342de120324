"""The Python sessions (``>>>``) of the docs run as shown.

Why: ``docs/dsl.md`` says ``python -m doctest docs/dsl.md`` checks its session, but nothing ran it,
and it still showed an older snapshot format. pytest collects the doctests of the library's
docstrings only (``--doctest-modules``), not of Markdown files.
"""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = sorted(p for p in (ROOT / "docs").glob("*.md") if ">>> " in p.read_text(encoding="utf-8"))


def test_some_docs_have_sessions() -> None:
    assert {p.name for p in SESSIONS} >= {"dsl.md", "semantics.md"}


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.name)
def test_doc_session(path: Path) -> None:
    result = doctest.testfile(str(path), module_relative=False, verbose=False, report=True)
    assert result.failed == 0, f"{path.name}: {result.failed} of {result.attempted} examples failed (output above)"
