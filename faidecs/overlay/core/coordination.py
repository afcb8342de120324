"""Replica leadership and epochs: what the overlay asks of a coordination service.

The core never elects a leader itself. A coordination service (ZooKeeper in the real runtime,
:mod:`faidecs.overlay.runtime.zkcoordination`; :class:`SimulatedCoordination` in the simulator) keeps one
session per process, and for each merger role its leader and epoch. When a leader's session
expires (the process crashed, or paused longer than the session timeout) the service makes
another live replica leader with a higher epoch (the simulated service: the next in placement
order; ZooKeeper: the one that registered first), and notifies the role's replicas; it tells
every process whose session expired or came back (``Down``/``Up``), as watches on ephemeral nodes
would. Epochs only grow, so every decision can be judged against the epoch it carries.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from faidecs.merging.roles import Role
from faidecs.overlay.core.messages import Down, LeaderChange, Message, Up
from faidecs.overlay.core.replica import Placement

#: (process to notify, notification)
Notification = tuple[str, Message]


class Coordination(Protocol):
    def leadership(self) -> dict[Role, tuple[str, int]]: ...

    def session_lost(self, process: str) -> list[Notification]: ...

    def session_back(self, process: str) -> list[Notification]: ...


class SimulatedCoordination:
    """The service's contract, kept in memory: sessions, and per role (leader, epoch)."""

    def __init__(self, roles: Iterable[Role], placement: Placement, processes: Iterable[str]):
        self.placement = placement
        self.processes = sorted(processes)
        self.expired: set[str] = set()
        self.leaders: dict[Role, tuple[str, int]] = {}
        self.roles = sorted(roles)

    def start(self) -> list[Notification]:
        out: list[Notification] = []
        for role in self.roles:
            out += self._elect(role)
        return out

    def leadership(self) -> dict[Role, tuple[str, int]]:
        return dict(self.leaders)

    def _elect(self, role: Role) -> list[Notification]:
        live = [p for p in self.placement(role) if p not in self.expired]
        if not live:
            return []  # no replica to lead: elected when one comes back
        epoch = self.leaders.get(role, ("", 0))[1] + 1
        self.leaders[role] = (live[0], epoch)
        return [(p, LeaderChange(role, live[0], epoch)) for p in self.placement(role)]

    def session_lost(self, process: str) -> list[Notification]:
        if process in self.expired:
            return []
        self.expired.add(process)
        out: list[Notification] = [(p, Down(process)) for p in self.processes if p != process]
        for role in self.roles:
            leader = self.leaders.get(role)
            if leader is not None and leader[0] == process:
                out += self._elect(role)
        return out

    def session_back(self, process: str) -> list[Notification]:
        if process not in self.expired:
            return []
        self.expired.discard(process)
        # The process itself hears that it had lost its session: others dropped its links.
        out: list[Notification] = [(p, Up(process)) for p in self.processes]
        for role in self.roles:
            leader = self.leaders.get(role)
            if process in self.placement(role) and (leader is None or leader[0] in self.expired):
                out += self._elect(role)
        return out


__all__ = ["Coordination", "Notification", "SimulatedCoordination"]
