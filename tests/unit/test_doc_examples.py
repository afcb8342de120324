"""The ```python and ```sh examples of the docs run, or say in the page why not (tests/doc_examples.py
reads them; the slow ones run in tests/slow/test_doc_examples_slow.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doc_examples import (
    Block,
    all_blocks,
    blocks,
    commented_commands,
    expected_status,
    marker_problems,
    run_block,
    run_transcripts,
    transcript_marker_problems,
    transcript_pages,
    workdir,
)

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


# --- the checker itself, on a page of its own ------------------------------------------------------

PAGE = """# A page

```python
print(1 + 1)  # 2
```

<!-- example: fragment (tests/doc_examples.py has it) -->
```python
print("not in any test file")
```

<!-- example: skip "faidecs overlay up": needs ZooKeeper (docs/nowhere.md says why) -->
```sh
faidecs check examples/stock.fdc   # the normal form
faidecs overlay down run/
false                              # (exit 1)
```
"""


def test_the_checker_reads_blocks_markers_and_exit_statuses(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir(), (tmp_path / "again").mkdir()
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    first, fragment, shell = blocks(page)
    assert (first.line, first.markers, first.runs_here) == (3, (), True)
    assert fragment.markers == ("fragment (tests/doc_examples.py has it)",) and not fragment.runs_here
    assert marker_problems(fragment) == [
        "says tests/doc_examples.py has it, but tests/doc_examples.py does not hold the block's text"
    ]
    assert marker_problems(shell) == [
        "names docs/nowhere.md, which does not exist",
        'leaves out "faidecs overlay up", which starts no command of the block',
    ]
    assert [expected_status(c) for _, c in commented_commands(shell.text)] == [0, 0, 1]


def test_a_block_that_fails_or_prints_otherwise_fails_the_test(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir(), (tmp_path / "again").mkdir()
    page = tmp_path / "page.md"
    page.write_text(PAGE.replace("# 2", "# 3"), encoding="utf-8")
    with pytest.raises(AssertionError, match=r"printed '2\\n', the page shows '3'"):
        run_block(blocks(page)[0], workdir(tmp_path / "run"))
    with pytest.raises(AssertionError, match=r"`faidecs overlay down run/` exited 1, the page says 0"):
        run_block(blocks(page)[2], workdir(tmp_path / "again"))


@pytest.mark.parametrize("page", transcript_pages(), ids=lambda p: p.name)
def test_the_transcripts_print_what_the_page_shows(page: Path, tmp_path: Path) -> None:
    """The ``$ faidecs ...`` blocks of docs/dsl.md and docs/semantics.md, on the files the page shows."""
    assert transcript_marker_problems(page) == []
    assert run_transcripts(page, workdir(tmp_path)) == []


def test_dsl_and_semantics_have_transcripts() -> None:
    assert {p.name for p in transcript_pages()} >= {"dsl.md", "semantics.md"}
