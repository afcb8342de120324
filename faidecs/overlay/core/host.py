"""A server process's merger replicas, and which of them a message is for.

The simulator and the real runtime (:mod:`faidecs.overlay.runtime.node`) route messages the same way: a
stream of a parent merger (``Forward``, ``ForwardBatch``) goes to the child replica whose consumer key it names;
session news (``Down``/``Up``) goes to every replica; anything else to the replica of the role it
names (a publication: the root role of its event's type).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from faidecs.merging.roles import Role, role_name, role_of
from faidecs.overlay.core.messages import Down, Forward, ForwardBatch, Message, Publish, Send, Up
from faidecs.overlay.core.replica import MergerReplica, ProtocolError


class ServerHost:
    def __init__(self, process: str, replicas: Mapping[Role, MergerReplica], root: Callable[[str], Role] | None = None):
        """``root``: the role a publication of a type goes to (the type's root merger, or the
        sequencer of a baseline deployment)."""
        self.process = process
        self.root = root or (lambda t: role_of([t]))
        self.replicas = dict(replicas)
        self.by_key = {r.key: r for r in self.replicas.values()}

    def start(self, now: int) -> list[Send]:
        out: list[Send] = []
        for replica in self.replicas.values():
            out += replica.start(now)
        return out

    def handle(self, src: str, msg: Message, now: int) -> list[Send]:
        """The replies to one message; :class:`ProtocolError` if no replica here takes it."""
        if isinstance(msg, (Down, Up)):
            out: list[Send] = []
            for replica in self.replicas.values():
                out += replica.handle(src, msg, now)
            return out
        if isinstance(msg, (Forward, ForwardBatch)):
            child = self.by_key.get(msg.consumer)
            if child is None:
                raise ProtocolError(
                    f"{self.process} got a stream of {role_name(msg.role)} for {msg.consumer}, which it does not host"
                )
            return child.handle(src, msg, now)
        role = self.root(msg.event.type) if isinstance(msg, Publish) else getattr(msg, "role", None)
        target = self.replicas.get(role) if role is not None else None
        if target is None:
            raise ProtocolError(f"{self.process} got {type(msg).__name__} for a role it does not host")
        return target.handle(src, msg, now)

    def flush(self, now: int) -> list[Send]:
        """Every replica's batch (:meth:`MergerReplica.flush`)."""
        out: list[Send] = []
        for replica in self.replicas.values():
            out += replica.flush(now)
        return out

    def tick(self, now: int) -> list[Send]:
        out: list[Send] = []
        for replica in self.replicas.values():
            out += replica.tick(now)
        return out


__all__ = ["ServerHost"]
