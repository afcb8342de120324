"""LoCaPS (seed 003) as an ordering layer: brokers on a tree, markers in publishers' streams.

Brokers form a tree (the base graph of Fig. 4(a)) on FIFO links of the :class:`Network`; every
client (publisher or subscriber, or both) hangs off one broker. A broker handles one message at a
time and forwards at once, so the tree with FIFO links gives causal order for free (the paper's
causal multicast substrate). Publishers advertise every type (their advertisements are static and
known from the start), so a subscription travels from the subscriber's broker towards every
publisher's broker, each broker adding (subscriber, incoming link) to its event routing table.
Events follow the routing tables (no flooding).

- **Alg. 1:** a publisher's broker that learns a subscription inserts ``MARKER(p, s)`` into the
  publisher's stream, routed towards s. At s's broker the first event of p after that marker is
  the starting-cut event; events of p before it are discarded. A broker a marker passes that
  serves a publisher x emits x's marker too (**the cascade**, ``cascade=False`` turns it off).
- **Alg. 2, single prefix:** a broker that receives a new subscription S and on which a covering
  subscription is already stable for publisher x (x's marker for it passed, or it was there from
  the start) inserts ``MARKER(x, s)`` on x's behalf (the pivot as proxy; ``proxy=False`` turns
  it off).
- Subscriptions present at system start (``start``) are installed on every broker of their
  paths and are stable for every publisher (LoCaMu's static subscriptions). A process that
  leaves stops being notified at once; routing entries stay (unsubscription is not in the paper).

The multi-prefix rule (partial markers on augmented trees) is :mod:`.cut` with :mod:`.topology`;
it needs LoCaMu's causal substrate on a cyclic graph, which this runtime does not model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from faidecs.ordering.layer import Notify
from faidecs.ordering.locaps.topology import BrokerGraph
from faidecs.ordering.network import Network

LOCAL = ""  # the "link" of a broker's own clients

MARK = -1  # starting cut: marker seen, no event yet


@dataclass(frozen=True, slots=True)
class Subscribe:
    subscriber: str
    types: frozenset[str]


@dataclass(frozen=True, slots=True)
class PublishedEvent:
    publisher: str
    seq: int
    event_id: str
    topic: str


@dataclass(frozen=True, slots=True)
class Marker:
    publisher: str
    subscriber: str
    types: frozenset[str]
    origin: str  # the broker that inserted it (the publisher's, a cascading one, or a pivot)
    position: int  # the publisher's first sequence number after it (for ``owes``)


@dataclass(slots=True)
class Broker:
    name: str
    neighbours: list[str]
    publishers: set[str]  # local publishers
    behind: dict[str, set[str]]  # neighbour -> publishers reachable through it
    routes: dict[str, dict[str, frozenset[str]]] = field(default_factory=dict)  # link -> subscriber -> types
    toward: dict[str, str] = field(default_factory=dict)  # subscriber -> link it is reached over
    #: stable-paths: (publisher, subscriber) -> the publisher's first seq after the marker that made it stable
    stable: dict[tuple[str, str], int] = field(default_factory=dict)
    marker_sent: set[tuple[str, str]] = field(default_factory=set)
    last_seq: dict[str, int] = field(default_factory=dict)  # publisher -> last seq handled here


@dataclass(slots=True)
class Stats:
    markers: int = 0
    proxy_markers: int = 0
    cascade_markers: int = 0
    discarded: int = 0  # events of a publisher reaching a joiner's broker before its starting cut


class LocapsLayer:
    """LoCaPS on a broker tree. ``attach`` maps every client (process or publisher) to its broker;
    ``publishers`` (default: every client) advertise every type."""

    name = "locaps"

    def __init__(
        self,
        graph: BrokerGraph,
        attach: dict[str, str],
        *,
        proxy: bool = True,
        cascade: bool = True,
        link_delay: float | None = None,
        publishers: frozenset[str] | None = None,
    ):
        if not graph.is_tree():
            raise ValueError("the LoCaPS runtime needs a broker tree (the base graph of Fig. 4(a))")
        self.graph = graph
        self.attach = dict(attach)
        self.proxy = proxy
        self.cascade = cascade
        self.link_delay = link_delay
        self.publishers = frozenset(attach) if publishers is None else publishers
        self.stats = Stats()
        self.brokers: dict[str, Broker] = {}
        self.types: dict[str, frozenset[str]] = {}  # subscriber -> types
        self.cuts: dict[str, dict[str, int]] = {}  # subscriber -> publisher -> MARK or seq
        self.marked_at: dict[tuple[str, str], int] = {}  # (publisher, subscriber) -> first seq after the marker
        self.subscribed_at: dict[str, float] = {}
        self.first_delivery: dict[str, float] = {}
        self.published: dict[str, tuple[str, int, str]] = {}  # id -> (publisher, seq, topic)
        self.gone: set[str] = set()
        self._seq: dict[str, int] = {}
        self._network: Network | None = None
        self._notify: Notify | None = None

    # --- the OrderingLayer interface -------------------------------------------------------------

    def start(self, network: Network, subscriptions: dict[str, frozenset[str]], notify: Notify) -> None:
        self._network, self._notify = network, notify
        publishers = self.publishers
        for b in self.graph.brokers:
            neighbours = sorted(self.graph.adjacent[b])
            behind: dict[str, set[str]] = {n: set() for n in neighbours}
            for n in neighbours:
                side = self._side(b, n)
                behind[n] = {p for p in publishers if self.attach[p] in side}
            local = {p for p in publishers if self.attach[p] == b}
            self.brokers[b] = Broker(b, neighbours, local, behind)
            network.listen(b, self._handler(b))
            if self.link_delay is not None:
                for n in neighbours:
                    network.override[(b, n)] = self.link_delay
        for s, types in subscriptions.items():  # static subscriptions: everywhere on their paths, stable
            self.types[s] = types
            self.cuts[s] = {p: 0 for p in publishers}
            self.subscribed_at[s] = network.now
            home = self.attach[s]
            for p in publishers:
                path = self.graph.tree_path(self.attach[p], home)
                for k, b in enumerate(path):
                    link = path[k + 1] if k + 1 < len(path) else LOCAL
                    self._route(self.brokers[b], s, types, link)
                    self.brokers[b].stable[(p, s)] = 0
                self.marked_at[(p, s)] = 0

    def publish(self, publisher: str, event_id: str, topic: str) -> None:
        seq = self._seq.get(publisher, 0)
        self._seq[publisher] = seq + 1
        self.published[event_id] = (publisher, seq, topic)
        broker = self.brokers[self.attach[publisher]]
        self._event(broker, PublishedEvent(publisher, seq, event_id, topic), LOCAL)

    def subscribe(self, process: str, topics: frozenset[str]) -> None:
        if process in self.types:
            raise ValueError(f"{process} subscribes twice; LoCaPS here has one subscription per process")
        assert self._network is not None
        self.types[process] = topics
        self.cuts[process] = {}
        self.subscribed_at[process] = self._network.now
        self._subscription(self.brokers[self.attach[process]], Subscribe(process, topics), LOCAL)

    def unsubscribe(self, process: str, topics: frozenset[str]) -> None:
        self.gone.add(process)

    def pending(self) -> dict[str, list[str]]:
        return {}  # nothing is ever held: an event is delivered or discarded on arrival

    def owes(self, process: str, event_id: str) -> bool:
        """Owed: an event of the process's types published at or after the position of its
        publisher's first marker for the process (the starting cut comes no later)."""
        publisher, seq, topic = self.published[event_id]
        start = self.marked_at.get((publisher, process))
        return process not in self.gone and topic in self.types.get(process, ()) and start is not None and seq >= start

    def header_sizes(self) -> list[int]:
        return [1] * len(self.published)  # publisher id and sequence number

    # --- brokers ---------------------------------------------------------------------------------

    def _side(self, b: str, n: str) -> set[str]:
        """Brokers reachable from ``n`` without crossing ``b``."""
        seen, todo = {b, n}, [n]
        while todo:
            x = todo.pop()
            for y in self.graph.adjacent[x]:
                if y not in seen:
                    seen.add(y)
                    todo.append(y)
        return seen - {b}

    def _handler(self, name: str) -> Any:
        def handle(src: str, message: Any) -> None:
            broker = self.brokers[name]
            if isinstance(message, PublishedEvent):
                self._event(broker, message, src)
            elif isinstance(message, Marker):
                self._marker(broker, message, src)
            else:
                self._subscription(broker, message, src)

        return handle

    def _send(self, broker: Broker, link: str, message: Any) -> None:
        assert self._network is not None
        self._network.send(broker.name, link, message)

    def _route(self, broker: Broker, subscriber: str, types: frozenset[str], link: str) -> None:
        broker.routes.setdefault(link, {})[subscriber] = types
        broker.toward[subscriber] = link

    def _subscription(self, broker: Broker, sub: Subscribe, src: str) -> None:
        self._route(broker, sub.subscriber, sub.types, src)
        for n in broker.neighbours:  # towards every publisher (all advertise every type)
            if n != src and broker.behind[n]:
                self._send(broker, n, sub)
        for p in sorted(broker.publishers):  # Alg. 1: the publisher's broker inserts the marker
            self._insert(broker, p, sub.subscriber, sub.types)
        if self.proxy:  # Alg. 2, single prefix: proxy for publishers whose covering subscription is stable here
            for (p, s), since in sorted(broker.stable.items()):
                upstream = p in broker.publishers or any(p in broker.behind[n] for n in broker.neighbours if n != src)
                if upstream and s != sub.subscriber and self.types[s] >= sub.types:
                    if self._insert(broker, p, sub.subscriber, sub.types, since):
                        self.stats.proxy_markers += 1

    def _insert(self, broker: Broker, publisher: str, subscriber: str, types: frozenset[str], since: int = 0) -> bool:
        """Insert ``MARKER(publisher, subscriber)`` into the publisher's stream here (once per broker);
        ``since``: a proxy's covering subscription is stable here from that seq of the publisher on."""
        if (publisher, subscriber) in broker.marker_sent:
            return False
        broker.marker_sent.add((publisher, subscriber))
        self.stats.markers += 1
        position = max(broker.last_seq.get(publisher, -1) + 1, since)
        self._marker(broker, Marker(publisher, subscriber, types, broker.name, position), None)
        return True

    def _marker(self, broker: Broker, marker: Marker, src: str | None) -> None:
        p, s = marker.publisher, marker.subscriber
        broker.stable.setdefault((p, s), marker.position)
        link = broker.toward[s]
        if link != LOCAL:
            self._send(broker, link, marker)
        if self.cascade:
            for x in sorted(broker.publishers):
                if x != p and self._insert(broker, x, s, marker.types):
                    self.stats.cascade_markers += 1
        if link == LOCAL:
            self.marked_at.setdefault((p, s), marker.position)
            cut = self.cuts[s]
            if p not in cut:
                cut[p] = MARK

    def _event(self, broker: Broker, event: PublishedEvent, src: str) -> None:
        broker.last_seq[event.publisher] = event.seq
        for link, subs in broker.routes.items():
            if link != src and link != LOCAL and any(event.topic in t for t in subs.values()):
                self._send(broker, link, event)
        for s, types in sorted(broker.routes.get(LOCAL, {}).items()):
            if event.topic not in types or s in self.gone:
                continue
            cut = self.cuts[s]
            start = cut.get(event.publisher)
            if start is None:
                self.stats.discarded += 1
                continue
            if start == MARK:
                cut[event.publisher] = event.seq
            assert self._notify is not None and self._network is not None
            self.first_delivery.setdefault(s, self._network.now)
            self._notify(s, event.event_id, event.topic)
