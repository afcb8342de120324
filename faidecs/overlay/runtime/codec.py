"""The overlay's messages on a :class:`~faidecs.net.transport.Transport`: how they become bytes
(:mod:`faidecs.overlay.runtime.wire`), and which senders may send which messages
(:mod:`faidecs.overlay.core.authority`).

A deployment's process checks a peer's bytes in three steps, each cheaper than the next is
dear: :meth:`OverlayCodec.screen` reads the message kind off the head and refuses a kind the
sender may not send this process at all, or one larger than its kind ever is (:func:`max_bytes`),
before anything is decoded; :meth:`~OverlayCodec.decode` decodes it against the deployment's own
roles and types (:class:`~faidecs.overlay.runtime.wire.Declared`); :meth:`~OverlayCodec.refuse`
checks what it says against who sent it.
"""

from __future__ import annotations

from faidecs.overlay.core.authority import Authority, Refusal
from faidecs.overlay.core.messages import (
    Ack,
    Connect,
    Decide,
    Disconnect,
    Down,
    EpochQuery,
    EpochState,
    Fetch,
    Forward,
    ForwardBatch,
    Holds,
    JoinRequest,
    JoinState,
    LeaderChange,
    MarkerRequest,
    Message,
    NewLog,
    Ordered,
    Publish,
    Register,
    Up,
)
from faidecs.overlay.runtime import wire
from faidecs.overlay.runtime.wire import WireError

#: Bytes a filter may add to a message (:func:`max_bytes`), and the most any other small message takes.
FILTER_BYTES = 4 << 20
SMALL = 64 << 10
_WITH_EVENT = (Publish,)
_WITH_FILTER = (Forward, Register, MarkerRequest)
#: A batch of decisions or stream positions is bounded by the transport's largest message (its
#: sender keeps it so: Deployment.max_batch), like a log.
_WHOLE = (EpochState, NewLog, JoinState, Decide, ForwardBatch, Ordered)


def max_bytes(kind: type, max_event: int, max_message: int) -> int:
    """The largest message of ``kind`` a process decodes, in bytes: a publication (its event) up
    to ``max_event`` (the deployment's ``max_event_bytes``), a message with a filter up to
    :data:`FILTER_BYTES` more, a replica's log, a batch of its decisions or stream positions and
    a subscriber's state up to ``max_message`` (the transport's limit), anything else
    :data:`SMALL`. A larger one is refused unread."""
    if kind in _WITH_EVENT:
        return max_event
    if kind in _WITH_FILTER:
        return max_event + FILTER_BYTES
    if kind in _WHOLE:
        return max_message
    return SMALL


#: The field naming the process a message of each kind says it comes from (an EpochQuery's leader:
#: the replica answering adopts it as its leader).
_CLAIMS: dict[type, str] = {Publish: "publisher", Fetch: "replica", JoinRequest: "joiner", JoinState: "peer"}
_CLAIMS.update(dict.fromkeys((Connect, Disconnect, Ack, MarkerRequest), "process"))
_CLAIMS.update({Holds: "replica", EpochState: "replica", EpochQuery: "leader"})
_COORDINATION = frozenset({LeaderChange, Down, Up})


def oversized(message: Publish, limit: int) -> str | None:
    """Why the servers would refuse ``message`` unread (larger than the deployment's
    ``max_event_bytes``); None when they decode it. A publisher stops at such an event, as at an
    invalid one, rather than publish what would be lost."""
    size = len(wire.encode(message))
    return None if size <= limit else too_large(message.event.id, size, limit)


def too_large(event_id: str, size: int, limit: int) -> str:
    """Why an event's publication of ``size`` bytes is refused (:func:`oversized`)."""
    return f"event {event_id} takes {size} bytes on the wire, more than max_event_bytes = {limit}"


def claimed_sender(msg: Message) -> str | None:
    """The process a message says it comes from, where it says one."""
    field = _CLAIMS.get(type(msg))
    return getattr(msg, field) if field is not None else None


class OverlayCodec:
    """The overlay's messages. Without an ``authority`` (tools, tests): any well-formed message,
    except that only the coordination service sends LeaderChange, Down and Up, and no message may
    claim another sender than its connection's. With one (a deployment's process): also each
    kind only from the processes whose role sends it, no larger than its kind, and of the
    deployment's roles and types (``decoder``)."""

    error = WireError

    def __init__(
        self,
        authority: Authority | None = None,
        decoder: wire.Declared | None = None,
        *,
        max_event: int = 1 << 20,
        max_message: int = 256 << 20,
    ):
        self.authority = authority
        self._decode = decoder.decode if decoder is not None else wire.decode
        self.limits = {kind: max_bytes(kind, max_event, max_message) for kind in wire.CODES}

    @staticmethod
    def encode(msg: Message) -> bytes:
        return wire.encode(msg)

    def decode(self, data: bytes) -> Message:
        return self._decode(data)

    def screen(self, sender: str, data: bytes) -> Refusal | None:
        """Why ``data`` from ``sender`` is not even decoded (its kind, read off its head, is
        too large or not for this sender to send); None when it is decoded."""
        kind = wire.kind_of(data)
        if kind is None:
            return None  # decoding says what is wrong with it
        limit = self.limits[kind]
        if len(data) > limit:
            return "oversized", f"from {sender}: a {kind.__name__} of {len(data)} bytes (at most {limit})"
        authority = self.authority
        if authority is not None and kind not in _COORDINATION and not authority.may_send(sender, kind):
            return "unauthorised", f"{sender} may not send {kind.__name__} to {authority.me}"
        return None

    def refuse(self, sender: str, msg: Message) -> Refusal | None:
        """Why the authenticated ``sender`` may not send ``msg``; None when it may."""
        kind = type(msg)
        if kind in _COORDINATION:
            return "coordination", f"from {sender}: {kind.__name__} comes only from the coordination service"
        authority = self.authority
        claimed = claimed_sender(msg)
        # A replica answers a peer's Fetch with the publication itself, in its publisher's name
        # (the authority checks that it is a replica of the publication's root role).
        relayed = kind is Publish and authority is not None and sender in authority.servers
        if claimed is not None and claimed != sender and not relayed:
            return "impersonation", f"{kind.__name__} from {sender} claims to come from {claimed}"
        return authority.refuse(sender, msg) if authority is not None else None


OVERLAY_CODEC = OverlayCodec()

__all__ = [
    "FILTER_BYTES",
    "OVERLAY_CODEC",
    "SMALL",
    "OverlayCodec",
    "claimed_sender",
    "max_bytes",
    "oversized",
    "too_large",
]
