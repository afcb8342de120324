"""The multistage sequencer as an :class:`~faidecs.ordering.layer.OrderingLayer` (seed 000:
Baldoni, Bonomi, Platania, Querzoni).

One topic manager per topic at ``tm:<topic>``, and at every process or publisher address a client
holding the publisher and subscriber ordering modules of Fig. 3. The layer also plays the event
notification service: ``ENSsubscribe`` takes effect at once, and an event or dummy published on a
topic goes, over the network's non-FIFO ``ens`` links, to every process ENS-subscribed to the topic
at that moment.

Line routing (the fixed profile) visits every topic of the universe ranked between two entries, so
the universe should be known up front (``topics=``); a topic first seen later is added, which
reroutes chains that cross it. Keep such topics out of runs that need the E6 guarantee.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from faidecs.ordering.layer import Notify
from faidecs.ordering.multistage.config import MultistageConfig
from faidecs.ordering.multistage.manager import TopicManager, tm_address
from faidecs.ordering.multistage.messages import CompletedSubVc, Dummy, EventTs, Notification
from faidecs.ordering.multistage.publisher import Publisher
from faidecs.ordering.multistage.subscriber import EnsHooks, Subscriber
from faidecs.ordering.multistage.timestamps import Timestamp
from faidecs.ordering.network import Network


@dataclass(slots=True)
class _Client:
    publisher: Publisher
    subscriber: Subscriber


class MultistageLayer:
    """The multistage sequencer on a :class:`Network` (``name = "multistage"``)."""

    name = "multistage"

    def __init__(self, config: MultistageConfig | None = None, topics: Iterable[str] = ()) -> None:
        self.config = config or MultistageConfig()
        self.universe: list[str] = sorted(set(topics))
        self.managers: dict[str, TopicManager] = {}
        self.clients: dict[str, _Client] = {}
        #: the notification service's membership: topic -> processes ENS-subscribed to it
        self.members: dict[str, set[str]] = {}
        #: event id -> its completed timestamp, in the order timestamps came back
        self.timestamps: dict[str, Timestamp] = {}
        self.topic_of: dict[str, str] = {}
        self._network: Network | None = None
        self._notify: Notify | None = None

    # -- OrderingLayer --------------------------------------------------------------------------

    def start(self, network: Network, subscriptions: dict[str, frozenset[str]], notify: Notify) -> None:
        self._network, self._notify = network, notify
        for topics in subscriptions.values():
            for topic in topics:
                self._ensure_topic(topic)
        for topic in list(self.universe):
            self._ensure_topic(topic)
        for process, topics in sorted(subscriptions.items()):
            for topic in topics:
                self.managers[topic].ext[process] = frozenset(topics)  # every TM knows them
            self._client(process).subscriber.install(frozenset(topics))

    def publish(self, publisher: str, event_id: str, topic: str) -> None:
        self._ensure_topic(topic)
        self.topic_of[event_id] = topic
        self._client(publisher).publisher.publish(event_id, topic)

    def subscribe(self, process: str, topics: frozenset[str]) -> None:
        for topic in topics:
            self._ensure_topic(topic)
        self._client(process).subscriber.request("sub", frozenset(topics))

    def unsubscribe(self, process: str, topics: frozenset[str]) -> None:
        self._client(process).subscriber.request("unsub", frozenset(topics))

    def pending(self) -> dict[str, list[str]]:
        held: dict[str, list[str]] = {}
        for name, client in sorted(self.clients.items()):
            sub = client.subscriber
            ids = list(sub.events)
            ids += [m.event_id for ms in sub.prebuffer.values() for m in ms if isinstance(m, Notification)]
            if ids:
                held[name] = ids
        return held

    def header_sizes(self) -> list[int]:
        return [len(ts) for ts in self.timestamps.values()]

    # -- for harnesses and benchmarks -----------------------------------------------------------

    def joined_at(self, process: str, topic: str) -> int | None:
        """``process``'s subscription point on ``topic``: it is owed exactly the events on ``topic``
        whose timestamp entry for it is larger. None while it is not (yet) subscribed."""
        client = self.clients.get(process)
        return None if client is None else client.subscriber.joined.get(topic)

    def owes(self, process: str, event_id: str) -> bool:
        """Whether ``process``, as subscribed now, is owed ``event_id`` (which has a timestamp)."""
        topic = self.topic_of[event_id]
        point = self.joined_at(process, topic)
        return point is not None and self.timestamps[event_id][topic] > point

    def subscriptions(self) -> dict[str, frozenset[str]]:
        """What each process is subscribed to now (a topic being joined counts once it is joined)."""
        return {name: frozenset(c.subscriber.subs) for name, c in sorted(self.clients.items())}

    def held_dummies(self) -> dict[str, list[str]]:
        """Per process, the subscription ids of the dummies it holds (the literal rules keep some forever)."""
        held = {name: [d.sub_id for d in c.subscriber.dummies] for name, c in sorted(self.clients.items())}
        return {name: ids for name, ids in held.items() if ids}

    def tm_load(self) -> dict[str, int]:
        """Messages handled per topic manager."""
        return {topic: tm.handled for topic, tm in sorted(self.managers.items())}

    def manager(self, topic: str) -> TopicManager:
        return self.managers[topic]

    # -- wiring -------------------------------------------------------------------------------------

    @property
    def network(self) -> Network:
        if self._network is None:
            raise RuntimeError("the multistage layer has not been started")
        return self._network

    def _above(self, topic: str) -> str | None:
        i = bisect.bisect_left(self.universe, topic)
        return self.universe[i - 1] if i > 0 else None

    def _ensure_topic(self, topic: str) -> None:
        if topic in self.managers:
            return
        if topic not in self.universe:
            bisect.insort(self.universe, topic)
        tm = TopicManager(topic, self.network, self.config, self._above)
        self.managers[topic] = tm
        self.members.setdefault(topic, set())
        self.network.listen(tm_address(topic), tm.on_message)

    def _client(self, name: str) -> _Client:
        client = self.clients.get(name)
        if client is None:
            network = self.network
            hooks = EnsHooks(self._ens_subscribe, self._ens_unsubscribe, self._ens_publish)
            subscriber = Subscriber(name, network, self.config, hooks, self._notifier(name))
            client = _Client(Publisher(name, network, self._ens_publish), subscriber)
            self.clients[name] = client
            network.listen(name, self._handler(client))
        return client

    def _notifier(self, process: str) -> Callable[[str, str], None]:
        def notify(event_id: str, topic: str) -> None:
            if self._notify is not None:
                self._notify(process, event_id, topic)

        return notify

    def _handler(self, client: _Client) -> Callable[[str, object], None]:
        def handle(sender: str, message: object) -> None:
            if isinstance(message, EventTs):
                self.timestamps[message.event_id] = message.ts
                client.publisher.on_timestamp(message)
            elif isinstance(message, CompletedSubVc):
                client.subscriber.on_completed(message)
            elif isinstance(message, (Notification, Dummy)):
                client.subscriber.on_ens(message)
            else:
                raise TypeError(f"{client.subscriber.name} got {message!r} from {sender}")

        return handle

    def _ens_subscribe(self, process: str, topic: str) -> None:
        self.members.setdefault(topic, set()).add(process)

    def _ens_unsubscribe(self, process: str, topic: str) -> None:
        self.members.get(topic, set()).discard(process)

    def _ens_publish(self, sender: str, message: Notification | Dummy) -> None:
        for member in sorted(self.members.get(message.topic, ())):
            self.network.ens(sender, member, message, entries=len(message.ts))
