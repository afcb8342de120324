"""faidecs: fair decentralized event correlation.

Declare event types and subscriptions in the faidecs language, publish events, receive
relations. See ``docs/dsl.md`` for the language and ``docs/semantics.md`` for what each
semantic option delivers and which guarantees it keeps.
"""

from faidecs.errors import (
    Diagnostic,
    EventError,
    FaidecsError,
    ProgramError,
    SnapshotError,
    SubscriptionNotFound,
)
from faidecs.grammar import compile_program
from faidecs.grammar.model import Disposal, Matching
from faidecs.matching.delivery import Delivery
from faidecs.matching.engine import Engine
from faidecs.matching.events import Event

__all__ = [
    "Delivery",
    "Diagnostic",
    "Disposal",
    "Engine",
    "Event",
    "EventError",
    "FaidecsError",
    "Matching",
    "ProgramError",
    "SnapshotError",
    "SubscriptionNotFound",
    "compile_program",
]

__version__ = "0.1.0"
