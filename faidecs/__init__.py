"""faidecs: fair decentralized event correlation.

Declare event types and subscriptions in the faidecs language, publish events, receive
relations. See ``docs/dsl.md`` for the language and ``docs/semantics.md`` for what each
semantic option delivers and which guarantees it keeps.

The names in ``__all__`` are the embedded engine's public API; every module below
``faidecs.matching``, ``faidecs.grammar`` and the other internal packages may change without
notice (``docs/architecture.md``, "Public API").
"""

from faidecs.errors import (
    Diagnostic,
    EngineStateError,
    EventError,
    FaidecsError,
    ProgramError,
    QueueOverflowError,
    SnapshotError,
    SubscriptionNotFound,
)
from faidecs.grammar import compile_program
from faidecs.grammar.model import Covering, Disposal, Matching, Program
from faidecs.matching.batch import BatchGroup, BatchResult, ColumnTable, Order
from faidecs.matching.bounds import Bounds, Overflow
from faidecs.matching.delivery import Delivery
from faidecs.matching.engine import BoundsSpec, Engine
from faidecs.matching.events import Event
from faidecs.matching.records import (
    ConjunctionMetrics,
    KernelMode,
    Matcher,
    MatcherKinds,
    Metrics,
    Snapshot,
    StateJson,
)
from faidecs.matching.stream import DeliveryStream

__all__ = [
    "BatchGroup",
    "BatchResult",
    "Bounds",
    "BoundsSpec",
    "ColumnTable",
    "ConjunctionMetrics",
    "Covering",
    "Delivery",
    "DeliveryStream",
    "Diagnostic",
    "Disposal",
    "Engine",
    "EngineStateError",
    "Event",
    "EventError",
    "FaidecsError",
    "KernelMode",
    "Matcher",
    "MatcherKinds",
    "Matching",
    "Metrics",
    "Order",
    "Overflow",
    "Program",
    "ProgramError",
    "QueueOverflowError",
    "Snapshot",
    "SnapshotError",
    "StateJson",
    "SubscriptionNotFound",
    "compile_program",
]

__version__ = "0.1.0"
