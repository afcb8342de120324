"""The Raft baseline (``ordering = "raft"``): total order broadcast by a Raft library.

Like the sequencer baseline, every publication goes to one replica group and each subscriber
reads that one stream; only how positions are decided and replicated differs. Here a
well-kept Raft implementation (pysyncobj) decides them instead of the overlay's own protocol
(leader from ZooKeeper, Decide/Holds/Commit with majority commit, recovery by EpochQuery):

- :class:`RaftReplica` is a :class:`~faidecs.overlay.core.replica.MergerReplica` whose ``_decide``
  appends an entry to the Raft log instead of deciding a position itself. Everything on the
  consumer side (Register, Connect, Forward of committed positions, Ack, trimming) is the
  merger's, unchanged, so an unchanged :class:`~faidecs.overlay.core.subscriber.SubscriberClient`
  reads this stream exactly as it reads the sequencer's.
- Raft elects its own leader and the epoch is Raft's term; ZooKeeper only keeps the process
  sessions (``Down``/``Up``). Only the replica that is the Raft leader submits entries: events
  as they arrive (every replica receives every publication), the marks of the consumers that
  register, heartbeats while idle. The others keep what they receive, and a new leader submits
  whatever it has not yet seen applied, so nothing received by it is lost with the old leader.
- Every replica applies the committed entries in Raft log order. pysyncobj applies them on its
  own thread; they are handed to the node's loop through a :class:`queue.SimpleQueue` and
  applied there, on the next tick. Each applied entry becomes the next :class:`Decision`,
  committed at once (Raft commits before it applies). Applying is deterministic, so every
  replica decides the same positions: an event already decided is skipped (a new leader
  resubmits what it had not seen applied, and a command of a deposed leader may still be
  appended), and so is an event whose publisher's previous event, as the submitting leader
  received them, is not decided yet (such a stale command could otherwise overtake, and each
  publisher's events stay in the order it sent them); a mark that is already in place is skipped.

Raft traffic runs on pysyncobj's own TCP connections, at each server's host and port plus
``raft_port_offset``, bound to that host only. pysyncobj unpickles what it receives: without
its ``password`` anyone who can reach the port could run code in the server. The password makes
it encrypt and authenticate every message (Fernet: AES-128-CBC and HMAC-SHA256, a key from
PBKDF2 of the password) and refuse what does not decrypt before unpickling; a random key per
connection, echoed in every message, stops replays across connections. The password is derived
(:func:`raft_password`) from the deployment's name, the role, the replicas' public keys and,
when it exists, ``keys/private/raft.secret`` (random bytes that an operator copies to the server
hosts only). Without that file the password only keeps out whoever does not hold the
deployment's ``keys/public`` folder (every process's host does): give the servers that file, or
reach the Raft ports only from the servers' hosts. With ``insecure = true`` there is no password.
"""

from __future__ import annotations

import hashlib
import logging
import queue
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from faidecs.errors import FaidecsError
from faidecs.merging.filters import Filter
from faidecs.merging.roles import Role, is_root, role_name
from faidecs.overlay.core.keys import is_subscriber
from faidecs.overlay.core.messages import (
    Commit,
    Decide,
    Decision,
    EntryKind,
    EpochQuery,
    EpochState,
    Holds,
    LeaderChange,
    Message,
    NewLog,
    Register,
    Send,
)
from faidecs.overlay.core.replica import MergerReplica, Placement, ProtocolError

if TYPE_CHECKING:
    from faidecs.overlay.runtime.deployment import Deployment

LOG = logging.getLogger("faidecs.overlay.runtime.raft")

#: A Raft log entry: (kind, ts, term, source, key, after, consumer, request, filter). ``after``:
#: the sequence number of the publisher's previous event as the submitting leader received them
#: (-1: none); ``filter``: a mark's Register, in the wire format (plain bytes in the log).
Entry = tuple[str, int, int, str, int, int, str, str, "bytes | None"]

#: Messages of the overlay's own replication and leadership, which a Raft replica does not use.
_NOT_FOR_RAFT = (Decide, Holds, Commit, LeaderChange, EpochQuery, EpochState, NewLog)


class _Failed:
    """Queued when a submitted command did not make it into the log (the leader changed)."""


_FAILED = _Failed()


def _raft_log(self_address: str, others: list[str], conf: Any, apply: Callable[[Any], None]) -> Any:
    """A pysyncobj SyncObj whose one replicated method hands each applied entry to ``apply``."""
    from pysyncobj import SyncObj, replicated

    class RaftLog(SyncObj):  # type: ignore[misc]
        def __init__(self) -> None:
            # Set before SyncObj's constructor: it keeps such attributes out of its dumps.
            self._apply = apply
            super().__init__(self_address, others, conf)

        @replicated  # type: ignore[untyped-decorator]
        def append(self, entry: Any) -> None:
            self._apply(entry)

    return RaftLog()


class RaftReplica(MergerReplica):
    """One replica of the Raft baseline's replica group (a root role: publications in)."""

    def __init__(
        self,
        role: Role,
        me: str,
        placement: Placement,
        raft_addresses: Mapping[str, str],
        *,
        password: str | None = None,
        election_timeout: int = 400,
        append_every: int = 50,
        **kwargs: Any,
    ):
        """``raft_addresses``: ``host:port`` of each replica's Raft endpoint (this one binds its
        own); ``election_timeout`` (ms): a follower that hears nothing from the leader for a
        random time between this and twice this starts an election; ``append_every`` (ms): the
        leader's heartbeats, under a third of the election timeout."""
        if not is_root(role):
            raise ValueError(f"the Raft baseline orders publications: {role_name(role)} is not a root role")
        super().__init__(role, me, placement, **kwargs)
        missing = [r for r in self.replicas if r not in raft_addresses]
        if missing:
            raise ValueError(f"no Raft address for {', '.join(missing)}")
        self.raft_addresses = {r: raft_addresses[r] for r in self.replicas}
        self.by_raft_address = {a: r for r, a in self.raft_addresses.items()}
        self.password = password
        self.election_timeout = election_timeout
        self.append_every = append_every
        self.applied: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.raft: Any = None
        self.led_term = -1  # the term in which this replica last took over as leader
        self.rescan = False  # resubmit what is not decided (a takeover, a lost command)
        self.low = 0  # arrivals before this index are all decided
        self.after: dict[tuple[str, int], int] = {}  # (publisher, seq) -> its previous seq here
        self.last_seq: dict[str, int] = {}
        self.skipped = 0  # applied entries that decided nothing (duplicates, stale commands)

    # --- driving -------------------------------------------------------------------------------

    def start(self, now: int) -> list[Send]:
        from pysyncobj import SyncObjConf, SyncObjException

        me = self.raft_addresses[self.me]
        seconds = self.election_timeout / 1000
        conf = SyncObjConf(
            password=self.password,
            bindAddress=me,  # pysyncobj binds every interface otherwise
            raftMinTimeout=seconds,
            raftMaxTimeout=2 * seconds,
            appendEntriesPeriod=self.append_every / 1000,
            connectionTimeout=max(3.5, 2 * seconds),
            connectionRetryTime=0.25,  # servers start one after another: find each other soon
            appendEntriesUseBatch=False,  # each command goes out at once, not at the next period
            # The log stays in memory, whole, as the replica's decisions do: a compaction would
            # hand a lagging follower a dump instead of the entries it must apply.
            logCompactionMinEntries=2**62,
            logCompactionMinTime=10**12,
            bindRetryTime=0.5,
            maxBindRetries=6,
        )
        others = [a for r, a in self.raft_addresses.items() if r != self.me]
        self.raft = _raft_log(me, others, conf, self.applied.put)
        try:
            self.raft.waitBinded()
        except SyncObjException as exc:  # BindError
            self.close()
            raise FaidecsError(f"{self.me}: cannot listen for Raft at {me} ({exc})") from None
        return []

    def close(self) -> None:
        """Stop pysyncobj's thread and close its connections."""
        if self.raft is not None:
            self.raft.destroy()

    def handle(self, sender: str, msg: Message, now: int) -> list[Send]:
        if isinstance(msg, _NOT_FOR_RAFT):
            return []  # Raft replicates through its own log and elects its own leader
        return super().handle(sender, msg, now)

    def tick(self, now: int) -> list[Send]:
        out = self._apply_entries(now)
        self._observe()
        if self.is_leading():
            if self.rescan:
                self.rescan = False
                self.inputs.next_arrival = self.low
            out += self._decide_arrivals(now)
            serves_subscribers = any(is_subscriber(c) for c in self.consumers.marks)
            if serves_subscribers and now - self.log.last_decided_at >= self.heartbeat_every:
                out += self._decide("heartbeat", now)
        return out if self.batching else out + self.flush(now)

    def _announce(self) -> list[Send]:
        return []  # the decisions travel in Raft's own log

    def _observe(self) -> None:
        """Leader and term as Raft has them now (read from pysyncobj's thread's state)."""
        if self.raft is None:
            return
        term = self.raft.raftCurrentTerm
        leader = self.raft._getLeader()
        log = self.log
        log.epoch = term
        log.leader = self.by_raft_address.get(leader.id) if leader is not None else None
        if self.raft._isLeader():
            log.leader = self.me
        elif log.leader == self.me:
            log.leader = None  # a leader that stepped down: it does not know the next one yet
        log.status = "normal" if log.leader is not None else "waiting"
        if self.is_leading() and self.led_term != term:
            self.led_term = term
            self.rescan = True

    # --- inputs ----------------------------------------------------------------------------------

    def _item(self, source: str, key: int, payload: Any, now: int, prev: int = -1) -> list[Send]:
        k = (source, key)
        if k not in self.inputs.items:
            self.after[k] = self.last_seq.get(source, -1)
            self.last_seq[source] = key
        return super()._item(source, key, payload, now, prev)

    # --- deciding: through the Raft log ------------------------------------------------------------

    def _decide(
        self,
        kind: EntryKind,
        now: int,
        *,
        source: str = "",
        key: int = -1,
        consumer: str = "",
        request: str = "",
        filter: Filter | None = None,
    ) -> list[Send]:
        """Submit the entry to the Raft log; it becomes a decision when applied."""
        if self.raft is None:
            return []
        if kind == "upmark":
            raise ProtocolError(f"{role_name(self.role)} at {self.me}: a Raft replica has no parents")
        from faidecs.overlay.runtime.wire import encode

        register = encode(Register(self.role, consumer, request, filter)) if filter is not None else None
        after = self.after.get((source, key), -1) if kind == "event" else -1
        entry: Entry = (
            kind,
            max(now, self.log.last_ts),
            self.log.epoch,
            source,
            key,
            after,
            consumer,
            request,
            register,
        )
        self.log.last_decided_at = now
        self.raft.append(entry, callback=self._on_result)
        return []

    def _on_result(self, result: Any, error: int) -> None:
        # pysyncobj's thread: only queue the news.
        if error:
            self.applied.put(_FAILED)

    def _apply_entries(self, now: int) -> list[Send]:
        changed = False
        while True:
            try:
                entry = self.applied.get_nowait()
            except queue.Empty:
                break
            if entry is _FAILED:
                self.rescan = True
            else:
                changed = self._apply(entry) or changed
        if not changed:
            return []
        arrivals, decided = self.inputs.arrivals, self.inputs.decided
        while self.low < len(arrivals) and arrivals[self.low] in decided:
            self.low += 1
        self._set_commit(len(self.log.decisions) - 1, now)
        return []

    def _apply(self, entry: Any) -> bool:
        """Entry -> the next decision, or nothing; the same at every replica. An entry that does
        not decode (a bug: only the replicas write the log) is logged and skipped, everywhere."""
        try:
            kind, ts, term, source, key, after, consumer, request, register = entry
            f: Filter | None = None
            if register is not None:
                from faidecs.overlay.runtime.wire import decode

                msg = decode(register)
                if not isinstance(msg, Register):
                    raise TypeError("a mark without its Register")
                f = msg.filter
            if kind not in ("event", "mark", "heartbeat") or (kind == "mark") != (f is not None):
                raise TypeError(f"an entry of kind {kind!r} with{'out' if f is None else ''} a filter")
        except (ValueError, TypeError, FaidecsError) as exc:
            LOG.warning("%s at %s: Raft entry %.200r skipped: %s", role_name(self.role), self.me, entry, exc)
            self.skipped += 1
            return False
        if kind == "event":
            if (source, key) in self.inputs.decided or (after >= 0 and (source, after) not in self.inputs.decided):
                self.skipped += 1
                self.rescan = self.rescan or (source, key) not in self.inputs.decided
                return False
        elif kind == "mark":
            assert f is not None
            marks = self.consumers.marks.get(consumer, [])
            if (is_subscriber(consumer) and any(r == request for _, _, r in marks)) or (
                not is_subscriber(consumer) and marks and marks[-1][1].covers(f)
            ):
                self.skipped += 1
                return False
        d = Decision(len(self.log.decisions), term, max(ts, self.log.last_ts), kind, source, key, consumer, request, f)
        self._append(d)
        return True


def raft_password(deployment: Deployment, role: Role) -> str | None:
    """pysyncobj's password for ``role``'s group (module docstring: what it protects); None for
    an insecure deployment."""
    if deployment.insecure or deployment.keys is None:
        return None
    import zmq.auth

    folder = deployment.path(deployment.keys)
    h = hashlib.sha256(b"faidecs raft password v1\0")
    h.update(deployment.name.encode() + b"\0" + role_name(role).encode() + b"\0")
    for process in sorted(deployment.placement(role)):
        path = folder / "public" / f"{process}.key"
        try:
            public, _ = zmq.auth.load_certificate(str(path))  # the key, not the file's comments
        except (OSError, ValueError) as exc:
            raise FaidecsError(f"{path}: no public key for the Raft password ({exc})") from None
        h.update(process.encode() + b"\0" + public + b"\0")
    secret = folder / "private" / "raft.secret"
    if secret.exists():
        h.update(secret.read_bytes())
    return h.hexdigest()


def raft_replica(deployment: Deployment, role: Role, process: str) -> RaftReplica:
    """The Raft baseline's replica of ``role`` at ``process``, as ``deployment`` sets it up: Raft
    endpoints at the servers' ports plus ``raft_port_offset``, the election timeout the length of
    a ZooKeeper session (what the other orderings take to see a leader gone)."""
    timing = deployment.timing
    if not deployment.insecure and deployment.keys is None:
        raise FaidecsError("the Raft baseline needs keys for its password")
    if deployment.insecure:
        LOG.warning(
            "%s: Raft traffic of %s is neither encrypted nor authenticated (insecure = true)", process, role_name(role)
        )
    election = timing.session_timeout
    return RaftReplica(
        role,
        process,
        deployment.placement,
        {p: deployment.raft_address(p) for p in deployment.placement(role)},
        password=raft_password(deployment, role),
        election_timeout=election,
        append_every=max(1, election // 8),
        heartbeat_every=timing.heartbeat_every,
        retry_every=timing.retry_every,
        retain=timing.retain,
        ack_every=timing.ack_every,
        batching=timing.batching,
        max_batch=deployment.max_batch(),
    )


__all__ = ["Entry", "RaftReplica", "raft_password", "raft_replica"]
