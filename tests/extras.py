"""Which extra installs each third-party package that faidecs's modules import at module level:
what a base install lacks, for the tests and the doctest collection that leave such modules out."""

from __future__ import annotations

EXTRA_OF = {"zmq": "overlay", "kazoo": "overlay", "cryptography": "overlay", "pysyncobj": "overlay", "pyspark": "spark"}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The extra whose package ``exc`` did not find, or None for any other missing module."""
    return EXTRA_OF.get((exc.name or "").split(".")[0])
