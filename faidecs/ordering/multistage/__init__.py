"""The multistage sequencer of Baldoni, Bonomi, Platania and Querzoni (seed 000): topic managers
that timestamp events in stages, and subscriber ordering modules that notify in timestamp order.

``MultistageConfig()`` is the corrected profile of the seed digest (A3.10);
``MultistageConfig.literal()`` follows the paper's figures as printed.
"""

from faidecs.ordering.multistage.config import MultistageConfig
from faidecs.ordering.multistage.layer import MultistageLayer
from faidecs.ordering.multistage.manager import TopicManager, tm_address
from faidecs.ordering.multistage.placement import forwarded_entries, place_by_ranges
from faidecs.ordering.multistage.timestamps import comparable, sequencing_group, smaller

__all__ = [
    "MultistageConfig",
    "MultistageLayer",
    "TopicManager",
    "comparable",
    "forwarded_entries",
    "place_by_ranges",
    "sequencing_group",
    "smaller",
    "tm_address",
]
