"""Building many long-lived objects at once without the cyclic collector walking them again and again.

CPython's collector runs after every few hundred allocations and, as the objects survive,
traverses the older generations too: a program of a thousand subscriptions allocates a few
hundred thousand objects (parse trees, predicates, matchers), and the collections this triggers
took longer than building them. None of those objects is garbage while it is being built, so
the collector is paused for the duration and runs as usual afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
