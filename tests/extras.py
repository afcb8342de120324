"""Which extra installs each third-party package that faidecs's modules import at module level:
what a base install lacks, for the tests and the doctest collection that leave such modules out.
The table is the CLI's (faidecs/cli/extras.py), so the two cannot drift apart."""

from __future__ import annotations

from faidecs.cli.extras import EXTRA_OF, missing_extra

__all__ = ["EXTRA_OF", "missing_extra"]
