"""Shared fixtures. `examples` is the repository's examples folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent

# The suite compares the compiled kernels with the reference matcher, so by default every
# engine it makes (and every process it starts) compiles its kernels before the first event.
# Tests of the default, background compilation ask for it explicitly (kernels="background").
os.environ.setdefault("FAIDECS_KERNELS", "eager")

# CI runs many more examples than a developer's quick run; the fast tier (scripts/test --fast)
# runs every property with a few examples, so that it stays a loop of a few minutes.
settings.register_profile("ci", max_examples=400, deadline=None)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("fast", max_examples=15, deadline=None)
settings.load_profile(os.environ.get("FAIDECS_HYPOTHESIS") or ("ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def examples() -> Path:
    return ROOT / "examples"
