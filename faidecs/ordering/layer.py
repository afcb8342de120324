"""The interface every ordering layer offers the subscriber engines (and the run harness).

An ordering layer orders single events (one topic each: the event's type) for processes that
subscribe to sets of topics. Topics are ranked by name (the normaliser's canonical order: the
smallest name has the highest rank). The layer delivers an event to a process through the
``notify`` callback it was given; the process feeds it to its embedded engine. A layer promises
pairwise Total Notification Order (TNO): two processes notified of the same two events are notified
of them in the same order. It promises nothing about which events arrive beyond its own liveness
(every event published on a topic while a process is subscribed to it is eventually notified).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from faidecs.ordering.network import Network

#: notify(process, event_id, topic)
Notify = Callable[[str, str, str], None]


class OrderingLayer(Protocol):
    """An ordering layer running on a :class:`Network`."""

    name: str

    def start(self, network: Network, subscriptions: dict[str, frozenset[str]], notify: Notify) -> None:
        """Install the processes subscribed at system start (their clocks start at zero)."""

    def publish(self, publisher: str, event_id: str, topic: str) -> None:
        """``publisher`` publishes ``event_id`` on ``topic`` now (network.now)."""

    def subscribe(self, process: str, topics: frozenset[str]) -> None:
        """``process`` (new or existing) adds ``topics`` to its subscription now.

        Its first notification of a new topic is the first event after its subscription point,
        which the layer decides; the layer reports it through :meth:`joined_at`.
        """

    def unsubscribe(self, process: str, topics: frozenset[str]) -> None:
        """``process`` drops ``topics`` now; it is notified of none of them afterwards."""

    def pending(self) -> dict[str, list[str]]:
        """Per process, the event ids it holds but has not notified (non-empty after quiescence = a stall)."""
        ...

    def owes(self, process: str, event_id: str) -> bool:
        """Whether ``process``, as subscribed now, is owed the published ``event_id``: the layer's
        own account of its subscription point (a joiner is owed what follows it)."""
        ...

    def header_sizes(self) -> list[int]:
        """The number of ordering entries (timestamp pairs, sequence numbers) on each published event."""
        ...
