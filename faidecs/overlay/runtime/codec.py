"""The overlay's messages on a :class:`~faidecs.net.transport.Transport`: how they become bytes
(:mod:`faidecs.overlay.runtime.wire`), and which senders may send which messages."""

from __future__ import annotations

from collections.abc import Iterable

from faidecs.overlay.core.messages import (
    Ack,
    Connect,
    Disconnect,
    Down,
    EpochQuery,
    EpochState,
    Holds,
    JoinRequest,
    JoinState,
    LeaderChange,
    Message,
    Publish,
    Up,
)
from faidecs.overlay.runtime import wire
from faidecs.overlay.runtime.wire import WireError


def claimed_sender(msg: Message) -> str | None:
    """The process a message says it comes from, where it says one."""
    if isinstance(msg, Publish):
        return msg.publisher
    if isinstance(msg, (Connect, Disconnect, Ack)):
        return msg.process
    if isinstance(msg, (Holds, EpochState)):
        return msg.replica
    if isinstance(msg, JoinRequest):
        return msg.joiner
    if isinstance(msg, EpochQuery):
        return msg.leader  # the replica answering adopts it as its leader
    if isinstance(msg, JoinState):
        return msg.peer
    return None


class OverlayCodec:
    """The overlay's messages (:mod:`faidecs.overlay.runtime.wire`): only the coordination service sends
    LeaderChange, Down and Up, and no message may claim another sender than its connection's."""

    error = WireError

    @staticmethod
    def encode(msg: Message) -> bytes:
        return wire.encode(msg)

    @staticmethod
    def decode(data: bytes) -> Message:
        return wire.decode(data)

    @staticmethod
    def refuse(sender: str, msg: Message) -> tuple[str, str] | None:
        if isinstance(msg, (LeaderChange, Down, Up)):
            return "coordination", f"from {sender}: {type(msg).__name__} comes only from the coordination service"
        claimed = claimed_sender(msg)
        if claimed is not None and claimed != sender:
            return "impersonation", f"{type(msg).__name__} from {sender} claims to come from {claimed}"
        return None


OVERLAY_CODEC = OverlayCodec()


class RelayingCodec(OverlayCodec):
    """:class:`OverlayCodec`, except that a ``Publish`` may also come from one of ``relays`` (the
    servers): with UDP publishers, root replicas lose different inputs and answer a peer's
    ``Fetch`` with the ``Publish`` itself (docs/ordering-latch-stage.md). A server may already
    decide any order as a leader; what this adds is that it may hand a peer a publication in a
    publisher's name."""

    def __init__(self, relays: Iterable[str]) -> None:
        self.relays = frozenset(relays)

    def refuse(self, sender: str, msg: Message) -> tuple[str, str] | None:  # type: ignore[override]
        if isinstance(msg, Publish) and sender in self.relays:
            return None
        return OverlayCodec.refuse(sender, msg)


__all__ = ["OVERLAY_CODEC", "OverlayCodec", "RelayingCodec", "claimed_sender"]
