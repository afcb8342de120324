"""``Engine.stream``: the engine's deliveries for an event source, as an asyncio iterator.

Matching runs on one worker thread of the stream's own, so the event loop goes on with other
tasks while events are matched; the engine is not thread-safe, and this thread is the only one
that touches it while the stream is open. The pull contract (the source is asked for its next
event only once the deliveries of the previous one were all taken by the consumer) is what lets
a broker source acknowledge an event when it is resumed for the next; ``batch`` trades it for
throughput, explicitly (see :class:`DeliveryStream`).
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, Protocol

from faidecs.errors import EngineStateError, EventError
from faidecs.matching.delivery import Delivery
from faidecs.matching.events import Event

EventLike = Event | Mapping[str, Any]
Source = AsyncIterable[EventLike] | Iterable[EventLike]


class Publisher(Protocol):
    """What a stream needs of its engine (``faidecs.Engine`` is one)."""

    def publish(self, event: EventLike, *, line: int | None = None) -> list[Delivery]: ...


# The engines with an open stream: a second stream on one of them would be a second thread on
# an engine that is not thread-safe.
_streaming: weakref.WeakSet[Publisher] = weakref.WeakSet()


class _Hop:
    """What one worker hop hands back: the deliveries of the events it published, in order, and
    how many it published; then, if it stopped early, the error and the 1-based position in the
    source of the event that raised it. Flat: a list per event (most of them empty) made a
    long batch's garbage collections cost a quarter of its time."""

    __slots__ = ("deliveries", "published", "error", "position", "exhausted")

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self.published = 0
        self.error: BaseException | None = None
        self.position = 0
        self.exhausted = False  # a plain iterable ran out during this hop


class DeliveryStream(AsyncIterator[Delivery]):
    """The deliveries of an event source, in the order ``publish_many`` yields them.

    Returned by :meth:`faidecs.Engine.stream`; iterate it with ``async for``, preferably inside
    ``async with`` so that its worker thread is stopped when the block ends, however it ends::

        async with engine.stream(source) as deliveries:
            async for delivery in deliveries:
                ...

    **The pull contract** (``batch=1``, the default): the source is asked for event n+1 only
    after event n was published and each of its deliveries was taken by the consumer (the
    consumer asked for the delivery after its last one). A source that acknowledges an event
    when it is resumed for the next one therefore acknowledges only events whose deliveries the
    application holds. The cost is one hop to the worker thread per event.

    **Batches** (``batch=N``): the worker is handed up to N events per hop: an asynchronous
    source is read ahead by a task of the stream's own, and a hop takes the events it has read
    and not yet handed over (never waiting for more to fill a batch); a plain iterable is read
    on the worker thread, N events per hop. Throughput approaches ``publish_many``'s, but the
    source is asked for up to 2N events (N read ahead, N being matched) beyond the last one
    whose deliveries the consumer took: an acknowledge-on-resume source then acknowledges
    events not yet published, which a crash would lose. Use it for sources that do not
    acknowledge (files, lists, queues).

    A plain iterable is read on the worker thread (``next`` may block: a file), never on the
    event loop. An event the engine rejects raises :class:`~faidecs.errors.EventError` out of
    the ``async for``, after the deliveries of the events before it, naming the event (id,
    type, attribute), what is wrong, and its 1-based position in the source; any other error
    of ``publish`` or of the source ends the stream the same way. The engine stays usable:
    ``publish`` validates an event before it changes any state.

    Cancelling the consuming task stops the stream: the event the worker is matching is
    finished (an engine is never left halfway through an event) but its deliveries are not
    yielded, the worker thread ends, and the source is closed. Closing the stream (``aclose``,
    the end of ``async with``, or the end of the source) also closes the source's iterator if it
    has ``aclose`` or ``close``. While the stream is open, do not call the engine from another
    thread; a second stream on the same engine raises :class:`~faidecs.errors.EngineStateError`.
    """

    def __init__(self, engine: Publisher, source: Source, *, batch: int = 1):
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValueError(f"batch must be a positive integer, not {batch!r}")
        if not isinstance(source, AsyncIterable | Iterable):
            raise TypeError(f"stream needs an iterable or an async iterable of events, not {type(source).__name__}")
        self._engine = engine
        self._source = source
        self._batch = batch
        self._gen: AsyncGenerator[Delivery, None] | None = None
        self._closed = False

    # --- the iterator ------------------------------------------------------------------------

    def __aiter__(self) -> DeliveryStream:
        return self

    async def __anext__(self) -> Delivery:
        if self._gen is None:
            if self._closed:
                raise StopAsyncIteration
            self._gen = self._run()
        return await self._gen.__anext__()

    async def aclose(self) -> None:
        """Stop the worker thread and close the source; the deliveries not taken are dropped."""
        self._closed = True
        if self._gen is not None:
            await self._gen.aclose()

    async def __aenter__(self) -> DeliveryStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # --- the work ----------------------------------------------------------------------------

    async def _run(self) -> AsyncGenerator[Delivery, None]:
        engine = self._engine
        if engine in _streaming:
            raise EngineStateError("this engine already has an open stream; close it before opening another")
        _streaming.add(engine)
        # One thread for the stream's life: the only one that touches the engine meanwhile.
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="faidecs-stream")
        running: list[Future[Any]] = []  # the hop in flight, if any
        try:
            if isinstance(self._source, AsyncIterable):
                hops = self._async_hops(self._source, worker, running)
            else:
                hops = self._plain_hops(iter(self._source), worker, running)
            async with contextlib.aclosing(hops):
                async for hop in hops:
                    for delivery in hop.deliveries:
                        yield delivery
                    if hop.error is not None:
                        raise _located(hop.error, hop.position)
        finally:
            try:
                await _settle(running)
            finally:
                worker.shutdown(wait=True)  # idle by now: returns at once
                _streaming.discard(engine)
                self._closed = True

    async def _async_hops(
        self, source: AsyncIterable[EventLike], worker: ThreadPoolExecutor, running: list[Future[Any]]
    ) -> AsyncGenerator[_Hop, None]:
        it = aiter(source)
        taken = 0
        try:
            if self._batch == 1:
                # No read-ahead: the next event is asked for when the consumer asks for the
                # delivery after the last of this one's (the generator resumes only then).
                async for event in it:
                    taken += 1
                    yield await _submit(worker, running, self._publish, [event], taken)
                return
            ahead = _ReadAhead(it, self._batch)
            reader = asyncio.create_task(ahead.read())
            try:
                while events := await ahead.take():
                    yield await _submit(worker, running, self._publish, events, taken + 1)
                    taken += len(events)
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
        finally:
            closer = getattr(it, "aclose", None)
            if closer is not None:
                await closer()

    async def _plain_hops(
        self, it: Iterator[EventLike], worker: ThreadPoolExecutor, running: list[Future[Any]]
    ) -> AsyncGenerator[_Hop, None]:
        taken = 0
        try:
            while True:
                hop = await _submit(worker, running, self._pull_and_publish, it, taken + 1)
                taken += hop.published
                yield hop
                if hop.exhausted or hop.error is not None:
                    return
        finally:
            closer = getattr(it, "close", None)
            if closer is not None:
                # On the worker: the thread that ran the iterator runs its clean-up too.
                await _submit(worker, running, lambda _it, _first: closer(), it, 0)

    # On the worker thread:

    def _publish(self, events: list[EventLike], first: int) -> _Hop:
        hop = _Hop()
        publish = self._engine.publish
        out = hop.deliveries
        for k, event in enumerate(events):
            try:
                out += publish(event)
            except Exception as exc:
                hop.error, hop.position = exc, first + k
                break
            hop.published += 1
        return hop

    def _pull_and_publish(self, it: Iterator[EventLike], first: int) -> _Hop:
        hop = _Hop()
        publish = self._engine.publish
        out = hop.deliveries
        for k in range(self._batch):
            try:
                event = next(it)
            except StopIteration:
                hop.exhausted = True
                break
            except Exception as exc:  # the source's own error: no position to add
                hop.error = exc
                break
            try:
                out += publish(event)
            except Exception as exc:
                hop.error, hop.position = exc, first + k
                break
            hop.published += 1
        return hop


async def _submit(worker: ThreadPoolExecutor, running: list[Future[Any]], fn: Any, *args: Any) -> Any:
    """Run ``fn(*args)`` on the worker; ``running`` holds the hop while it is in flight, so that
    a cancelled consumer can wait for the engine to be left alone."""
    future = worker.submit(fn, *args)
    running.append(future)
    result = await asyncio.wrap_future(future)
    running.remove(future)
    return result


async def _settle(running: list[Future[Any]]) -> None:
    """Wait for the hop in flight (after a cancellation): the engine is the caller's again only
    once the worker has left it. The wait is on the loop; cancelled again, it blocks instead."""
    for future in list(running):
        try:
            await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.exception()  # blocks until the hop is done; its result is not wanted
            raise
        except Exception:
            pass  # its deliveries and its error go nowhere: the consumer is gone
    running.clear()


class _ReadAhead:
    """The events an asynchronous source has produced and no hop has taken yet (``batch`` > 1):
    a task of the stream's reads them into a deque, at most ``limit`` ahead; a hop takes all
    there are (at least one, at most ``limit``). A deque and two flags rather than an
    ``asyncio.Queue``: a queue's ``put`` and ``get`` per event cost as much as matching it."""

    def __init__(self, it: AsyncIterator[EventLike], limit: int):
        self._it = it
        self._limit = limit
        self._events: deque[EventLike] = deque()
        self._ready = asyncio.Event()  # an event or the end is there
        self._room = asyncio.Event()  # the deque is below the limit
        self._end: tuple[BaseException | None] | None = None  # the source's end, and its error

    async def read(self) -> None:
        try:
            async for event in self._it:
                self._events.append(event)
                self._ready.set()
                if len(self._events) >= self._limit:
                    self._room.clear()
                    await self._room.wait()
        except Exception as exc:
            self._end = (exc,)
        else:
            self._end = (None,)
        self._ready.set()

    async def take(self) -> list[EventLike]:
        """The events read so far (up to the limit); ``[]`` at the end; the source's error."""
        while not self._events and self._end is None:
            self._ready.clear()
            await self._ready.wait()
        if not self._events:
            assert self._end is not None
            if self._end[0] is not None:
                raise self._end[0]
            return []
        events = self._events
        if len(events) <= self._limit:
            taken = list(events)
            events.clear()
        else:
            taken = [events.popleft() for _ in range(self._limit)]
        self._room.set()
        return taken


def _located(error: BaseException, position: int) -> BaseException:
    """An ``EventError`` of ``publish``, with the event's place in the source added to its
    reason; other errors as they are."""
    if not isinstance(error, EventError) or position == 0:
        return error
    located = EventError(
        f"{error.reason} (event {position} of the stream)",
        line=error.line,
        event_id=error.event_id,
        type_name=error.type_name,
        attribute=error.attribute,
        column=error.column,
    )
    located.__cause__ = error.__cause__
    return located
