"""The examples of the docs that take too long for the unit tier, or need Spark: every block whose
marker says this file runs it (tests/doc_examples.py; the unit tier runs the rest,
tests/unit/test_doc_examples.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doc_examples import Block, all_blocks, run_block, workdir

SLOW = [b for b in all_blocks() if b.runs_slow]


def test_some_examples_are_left_to_this_tier() -> None:
    assert {b.page.name for b in SLOW} >= {"spark.md", "ordering.md"}


@pytest.mark.slow
@pytest.mark.parametrize("block", SLOW, ids=lambda b: b.name)
def test_the_slow_example_runs(block: Block, tmp_path: Path) -> None:
    run_block(block, workdir(tmp_path), slow=True, timeout=600)
