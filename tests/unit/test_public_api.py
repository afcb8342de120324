"""The public API: what ``docs/architecture.md`` ("Public API") declares public exists, and the
code in the documentation imports only public names.

Why: users copy the imports of the docs. A doc that imports ``faidecs.matching.bounds`` makes an
internal module part of the API in all but name; this test keeps the docs on the names the public
modules list in ``__all__``.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import faidecs

ROOT = Path(__file__).resolve().parents[2]

# The public modules, as docs/architecture.md lists them: each defines __all__, and its __all__
# is its public API. faidecs.spark.stream is a module of its own because it imports PySpark's
# streaming API when imported (faidecs.spark does not import PySpark).
PUBLIC = (
    "faidecs",
    "faidecs.overlay",
    "faidecs.spark",
    "faidecs.spark.stream",
    "faidecs.lab",
    "faidecs.properties",
    "faidecs.metrics",
    "faidecs.connect",
)

# Internal modules the docs show anyway, and where: docs/ordering.md drives the ordering layers'
# research harness by its module paths (internal, no compatibility promise; docs/architecture.md
# says so). Only ever shrink this: an entry no doc uses any more fails the test.
DOCUMENTED_INTERNAL = {
    ("docs/ordering.md", "faidecs.ordering.atoms"),
    ("docs/ordering.md", "faidecs.ordering.generate"),
    ("docs/ordering.md", "faidecs.ordering.harness"),
    ("docs/ordering.md", "faidecs.ordering.latch"),
}

DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]

FENCE = re.compile(r"^\s*```")
PROMPT = re.compile(r"^(\s*)(?:>>>|\.\.\.) ?")
FROM_IMPORT = re.compile(r"^\s*from\s+(faidecs(?:\.\w+)*)\s+import\s+(\([^)]*\)|[^\n#]*)", re.MULTILINE)
PLAIN_IMPORT = re.compile(r"^\s*import\s+([\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*)", re.MULTILINE)


def source_of(module: str) -> Path:
    """A faidecs module's file, found without importing it (faidecs.spark.stream needs PySpark)."""
    path = ROOT.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def declared_all(module: str) -> list[str] | None:
    """The module's ``__all__`` as written (a literal list or tuple of strings), or None."""
    tree = ast.parse(source_of(module).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, expr = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, expr = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = ast.literal_eval(expr)
            assert isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value), module
            return list(value)
    return None


def code_blocks(text: str) -> list[str]:
    """The fenced code blocks of a Markdown text, with doctest prompts removed."""
    blocks: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if FENCE.match(line):
            if current is None:
                current = []
            else:
                blocks.append("\n".join(current))
                current = None
        elif current is not None:
            current.append(PROMPT.sub(r"\1", line))
    return blocks


def doc_imports(path: Path) -> list[tuple[str, str]]:
    """``(module, name)`` for every name a code block of ``path`` imports from faidecs;
    ``(module, "")`` for a plain ``import faidecs...``."""
    found: list[tuple[str, str]] = []
    for block in code_blocks(path.read_text(encoding="utf-8")):
        for module, names in FROM_IMPORT.findall(block):
            for name in names.strip("()").split(","):
                name = name.split(" as ")[0].strip()
                if name:
                    found.append((module, name))
        for clause in PLAIN_IMPORT.findall(block):
            for part in clause.split(","):
                module = part.split(" as ")[0].strip()
                if module == "faidecs" or module.startswith("faidecs."):
                    found.append((module, ""))
    return found


def test_the_scanner_sees_every_form(tmp_path: Path) -> None:
    text = (
        "```python\nfrom faidecs import Engine, Bounds as B\nimport faidecs.matching.engine\n```\n"
        "```\n>>> from faidecs.errors import (\n...     EventError,\n...     SnapshotError,\n... )\n```\n"
        "from faidecs.outside import Nothing\n"
    )
    path = tmp_path / "doc.md"
    path.write_text(text, encoding="utf-8")
    assert doc_imports(path) == [
        ("faidecs", "Engine"),
        ("faidecs", "Bounds"),
        ("faidecs.matching.engine", ""),
        ("faidecs.errors", "EventError"),
        ("faidecs.errors", "SnapshotError"),
    ]


@pytest.mark.parametrize("module", PUBLIC)
def test_public_modules_define_all(module: str) -> None:
    names = declared_all(module)
    assert names, f"{module} must define __all__: it is the module's public API"
    assert len(set(names)) == len(names), f"{module}.__all__ lists a name twice"


@pytest.mark.parametrize("module", [m for m in PUBLIC if m != "faidecs.spark.stream"])
def test_every_name_in_all_exists(module: str) -> None:
    imported = importlib.import_module(module)
    missing = [name for name in declared_all(module) or [] if not hasattr(imported, name)]
    assert not missing, f"{module}.__all__ names what it does not define: {missing}"


def test_the_top_level_package_exports_what_the_engine_docs_use() -> None:
    for name in (
        "Engine",
        "Delivery",
        "Event",
        "Bounds",
        "BatchResult",
        "FaidecsError",
        "ProgramError",
        "EventError",
        "SnapshotError",
        "QueueOverflowError",
        "SubscriptionNotFound",
        "EngineStateError",
        "Matching",
        "Disposal",
        "Matcher",
        "KernelMode",
        "Overflow",
        "compile_program",
        "Snapshot",
        "Metrics",
    ):
        assert name in faidecs.__all__, name


def test_architecture_md_lists_the_public_modules() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Public API", 1)[1].split("\n## ", 1)[0]
    for module in PUBLIC:
        assert f"`{module}`" in section, f"docs/architecture.md (Public API) does not list {module}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_import_only_public_names(path: Path) -> None:
    doc = str(path.relative_to(ROOT))
    wrong = []
    for module, name in doc_imports(path):
        if (doc, module) in DOCUMENTED_INTERNAL:
            continue
        public = declared_all(module) if module in PUBLIC else None
        if public is None or (name and name not in public):
            shown = f"from {module} import {name}" if name else f"import {module}"
            wrong.append(shown)
    assert not wrong, f"{doc} imports names that are not public (see docs/architecture.md): {wrong}"


def test_documented_internal_imports_are_still_used() -> None:
    used = {(str(p.relative_to(ROOT)), m) for p in DOCS for m, _ in doc_imports(p)}
    stale = DOCUMENTED_INTERNAL - used
    assert not stale, f"no doc imports these any more; drop them from DOCUMENTED_INTERNAL: {sorted(stale)}"
