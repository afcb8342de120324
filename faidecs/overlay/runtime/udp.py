"""Publishers that reach the root mergers over UDP (``[publishers.X] transport = "udp"``), with the
latch-time FIFO stage in front of the root replicas (docs/ordering-latch-stage.md).

A datagram carries one ``Publish`` for one replica of the event's root merger, stamped for that
root (:class:`~faidecs.overlay.core.inputstage.InputStamper`: a channel seq per (publisher, root role),
the departure time and the previous one's, in the publisher's wall clock, ms)::

    "FDU2" | len(sender) (1 byte) | sender (UTF-8) | nonce (12 bytes) | ciphertext
    nonce     = the pair's counter (96-bit big-endian): strictly increasing per (publisher, server)
    plaintext = channel seq (u64) | departure (f64) | prev_departure (f64, NaN: none) | wire.encode(Publish)

sealed with ChaCha20-Poly1305 under a key of the pair (publisher, server), with
``"FDU2" | deployment name | 0 | sender | 0 | receiver`` as associated data. ("FDU1" had a random
nonce; its datagrams are refused as malformed.) The key
(:func:`pair_key`) is HKDF-SHA256 of the X25519 agreement between the two processes' CurveZMQ key
pairs (the deployment's ``keys`` folder: a Curve25519 key pair per process), so only the publisher
and that server can make or read it; holding ``keys/public`` is not enough. With ``insecure =
true`` the key comes from the deployment's name alone (anyone can forge: tests only).

Whatever fails to open (unknown sender, wrong key, tampered bytes) or to decode, whatever names
a publisher other than the sender, a sender that is not a UDP publisher, or a root this server
does not host, is counted (``udp-auth``, ``udp-malformed``, ``udp-refused``) and dropped.

Replays (RFC 4303 section 3.4.3, RFC 6347 section 4.1.2.6): the nonce is a counter, so a receiver
keeps, per publisher, the highest counter that authenticated and a bitmap of the
:data:`WINDOW` below it (:class:`ReplayWindow`); a datagram whose counter it has seen
(``udp-replayed``) or that is :data:`WINDOW` or more below the highest (``udp-too-old``) is counted
and dropped. The window moves only for a datagram that authenticated. The publisher's counter
(:class:`NonceCounter`) starts, in each incarnation, above every counter an earlier one used.
"""

from __future__ import annotations

import logging
import math
import os
import random
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from faidecs.errors import FaidecsError
from faidecs.ordering.latch.stamp import Stamp
from faidecs.overlay.core.inputstage import InputStage, InputStamper, Latched, latch_config
from faidecs.overlay.core.messages import Message, Publish
from faidecs.overlay.runtime import wire

if TYPE_CHECKING:
    from faidecs.net.certificates import Keys
    from faidecs.overlay.runtime.deployment import Deployment

LOG = logging.getLogger("faidecs.overlay.runtime.udp")

MAGIC = b"FDU2"
NONCE = 12
#: how far below the highest counter seen a datagram may still arrive (a reordering), in datagrams
WINDOW = 1024
_STAMP = struct.Struct(">Qdd")
#: the largest datagram read (a Publish larger than this cannot be sent over UDP)
MAX_DATAGRAM = 65507


class UdpError(FaidecsError):
    """A datagram that is dropped: ``kind`` is the rejected counter it goes to."""

    def __init__(self, kind: str, why: str) -> None:
        super().__init__(why)
        self.kind = kind


def pair_key(deployment: Deployment, keys: Keys | None, me: str, peer: str, publisher: str, server: str) -> bytes:
    """The 32-byte key of the pair (``publisher``, ``server``), computed at ``me`` (one of the
    two) from its own secret key and ``peer``'s public key: X25519, then HKDF-SHA256."""
    info = b"faidecs udp v2\0" + deployment.name.encode() + b"\0" + publisher.encode() + b"\0" + server.encode()
    if keys is None:
        shared = b""  # insecure = true: the name alone (no protection)
    else:
        import zmq.utils.z85 as z85

        own = X25519PrivateKey.from_private_bytes(z85.decode(keys.secret))
        other = X25519PublicKey.from_public_bytes(z85.decode(keys.public_key_of(peer)))
        shared = own.exchange(other)
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"faidecs udp", info=info).derive(shared)


def _aad(deployment_name: str, sender: str, receiver: str) -> bytes:
    return MAGIC + deployment_name.encode() + b"\0" + sender.encode() + b"\0" + receiver.encode()


def seal(
    key: bytes, deployment_name: str, sender: str, receiver: str, stamp: Stamp, publish: Publish, counter: int
) -> bytes:
    """``publish`` stamped with ``stamp``, sealed for ``receiver`` with ``counter`` as the nonce:
    the caller's (:class:`NonceCounter`), never used before with ``key``."""
    prev = math.nan if stamp.prev_departure is None else stamp.prev_departure
    plain = _STAMP.pack(stamp.seq, stamp.departure, prev) + wire.encode(publish)
    nonce = counter.to_bytes(NONCE, "big")
    name = sender.encode()
    sealed = ChaCha20Poly1305(key).encrypt(nonce, plain, _aad(deployment_name, sender, receiver))
    return MAGIC + bytes([len(name)]) + name + nonce + sealed


def sender_of(data: bytes) -> str:
    """The sender a datagram claims (not yet authenticated)."""
    if len(data) < 5 or data[:4] != MAGIC:
        raise UdpError("udp-malformed", "not a faidecs UDP datagram")
    n = data[4]
    try:
        return data[5 : 5 + n].decode("utf-8")
    except UnicodeDecodeError:
        raise UdpError("udp-malformed", "a sender name that is not UTF-8") from None


def unseal(key: bytes, deployment_name: str, receiver: str, data: bytes) -> tuple[str, int, bytes]:
    """The sender, counter and plaintext of a datagram sealed with ``key``, once it authenticates
    (the counter is the nonce, so it is authenticated too); :class:`UdpError` otherwise."""
    sender = sender_of(data)
    at = 5 + data[4]
    nonce, sealed = data[at : at + NONCE], data[at + NONCE :]
    if len(nonce) != NONCE:
        raise UdpError("udp-malformed", f"from {sender}: cut short")
    try:
        plain = ChaCha20Poly1305(key).decrypt(nonce, sealed, _aad(deployment_name, sender, receiver))
    except InvalidTag:
        raise UdpError("udp-auth", f"from {sender!r}: does not authenticate") from None
    return sender, int.from_bytes(nonce, "big"), plain


def _parse(sender: str, plain: bytes, decode: Callable[[bytes], Message]) -> tuple[Stamp, Publish]:
    if len(plain) < _STAMP.size:
        raise UdpError("udp-malformed", f"from {sender}: no stamp")
    seq, departure, prev = _STAMP.unpack_from(plain)
    if not math.isfinite(departure) or not (math.isfinite(prev) or math.isnan(prev)):
        raise UdpError("udp-malformed", f"from {sender}: a stamp with no time")
    try:
        msg = decode(plain[_STAMP.size :])
    except wire.WireError as exc:
        raise UdpError("udp-malformed", f"from {sender}: {exc}") from None
    if not isinstance(msg, Publish):
        raise UdpError("udp-refused", f"from {sender}: a {type(msg).__name__}, not a Publish")
    if msg.publisher != sender:
        raise UdpError("udp-refused", f"from {sender}: a publication of {msg.publisher}")
    return Stamp(sender, seq, departure, None if math.isnan(prev) else prev), msg


def open_sealed(
    key: bytes, deployment_name: str, receiver: str, data: bytes, decode: Callable[[bytes], Message] = wire.decode
) -> tuple[str, Stamp, Publish]:
    """The sender, stamp and message of a datagram sealed with ``key``; :class:`UdpError` otherwise.
    ``decode``: the deployment's (:class:`~faidecs.overlay.runtime.wire.Declared`) at a server.
    No replay check: that is the receiver's (:class:`ReplayWindow`)."""
    sender, _, plain = unseal(key, deployment_name, receiver, data)
    stamp, msg = _parse(sender, plain, decode)
    return sender, stamp, msg


class ReplayWindow:
    """The anti-replay window of one (publisher, server) pair at the server (RFC 4303 section
    3.4.3): the highest counter that authenticated, and a bitmap of which of the ``size``
    counters up to it did (bit ``i``: ``top - i``). Nothing seen yet: every counter is new."""

    __slots__ = ("bits", "size", "top")

    def __init__(self, size: int = WINDOW) -> None:
        self.size = size
        self.top = -1
        self.bits = 0

    def check(self, counter: int) -> str | None:
        """Why ``counter`` is refused (``udp-replayed``, ``udp-too-old``), None if it is new.
        Changes nothing: call :meth:`mark` once the datagram authenticated."""
        if counter > self.top:
            return None
        behind = self.top - counter
        if behind >= self.size:
            return "udp-too-old"
        if self.bits >> behind & 1:
            return "udp-replayed"
        return None

    def mark(self, counter: int) -> None:
        """``counter`` authenticated and was accepted: seen from now on."""
        if counter > self.top:
            shift = counter - self.top
            self.bits = ((self.bits << shift) | 1) & ((1 << self.size) - 1) if shift < self.size else 1
            self.top = counter
        else:
            self.bits |= 1 << (self.top - counter)


#: a publisher's counters start at its wall clock in microseconds shifted left by this much
CLOCK_SHIFT = 20
#: counters reserved on disk at a time, ahead of use
CHUNK = 1 << 16


def _clock_us() -> int:
    import time

    return time.time_ns() // 1000


class NonceCounter:
    """A publisher's counters, one per server (the nonces of its pairs' keys): each strictly
    increasing, and never one that an earlier incarnation of the publisher used with that server.

    Every pair starts at ``base``, the larger of the wall clock in microseconds shifted left by
    :data:`CLOCK_SHIFT` and the mark the state folder holds (``udp-nonce``), and counts up by one
    per datagram. With a state folder, no counter is used before the mark on disk is above it:
    the mark moves :data:`CHUNK` ahead at a time, written and ``fsync``'d, so a restart after any
    crash starts above every counter used (and a clock stepped back changes nothing). The clock
    covers what the folder cannot: no state folder (``[durability] sync = "off"``), a fresh run
    folder (the pair keys come from the deployment's key pairs, the same in every run), a lost
    mark; an incarnation would have to send more than 2**20 datagrams per microsecond to a server
    to reach the next one's start, so there it holds unless the clock steps back across a restart."""

    FILE = "udp-nonce"

    def __init__(self, state_dir: Path | None, clock_us: Callable[[], int] = _clock_us) -> None:
        self.path = state_dir / self.FILE if state_dir is not None else None
        self.base = max(self._read(), clock_us() << CLOCK_SHIFT)
        self.limit = self.base  # counters below it are reserved (on disk, with a state folder)
        self.next: dict[str, int] = {}
        self.reservations = 0

    def _read(self) -> int:
        if self.path is None or not self.path.exists():
            return 0
        text = self.path.read_text().strip()
        if not text.isdigit():
            raise FaidecsError(f"{self.path}: not a counter mark ({text[:40]!r}); remove it to start from the clock")
        return int(text)

    def take(self, server: str) -> int:
        """The next counter for ``server``."""
        n = self.next.get(server, self.base)
        if n >= self.limit:
            self._reserve(n + CHUNK)
        self.next[server] = n + 1
        return n

    def _reserve(self, limit: int) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            with tmp.open("w") as f:
                f.write(f"{limit}\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self.limit = limit
        self.reservations += 1


def now_ms() -> float:
    import time

    return time.time_ns() / 1e6


def _udp_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    sock.setblocking(False)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    except OSError:
        pass
    sock.bind((host, port))
    return sock


@dataclass
class UdpSender:
    """A publisher's side: stamps each publication for its root and sends one sealed datagram to
    every replica of that root. ``loss`` and ``swap`` (tests): each copy is dropped with
    probability ``loss``; one that is not is held back with probability ``swap`` and sent after
    the next copy to the same server (a reordering: one counter apart, inside the receiver's
    window). ``state_dir``: where its :class:`NonceCounter` keeps its mark (None: the clock alone)."""

    deployment: Deployment
    process: str
    keys: Keys | None
    loss: float = 0.0
    swap: float = 0.0
    seed: int = 0
    state_dir: Path | None = None
    stamper: InputStamper = field(init=False)
    counter: NonceCounter = field(init=False)
    sock: socket.socket = field(init=False)
    sent: int = 0
    lost: int = 0
    swapped: int = 0
    unsendable: int = 0

    def __post_init__(self) -> None:
        self.stamper = InputStamper(self.process)
        self.counter = NonceCounter(self.state_dir)
        host = self.deployment.address(self.process)[len("tcp://") :].rsplit(":", 1)[0]
        self.sock = _udp_socket(host, 0)
        self._keys: dict[str, bytes] = {}
        self._held: dict[str, bytes] = {}
        self.rng = random.Random(f"{self.seed}:{self.process}:udp")

    def key(self, server: str) -> bytes:
        k = self._keys.get(server)
        if k is None:
            k = self._keys[server] = pair_key(self.deployment, self.keys, self.process, server, self.process, server)
        return k

    def publish(self, publish: Publish) -> None:
        d = self.deployment
        role = d.root_role(publish.event.type)
        stamp = self.stamper.stamp(role, now_ms())
        for server in d.placement(role):
            data = seal(self.key(server), d.name, self.process, server, stamp, publish, self.counter.take(server))
            if self.loss and self.rng.random() < self.loss:
                self.lost += 1
                continue
            if self.swap and server not in self._held and self.rng.random() < self.swap:
                self._held[server] = data
                self.swapped += 1
                continue
            self._send(server, data)
            held = self._held.pop(server, None)
            if held is not None:
                self._send(server, held)

    def flush(self) -> None:
        for server, data in self._held.items():
            self._send(server, data)
        self._held.clear()

    def _send(self, server: str, data: bytes) -> None:
        try:
            self.sock.sendto(data, self.deployment.udp_address(server))
            self.sent += 1
        except OSError as exc:  # a full buffer, an unreachable port: UDP loses it
            self.unsendable += 1
            LOG.debug("%s: datagram to %s not sent: %s", self.process, server, exc)

    def close(self) -> None:
        self.sock.close()

    def status(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "lost_on_purpose": self.lost,
            "swapped": self.swapped,
            "unsendable": self.unsendable,
            "counter_reservations": self.counter.reservations,
        }


class UdpReceiver:
    """A server's side: its UDP socket, the keys of the UDP publishers, and the latch stage (one
    receiver per (root role, publisher)) in front of its root replicas, behind one
    :class:`ReplayWindow` per publisher. The windows start empty in every incarnation (see
    docs/ordering-latch-stage.md, "Replays")."""

    def __init__(
        self,
        deployment: Deployment,
        process: str,
        keys: Keys | None,
        rejected: Any,
        decode: Callable[[bytes], Message] | None = None,
    ) -> None:
        """``decode``: the server's own decoder for the deployment (its transport's), so that the
        types' checkers are built once per process; one of the deployment's is built otherwise."""
        self.d = deployment
        self.process = process
        self.rejected = rejected  # the transport's counters: UDP rejections show beside the others
        self.decode = decode or wire.Declared(deployment.types, deployment.roles).decode
        self.publishers = deployment.udp_publishers()
        self.keys = {p: pair_key(deployment, keys, process, p, p, process) for p in self.publishers}
        self.windows = {p: ReplayWindow() for p in self.publishers}
        latch = deployment.latch
        self.stage = InputStage(latch_config(latch.p_t, latch.late) if latch.enabled else None)
        host, port = deployment.udp_address(process)
        self.sock = _udp_socket(host, port)
        self.received = 0
        self.accepted = 0
        self.replayed = 0  # authenticated, but its counter was seen: dropped
        self.too_old = 0  # authenticated, but WINDOW or more below the highest counter seen: dropped

    def fileno(self) -> int:
        return self.sock.fileno()

    def receive(self, hosts: Any, limit: int = 512) -> list[Publish]:
        """Read what is waiting (at most ``limit`` datagrams); returns what the stage releases."""
        out: list[Publish] = []
        for _ in range(limit):
            try:
                data = self.sock.recv(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:  # e.g. an ICMP error reported on the socket: nothing to read
                LOG.debug("%s: UDP receive: %s", self.process, exc)
                break
            self.received += 1
            try:
                out += self._open(data, hosts)
            except UdpError as exc:
                self.rejected[exc.kind] += 1
                LOG.warning("%s rejected a datagram: %s", self.process, exc)
        return out

    def _open(self, data: bytes, hosts: Any) -> list[Publish]:
        sender = sender_of(data)
        key = self.keys.get(sender)
        if key is None:
            raise UdpError("udp-auth", f"from {sender!r}, which is no UDP publisher of the deployment")
        _, counter, plain = unseal(key, self.d.name, self.process, data)
        # Authenticated: only now may the window judge it, and move.
        window = self.windows[sender]
        why = window.check(counter)
        if why is not None:
            if why == "udp-replayed":
                self.replayed += 1
            else:
                self.too_old += 1
            raise UdpError(why, f"from {sender}: counter {counter} {'seen' if why == 'udp-replayed' else 'too old'}")
        window.mark(counter)
        stamp, publish = _parse(sender, plain, self.decode)
        role = self.d.root_role(publish.event.type) if publish.event.type in self.d.types else None
        if role is None or role not in hosts:
            raise UdpError("udp-refused", f"from {sender}: an event of a root this server does not host")
        self.accepted += 1
        return self.stage.receive(Latched(role, stamp, publish), now_ms())

    def poll(self) -> list[Publish]:
        return self.stage.poll(now_ms())

    def wait_ms(self) -> int | None:
        """Milliseconds until the earliest latch expires (None: nothing is held)."""
        d = self.stage.deadline()
        return None if d is None else max(0, math.ceil(d - now_ms()))

    def close(self) -> None:
        self.sock.close()

    def status(self) -> dict[str, Any]:
        total = {"received": 0, "released": 0, "late_delivered": 0, "late_dropped": 0, "duplicates": 0, "holes": 0}
        for s in self.stage.stats().values():
            for name in ("received", "released", "late_delivered", "late_dropped", "duplicates"):
                total[name] += getattr(s, name)
            total["holes"] += len(s.holes)
        return {
            "received": self.received,
            "accepted": self.accepted,
            "replayed": self.replayed,
            "too_old": self.too_old,
            "latch": total,
        }


__all__ = [
    "NonceCounter",
    "ReplayWindow",
    "UdpError",
    "UdpReceiver",
    "UdpSender",
    "open_sealed",
    "pair_key",
    "seal",
    "sender_of",
    "unseal",
]
