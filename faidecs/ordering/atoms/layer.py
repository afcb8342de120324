"""Sequencing atoms as an ordering layer, with membership changes handled by epochs.

Reconfiguration. The paper only says "global recomputation" and lazy retirement. Here every
membership change closes the current epoch e and opens e + 1 at once; nothing is held:

1. The configuration service (this object: it knows the global membership, as the paper
   assumes) admits each publication into the epoch current at its ``publish`` call and counts
   the admissions per group, so when e closes it knows how many epoch-e messages each group got.
2. It builds the graph of e + 1 from the new membership; its atoms are fresh entities with fresh
   counters. Epoch-e messages keep draining through the old atoms; new publications use the new.
3. It sends each process that takes part in e or e + 1 one :class:`Switch` on a FIFO link: the
   epoch-e counts of its groups and its view of e + 1.
4. A receiver consumes epochs strictly in turn: it finishes e (all counted messages of its groups
   consumed) before it delivers anything of e + 1, buffering early arrivals.

Why this keeps pairwise TNO: inside one epoch the static argument holds (membership is fixed
per epoch and every receiver of an epoch-e message was a member in e); across epochs every
receiver puts all of e before all of e + 1. Liveness: per epoch as in the static case, and an
epoch ends at every receiver because the counts are exact. A joiner is owed exactly the messages
of its topics admitted after its ``subscribe`` call (epochs from the one its call opened); a
leaver is notified of nothing after its ``unsubscribe`` call: it still consumes the remaining
epoch-e messages of the dropped topic, to keep its counters moving, without notifying them.

Costs: one Switch per participating process per change, a global graph recomputation, new
atoms per epoch (old ones idle once drained), and receivers buffer messages of the next epoch
until the previous one drained. Publications are never held. The admission gate is modelled as
instantaneous; a deployment would need the publishers to learn the epoch (e.g. with a lease).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from faidecs.ordering.atoms.graph import BUILDERS, Builder, SequencingGraph
from faidecs.ordering.atoms.message import EpochView, Sequenced, Switch
from faidecs.ordering.atoms.overlap import AtomId, groups_of
from faidecs.ordering.atoms.receiver import Notify, Receiver
from faidecs.ordering.atoms.sequencer import Sequencer, entry_address, install, receiver_address
from faidecs.ordering.layer import OrderingLayer
from faidecs.ordering.network import Network

CONFIG_ADDRESS = "atoms/config"


@dataclass(frozen=True, slots=True)
class JoinPoint:
    """From where a subscriber is owed a topic: every event admitted in ``epoch`` or later, i.e.
    every event published on the topic after the first ``published_before`` ones."""

    epoch: int
    published_before: int


@dataclass(slots=True)
class SequencerLoad:
    stamped: int = 0
    transited: int = 0


def _view(graph: SequencingGraph, process: str) -> EpochView:
    groups = frozenset(g for g, members in graph.membership.items() if process in members)
    atoms = frozenset(a for a, common in graph.overlaps.items() if process in common)
    return EpochView(groups, atoms)


@dataclass(slots=True)
class AtomsLayer:
    """The ``atoms`` ordering layer. ``construction`` names a graph builder (line, compact, skip);
    ``builder`` overrides it (tests build graphs with given paths)."""

    construction: str = "line"
    builder: Builder | None = None
    name: str = "atoms"
    network: Network = field(init=False, default_factory=lambda: Network(random.Random(0)))
    notify: Notify | None = field(init=False, default=None)
    subscriptions: dict[str, frozenset[str]] = field(init=False, default_factory=dict)
    epoch: int = field(init=False, default=0)
    graphs: dict[int, SequencingGraph] = field(init=False, default_factory=dict)
    receivers: dict[str, Receiver] = field(init=False, default_factory=dict)
    sequencers: dict[int, dict[str, Sequencer]] = field(init=False, default_factory=dict)
    admitted: dict[int, dict[str, int]] = field(init=False, default_factory=dict)  # epoch -> group -> count
    published: dict[str, int] = field(init=False, default_factory=dict)  # topic -> publications so far
    epoch_of: dict[str, int] = field(init=False, default_factory=dict)  # event id -> epoch admitted in
    topic_of: dict[str, str] = field(init=False, default_factory=dict)  # event id -> its topic
    joins: dict[tuple[str, str], JoinPoint] = field(init=False, default_factory=dict)
    _headers: list[int] = field(init=False, default_factory=list)

    @property
    def graph(self) -> SequencingGraph:
        return self.graphs[self.epoch]

    def _build(self, membership: Mapping[str, frozenset[str]]) -> SequencingGraph:
        return (self.builder or BUILDERS[self.construction])(membership)

    def _receiver(self, process: str) -> Receiver:
        if process not in self.receivers:
            if self.notify is None:
                raise RuntimeError("the atoms layer was not started")
            self.receivers[process] = Receiver(process, self.notify)
            self.network.listen(receiver_address(process), self.receivers[process].on_message)
        return self.receivers[process]

    def _open(self, epoch: int) -> SequencingGraph:
        graph = self._build(groups_of(self.subscriptions))
        self.graphs[epoch] = graph
        self.sequencers[epoch] = install(self.network, graph, epoch)
        self.admitted[epoch] = {}
        return graph

    # the OrderingLayer protocol

    def start(self, network: Network, subscriptions: dict[str, frozenset[str]], notify: Notify) -> None:
        self.network, self.notify, self.epoch = network, notify, 0
        self.subscriptions = {p: frozenset(t) for p, t in subscriptions.items() if t}
        graph = self._open(0)
        for process, topics in self.subscriptions.items():
            receiver = self._receiver(process)
            receiver.since.update({t: 0 for t in topics})
            receiver.open(0, _view(graph, process))
            for topic in topics:
                self.joins[(process, topic)] = JoinPoint(0, 0)

    def publish(self, publisher: str, event_id: str, topic: str) -> None:
        """Admit ``event_id`` into the current epoch; an event on a topic nobody holds goes nowhere."""
        self.published[topic] = self.published.get(topic, 0) + 1
        self.topic_of[event_id] = topic
        if topic not in self.graph.membership:
            return
        counts = self.admitted[self.epoch]
        counts[topic] = counts.get(topic, 0) + 1
        self.epoch_of[event_id] = self.epoch
        self._headers.append(self.graph.header_size(topic))
        message = Sequenced(event_id, topic, self.epoch)
        self.network.send(publisher, entry_address(self.graph, self.epoch, topic), message)

    def subscribe(self, process: str, topics: frozenset[str]) -> None:
        before = self.subscriptions.get(process, frozenset())
        added = frozenset(topics) - before
        if not added:
            return
        self.subscriptions[process] = before | added
        self._switch()
        receiver = self._receiver(process)
        for topic in added:
            receiver.since[topic] = self.epoch
            self.joins[(process, topic)] = JoinPoint(self.epoch, self.published.get(topic, 0))

    def unsubscribe(self, process: str, topics: frozenset[str]) -> None:
        before = self.subscriptions.get(process, frozenset())
        removed = before & frozenset(topics)
        if not removed:
            return
        for topic in removed:  # local and immediate: nothing of these topics is notified from now on
            self.receivers[process].since.pop(topic, None)
            self.joins.pop((process, topic), None)
        self.subscriptions[process] = before - removed
        if not self.subscriptions[process]:
            del self.subscriptions[process]
        self._switch()

    def _switch(self) -> None:
        old, new = self.graphs[self.epoch], self._open(self.epoch + 1)
        closed, self.epoch = self.epoch, self.epoch + 1
        counts = self.admitted[closed]
        in_old = {p for members in old.membership.values() for p in members}
        in_new = {p for members in new.membership.values() for p in members}
        for process in sorted(in_old | in_new):
            self._receiver(process)
            view = _view(old, process)
            switch = Switch(
                closed if process in in_old else None,
                {g: counts.get(g, 0) for g in view.groups},
                self.epoch if process in in_new else None,
                _view(new, process) if process in in_new else None,
            )
            self.network.send(CONFIG_ADDRESS, receiver_address(process), switch)

    def pending(self) -> dict[str, list[str]]:
        return {p: r.pending() for p, r in sorted(self.receivers.items()) if r.pending()}

    def header_sizes(self) -> list[int]:
        return list(self._headers)

    # joins, load and paths, for harnesses and benchmarks

    def joined_at(self, process: str, topic: str) -> JoinPoint | None:
        """Where ``process``'s current subscription to ``topic`` starts; None if it holds none."""
        return self.joins.get((process, topic))

    def owes(self, process: str, event_id: str) -> bool:
        """Whether ``process``, as subscribed now, is owed ``event_id``: it holds the event's topic
        and the event was admitted in the epoch of that subscription or later."""
        point = self.joins.get((process, self.topic_of[event_id]))
        epoch = self.epoch_of.get(event_id)
        return point is not None and epoch is not None and epoch >= point.epoch

    def atom_load(self) -> dict[AtomId, SequencerLoad]:
        """Messages each atom stamped and transited, summed over epochs."""
        load: dict[AtomId, SequencerLoad] = {}
        for nodes in self.sequencers.values():
            for node in nodes.values():
                if node.atom is not None:
                    entry = load.setdefault(node.atom, SequencerLoad())
                    entry.stamped += node.stamped
                    entry.transited += node.transited
        return load

    def node_load(self, placement: Mapping[AtomId, int]) -> dict[int, int]:
        """Messages handled (stamped or transited) per sequencing node, for a placement atom -> node."""
        totals: dict[int, int] = {}
        for atom, entry in self.atom_load().items():
            node = placement[atom]
            totals[node] = totals.get(node, 0) + entry.stamped + entry.transited
        return totals

    def path_lengths(self) -> dict[str, int]:
        """Atoms on each group's path in the current epoch (0: an ingress-only sequencer)."""
        return {g: len(p) for g, p in self.graph.paths.items()}


def _conforms(layer: AtomsLayer) -> OrderingLayer:
    return layer  # mypy checks that AtomsLayer implements the protocol
