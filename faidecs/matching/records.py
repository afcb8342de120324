"""The shapes of what :class:`~faidecs.matching.engine.Engine` takes and returns as plain data.

Everything here is JSON-compatible: an engine's snapshot goes through ``json.dumps`` and back into
:meth:`Engine.restore`, metrics and state are written out by the command line. Keys that are
names from the program (subscriptions, event types) make a mapping a ``dict``; fixed keys make
it a ``TypedDict``. A conjunction's own part of the snapshot and of the state depends on its kind
(plain, staged, partitioned), so it stays an opaque mapping: read it through the engine, never
build one by hand.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

Matcher = Literal["compiled", "reference"]
"""Which matcher runs the conjunctions: numba kernels (``"compiled"``) or the oracle."""

KernelMode = Literal["background", "eager"]
"""When the compiled matcher's kernels are compiled: by a worker while the reference matcher
stands in (``"background"``), or before the engine is returned (``"eager"``)."""

MATCHERS: tuple[Matcher, ...] = ("compiled", "reference")
KERNEL_MODES: tuple[KernelMode, ...] = ("background", "eager")

SnapshotFormat = Literal["faidecs.snapshot/2"]
SNAPSHOT_FORMAT: SnapshotFormat = "faidecs.snapshot/2"

ConjunctionSnapshot = dict[str, Any]
"""One conjunction's queues and counters in a snapshot; its keys depend on the conjunction's kind."""


class Snapshot(TypedDict):
    """:meth:`Engine.snapshot`: the engine's exact state, format ``faidecs.snapshot/2``."""

    format: SnapshotFormat
    program: str  # the program text of the engine's current types and subscriptions
    published: int  # events published so far
    queues: dict[str, list[ConjunctionSnapshot]]  # per subscription, per conjunction as written


class ConjunctionMetrics(TypedDict):
    """One conjunction's gauges in :meth:`Engine.metrics`."""

    queues: dict[str, int]  # events queued per type
    deliveries: int  # relations delivered
    drops: int  # events dropped by bounds
    # The extended language only (a window, a negation): late events (not matched), events
    # purged by the window, and negated events logged now.
    late: NotRequired[int]
    purged: NotRequired[int]
    logged: NotRequired[int]


class Metrics(TypedDict):
    """:meth:`Engine.metrics`."""

    published: int
    subscriptions: dict[str, list[ConjunctionMetrics]]  # per subscription, per conjunction as written


ConjunctionStateJson = dict[str, Any]
"""One conjunction's queued ids: per type, oldest first; a staged conjunction adds ``"staged"``,
a partitioned one nests them as ``{"partitions": {value as JSON text: queues}}``."""

StateJson = dict[str, list[ConjunctionStateJson]]
""":meth:`Engine.state_json`: per subscription, per conjunction as written."""

MatcherKinds = dict[str, list[str]]
""":meth:`Engine.matchers`: per subscription, per conjunction as written, ``"compiled"`` or
``"reference"`` (a staged conjunction's components joined by ``+``)."""
