"""How a multistage sequencer run behaves: the paper's rules as printed, or the corrected profile.

``fixed`` (the default) is the profile of the seed digest's section A3.10: line routing for
publication and subscription chains (errata E6, E7), the publication-topic ``isNext`` with ``<=`` on
the other subscribed entries (E2, E8), dummies deduplicated by subscription id (E4), the
subscriber's own subscription timestamp as a barrier and stale events dropped (E5), and a
max-update of LLC (E9). ``literal`` follows Figs. 15-19 of Baldoni et al. as printed, so that tests
can show where they stall; only the plain typos (E1, E3, E9) are read as meant, since reading them
literally makes nothing advance at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Profile = Literal["fixed", "literal"]
#: E2: the prose's rule (the publication topic's entry is +1) or the appendix's (the last pair is +1)
IsNext = Literal["publication", "last_pair"]


@dataclass(frozen=True, slots=True)
class MultistageConfig:
    profile: Profile = "fixed"
    #: only the literal profile reads this; the fixed profile always uses the publication topic
    is_next: IsNext = "publication"
    #: Def. 1 puts T' in SG_T when at least this many subscriptions hold both; 1 is the causal
    #: variant of the paper's section 4
    threshold: int = 2

    def __post_init__(self) -> None:
        if self.threshold < 1:
            raise ValueError(f"threshold must be at least 1, not {self.threshold}")

    @property
    def line_routing(self) -> bool:
        return self.profile == "fixed"

    @classmethod
    def literal(cls, is_next: IsNext = "publication", *, causal: bool = False) -> MultistageConfig:
        return cls("literal", is_next, 1 if causal else 2)

    @classmethod
    def fixed(cls, *, causal: bool = False) -> MultistageConfig:
        return cls("fixed", "publication", 1 if causal else 2)
