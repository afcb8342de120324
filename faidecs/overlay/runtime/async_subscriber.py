"""A deployment's subscriber process, run inside an asyncio application: ``AsyncSubscriber``.

The application's code takes the subscription's deliveries with ``async for``. What produces
them is the subscriber process itself, :class:`SubscriberNode`, the class ``faidecs overlay
node`` runs: the same transport and keys, ZooKeeper membership, core client, checkpoints and
run log, on a thread of its own in the application's process. Only where each delivery goes
besides the run log differs: it is also handed to the event loop. So it delivers exactly what
the process would, in the same order, with the same delivery ids, and restarts from its
checkpoint as the process does.

Why a thread and not the event loop itself: the client matches events in its engines (CPU
work) and writes and ``fsync``s its run log and checkpoints, each of which would stall the loop;
its ZooKeeper session lives on kazoo's thread anyway. The loop only waits on a queue.

Nothing here imports pyzmq or kazoo until a subscriber starts, so ``faidecs.overlay`` imports
without the ``overlay`` extra.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from faidecs.errors import FaidecsError

if TYPE_CHECKING:
    from faidecs.overlay.runtime.subscriber_node import SubscriberNode


@dataclass(frozen=True, slots=True)
class OverlayDelivery:
    """One relation the overlay delivered to a subscriber: its subscription, the conjunction's
    index, the ids of its events in the conjunction's signature order, and its delivery id
    (``process/stream/position/index``, the same after a restart; docs/overlay.md, "Subscriber
    checkpoints and delivery ids")."""

    subscription: str
    conjunction: int
    relation: tuple[str, ...]
    id: str | None


@dataclass(frozen=True, slots=True)
class _End:
    error: BaseException | None


class AsyncSubscriber:
    """Subscriber ``process`` of a deployment, inside this process's event loop::

        async with AsyncSubscriber("deployment.toml", "s2", run_dir="run/") as subscriber:
            async for delivery in subscriber:
                ...

    ``run_dir`` is the run folder a ``faidecs overlay node`` of it would get: its run log goes
    to ``logs/<process>.runlog`` (so ``faidecs verify run/`` checks it with the others), its
    status to ``status/<process>.json``, its checkpoint to ``state/<process>/``. ZooKeeper is
    ``zookeeper``, else the deployment's, else the one ``faidecs overlay up`` started for the
    run folder (``run.json``).

    Deliveries wait in an unbounded queue until taken (:attr:`pending` says how many): a
    delivery is delivered, checkpointed and acknowledged to the mergers once it is in the run
    log and that queue, as a subscriber process's once it is in its run log. An application that
    must not lose one across a crash keys on :attr:`OverlayDelivery.id` and keeps what it has
    handled, as with a subscriber process.

    Iteration ends when the subscriber is stopped (:meth:`stop`, the end of ``async with``); an
    error that stops the subscriber (a damaged checkpoint, a failing disk) is raised from the
    ``async for`` after the deliveries made before it.
    """

    def __init__(
        self, deployment: str | Path, process: str, *, run_dir: str | Path, zookeeper: str | None = None
    ) -> None:
        self.deployment_path = Path(deployment)
        self.process = process
        self.run_dir = Path(run_dir)
        self.zookeeper = zookeeper
        self._node: SubscriberNode | None = None
        self._thread: threading.Thread | None = None
        self._queue: asyncio.Queue[OverlayDelivery | _End] | None = None
        self._started: asyncio.Event | None = None
        self._done: asyncio.Future[None] | None = None
        self._stopped_by: BaseException | None = None  # what ended the subscriber's thread

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Build the subscriber and start its thread; returns once it runs (its transport bound,
        its checkpoint read). Raises what would stop a ``faidecs overlay node`` of it at start:
        an unknown process, a bad deployment file, missing keys, a damaged checkpoint."""
        if self._thread is not None:
            raise FaidecsError(f"subscriber {self.process} was started already")
        loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self._started = asyncio.Event()
        self._done = loop.create_future()
        built: asyncio.Future[None] = loop.create_future()
        self._thread = threading.Thread(
            target=self._main, args=(loop, built), name=f"faidecs-subscriber-{self.process}", daemon=True
        )
        self._thread.start()
        try:
            await built
        except BaseException:
            await self._ended()
            raise

    async def started(self) -> None:
        """Wait until the client's streams have all started (it registered with its mergers):
        from then on it receives every event published. ``faidecs overlay up`` waits for this
        before it starts the publishers. Raises if the subscriber stops first: the error that
        stopped it, or :class:`~faidecs.errors.FaidecsError` if it was stopped."""
        assert self._started is not None and self._done is not None, "start() the subscriber first"
        waiting: asyncio.Future[Any] = asyncio.ensure_future(self._started.wait())
        done: asyncio.Future[Any] = self._done
        try:
            await asyncio.wait([waiting, done], return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()
        if self._started.is_set():
            return
        if self._stopped_by is not None:
            raise self._stopped_by
        raise FaidecsError(f"subscriber {self.process} stopped before its streams started")

    async def stop(self) -> None:
        """Stop the subscriber as SIGTERM stops the process (its run log's final record, its
        ZooKeeper session left, its sockets closed); returns once its thread has ended. The
        deliveries already queued can still be taken; then iteration ends."""
        if self._node is not None:
            self._node.stop()
        if self._done is not None:
            await self._ended()

    async def _ended(self) -> None:
        """Wait until the thread has ended. ``_done`` is set from its last lines, which may
        still be running then; the join is short but off the loop all the same."""
        assert self._done is not None and self._thread is not None
        await asyncio.shield(self._done)
        if self._thread.is_alive():
            await asyncio.to_thread(self._thread.join)

    async def __aenter__(self) -> AsyncSubscriber:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # --- deliveries -----------------------------------------------------------------------------

    def __aiter__(self) -> AsyncSubscriber:
        return self

    async def __anext__(self) -> OverlayDelivery:
        assert self._queue is not None, "start() the subscriber first"
        item = await self._queue.get()
        if isinstance(item, _End):
            self._queue.put_nowait(item)  # every later call ends too
            if item.error is not None:
                raise item.error
            raise StopAsyncIteration
        return item

    @property
    def pending(self) -> int:
        """Deliveries made and not taken yet."""
        return self._queue.qsize() if self._queue is not None else 0

    def status(self) -> dict[str, Any]:
        """The status the subscriber last wrote to ``status/<process>.json`` (``{}`` before it
        wrote one): deliveries, whether its streams started, checkpoints, transport counters."""
        path = self.run_dir / "status" / f"{self.process}.json"
        try:
            data: dict[str, Any] = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return data

    # --- the subscriber's thread ----------------------------------------------------------------

    def _main(self, loop: asyncio.AbstractEventLoop, built: asyncio.Future[None]) -> None:
        error: BaseException | None = None
        try:
            self._node = self._build(loop)
        except BaseException as exc:
            _call(loop, _settle, built, exc)
            _call(loop, _settle, self._done, None)
            return
        _call(loop, _settle, built, None)
        try:
            self._node.run()
        except BaseException as exc:  # it stops the subscriber: the application hears of it
            error = exc
        self._stopped_by = error
        _call(loop, self._put, _End(error))
        _call(loop, _settle, self._done, None)

    def _put(self, item: OverlayDelivery | _End) -> None:
        assert self._queue is not None
        self._queue.put_nowait(item)

    def _build(self, loop: asyncio.AbstractEventLoop) -> SubscriberNode:
        # Imported here: pyzmq and kazoo are the overlay extra's (see the module's docstring).
        from faidecs.overlay.runtime.deployment import load_deployment
        from faidecs.overlay.runtime.subscriber_node import SubscriberNode

        deployment = load_deployment(self.deployment_path)
        if self.process not in deployment.subscribers:
            raise FaidecsError(
                f"{self.process} is not a subscriber of deployment {deployment.name}"
                f" (its subscribers: {', '.join(deployment.subscribers) or 'none'})"
            )
        zookeeper = self.zookeeper or deployment.zookeeper or self._run_zookeeper()
        for sub in ("logs", "status"):
            (self.run_dir / sub).mkdir(parents=True, exist_ok=True)
        put = self._put
        if self._started is None:
            raise AssertionError("built before start()")
        started: asyncio.Event = self._started

        class Forwarding(SubscriberNode):
            """The subscriber process, handing each delivery to the loop after its run log."""

            told = False

            def deliver(self, process: str, conjunction: int, relation: tuple[str, ...]) -> None:
                super().deliver(process, conjunction, relation)
                _call(loop, put, OverlayDelivery(self.client.subscription.name, conjunction, relation, None))

            def deliver_identified(
                self, process: str, delivery: str, conjunction: int, relation: tuple[str, ...]
            ) -> None:
                super().deliver_identified(process, delivery, conjunction, relation)
                _call(loop, put, OverlayDelivery(self.client.subscription.name, conjunction, relation, delivery))

            def _after_pass(self, now: int) -> None:
                super()._after_pass(now)
                if not self.told and self.client.started():
                    self.told = True
                    _call(loop, started.set)

        return Forwarding(
            deployment,
            self.process,
            zookeeper,
            log_dir=self.run_dir / "logs",
            status_dir=self.run_dir / "status",
            state_dir=self.run_dir / "state" / self.process,
        )

    def _run_zookeeper(self) -> str:
        record = self.run_dir / "run.json"
        try:
            zookeeper = json.loads(record.read_text()).get("zookeeper")
        except (FileNotFoundError, json.JSONDecodeError, AttributeError):
            zookeeper = None
        if not isinstance(zookeeper, str) or not zookeeper:
            raise FaidecsError(
                f"no ZooKeeper for {self.process}: pass zookeeper=, set zookeeper in the deployment"
                f" file, or give the run folder of a running 'faidecs overlay up' ({record} has none)"
            )
        return zookeeper


def _call(loop: asyncio.AbstractEventLoop, fn: Any, *args: Any) -> None:
    """``fn(*args)`` on the loop's thread; nothing if the loop is closed (the application left)."""
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:
        pass


def _settle(future: asyncio.Future[None] | None, error: BaseException | None) -> None:
    if future is None or future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


__all__ = ["AsyncSubscriber", "OverlayDelivery"]
