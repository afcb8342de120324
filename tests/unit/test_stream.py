"""``Engine.stream``: asyncio deliveries, matched on a worker thread.

Why: an asyncio application must get exactly ``publish_many``'s deliveries, keep its event loop
running while events are matched, and be able to rely on the pull contract (a broker source
acknowledges an event when it is resumed for the next one); errors and cancellation must leave
the engine usable and no thread behind.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import draw_programs, draw_streams  # noqa: E402
from workloads import stock  # noqa: E402

from faidecs import Bounds, Delivery, DeliveryStream, Engine, EngineStateError, EventError, QueueOverflowError

ROOT = Path(__file__).resolve().parents[2]
STOCK = (ROOT / "examples" / "stock.fdc").read_text()
STOCK_EVENTS = [json.loads(line) for line in (ROOT / "examples" / "stock.jsonl").read_text().splitlines() if line]

# A guard against a deadlock in a broken stream, never a measurement: the waits below return as
# soon as the other side has run.
GUARD_S = 30.0


async def agen(events: list[Any]) -> AsyncIterator[Any]:
    for event in events:
        yield event


def as_json(deliveries: list[Delivery]) -> list[Any]:
    return [d.to_json() for d in deliveries]


async def take(stream: DeliveryStream) -> list[Delivery]:
    async with stream:
        return [d async for d in stream]


def stream_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("faidecs-stream")]


@pytest.mark.parametrize("batch", [1, 3, 1000])
@pytest.mark.parametrize("kind", ["async", "plain"])
def test_stock_example_deliveries_equal_publish_many(batch: int, kind: str) -> None:
    expected = as_json(list(Engine.from_source(STOCK).publish_many(STOCK_EVENTS)))
    assert len(expected) == 4
    engine = Engine.from_source(STOCK)
    source = agen(STOCK_EVENTS) if kind == "async" else list(STOCK_EVENTS)
    assert as_json(asyncio.run(take(engine.stream(source, batch=batch)))) == expected
    assert engine.published == len(STOCK_EVENTS)
    assert stream_threads() == []


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_streams_deliver_what_publish_many_does(data: st.DataObject) -> None:
    spec = data.draw(st.composite(draw_programs)(max_subs=2))
    events = data.draw(st.composite(draw_streams)(spec.types, max_events=40))
    batch = data.draw(st.sampled_from([1, 2, 7]))
    kind = data.draw(st.sampled_from(["async", "plain"]))
    expected = as_json(list(Engine.from_source(spec.text, matcher="reference").publish_many(events)))
    engine = Engine.from_source(spec.text, matcher="reference")
    source = agen(events) if kind == "async" else iter(events)
    got = as_json(asyncio.run(take(engine.stream(source, batch=batch))))
    assert got == expected
    assert engine.state_json() == _state_after(spec.text, events)


def _state_after(text: str, events: list[Any]) -> Any:
    engine = Engine.from_source(text, matcher="reference")
    for event in events:
        engine.publish(event)
    return engine.state_json()


@pytest.mark.parametrize("batch", [1, 64])
def test_event_loop_runs_other_tasks_while_a_long_stream_is_matched(batch: int) -> None:
    workload = stock(3000, seed=3)
    events = workload.events()
    expected = as_json(list(Engine.from_source(workload.program).publish_many(events)))
    assert len(expected) > 50

    async def main() -> tuple[list[int], list[int], list[Delivery]]:
        ticks = 0
        stop = False

        async def ticker() -> None:
            nonlocal ticks
            while not stop:
                ticks += 1
                await asyncio.sleep(0)

        asked: list[int] = []  # the ticker's count when the source is asked for each event

        async def source() -> AsyncIterator[Any]:
            for event in events:
                asked.append(ticks)
                yield event

        task = asyncio.create_task(ticker())
        seen: list[int] = []
        got: list[Delivery] = []
        async with Engine.from_source(workload.program).stream(source(), batch=batch) as deliveries:
            async for delivery in deliveries:
                seen.append(ticks)
                got.append(delivery)
        stop = True
        await task
        return asked, seen, got

    asked, seen, got = asyncio.run(main())
    assert as_json(got) == expected
    if batch == 1:
        # Each event is one hop to the worker, and the ticker runs during every hop.
        assert all(b > a for a, b in zip(asked, asked[1:], strict=False))
    # Deliveries interleave with the ticker: it ran between deliveries many times over.
    assert len(set(seen)) > len(seen) // 4
    assert seen[-1] > seen[0]


def test_matching_runs_off_the_event_loop() -> None:
    """The worker holds ``publish`` until the loop has run another task 100 times: were
    ``publish`` on the loop's thread, that task could never run and the wait would give up."""
    engine = Engine.from_source(STOCK)
    real = engine.publish
    loop_ran = threading.Event()
    calls: list[str] = []

    def publish(event: Any, **kw: Any) -> list[Delivery]:
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            loop_ran.wait(GUARD_S)
        return real(event, **kw)

    engine.publish = publish  # type: ignore[method-assign]

    async def main() -> list[Delivery]:
        async def ticker() -> None:
            for _ in range(100):
                await asyncio.sleep(0)
            loop_ran.set()

        task = asyncio.create_task(ticker())
        got = await take(engine.stream(agen(STOCK_EVENTS)))
        await task
        return got

    got = asyncio.run(main())
    assert loop_ran.is_set()
    assert len(got) == 4
    assert len(calls) == len(STOCK_EVENTS)
    assert all(name.startswith("faidecs-stream") for name in calls)
    assert threading.main_thread().name not in calls


@pytest.mark.parametrize("kind", ["async", "plain"])
def test_pull_contract_source_asked_only_after_deliveries_were_taken(kind: str) -> None:
    """The source records, whenever it is asked for event n+1, how many events the engine had
    published and how many deliveries the consumer had taken: exactly n, and all of the
    deliveries of events 1..n."""
    reference = Engine.from_source(STOCK)
    per_event = [len(reference.publish(e)) for e in STOCK_EVENTS]
    engine = Engine.from_source(STOCK)
    taken = 0
    asked: list[tuple[int, int, int]] = []  # (n, published, deliveries taken) when asked for event n+1

    def note(n: int) -> None:
        asked.append((n, engine.published, taken))

    async def async_source() -> AsyncIterator[Any]:
        for n, event in enumerate(STOCK_EVENTS):
            note(n)
            yield event
        note(len(STOCK_EVENTS))

    def plain_source() -> Iterator[Any]:
        for n, event in enumerate(STOCK_EVENTS):
            note(n)
            yield event
        note(len(STOCK_EVENTS))

    async def main() -> None:
        nonlocal taken
        source = async_source() if kind == "async" else plain_source()
        async with engine.stream(source) as deliveries:
            async for _ in deliveries:
                taken += 1
                await asyncio.sleep(0)  # the consumer is slow: the source must not run ahead meanwhile

    asyncio.run(main())
    assert [a[0] for a in asked] == list(range(len(STOCK_EVENTS) + 1))
    for n, published, took in asked:
        assert published == n
        assert took == sum(per_event[:n])


def test_batch_reads_ahead_at_most_the_batch() -> None:
    events = stock(400, seed=1).events()
    program = stock(1).program
    engine = Engine.from_source(program)
    ahead: list[int] = []

    async def source() -> AsyncIterator[Any]:
        for n, event in enumerate(events):
            ahead.append(n - engine.published)
            yield event

    async def main() -> list[Delivery]:
        return await take(engine.stream(source(), batch=8))

    got = asyncio.run(main())
    assert as_json(got) == as_json(list(Engine.from_source(program).publish_many(events)))
    # Asked for event n while at most 8 in the queue, one in the reader and 8 in a hop wait.
    assert max(ahead) <= 2 * 8 + 1
    assert max(ahead) > 1  # it did read ahead


BAD = {"id": "bad", "type": "StockQuote", "attrs": {"symbol": "ACME", "value": "high", "time": 1}}


@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("kind", ["async", "plain"])
def test_bad_event_raises_event_error_after_earlier_deliveries(batch: int, kind: str) -> None:
    events = [*STOCK_EVENTS[:7], BAD, STOCK_EVENTS[7]]
    engine = Engine.from_source(STOCK)
    got: list[Delivery] = []

    async def main() -> None:
        source = agen(events) if kind == "async" else list(events)
        async with engine.stream(source, batch=batch) as deliveries:
            async for delivery in deliveries:
                got.append(delivery)

    with pytest.raises(EventError) as caught:
        asyncio.run(main())
    error = caught.value
    assert error.event_id == "bad"
    assert error.attribute == "value"
    assert "event 8 of the stream" in str(error)
    assert "event 'bad'" in str(error)
    before = Engine.from_source(STOCK)
    assert as_json(got) == as_json(list(before.publish_many(STOCK_EVENTS[:7])))
    # The engine is usable: the rest of the stream delivers as if the bad event never came.
    assert engine.published == 7
    assert as_json(engine.publish(STOCK_EVENTS[7])) == as_json(before.publish(STOCK_EVENTS[7]))
    assert stream_threads() == []


def test_not_an_event_is_an_event_error() -> None:
    engine = Engine.from_source(STOCK)
    with pytest.raises(EventError, match="event 2 of the stream"):
        asyncio.run(take(engine.stream([STOCK_EVENTS[0], "not an event"])))


@pytest.mark.parametrize("batch", [1, 5])
def test_queue_overflow_ends_the_stream_as_publish_raises_it(batch: int) -> None:
    """A bound with ``overflow="error"`` stops the engine; the stream raises what ``publish``
    raises, after the deliveries of the events before."""
    program = "type A(x: int)\ntype B(x: int)\nsubscription S: A and B and A.x < B.x\n"
    events = [{"id": f"a{k}", "type": "A", "attrs": {"x": 5 - k}} for k in range(3)]
    events.insert(1, {"id": "b0", "type": "B", "attrs": {"x": 9}})
    bounds = Bounds(max_queue=1, overflow="error")
    engine = Engine.from_source(program, bounds=bounds)
    got: list[Delivery] = []

    async def main() -> None:
        async with engine.stream(agen(events), batch=batch) as deliveries:
            async for delivery in deliveries:
                got.append(delivery)

    with pytest.raises(QueueOverflowError) as caught:
        asyncio.run(main())
    direct = Engine.from_source(program, bounds=bounds)
    expected: list[Delivery] = []
    with pytest.raises(QueueOverflowError) as raised:
        for event in events:
            expected += direct.publish(event)
    assert expected, "no delivery before the overflow: the comparison would say little"
    assert str(caught.value) == str(raised.value)
    assert as_json(got) == as_json(expected)
    assert stream_threads() == []


def test_source_error_propagates_and_closes() -> None:
    class Broken(Exception):
        pass

    async def source() -> AsyncIterator[Any]:
        yield STOCK_EVENTS[0]
        raise Broken("broker gone")

    engine = Engine.from_source(STOCK)
    with pytest.raises(Broken):
        asyncio.run(take(engine.stream(source())))
    assert engine.published == 1
    assert stream_threads() == []


@pytest.mark.parametrize("kind", ["async", "plain"])
def test_cancelling_the_consumer_stops_cleanly_and_leaves_the_engine_usable(kind: str) -> None:
    engine = Engine.from_source(STOCK)
    real = engine.publish
    entered = threading.Event()
    release = threading.Event()
    closed: list[str] = []

    def publish(event: Mapping[str, Any], **kw: Any) -> list[Delivery]:
        if event["id"] == "q3":  # hold the worker inside the 5th event
            entered.set()
            release.wait(GUARD_S)
        return real(event, **kw)

    engine.publish = publish  # type: ignore[method-assign]

    async def async_source() -> AsyncIterator[Any]:
        try:
            for event in STOCK_EVENTS:
                yield event
        finally:
            closed.append("async")

    def plain_source() -> Iterator[Any]:
        try:
            yield from STOCK_EVENTS
        finally:
            closed.append(threading.current_thread().name)

    got: list[Delivery] = []

    async def consume() -> None:
        source = async_source() if kind == "async" else plain_source()
        async with engine.stream(source) as deliveries:
            async for delivery in deliveries:
                got.append(delivery)

    async def main() -> None:
        task = asyncio.create_task(consume())
        await asyncio.to_thread(entered.wait, GUARD_S)
        assert entered.is_set()
        task.cancel()
        await asyncio.sleep(0)  # the cancellation reaches the stream, which waits for the worker
        assert not task.done()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert stream_threads() == []
    assert len(closed) == 1
    if kind == "plain":
        assert closed[0].startswith("faidecs-stream")  # closed on the thread that read it
    # The held event was published whole, the rest never asked for.
    assert engine.published == 5
    del engine.publish  # type: ignore[method-assign]
    reference = Engine.from_source(STOCK)
    per_event = [as_json(reference.publish(e)) for e in STOCK_EVENTS]
    assert as_json(got) == sum(per_event[:4], [])
    # Usable: a new stream goes on with the rest, as one uninterrupted run would.
    rest = as_json(asyncio.run(take(engine.stream(STOCK_EVENTS[5:]))))
    assert rest == sum(per_event[5:], [])
    assert rest  # the comparison says something


def test_breaking_out_of_async_with_stops_the_worker_and_closes_the_source() -> None:
    closed: list[bool] = []

    async def source() -> AsyncIterator[Any]:
        try:
            for event in STOCK_EVENTS:
                yield event
        finally:
            closed.append(True)

    async def main() -> int:
        engine = Engine.from_source(STOCK)
        async with engine.stream(source()) as deliveries:
            async for _ in deliveries:
                assert len(stream_threads()) == 1
                break
        return engine.published

    published = asyncio.run(main())
    assert closed == [True]
    assert stream_threads() == []
    assert published < len(STOCK_EVENTS)


def test_one_stream_at_a_time_per_engine() -> None:
    engine = Engine.from_source(STOCK)

    async def main() -> None:
        async with engine.stream(agen(STOCK_EVENTS)) as first:
            await first.__anext__()
            with pytest.raises(EngineStateError, match="already has an open stream"):
                await engine.stream(STOCK_EVENTS).__anext__()
        # Closed: the engine takes a new one.
        assert await take(engine.stream([])) == []

    asyncio.run(main())


@pytest.mark.parametrize("batch", [0, -1, True, 1.5])
def test_batch_must_be_a_positive_integer(batch: Any) -> None:
    with pytest.raises(ValueError, match="batch must be a positive integer"):
        Engine.from_source(STOCK).stream([], batch=batch)


def test_source_must_be_iterable() -> None:
    with pytest.raises(TypeError, match="iterable or an async iterable"):
        Engine.from_source(STOCK).stream(42)  # type: ignore[arg-type]
