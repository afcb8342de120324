"""Messages between OS processes: ZeroMQ over TCP, encrypted and authenticated
with CurveZMQ (docs/deploy.md).

Each process binds one ROUTER socket (its inbox) and opens one DEALER socket per peer it sends to.
A link is FIFO while both ends live, as the protocol core assumes (the simulator's links are);
messages queued for a peer that went down are dropped when the coordination service says so
(:meth:`Transport.forget`), as a crash would drop them, and the core resends from its log after the
peer reconnects (``Connect(after)``). Nothing else is resent or deduplicated here: the core's
positions make every stream idempotent.

Security: with :class:`~faidecs.net.certificates.Keys`, the inbox accepts only connections
whose client key is one of the deployment's public keys (a ZAP handler, before any message), and
every received message is attributed to the process that key belongs to. A message that claims
to come from another process (a Publish with another publisher, an Ack for another process...)
is rejected, as are malformed bytes and messages only the coordination service may send. A
rejected message is logged and counted, never raised: one bad peer cannot stop a merger.
"""

from __future__ import annotations

import heapq
import logging
import math
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import zmq
from zmq.auth.thread import ThreadAuthenticator

from faidecs.errors import FaidecsError
from faidecs.net.certificates import Keys
from faidecs.net.codec import MAX_MESSAGE

LOG = logging.getLogger("faidecs.net.transport")
#: Seconds between two log lines for rejections of one kind from one sender (all are counted).
LOG_INTERVAL = 10.0
#: Messages read per poll before the caller gets to run its timers.
MAX_BATCH = 4096
#: First byte of a frame that holds several messages (msgpack never starts an object with 0xc1),
#: each then as a 4-byte big-endian length and its encoding. One frame per destination and loop
#: pass saves ZeroMQ's and CurveZMQ's cost per frame, which is most of a small message's cost.
MANY = b"\xc1"


#: What :meth:`Transport._decode` returns for bytes the codec refused (already counted).
_UNDECODABLE = object()


def _why(exc: BaseException) -> str:
    """A decoding failure in words: the codec's own error says it; anything else is named."""
    return str(exc) if isinstance(exc, FaidecsError) else f"{type(exc).__name__}: {exc}"


class _Authenticator(ThreadAuthenticator):
    """Admits the deployment's keys only, and names a connection by its key's process."""

    def __init__(self, context: zmq.Context[Any], peers: Mapping[bytes, str]):
        super().__init__(context)
        self.peers = dict(peers)

    def curve_user_id(self, client_public_key: bytes) -> str:
        from zmq.utils import z85

        return self.peers.get(z85.encode(client_public_key), "")


class _Known:
    """ZAP callback: is this client key one of the deployment's?"""

    def __init__(self, peers: Mapping[bytes, str]):
        self.peers = peers

    def callback(self, domain: str, key: bytes) -> bool:
        return key in self.peers


class LinkDelay:
    """Emulated one-way delay and jitter on a process's outgoing links, for benchmarks only.

    Where the kernel has no ``sch_netem`` (benchmarks/hosts.py), the delay of a LAN or WAN link is
    emulated here: each outgoing frame is held until its due time,
    ``max(the link's previous due time, now + delay + uniform(0, jitter))``, so a link stays FIFO as
    TCP does under netem, and the node's loop sends it when it is due (:meth:`Transport.release`).
    The jitter is drawn from a generator seeded by ``seed``. Production deployments must not use
    it: it only adds latency. A frame is sent at most one loop pass (about a millisecond) after
    its due time."""

    def __init__(
        self,
        delay_ms: float,
        jitter_ms: float = 0.0,
        seed: int | str = 0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ):
        if not (math.isfinite(delay_ms) and math.isfinite(jitter_ms)) or delay_ms < 0 or jitter_ms < 0:
            raise ValueError(f"link delay {delay_ms} ms and jitter {jitter_ms} ms must be finite and not negative")
        self.delay = delay_ms / 1000
        self.jitter = jitter_ms / 1000
        self.rng = random.Random(seed)
        self.clock = clock
        #: (due, order, link, generation, data, count): due times grow per link, so popping the
        #: heap keeps each link's order (``order`` breaks ties in sending order).
        self.held: list[tuple[float, int, str, int, bytes, int]] = []
        self.last_due: dict[str, float] = {}
        self.generation: dict[str, int] = {}
        self.order = 0

    def hold(self, link: str, data: bytes, count: int) -> float:
        """Queue a frame for ``link``; its due time (the clock's seconds)."""
        due = self.clock() + self.delay + (self.rng.uniform(0, self.jitter) if self.jitter else 0.0)
        due = max(due, self.last_due.get(link, due))
        self.last_due[link] = due
        self.order += 1
        heapq.heappush(self.held, (due, self.order, link, self.generation.get(link, 0), data, count))
        return due

    def due(self) -> list[tuple[str, bytes, int]]:
        """The frames due now, in due order (per link, in the order they were held)."""
        out = []
        now = self.clock()
        while self.held and self.held[0][0] <= now:
            _, _, link, generation, data, count = heapq.heappop(self.held)
            if generation == self.generation.get(link, 0):
                out.append((link, data, count))
        return out

    def wait_ms(self) -> int:
        """Milliseconds until the next frame is due (rounded up); a large number when none is held."""
        if not self.held:
            return 1 << 30
        return max(0, math.ceil((self.held[0][0] - self.clock()) * 1000))

    def forget(self, link: str) -> None:
        """Drop what is held for ``link`` (its peer went down)."""
        self.generation[link] = self.generation.get(link, 0) + 1
        self.last_due.pop(link, None)

    @property
    def held_frames(self) -> int:
        """Frames held (those of forgotten links included until their due time)."""
        return len(self.held)


class Codec(Protocol):
    """How a transport turns messages into bytes and back, and which decoded messages it refuses.

    ``decode`` is the gate for a peer's bytes: it raises ``error`` for anything malformed;
    ``screen`` says why ``sender``'s bytes are not even decoded, and ``refuse`` why the
    authenticated ``sender`` may not send the decoded ``msg``, both as (kind, reason)."""

    @property
    def error(self) -> type[Exception]: ...

    def encode(self, msg: Any) -> bytes: ...

    def decode(self, data: bytes) -> Any: ...

    def screen(self, sender: str, data: bytes) -> tuple[str, str] | None: ...

    def refuse(self, sender: str, msg: Any) -> tuple[str, str] | None: ...


class Transport:
    """One process's links: ``send`` to a peer by name, ``receive`` what arrived."""

    def __init__(
        self,
        process: str,
        bind: str,
        addresses: Mapping[str, str],
        keys: Keys | None,
        *,
        context: zmq.Context[Any] | None = None,
        codec: Codec,
        delay: LinkDelay | None = None,
    ):
        """``delay``: hold every outgoing frame for an emulated link delay (benchmarks only; the
        caller's loop must call :meth:`release`)."""
        self.process = process
        self.delay = delay
        self.codec = codec
        self.addresses = dict(addresses)
        self.keys = keys
        self.own_context = context is None
        self.context: zmq.Context[Any] = context or zmq.Context()
        self.rejected: Counter[str] = Counter()
        #: The same, by (kind, sender): who sends what is refused. An unauthenticated sender is "".
        self.rejected_from: Counter[tuple[str, str]] = Counter()
        self._logged: dict[tuple[str, str], tuple[float, int]] = {}
        self.sent = 0
        self.received = 0
        self.auth: _Authenticator | None = None
        self.inbox = self.context.socket(zmq.ROUTER)
        self.inbox.setsockopt(zmq.LINGER, 0)
        self.inbox.setsockopt(zmq.RCVHWM, 0)
        self.inbox.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE)
        if keys is None:
            # Without keys a peer is named by its routing id. A peer that forgot us (we were
            # thought down) connects again under the same id while our side may still hold its
            # old connection: the new one must take over, or all it sends is dropped for good.
            # With keys, routing ids are ZeroMQ's own, one per connection (a peer is named by its
            # key), so no member can take over another's link by claiming its name.
            self.inbox.setsockopt(zmq.ROUTER_HANDOVER, 1)
        if keys is not None:
            self.auth = _Authenticator(self.context, keys.peers)
            self.auth.start()
            self.auth.configure_curve_callback("*", credentials_provider=_Known(keys.peers))
            self.inbox.curve_secretkey = keys.secret
            self.inbox.curve_publickey = keys.public
            self.inbox.curve_server = True
        self.inbox.bind(bind)
        self.outs: dict[str, zmq.Socket[Any]] = {}

    @property
    def endpoint(self) -> str:
        """The bound address (with the port the system chose for ``tcp://host:*``)."""
        return str(self.inbox.getsockopt_string(zmq.LAST_ENDPOINT))

    def send(self, dst: str, msg: Any) -> None:  # a message of the codec's
        sock = self.outs.get(dst)
        if sock is None:
            sock = self.outs[dst] = self._connect(dst)
        # No high-water mark on the link: a slow peer's queue grows rather than messages being
        # dropped, which the protocol would not notice; a peer that is down is forgotten instead.
        self._put(sock, dst, self.codec.encode(msg), 1)

    def send_many(self, dst: str, msgs: list[Any], encoded: dict[int, bytes] | None = None) -> None:
        """Send messages to one peer in one frame, in order. ``encoded``: bytes of messages
        already encoded, by ``id`` of the message (one sent to several peers is encoded once);
        what this encodes is added to it."""
        if not msgs:
            return
        sock = self.outs.get(dst)
        if sock is None:
            sock = self.outs[dst] = self._connect(dst)
        memo: dict[int, bytes] = {} if encoded is None else encoded
        datas = []
        for msg in msgs:
            data = memo.get(id(msg))
            if data is None:
                data = memo[id(msg)] = self.codec.encode(msg)
            datas.append(data)
        if len(datas) == 1:
            self._put(sock, dst, datas[0], 1)
            return
        parts = [MANY]
        for data in datas:
            parts += (len(data).to_bytes(4, "big"), data)
        self._put(sock, dst, b"".join(parts), len(msgs))

    def _put(self, sock: zmq.Socket[Any], dst: str, data: bytes, count: int) -> None:
        if self.delay is not None:
            self.delay.hold(dst, data, count)
            return
        self._out(sock, dst, data, count)

    def release(self) -> None:
        """Send the held frames that are due (with a :class:`LinkDelay`)."""
        if self.delay is None:
            return
        for dst, data, count in self.delay.due():
            sock = self.outs.get(dst)
            if sock is None:
                sock = self.outs[dst] = self._connect(dst)
            self._out(sock, dst, data, count)

    def _out(self, sock: zmq.Socket[Any], dst: str, data: bytes, count: int) -> None:
        try:
            sock.send(data, zmq.NOBLOCK)
        except zmq.Again:
            # The link refused it (e.g. the peer runs without keys while we use them): the message
            # is lost as if the peer were down; counted and logged, and the link starts anew.
            self.rejected["unsendable"] += count
            LOG.warning("%s could not send %d message(s) to %s", self.process, count, dst)
            self.forget(dst)
            return
        self.sent += count

    def _connect(self, dst: str) -> zmq.Socket[Any]:
        address = self.addresses.get(dst)
        if address is None:
            raise ValueError(f"{self.process} has no address for process {dst}")
        sock: zmq.Socket[Any] = self.context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, 0)
        sock.setsockopt(zmq.RECONNECT_IVL, 50)
        sock.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
        if self.keys is None:
            sock.setsockopt(zmq.ROUTING_ID, self.process.encode())
        else:
            sock.curve_secretkey = self.keys.secret
            sock.curve_publickey = self.keys.public
            sock.curve_serverkey = self.keys.public_key_of(dst)
        sock.connect(address)
        return sock

    def forget(self, peer: str) -> None:
        """Drop the link to a peer that went down, with whatever was queued for it."""
        sock = self.outs.pop(peer, None)
        if sock is not None:
            sock.close(linger=0)
        if self.delay is not None:
            self.delay.forget(peer)

    def receive(self, timeout_ms: int) -> list[tuple[str, Any]]:
        """Messages that arrived within ``timeout_ms`` (at most :data:`MAX_BATCH`), each with the
        process it comes from; rejected ones are logged and counted in :attr:`rejected`."""
        out: list[tuple[str, Any]] = []
        if not self.inbox.poll(timeout_ms):
            return out
        while len(out) < MAX_BATCH:
            try:
                frames = self.inbox.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                break
            out += self._accept(frames)
        return out

    def _accept(self, frames: list[Any]) -> list[tuple[str, Any]]:
        if len(frames) != 2:
            self._reject("frames", f"{len(frames)} frames, expected 2")
            return []
        payload = frames[1]
        if self.keys is not None:
            sender = payload.get("User-Id")  # set by the authenticator from the client's key
        else:
            sender = bytes(frames[0].buffer).decode("utf-8", "replace")
            if sender not in self.addresses:
                self._reject("unknown", f"from an unknown process {sender!r}")
                return []
        data = bytes(payload.buffer)
        if not data.startswith(MANY):
            got = self._message(sender, data)
            return [got] if got is not None else []
        if len(data) == len(MANY):
            self._reject("malformed", f"from {sender}: a frame of several messages holds none", sender)
            return []
        out = []
        at = 1
        while at < len(data):
            size = int.from_bytes(data[at : at + 4], "big")
            if at + 4 + size > len(data) or size == 0:
                self._reject(
                    "malformed", f"from {sender}: a frame of several messages is cut short at byte {at}", sender
                )
                break  # what came before was whole; what follows cannot be framed
            # The rest of a frame is not read after an undecodable part: a frame of a million
            # one-byte bad messages would otherwise cost a million decodings.
            msg = self._decode(sender, data[at + 4 : at + 4 + size], "; the rest of its frame is dropped")
            if msg is _UNDECODABLE:
                break
            got = self._admit(sender, msg)
            if got is not None:
                out.append(got)
            at += 4 + size
        return out

    def _message(self, sender: str, data: bytes) -> tuple[str, Any] | None:
        msg = self._decode(sender, data)
        return None if msg is _UNDECODABLE else self._admit(sender, msg)

    def _decode(self, sender: str, data: bytes, after: str = "") -> Any:
        """The codec's message in ``data``, or :data:`_UNDECODABLE` after counting the rejection."""
        try:
            screened = self.codec.screen(sender, data)
            if screened is not None:
                self._reject(screened[0], screened[1] + after, sender)
                return _UNDECODABLE
            return self.codec.decode(data)
        except Exception as exc:  # noqa: BLE001 - a peer's bytes: counted, never raised
            self._reject("malformed", f"from {sender}: {_why(exc)}{after}", sender)
            return _UNDECODABLE

    def _admit(self, sender: str, msg: Any) -> tuple[str, Any] | None:
        refused = self.codec.refuse(sender, msg)
        if refused is not None:
            self._reject(*refused, sender)
            return None
        self.received += 1
        return sender, msg

    def _reject(self, kind: str, why: str, sender: str = "") -> None:
        """Count a rejection by kind and by sender, and log it unless one of the same kind from the
        same sender was logged less than :data:`LOG_INTERVAL` seconds ago: a peer that sends
        200,000 bad messages gets a few lines, each saying how many went unlogged before it."""
        self.rejected[kind] += 1
        self.rejected_from[(kind, sender)] += 1
        key = (kind, sender)
        now = time.monotonic()
        last, quiet = self._logged.get(key, (-LOG_INTERVAL, 0))
        if now - last < LOG_INTERVAL:
            self._logged[key] = (last, quiet + 1)
            return
        self._logged[key] = (now, 0)
        more = f" (and {quiet} more like it since the last report)" if quiet else ""
        LOG.warning("%s rejected a message: %s%s", self.process, why, more)

    def close(self) -> None:
        for sock in self.outs.values():
            sock.close(linger=0)
        self.outs.clear()
        self.inbox.close(linger=0)
        if self.auth is not None:
            self.auth.stop()
        if self.own_context:  # a caller's context is the caller's to end
            self.context.term()


__all__ = ["MAX_MESSAGE", "Codec", "LinkDelay", "Transport"]
