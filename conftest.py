"""Doctest collection of the library's modules (``faidecs`` is in pytest's testpaths).

A module that imports what an extra installs (``tests/extras.py``: pyzmq, kazoo, cryptography,
pysyncobj for ``overlay``; PySpark for ``spark``) cannot be imported for its doctests without that
extra. Such modules are left out of collection, and pytest's header names them and the extra, so
a base install's run says what it did not check instead of failing to collect.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import pytest

from tests.extras import EXTRA_OF, missing_extra

ROOT = Path(__file__).resolve().parent


def _modules_needing_missing_extras() -> dict[str, str]:
    missing: dict[str, str] = {}
    for path in sorted((ROOT / "faidecs").rglob("*.py")):
        if path.name == "__main__.py":
            continue  # importing it runs the command
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            extra = missing_extra(exc)
            if extra is None:
                raise
            missing[str(path.relative_to(ROOT))] = extra
    return missing


_missing = _modules_needing_missing_extras() if any(importlib.util.find_spec(top) is None for top in EXTRA_OF) else {}
collect_ignore = list(_missing)


def pytest_report_header(config: pytest.Config) -> str | None:
    if not _missing:
        return None
    extras = sorted(set(_missing.values()))
    return f"doctests not collected ({len(_missing)} modules need the extras {', '.join(extras)})"
