"""Atoms (and ingress-only sequencers) as entities on the network.

An atom holds one counter shared by the two groups it sequences, a group-local counter for each
group it is the ingress of, and a forwarding table. Messages of other groups pass through
unstamped: transit is what keeps the undirected graph loop-free. The last atom of a path hands
the message to the notification service, which is not FIFO.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass, field

from faidecs.ordering.atoms.graph import SequencingGraph
from faidecs.ordering.atoms.message import Sequenced
from faidecs.ordering.atoms.overlap import AtomId
from faidecs.ordering.network import Network


def atom_address(epoch: int, atom: AtomId) -> str:
    return f"atoms/e{epoch}/{atom[0]}|{atom[1]}"


def ingress_address(epoch: int, group: str) -> str:
    """The ingress-only sequencer of a group without double overlaps."""
    return f"atoms/e{epoch}/ingress/{group}"


def receiver_address(process: str) -> str:
    return f"atoms/recv/{process}"


def entry_address(graph: SequencingGraph, epoch: int, group: str) -> str:
    """Where publications to ``group`` enter the sequencing network."""
    path = graph.paths[group]
    return atom_address(epoch, path[0]) if path else ingress_address(epoch, group)


@dataclass(slots=True)
class Route:
    stamps: bool  # this atom sequences an overlap of the group
    ingress: bool  # this atom gives the group-local numbers
    next_hop: str | None  # None: hand to distribution


@dataclass(slots=True)
class Sequencer:
    """One atom (``atom`` set) or one ingress-only sequencer (``atom`` None) of one epoch."""

    network: Network
    address: str
    atom: AtomId | None
    routes: dict[str, Route]
    members: Mapping[str, frozenset[str]]
    counter: int = 0
    local: dict[str, int] = field(default_factory=dict)
    stamped: int = 0
    transited: int = 0

    def handle(self, src: str, message: Sequenced) -> None:
        route = self.routes[message.group]
        if route.ingress:
            self.local[message.group] = message.local = self.local.get(message.group, 0) + 1
        if route.stamps and self.atom is not None:
            self.counter += 1
            message.stamps[self.atom] = self.counter
            self.stamped += 1
        else:
            self.transited += 1
        if route.next_hop is not None:
            self.network.send(self.address, route.next_hop, message, entries=message.entries())
            return
        for process in sorted(self.members[message.group]):
            self.network.ens(self.address, receiver_address(process), message, entries=message.entries())


def install(
    network: Network, graph: SequencingGraph, epoch: int, *, hosted: Container[str] | None = None
) -> dict[str, Sequencer]:
    """Create and register the sequencers of ``graph`` for ``epoch``; returns them by address.
    With ``hosted``, only those whose address it holds (the atoms of one process)."""
    nodes: dict[str, Sequencer] = {}

    def node(address: str, atom: AtomId | None) -> Sequencer:
        if address not in nodes:
            nodes[address] = Sequencer(network, address, atom, {}, graph.membership)
            network.listen(address, nodes[address].handle)
        return nodes[address]

    for group, path in graph.paths.items():
        if not path:
            address = ingress_address(epoch, group)
            if hosted is None or address in hosted:
                node(address, None).routes[group] = Route(False, True, None)
            continue
        for i, atom in enumerate(path):
            address = atom_address(epoch, atom)
            if hosted is None or address in hosted:
                nxt = atom_address(epoch, path[i + 1]) if i + 1 < len(path) else None
                node(address, atom).routes[group] = Route(group in atom, i == 0, nxt)
    return nodes
