"""Values shown in error messages, shortened: input may hold a 20 MB string or a 5,000-digit
integer, and an error that echoes it whole floods the terminal and the rejects file (and
``repr`` of an integer past Python's digit limit raises ``ValueError``)."""

from __future__ import annotations

import math
from typing import Any

#: Characters of a value an error message shows at most (then ``…`` and the full length).
SHOWN_CHARS = 60


def digits(value: int) -> int:
    """The number of decimal digits of ``value``, without converting it to text."""
    if value == 0:
        return 1
    n = abs(value)
    count = math.floor(math.log10(n)) + 1  # exact but for rounding next to a power of ten
    if n < 10 ** (count - 1):
        count -= 1
    elif n >= 10**count:
        count += 1
    return count


def brief_int(value: int) -> str:
    """``value`` in decimal, or its first digits and how many there are."""
    count = digits(value)
    if count <= SHOWN_CHARS:
        return str(value)
    head = abs(value) // 10 ** (count - 20)
    return f"{'-' if value < 0 else ''}{head}… ({count:,} digits)"


def brief(value: Any) -> str:
    """``repr(value)``, shortened to about :data:`SHOWN_CHARS` characters."""
    if isinstance(value, int) and not isinstance(value, bool):
        return brief_int(value)
    if isinstance(value, str) and len(value) > SHOWN_CHARS:
        return f"{value[:SHOWN_CHARS]!r}… ({len(value):,} characters)"
    if isinstance(value, (list, dict)) and len(value) > 8:
        return f"{type(value).__name__} of {len(value):,} items"
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # a huge integer or a deep list inside
        return f"a {type(value).__name__}"
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"
