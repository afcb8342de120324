"""The embedded engine: a program's subscriptions evaluated on one stream of events.

Every event published to an engine is processed by every subscription in declaration order,
and within a subscription by its conjunctions in canonical order (see ``docs/semantics.md``).
The order of ``publish`` calls is the total order all guarantees refer to.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from faidecs.brief import brief
from faidecs.errors import (
    EngineStateError,
    EventError,
    FaidecsError,
    ProgramError,
    QueueOverflowError,
    SnapshotError,
    SubscriptionNotFound,
)
from faidecs.gcpause import paused_gc
from faidecs.grammar import compile_program
from faidecs.grammar.model import Conjunction, Covering, EventType, Program, Subscription
from faidecs.matching.batch import BatchResult, BatchScope, ColumnTable, Order, publish_batch
from faidecs.matching.bounds import UNBOUNDED, Bounds
from faidecs.matching.conjunction_state import (
    AnyConjunctionState,
    ConjunctionState,
    PlainState,
    StagedConjunctionState,
)
from faidecs.matching.delivery import Delivery
from faidecs.matching.events import Event, EventValidator
from faidecs.matching.extended_state import ExtendedConjunctionState
from faidecs.matching.filter_index import Route, TypeRouter, access
from faidecs.matching.found import Matches
from faidecs.matching.partitioned_state import PartitionedConjunctionState
from faidecs.matching.records import (
    KERNEL_MODES,
    MATCHERS,
    SNAPSHOT_FORMAT,
    ConjunctionMetrics,
    KernelMode,
    Matcher,
    MatcherKinds,
    Metrics,
    Snapshot,
    StateJson,
)
from faidecs.matching.reference import ReferenceMatcher
from faidecs.matching.snapshot_schema import Top, convert
from faidecs.matching.stream import DeliveryStream, Source
from faidecs.matching.tiered_state import TieredState

if TYPE_CHECKING:
    from faidecs.matching.compiled_extended_state import CompiledExtendedState
    from faidecs.matching.compiled_state import EventContext
    from faidecs.matching.kernel_broker import KernelHandle


@dataclass(slots=True)
class _SubscriptionState:
    subscription: Subscription
    conjunctions: list[AnyConjunctionState | PartitionedConjunctionState]  # as written
    order: tuple[int, ...]  # canonical evaluation order
    bounds: Bounds
    routes: list[Route]  # one per conjunction, in evaluation order
    # The kernels of the conjunctions it makes states for later (the partitions of a partitioned
    # one, on the first event of each value), requested now and held: each partition made once
    # one is loaded starts on it, and ``wait_for_kernels`` waits for them.
    kernels: list[_Prefetch]


class _Prefetch:
    """A kernel requested for states not made yet; waited for like a :class:`TieredState`."""

    __slots__ = ("handle",)

    def __init__(self, handle: KernelHandle):
        self.handle = handle

    def poll(self) -> bool:
        return self.handle.done.is_set()


BoundsSpec = Bounds | Mapping[str, Bounds] | None


class Engine:
    """An embedded correlation engine.

    >>> engine = Engine.from_source('''
    ...   type T1(a: int)
    ...   type T2(a: int)
    ...   subscription S: T1 and T2''')
    >>> engine.publish({"id": "x1", "type": "T1", "attrs": {"a": 1}})
    []
    >>> [d.to_json() for d in engine.publish({"id": "y1", "type": "T2", "attrs": {"a": 2}})]
    [{'subscription': 'S', 'conjunction': 0, 'relation': ['x1', 'y1']}]
    """

    def __init__(
        self,
        program: Program,
        *,
        matcher: Matcher = "compiled",
        bounds: BoundsSpec = None,
        kernels: KernelMode | None = None,
    ):
        """``matcher``: ``"compiled"`` (each conjunction runs as a numba kernel; conjunctions the
        kernels cannot run, those that order strings, use the reference matcher) or
        ``"reference"`` (the oracle). ``bounds``: one :class:`Bounds` for every conjunction, or one
        per subscription name (see :class:`faidecs.Bounds`). ``kernels`` (compiled
        matcher): ``"background"`` (the default; conjunctions whose kernel this process does not
        hold yet run on the reference matcher while a worker process compiles it, and switch to
        it between two events) or ``"eager"`` (every kernel is compiled or loaded before the
        engine is returned); the ``FAIDECS_KERNELS`` environment variable sets the default."""
        # Checked at run time too: callers may be untyped, and FAIDECS_KERNELS is any string.
        if matcher not in MATCHERS:
            raise ValueError(f"unknown matcher {matcher!r}; available: {', '.join(MATCHERS)}")
        mode = kernels if kernels is not None else os.environ.get("FAIDECS_KERNELS") or "background"
        if mode not in KERNEL_MODES:
            raise ValueError(f"unknown kernels mode {mode!r}; available: {', '.join(KERNEL_MODES)}")
        self.matcher: Matcher = matcher
        self.kernels: KernelMode = mode
        self._pending: list[
            TieredState | _Prefetch | CompiledExtendedState
        ] = []  # conjunctions waiting for their kernel
        self._bounds = _check_bounds(bounds, {s.name for s in program.subscriptions})
        self._types: dict[str, EventType] = dict(program.types)
        self._validator = EventValidator(self._types)
        self._subscriptions: dict[str, _SubscriptionState] = {}
        self._routers: dict[str, TypeRouter] = {}  # per event type: the filter index
        self._seen: dict[str, int] = dict.fromkeys(self._types, 0)  # arrivals per type: the routes' clocks
        self._added = 0  # subscriptions added so far: the first part of a route's rank
        self._published = 0
        self._stopped: QueueOverflowError | None = None
        self._context: EventContext | None = None
        self._compiled: list[Any] = []  # the compiled conjunction states, for garbage collection
        with paused_gc():
            for sub in program.subscriptions:
                self._add(sub)

    @classmethod
    def from_source(
        cls,
        text: str,
        *,
        filename: str = "<program>",
        matcher: Matcher = "compiled",
        bounds: BoundsSpec = None,
        kernels: KernelMode | None = None,
    ) -> Engine:
        """Compile a program; raises :class:`~faidecs.errors.ProgramError` with positions."""
        with paused_gc():
            program = compile_program(text, filename)
        return cls(program, matcher=matcher, bounds=bounds, kernels=kernels)

    # --- program ---------------------------------------------------------------------------

    @property
    def types(self) -> Mapping[str, EventType]:
        return dict(self._types)

    @property
    def subscriptions(self) -> tuple[Subscription, ...]:
        return tuple(s.subscription for s in self._subscriptions.values())

    @property
    def published(self) -> int:
        """How many events have been published (accepted) so far."""
        return self._published

    def source(self) -> str:
        """Program text equivalent to the engine's current types and subscriptions."""
        parts = [t.source or t.declaration() for t in self._types.values()]
        parts += [s.subscription.source for s in self._subscriptions.values()]
        return "\n".join(parts) + "\n"

    def _add(self, sub: Subscription) -> None:
        bounds = self._bounds.get(sub.name, self._bounds.get("", UNBOUNDED))
        states: list[AnyConjunctionState | PartitionedConjunctionState] = []
        kernels: list[_Prefetch] = []
        for index, c in enumerate(sub.conjunctions):

            def make(part: Conjunction, index: int = index) -> PlainState:
                return self._plain_state(part, sub, bounds, index)

            def whole(c: Conjunction = c, make: Callable[[Conjunction], PlainState] = make) -> AnyConjunctionState:
                staged = sub.covering is Covering.STAGED and len(c.components()) > 1
                return StagedConjunctionState(c, make) if staged else make(c)

            if sub.partition_by is not None:
                states.append(PartitionedConjunctionState(c, sub.partition_by, self._types, whole))
                staged = sub.covering is Covering.STAGED and len(c.components()) > 1
                if not sub.extended:
                    kernels += self._prefetch([c.project(p) for p in c.components()] if staged else [c])
                else:
                    kernels += self._prefetch([c], sub)
            else:
                states.append(whole())
        routes = []
        for rank, index in enumerate(sub.evaluation_order):
            state = states[index]
            # Partitioned and staged states count their parts' arrivals themselves (and are
            # offered every event of their types); a plain state's clock is the route's.
            clocked = not isinstance(state, (PartitionedConjunctionState, StagedConjunctionState))
            route = Route((self._added, rank), state, sub, index, sub.conjunctions[index].watched_types, clocked)
            route.take_clock(0, self._seen)  # a new state's clock is 0
            routes.append(route)
        self._added += 1
        added = self._subscriptions[sub.name] = _SubscriptionState(
            sub, states, sub.evaluation_order, bounds, routes, kernels
        )
        self._index(added)

    def _plain_state(self, c: Conjunction, sub: Subscription, bounds: Bounds, index: int) -> PlainState:
        if sub.extended:
            # Groups, negations, windows, ALL and NONE: the extended state, searched by a kernel
            # where the extended kernels compile the conjunction.
            return self._extended_state(c, sub, bounds, index)
        reference = ConjunctionState(ReferenceMatcher(c, sub.matching), sub.disposal, bounds, (sub.name, index))
        if self.matcher != "compiled":
            return reference
        from faidecs.matching import kernel_cache
        from faidecs.matching.compiled_state import CompiledConjunctionState, EventContext
        from faidecs.matching.kernel_source import NotCompilable, generate

        try:
            source = generate(c, self._types)
        except NotCompilable:
            return reference  # ordering of strings: the reference matcher runs this conjunction
        context = self._context = self._context or EventContext()

        def build(kernel: kernel_cache.CompiledKernel) -> CompiledConjunctionState:
            return CompiledConjunctionState(
                c, sub.matching, sub.disposal, kernel, source.constants, context, self._types, bounds, (sub.name, index)
            )

        kernel = kernel_cache.loaded(source.key)
        if kernel is None and self.kernels == "eager":
            kernel = kernel_cache.load(source)
        if kernel is not None:
            state = build(kernel)
            self._compiled.append(state)
            return state
        from faidecs.matching.kernel_broker import broker

        def swapped(compiled: CompiledConjunctionState) -> None:
            self._compiled.append(compiled)
            # A conjunction the engine offers directly (not inside a partitioned or staged one)
            # drops the wrapper: one call less per event.
            state = self._subscriptions.get(sub.name)
            if state is not None and state.conjunctions[index] is tiered:
                state.conjunctions[index] = compiled
                for route in state.routes:
                    if route.state is tiered:
                        route.state = compiled

        tiered = TieredState(reference, broker().request(source), build, swapped)
        self._pending.append(tiered)
        return tiered

    def _extended_state(self, c: Conjunction, sub: Subscription, bounds: Bounds, index: int) -> PlainState:
        owner = (sub.name, index)
        if self.matcher != "compiled":
            return ExtendedConjunctionState(c, sub.matching, sub.disposal, sub.window, bounds, owner)
        from faidecs.matching import kernel_cache
        from faidecs.matching.compiled_extended_state import CompiledExtendedState
        from faidecs.matching.compiled_state import EventContext
        from faidecs.matching.extended_kernel_source import generate_extended
        from faidecs.matching.kernel_source import NotCompilable

        try:
            source, span = generate_extended(c, self._types, sub.window)
        except NotCompilable:
            return ExtendedConjunctionState(c, sub.matching, sub.disposal, sub.window, bounds, owner)
        context = self._context = self._context or EventContext()
        state = CompiledExtendedState(
            c, sub.matching, sub.disposal, sub.window, source, span, context.strings, self._types, bounds, owner
        )
        state.kernel = kernel_cache.loaded(source.key)
        if state.kernel is None and self.kernels == "eager":
            state.kernel = kernel_cache.load(source)
        if state.kernel is None:
            from faidecs.matching.kernel_broker import broker

            # The state searches with the reference matcher until the kernel is loaded.
            state.handle = broker().request(source)
            self._pending.append(state)
        return state

    def _prefetch(self, conjunctions: list[Conjunction], extended: Subscription | None = None) -> list[_Prefetch]:
        """Request the kernels of states to be made later, in the background mode (in the eager
        one, each state loads its kernel when it is made); ``extended``: the subscription of
        extended conjunctions (their kernels depend on its window)."""
        if self.matcher != "compiled" or self.kernels != "background":
            return []
        from faidecs.matching.extended_kernel_source import generate_extended
        from faidecs.matching.kernel_broker import broker
        from faidecs.matching.kernel_source import NotCompilable, generate

        requested = []
        for c in conjunctions:
            try:
                source = (
                    generate(c, self._types)
                    if extended is None
                    else generate_extended(c, self._types, extended.window)[0]
                )
            except NotCompilable:
                continue
            requested.append(_Prefetch(broker().request(source)))
        self._pending += [p for p in requested if not p.poll()]
        return requested

    def wait_for_kernels(self, timeout: float | None = None) -> bool:
        """Block until every conjunction that can run compiled has its kernel (or its kernel
        failed to compile, which leaves it on the reference matcher), and switch them to their
        kernels; True if that happened within ``timeout`` seconds. Publishing never waits: this
        is for measuring and for applications that prefer a slow start to a slow first minute."""
        from faidecs.matching.kernel_broker import wait

        done = wait([t.handle for t in self._pending if t.handle is not None], timeout)
        self._poll_kernels()
        return done

    def _poll_kernels(self) -> None:
        """Switch the conjunctions whose kernels are ready (each also does so on its next event)."""
        if self._pending:
            self._pending = [t for t in self._pending if not t.poll() and t.handle is not None]

    def _index(self, state: _SubscriptionState) -> None:
        """Enter a subscription's conjunctions into the filter index of each of their types."""
        for route in state.routes:
            # An age bound expires events at every arrival of the conjunction's types, so such a
            # conjunction is offered every one of them.
            # An extended one watches time and negated events on every arrival of its types.
            indexable = route.clocked and state.bounds.max_age is None and not state.subscription.extended
            conjunction = state.subscription.conjunctions[route.index]
            for type_name in route.types:
                how = route.access[type_name] = access(conjunction, type_name, indexable)
                router = self._routers.get(type_name)
                if router is None:
                    router = self._routers[type_name] = TypeRouter()
                router.add(route, how)

    def _unindex(self, state: _SubscriptionState) -> None:
        for route in state.routes:
            for type_name in route.types:
                router = self._routers[type_name]
                router.remove(route, route.access[type_name])
                if not router:
                    del self._routers[type_name]

    def _sync_clocks(self) -> None:
        """Bring every conjunction's clock up to date with the arrivals the index skipped, before
        anything reads it (snapshots, checks, batches)."""
        seen = self._seen
        for state in self._subscriptions.values():
            for route in state.routes:
                if route.clocked:
                    route.state.set_clock(route.clock(seen))

    def _take_clocks(self) -> None:
        """The routes' offsets from their states' clocks (after a restore)."""
        seen = self._seen
        for state in self._subscriptions.values():
            for route in state.routes:
                if route.clocked:
                    route.take_clock(route.state.clock, seen)

    def matchers(self) -> MatcherKinds:
        """Per subscription, per conjunction as written: ``"compiled"`` or ``"reference"`` (for a
        staged conjunction, one entry per component, joined by ``+``)."""

        def kind(state: Any) -> str:
            if isinstance(state, PartitionedConjunctionState):
                # Partitions appear with their values; the first one's matcher stands for all.
                return kind(next(iter(state.parts.values()))) if state.parts else self._kind(state.conjunction)
            if isinstance(state, StagedConjunctionState):
                return "+".join(kind(p) for p in state.parts)
            if isinstance(state, TieredState):
                return kind(state.impl)
            if isinstance(state, ExtendedConjunctionState):  # compiled once its kernel is loaded
                return "compiled" if getattr(state, "compiled", False) else "reference"
            return "reference" if isinstance(state, (ConjunctionState, ExtendedConjunctionState)) else "compiled"

        return {name: [kind(c) for c in s.conjunctions] for name, s in self._subscriptions.items()}

    def _kind(self, c: Conjunction) -> str:
        """The matcher a new state of ``c`` would use."""
        if self.matcher != "compiled" or c.extended:
            return "reference"
        from faidecs.matching import kernel_cache
        from faidecs.matching.kernel_source import NotCompilable, generate

        try:
            source = generate(c, self._types)
        except NotCompilable:
            return "reference"
        return "compiled" if self.kernels == "eager" or kernel_cache.loaded(source.key) else "reference"

    def subscribe(self, text: str) -> list[str]:
        """Add the subscriptions (and any new types) declared in ``text`` at run time; they start
        with empty queues. Returns their names. Raises ``ProgramError`` and changes nothing if
        ``text`` does not check."""
        program = compile_program(text, "<subscribe>", known_types=self._types, taken_names=self._subscriptions)
        self._types.update(program.types)
        for type_name in program.types:
            self._seen.setdefault(type_name, 0)
        with paused_gc():
            for sub in program.subscriptions:
                self._add(sub)
        return [s.name for s in program.subscriptions]

    def unsubscribe(self, name: str) -> None:
        """Remove a subscription and its queues."""
        if name not in self._subscriptions:
            raise SubscriptionNotFound(f"no subscription named {name!r}")
        gone = self._subscriptions.pop(name)
        parts = {id(p) for c in gone.conjunctions for p in _plain_states(c)}
        self._compiled = [c for c in self._compiled if id(c) not in parts]
        self._unindex(gone)

    # --- events ----------------------------------------------------------------------------

    def validate(self, obj: Any, *, line: int | None = None) -> Event:
        """Validate one event in the input JSON shape (see ``docs/dsl.md``). Without an ``id``,
        the event is named by ``line`` if given, else by its 1-based arrival number."""
        default_id = str(line if line is not None else self._published + 1)
        return self._validator.validate(obj, default_id=default_id, line=line)

    def publish(self, event: Event | Mapping[str, Any], *, line: int | None = None) -> list[Delivery]:
        """Process one event; return the relations it completes, in delivery order.

        A mapping is validated first (raises :class:`~faidecs.errors.EventError`); an
        :class:`Event` from :meth:`validate` is processed directly."""
        if not isinstance(event, Event):
            event = self.validate(event, line=line)
        else:
            declared = self._types.get(event.event_type.name)
            if declared is not event.event_type and declared != event.event_type:
                raise EventError(
                    "event of a type this engine does not declare (or declares differently)",
                    event_id=event.id,
                    type_name=event.type,
                )
        if self._stopped is not None:
            raise self._stopped
        arrival = self._published
        self._published += 1
        type_name = event.event_type.name
        seen = self._seen
        seen[type_name] += 1
        deliveries: list[Delivery] = []
        router = self._routers.get(type_name)
        try:
            for route in router.routes(event.values) if router is not None else ():
                if route.clocked:
                    relation = route.state.offer(event, arrival, route.clock(seen))
                else:
                    relation = route.state.offer(event, arrival)
                if relation is not None:
                    if isinstance(relation, Matches):
                        deliveries += _delivered(route.name, route.index, relation)
                    else:
                        deliveries.append(Delivery(route.name, route.index, relation, route.signature))
        except QueueOverflowError as exc:
            self._stopped = exc
            raise
        context = self._context
        if context is not None and len(context.events) > context.next_collection:
            self._collect()
        return deliveries

    def advance(self, time: int | float) -> list[Delivery]:
        """A heartbeat: the stream has reached event time ``time`` without an event. Windowed
        subscriptions purge what the window no longer admits, and absences whose deadline it
        passes are delivered (``Delivery.timeout``). It takes its place in the order like an
        event: call it between publishes, never concurrently with them."""
        if isinstance(time, bool) or not isinstance(time, (int, float)) or time != time:
            raise ValueError(f"advance needs a number (event time), not {time!r}")
        deliveries: list[Delivery] = []
        for state in self._subscriptions.values():
            if state.subscription.window is None:
                continue
            for rank in state.order:
                for part in _plain_states(state.conjunctions[rank]):
                    if isinstance(part, ExtendedConjunctionState):
                        found = part.advance(time)
                        if found is not None:
                            deliveries += _delivered(state.subscription.name, rank, found)
        return deliveries

    def _collect(self) -> None:
        assert self._context is not None
        self._context.collect((c.live_arrivals(t) for c in self._compiled for t in range(c.m)), len(self._compiled))

    def publish_batch(self, tables: Mapping[str, ColumnTable], order: Order) -> BatchResult:
        """Process a whole batch of events given as columns: ``tables`` maps each type name to
        its columns (a mapping of attribute name to array, a pandas DataFrame, or a pyarrow
        Table; an optional ``id`` column names the events), and ``order`` gives the global
        arrival order as one type name (or index into ``tables``) per event: the k-th occurrence
        of a type is that type's k-th row. Deliveries are exactly those of publishing the events
        one by one in that order; see :class:`faidecs.BatchResult`."""
        if self._stopped is not None:
            raise self._stopped
        self._sync_clocks()  # every conjunction sees every event of its types in a batch
        self._poll_kernels()
        scope = BatchScope(
            self._types,
            self._context,
            self._published,
            self._seen,
            [(state.subscription, state.routes) for state in self._subscriptions.values()],
        )
        try:
            result = publish_batch(scope, tables, order)
        except QueueOverflowError as exc:
            self._stopped = exc
            raise
        finally:
            self._published = scope.published
        if self._context is not None:
            self._collect()
        return result

    def publish_many(self, events: Iterable[Event | Mapping[str, Any]]) -> Iterator[Delivery]:
        for event in events:
            yield from self.publish(event)

    def stream(self, source: Source, *, batch: int = 1) -> DeliveryStream:
        """The deliveries of ``source`` (an async iterable, or a plain iterable, of events as
        :meth:`publish` takes them) for ``async for``, matched on a worker thread so that the
        event loop is never blocked. The source is asked for an event only once every delivery
        of the one before was taken (``batch=1``); ``batch=N`` hands the worker up to N events
        per hop and reads the source up to 2N events ahead. See :class:`faidecs.DeliveryStream`."""
        return DeliveryStream(self, source, batch=batch)

    # --- state -----------------------------------------------------------------------------

    def state_json(self) -> StateJson:
        """Per subscription, per conjunction as written, per type: the queued ids, oldest first
        (a staged conjunction adds its waiting component relations under ``"staged"``)."""
        return {name: [c.state_json() for c in s.conjunctions] for name, s in self._subscriptions.items()}

    def metrics(self) -> Metrics:
        """Gauges: events published, and per subscription, per conjunction as written, the queue
        lengths, relations delivered and events dropped by bounds."""
        return {
            "published": self._published,
            "subscriptions": {
                name: [_conjunction_metrics(c, s.subscription.extended) for c in s.conjunctions]
                for name, s in self._subscriptions.items()
            },
        }

    def check(self) -> None:
        """Check the engine's internal invariants: the filter index of every type (each list of
        routes in delivery order, one route per conjunction and type), and every conjunction's
        queues (each in arrival order, holding only its type, within its bounds). Raises
        :class:`~faidecs.errors.EngineStateError` naming the inconsistent part; the tests call
        this after every step. It works the same under ``python -O``."""
        self._sync_clocks()
        for type_name, router in self._routers.items():
            try:
                router.check()
            except EngineStateError as exc:
                raise EngineStateError(f"filter index of type {type_name}: {exc}") from None
        indexed = sum(len(r) for r in self._routers.values())
        expected = sum(len(route.types) for s in self._subscriptions.values() for route in s.routes)
        if indexed != expected:
            raise EngineStateError(
                f"the filter index holds {indexed} routes, expected {expected} (one per conjunction and type)"
            )
        for name, s in self._subscriptions.items():
            if len(s.conjunctions) != len(s.subscription.conjunctions):
                raise EngineStateError(
                    f"subscription {name}: {len(s.conjunctions)} conjunction states "
                    f"for {len(s.subscription.conjunctions)} conjunctions"
                )
            for k, c in enumerate(s.conjunctions):
                try:
                    c.check()
                except EngineStateError as exc:
                    raise EngineStateError(f"subscription {name}, conjunction {k}: {exc}") from None

    def snapshot(self) -> Snapshot:
        """The engine's exact state as JSON-compatible data: program, queues and counters.
        A replica or a joining subscriber starts from it with :meth:`restore`. An engine stopped
        by a queue overflow has no consistent state to give: this raises the overflow again."""
        if self._stopped is not None:
            raise self._stopped
        self._sync_clocks()
        return {
            "format": SNAPSHOT_FORMAT,
            "program": self.source(),
            "published": self._published,
            "queues": {name: [c.snapshot() for c in s.conjunctions] for name, s in self._subscriptions.items()},
        }

    @classmethod
    def restore(
        cls,
        snapshot: Mapping[str, Any],
        *,
        matcher: Matcher = "compiled",
        bounds: BoundsSpec = None,
        kernels: KernelMode | None = None,
    ) -> Engine:
        """An engine in exactly the state ``snapshot`` describes. Bounds are configuration, not
        state: pass the same ``bounds`` as the engine that took the snapshot."""
        if not isinstance(snapshot, Mapping) or snapshot.get("format") != SNAPSHOT_FORMAT:
            found = snapshot.get("format") if isinstance(snapshot, Mapping) else None
            raise SnapshotError(
                f"not a faidecs snapshot of format {SNAPSHOT_FORMAT!r}"
                + (f" (found {brief(found)})" if isinstance(found, str) else "")
            )
        # The whole shape first: nothing below reads a field of the wrong type or range.
        top: Top = convert(snapshot, Top)
        try:
            engine = cls.from_source(
                top.program, filename="<snapshot>", matcher=matcher, bounds=bounds, kernels=kernels
            )
        except ProgramError as exc:
            raise SnapshotError(f"program: {exc}") from None
        published, queues = top.published, top.queues
        engine._published = published
        if set(queues) != set(engine._subscriptions):
            raise SnapshotError("queues: do not name exactly the program's subscriptions")
        for name, state in engine._subscriptions.items():
            conj_queues = queues[name]
            if len(conj_queues) != len(state.conjunctions):
                raise SnapshotError(f"queues.{name}: expected {len(state.conjunctions)} conjunction states")
            for k, (conj, saved) in enumerate(zip(state.conjunctions, conj_queues)):
                try:
                    conj.restore(saved, engine._validator.validate, published)
                except (EventError, SnapshotError) as exc:
                    raise SnapshotError(f"queues.{name}[{k}] (subscription {name}, conjunction {k}): {exc}") from None
        engine._take_clocks()
        return engine


def _plain_states(state: Any) -> Iterator[Any]:
    """The plain (reference or compiled) states inside a conjunction's state."""
    if isinstance(state, PartitionedConjunctionState):
        for part in state.parts.values():
            yield from _plain_states(part)
    elif isinstance(state, StagedConjunctionState):
        for part in state.parts:
            yield from _plain_states(part)
    elif isinstance(state, TieredState):
        yield state.impl
    else:
        yield state


def _check_bounds(bounds: BoundsSpec, names: set[str]) -> dict[str, Bounds]:
    """Bounds by subscription name ("" for all). Raises ``FaidecsError`` for an unknown name."""
    if bounds is None:
        return {}
    if isinstance(bounds, Bounds):
        return {"": bounds}
    unknown = sorted(set(bounds) - names)
    if unknown:
        raise FaidecsError(f"bounds name subscriptions the program does not have: {', '.join(unknown)}")
    for name, b in bounds.items():
        if not isinstance(b, Bounds):
            raise FaidecsError(f"bounds for {name!r} must be a faidecs Bounds, not {type(b).__name__}")
    return dict(bounds)


def _delivered(name: str, index: int, found: Matches) -> list[Delivery]:
    return [Delivery(name, index, f.relation, f.signature, f.timeout, f.aggregates) for f in found]


def _conjunction_metrics(state: Any, extended: bool) -> ConjunctionMetrics:
    out: ConjunctionMetrics = {"queues": state.queue_lengths(), "deliveries": state.deliveries, "drops": state.drops}
    if extended:
        parts = [p for p in _plain_states(state) if isinstance(p, ExtendedConjunctionState)]
        out["late"] = sum(p.late for p in parts)
        out["purged"] = sum(p.purged for p in parts)
        out["logged"] = sum(sum(p.log_lengths()) for p in parts)
    return out
