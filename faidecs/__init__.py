"""faidecs: fair decentralized event correlation.

Declare event types and subscriptions in the faidecs language, publish events, receive
relations. See ``docs/dsl.md`` for the language and ``docs/semantics.md`` for what each
semantic option delivers and which guarantees it keeps.

The names in ``__all__`` are the embedded engine's public API; every module below
``faidecs.matching``, ``faidecs.grammar`` and the other internal packages may change without
notice (``docs/architecture.md``, "Public API").
"""

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from faidecs.comparing import Comparison, compare


def __getattr__(name: str) -> Any:
    # faidecs.compare (and its result type) load the lab and the property checker: only on use,
    # so that `import faidecs` stays as quick as the engine alone.
    if name in ("compare", "Comparison"):
        import faidecs.comparing

        return getattr(faidecs.comparing, name)
    raise AttributeError(f"module 'faidecs' has no attribute {name!r}")


__all__ = [
    "BatchGroup",
    "BatchResult",
    "Bounds",
    "BoundsSpec",
    "ColumnTable",
    "Comparison",
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
    "compare",
    "compile_program",
]

__version__ = "0.1.0"
