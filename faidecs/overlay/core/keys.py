"""Consumer keys: whom a merger's filter marks are for.

Consumers with the same key need the same events, so they share filter marks: every replica of a
child merger (key of the child's role), and every subscriber stream with the same conjunctions
and options (key of their texts). A subscriber that joins from an identical peer therefore reads
the merger's stream with the peer's filter from the peer's position on, without a new mark.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from faidecs.grammar.model import Subscription
from faidecs.merging.filters import Filter, union_all
from faidecs.merging.roles import Role, role_name


def merger_key(role: Role) -> str:
    return "merger:" + role_name(role)


def subscriber_key(conjunction_texts: Iterable[str], options: str) -> str:
    text = options + "\n" + "\n".join(sorted(conjunction_texts))
    return "sub:" + hashlib.blake2b(text.encode(), digest_size=10).hexdigest()


def stream_key(part: Subscription) -> str:
    """The consumer key of a subscriber's stream of ``part`` (its conjunctions that one merger serves)."""
    options = f"{part.matching.value}+{part.disposal.value}+{part.covering.value}+{part.partition_by or ''}"
    if part.window is not None:  # only then, so that the keys of the papers' language stay as they were
        options += f"+{part.window.text}"
    return subscriber_key([c.text for c in part.conjunctions], options)


def stream_filter(part: Subscription) -> Filter:
    """What a subscriber's stream of ``part`` registers: the unary predicates of its conjunctions
    (none under a window: every event moves its watermark)."""
    return union_all(Filter.of(c, part.window) for c in part.conjunctions)


def is_subscriber(key: str) -> bool:
    return key.startswith("sub:")


__all__ = ["is_subscriber", "merger_key", "stream_filter", "stream_key", "subscriber_key"]
