"""``faidecs compare``: the semantic options side by side on the user's own program and events.

:func:`compare` runs the program once per option combination over the same events (read and
validated once) and returns a :class:`Comparison`: per variant and subscription, what was
delivered, what was never used, queue lengths, memory, throughput, latency, and the properties
the run keeps and violates beside the lab's general verdict; and where the variants part ways.
"""

from faidecs.comparing.result import (
    Comparison,
    Difference,
    Latency,
    QueueSeries,
    ShownEvent,
    ShownRelation,
    SubscriptionFigures,
    VariantResult,
    Verdict,
)
from faidecs.comparing.run import compare
from faidecs.comparing.variants import OptionsError

__all__ = [
    "Comparison",
    "Difference",
    "Latency",
    "OptionsError",
    "QueueSeries",
    "ShownEvent",
    "ShownRelation",
    "SubscriptionFigures",
    "VariantResult",
    "Verdict",
    "compare",
]
