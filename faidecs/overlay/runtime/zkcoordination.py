"""One process's membership in a deployment, through ZooKeeper: sessions, leaders and epochs.

:class:`SimulatedCoordination` models the coordination service for the simulator;
:class:`ZooKeeperMember` is the real thing for one OS process. It never elects anything itself:
ZooKeeper's sessions, ephemeral nodes and sequence numbers decide, and the member reports what they
say as the core's messages (``LeaderChange``, ``Down``, ``Up``).

Layout, under ``/faidecs/<deployment>`` (every name percent-encoded by :func:`path_key`)::

    processes/<process>                      ephemeral, one per live process (servers, clients)
    roles/<role key>/<process>+<session>+N   ephemeral sequential, one per replica of the role
    ran/<process>                            persistent: a process of this name started before

Sessions. A process is up while its session holds its node under ``processes``. Every member
watches every process node it has seen (an exists-watch per node, and a children watch on the
folder to see new ones) and reports ``Down(p)`` when p's node goes (p closed its session, or
ZooKeeper expired it: p crashed, or was paused or cut off longer than the session timeout), and
``Up(p)`` when it comes back. It compares the node's creation zxid, so a node deleted and created
again between two reads still gives ``Down(p)`` then ``Up(p)``. When a member's own session is
lost, kazoo opens a new one; the member registers again (new nodes, its candidates at the back)
and reports ``Up(self)`` to itself: the others saw it ``Down`` and dropped its links.

A process registers its process node before its candidates, and waits while the node is held by
another session (a previous incarnation whose session has not expired yet). So all the live
candidates named p belong to the one session that holds p's process node: a restarted process
never inherits a leadership (and epoch) its dead predecessor held.

Leaders and epochs. The leader of a role is its live candidate with the lowest sequence number N,
and its epoch is ``N + 1`` (epochs start at 1: the core's replicas start at epoch 0).

* Epochs strictly increase across successive leaders. ZooKeeper numbers a sequential child with
  its parent's child-change counter (``cversion``), which only grows: every candidate ever created
  in a role's folder has a number above every earlier one. Along ZooKeeper's single history of
  writes, creating a candidate leaves the minimum unchanged (or, in an empty folder, sets it above
  every earlier number) and deleting one leaves it unchanged or raises it: the leader's number
  never decreases, and it changes exactly when leadership moves, to a number no earlier leader
  had. A replica that dies and comes back gets a new number, at the back.
* One member never reports a lower epoch. Its reads are of that history in order: ZooKeeper
  reads within a session never go back in time, and after a new session (kazoo forgets the last
  zxid it saw, and another server of an ensemble may lag) the member first ``sync``s the folders
  it reads. On top of that it reports only epochs above the last it reported; several changes
  between two reads are reported once, as the latest.
* Two members never disagree on the leader of an epoch. Epoch ``N + 1`` names exactly one node
  (sequence numbers are unique within the folder), and that node's name carries the process that
  created it. So every member that reports epoch e for a role reports the same leader.

This holds as long as a role's folder is never deleted and ZooKeeper's data is never lost while
the deployment's processes run: either restarts the sequence numbers, so epochs would repeat with
other leaders. The member notices a leader below what it already reported, logs an error and does
not report it. (An epoch counter node updated by the new leader with a versioned compare-and-set
would have the same weakness and needs a write and a live leader to take effect; the sequence
numbers give the epoch the moment the old leader's node goes.)

Threads. kazoo runs its connection and callbacks on its own threads; watches and state changes
only mark what to read again and wake the member's thread (``faidecs-zk-<process>``), which does
every read and write and calls ``notify``: notifications for one member are never concurrent,
and ``notify`` must not call :meth:`ZooKeeperMember.stop` of another member that might be waiting
on it (its own ``stop`` is fine). A slow ``notify`` delays later notifications, never kazoo.

Timing. A crashed process is reported down once ZooKeeper expires its session (a closed TCP
connection does not end a session): a timeout after the server last heard from it, rounded up to
a tick, and kazoo pings every third of the timeout, so between 2/3 of the timeout and the timeout
plus a tick after the crash, plus a round trip (measured: 1.0 to 1.1 s for 1 s sessions, tick
100 ms). A process paused longer than the timeout learns that its session expired only when it
runs again and reconnects (measured: about 0.1 s after SIGCONT); until then it may still believe
it leads, with its old epoch. The core is safe with that: its replicas reject decisions of an
epoch older than theirs. A member cut off from ZooKeeper (kazoo's SUSPENDED) is not told
anything until it reconnects or its session is found expired.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote, unquote

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss, NodeExistsError
from kazoo.protocol.states import EventType, WatchedEvent
from kazoo.retry import KazooRetry

from faidecs.errors import FaidecsError
from faidecs.merging.roles import Role, role_name
from faidecs.overlay.core.messages import Down, LeaderChange, Message, Up

log = logging.getLogger(__name__)

ROOT = "/faidecs"


class CoordinationError(FaidecsError):
    """A member could not join its deployment (ZooKeeper unreachable, or its name held by a live
    session)."""


def path_key(name: str) -> str:
    """``name`` as one znode name: percent-encoded (no ``/``, no ``+``), never ``.`` or ``..``.

    >>> path_key("server 1/a+b"), path_key("..")
    ('server%201%2Fa%2Bb', '%2E%2E')
    """
    if not name:
        raise ValueError("a process, deployment or type name cannot be empty")
    key = quote(name, safe="")
    return key.replace(".", "%2E") if key in (".", "..") else key


def role_key(role: Role) -> str:
    """The znode name of a role: its types, each by :func:`path_key`, joined by commas.

    :func:`~faidecs.merging.roles.role_name` (``⊔[A,B]``) reads better but would need escaping
    for types with ``/``; :func:`~faidecs.overlay.core.keys.merger_key` is a consumer key, not a path.

    >>> role_key(("A",)), role_key(("A", "B", "C"))
    ('A', 'A,B,C')
    """
    return ",".join(path_key(t) for t in role)


@dataclass(frozen=True, order=True)
class Candidate:
    """A replica's candidate node: ``<process>+<session, hex>+<sequence number>``."""

    seq: int
    process: str
    session: int
    name: str

    @property
    def epoch(self) -> int:
        return self.seq + 1

    @staticmethod
    def parse(name: str) -> Candidate | None:
        """The candidate a node name stands for (``None`` for a name that is not one)."""
        parts = name.rsplit("+", 2)
        if len(parts) != 3:
            return None
        try:
            return Candidate(int(parts[2]), unquote(parts[0]), int(parts[1], 16), name)
        except ValueError:
            return None


class ZooKeeperMember:
    """One process's membership in ``deployment``: its session, its candidacies, what it hears.

    ``replicas``: the roles this process replicates, each with its placement (all its replicas,
    this process among them). ``notify`` gets ``LeaderChange`` for those roles, and ``Down``/``Up``
    for every process it has seen registered (``Up`` for itself after its session was lost); see
    the module's docstring for the guarantees. ``session_timeout`` (seconds) must lie within what
    the server grants (2 to 20 of its ticks).
    """

    def __init__(
        self,
        hosts: str,
        deployment: str,
        process: str,
        replicas: Mapping[Role, Sequence[str]],
        notify: Callable[[Message], None],
        session_timeout: float = 1.0,
    ) -> None:
        for role, placement in replicas.items():
            if process not in placement:
                raise ValueError(f"{process} replicates {role_name(role)} but is not in its placement {placement}")
        self.hosts = hosts
        self.deployment = deployment
        self.process = process
        self.replicas: dict[Role, tuple[str, ...]] = {tuple(r): tuple(p) for r, p in replicas.items()}
        self.session_timeout = session_timeout
        self._notify = notify
        base = f"{ROOT}/{path_key(deployment)}"
        self.processes_path = f"{base}/processes"
        self.process_path = self._process_path(process)
        self.role_paths = {role: f"{base}/roles/{role_key(role)}" for role in sorted(self.replicas)}
        self.ran_path = f"{base}/ran/{path_key(process)}"
        #: Whether a process of this name ran in the deployment before this one (set by start):
        #: a restarted replica has lost its log and must not vote until it gets one.
        self.ran_before = False
        self._client = KazooClient(
            hosts=hosts,
            timeout=session_timeout,
            # Reconnect promptly: a process back from a pause must learn soon that it lost its session.
            connection_retry=KazooRetry(max_tries=-1, delay=0.05, backoff=2, max_delay=max(1.0, session_timeout)),
        )
        self._client.add_listener(self._on_state)
        # Shared with kazoo's threads, under _lock: what to read again, and the leaders known.
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._lost = False
        self._full = True
        self._dirty: set[str] = set()
        self._leaders: dict[Role, tuple[str, int]] = {}
        # The member's own thread only.
        self._session: int | None = None
        self._holding = False  # our process node is ours, in this session
        self._registered = False  # ... and so are our candidates
        self._announce_up = False
        self._blocked_by: int | None = None
        self._candidates: dict[Role, Candidate] = {}
        self._seen: dict[str, int | None] = {}  # process -> czxid of its node, None: seen down
        self._outbox: list[Message] = []
        self._stopping = False
        self._ready = threading.Event()
        self._last_error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"faidecs-zk-{process}", daemon=True)

    # --- the member's interface ----------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> None:
        """Connect, register (process node, then one candidate per role) and notify the current
        leaders of its roles; returns once those notifications are delivered.

        Raises :class:`CoordinationError` when that takes longer than ``timeout`` seconds: the
        server does not answer, or this process's name is still held by another session.
        """
        deadline = time.monotonic() + timeout
        try:
            self._client.start(timeout=timeout)
        except Exception as e:
            self._client.close()
            raise CoordinationError(f"{self.process}: cannot reach ZooKeeper at {self.hosts}: {e}") from e
        # A persistent node per process name that ever started: it outlives sessions and restarts.
        self.ran_before = self._client.exists(self.ran_path) is not None
        if not self.ran_before:
            self._client.ensure_path(self.ran_path)
        self._thread.start()
        if not self._ready.wait(max(0.0, deadline - time.monotonic())):
            if self._blocked_by is not None:
                why = (
                    f"its name is held by session {self._blocked_by:#x}: a previous incarnation whose session "
                    f"has not expired yet, or another live process named {self.process}"
                )
            else:
                why = f"last error: {self._last_error!r}"
            self.stop()
            raise CoordinationError(
                f"{self.process}: could not register in {self.deployment} within {timeout:g} s; {why}"
            )

    def stop(self) -> None:
        """Close the session: ZooKeeper deletes this process's nodes at once, and the others hear
        ``Down``. No notification follows."""
        if self._stopping:
            return
        self._stopping = True
        self._wake.set()
        other = self._thread.is_alive() and threading.current_thread() is not self._thread
        if other:
            # Let a read in flight finish first: one sent after kazoo's close hits a closed socket
            # (harmless, but kazoo logs it as a dropped connection). One blocked on a server that
            # does not answer is ended by the close.
            self._thread.join(timeout=max(1.0, self.session_timeout))
        try:
            self._client.stop()
        except Exception:
            log.exception("%s: closing the ZooKeeper session", self.process)
        if other:
            self._thread.join(timeout=10)
        self._client.close()

    def leadership(self) -> dict[Role, tuple[str, int]]:
        """The last known (leader, epoch) of each of its roles that has had a leader."""
        with self._lock:
            return dict(self._leaders)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # --- kazoo's threads: note what changed, wake the member's thread --------------------------

    def _on_watch(self, event: WatchedEvent) -> None:
        with self._lock:
            # kazoo drops every watch on a disconnection and fires them with a NONE event.
            if event.type == EventType.NONE or not event.path:
                self._full = True
            else:
                self._dirty.add(event.path)
        self._wake.set()

    def _on_state(self, state: Any) -> None:
        with self._lock:
            if state == KazooState.LOST:
                self._lost = True
            # After any disconnection the watches are gone (kazoo forgets them): read everything.
            self._full = True
        self._wake.set()

    # --- the member's thread ---------------------------------------------------------------------

    def _run(self) -> None:
        backoff: float | None = None
        while True:
            self._wake.wait(backoff)
            self._wake.clear()
            if self._stopping:
                return
            if not self._client.connected:
                backoff = None  # the listener wakes us once connected again
                continue
            try:
                self._reconcile()
                self._last_error = None
                # A name held by a stale session is waited for with a watch; poll too, in case.
                backoff = None if self._registered else self.session_timeout
            except Exception as e:  # noqa: BLE001 (any failure: read everything again, later)
                if self._stopping:
                    return
                self._last_error = e
                log.debug("%s: reading ZooKeeper failed, retrying: %r", self.process, e)
                with self._lock:
                    self._full = True
                backoff = min(1.0, 2 * backoff) if backoff else 0.05
            # What was learnt before a failure is delivered too: its state is already recorded.
            out, self._outbox = self._outbox, []
            for message in out:
                if self._stopping:
                    return
                try:
                    self._notify(message)
                except Exception:
                    log.exception("%s: notify(%r) failed", self.process, message)
            if self._registered and self._last_error is None:
                self._ready.set()

    def _reconcile(self) -> None:
        with self._lock:
            lost, self._lost = self._lost, False
            full, self._full = self._full, False
            dirty, self._dirty = self._dirty, set()
        try:
            client_id = self._client.client_id
            if client_id is None:
                raise ConnectionLoss("not connected")
            session: int = client_id[0]
            if lost or session != self._session:
                self._new_session(session)
                full = True
            if full:
                for path in (self.processes_path, *self.role_paths.values()):
                    self._client.ensure_path(path)
                    self._client.sync(path)
            if not self._registered:
                if not self._register(session):
                    return
                full = True  # what changed while we were not registered was not read
            if self._check_processes(session, full, dirty):
                self._check_roles(full, dirty)
        except BaseException:
            with self._lock:
                self._full = True
            raise

    def _new_session(self, session: int) -> None:
        # Our nodes of the old session are gone (or going): the others saw us Down.
        if self._holding:
            self._announce_up = True
        self._session = session
        self._holding = self._registered = False
        self._candidates.clear()

    def _register(self, session: int) -> bool:
        """Create our process node, then our candidates; False while the name is held by another
        session (an exists-watch wakes us when that node goes)."""
        client = self._client
        if not self._holding:
            data = f"{socket.gethostname()} pid {os.getpid()}".encode()
            try:
                _, stat = client.create(self.process_path, data, ephemeral=True, include_data=True)
            except NodeExistsError:
                stat = client.exists(self.process_path, watch=self._on_watch)
                if stat is None:
                    self._wake.set()  # gone in between: try again at once
                    return False
            if stat.ephemeralOwner != session:
                self._blocked_by = stat.ephemeralOwner
                return False
            self._holding, self._blocked_by = True, None
        for role, path in self.role_paths.items():
            if role in self._candidates:
                continue
            prefix = f"{path_key(self.process)}+{session:x}+"
            # A create whose reply was lost with the connection may have made our node already.
            mine = sorted(c for c in map(Candidate.parse, client.get_children(path)) if c and c.name.startswith(prefix))
            if mine:
                self._candidates[role] = mine[0]
                continue
            created, stat = client.create(f"{path}/{prefix}", b"", ephemeral=True, sequence=True, include_data=True)
            if stat.ephemeralOwner != session:
                # Made by the session that replaced ours mid-way, under our old name: drop it.
                client.delete(created)
                raise ConnectionLoss("the session changed while registering")
            candidate = Candidate.parse(created.rsplit("/", 1)[1])
            assert candidate is not None
            self._candidates[role] = candidate
        self._registered = True
        if self._announce_up:
            self._announce_up = False
            self._outbox.append(Up(self.process))
        return True

    def _process_path(self, process: str) -> str:
        return f"{self.processes_path}/{path_key(process)}"

    def _check_processes(self, session: int, full: bool, dirty: set[str]) -> bool:
        """Report who went down or came back; False if our own node is no longer ours."""
        client = self._client
        listed = {unquote(name) for name in client.get_children(self.processes_path, watch=self._on_watch)}
        fired = {unquote(p.rsplit("/", 1)[1]) for p in dirty if p.startswith(self.processes_path + "/")}
        up = {p for p, czxid in self._seen.items() if czxid is not None}
        for p in sorted(listed | up | fired | {self.process}):
            changed = (p in listed) != (p in up) and p != self.process
            if not (full or changed or p in fired):
                continue
            stat = client.exists(self._process_path(p), watch=self._on_watch)
            if p == self.process:
                if stat is None or stat.ephemeralOwner != session:
                    # Deleted under us while our session lives: the others saw us Down.
                    self._holding = self._registered = False
                    self._announce_up = True
                    self._wake.set()
                    return False
                continue
            now = stat.czxid if stat is not None else None
            if p not in self._seen:
                if now is not None:
                    self._seen[p] = now  # first seen: neither Down nor Up
                continue
            before = self._seen[p]
            if before == now:
                continue
            self._seen[p] = now
            if before is not None:
                self._outbox.append(Down(p))
            if now is not None:
                self._outbox.append(Up(p))
        return True

    def _check_roles(self, full: bool, dirty: set[str]) -> None:
        for role, path in self.role_paths.items():
            if not (full or path in dirty):
                continue
            names = self._client.get_children(path, watch=self._on_watch)
            mine = self._candidates.get(role)
            if mine is not None and mine.name not in names:
                # Deleted under us while our session lives: stand again, at the back.
                del self._candidates[role]
                self._registered = False
                self._wake.set()
            candidates = sorted(c for c in map(Candidate.parse, names) if c is not None)
            if not candidates:
                continue  # no live replica: the next one to register leads
            leader = candidates[0]
            last = self._leaders.get(role)
            if last is None or leader.epoch > last[1]:
                with self._lock:
                    self._leaders[role] = (leader.process, leader.epoch)
                self._outbox.append(LeaderChange(role, leader.process, leader.epoch))
            elif leader.epoch < last[1]:
                log.error(
                    "%s: ZooKeeper names %s leader of %s with epoch %d, below epoch %d already reported: was %s "
                    "deleted, or ZooKeeper's data lost? Not reported; the role needs its processes restarted",
                    self.process,
                    leader.process,
                    role_name(role),
                    leader.epoch,
                    last[1],
                    path,
                )


__all__ = ["Candidate", "CoordinationError", "ZooKeeperMember", "path_key", "role_key"]
