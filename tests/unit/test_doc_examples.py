"""The ```python and ```sh examples of the docs run, or say in the page why not (tests/doc_examples.py
reads them; the slow ones run in tests/slow/test_doc_examples_slow.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doc_examples import Block, all_blocks, marker_problems, run_block, workdir

BLOCKS = all_blocks()


def test_the_pages_have_examples_of_both_languages() -> None:
    assert {b.language for b in BLOCKS} == {"python", "sh"}
    assert {b.page.name for b in BLOCKS} >= {"README.md", "engine.md", "ordering.md", "overlay.md"}


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.markers], ids=lambda b: b.name)
def test_the_marker_holds(block: Block) -> None:
    assert marker_problems(block) == []


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.runs_here], ids=lambda b: b.name)
def test_the_example_runs(block: Block, tmp_path: Path) -> None:
    run_block(block, workdir(tmp_path))
