"""The messages of the multistage sequencer (Baldoni et al., appendix, Figs. 16-19).

Protocol messages travel on FIFO links; :class:`Notification` and :class:`Dummy` travel through the
event notification service, which may reorder them. Timestamps are copied at every hop, so no two
messages share a mutable dict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from faidecs.ordering.multistage.timestamps import Partial, Timestamp

ChainKind = Literal["pub", "sub"]


@dataclass(frozen=True, slots=True)
class CreatePubTs:
    event_id: str
    publisher: str
    topic: str


@dataclass(frozen=True, slots=True)
class FillIn:
    """FILL_IN_PUB_TS (``kind="pub"``) or FILL_IN_SUB_TS (``kind="sub"``) as it walks the chain."""

    kind: ChainKind
    ts: Partial
    origin: str  # publisher or subscriber that gets the completed timestamp
    ident: str  # event id or subscription id
    subscription: frozenset[str] = frozenset()  # the subscriber's whole new subscription


@dataclass(frozen=True, slots=True)
class EventTs:
    event_id: str
    ts: Timestamp


@dataclass(frozen=True, slots=True)
class CompletedSubVc:
    sub_id: str
    ts: Timestamp


@dataclass(frozen=True, slots=True)
class UpdateSub:
    """Fig. 19: ``subscriber``'s subscription is now ``subscription`` (empty: it left this topic)."""

    subscriber: str
    subscription: frozenset[str]


@dataclass(frozen=True, slots=True)
class Notification:
    event_id: str
    topic: str
    ts: Timestamp


@dataclass(frozen=True, slots=True)
class Dummy:
    """The subscriptionUpdate event of Fig. 18(a), published on every topic of the subscription."""

    sub_id: str
    topic: str
    ts: Timestamp
