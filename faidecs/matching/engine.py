"""The embedded engine: a program's subscriptions evaluated on one stream of events.

Every event published to an engine is processed by every subscription in declaration order,
and within a subscription by its conjunctions in canonical order (see ``docs/semantics.md``).
The order of ``publish`` calls is the total order all guarantees refer to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from faidecs.errors import EventError, SnapshotError, SubscriptionNotFound
from faidecs.grammar import compile_program
from faidecs.grammar.model import Conjunction, Covering, EventType, Program, Subscription
from faidecs.matching.conjunction_state import AnyConjunctionState, ConjunctionState, StagedConjunctionState
from faidecs.matching.delivery import Delivery
from faidecs.matching.events import Event, EventValidator
from faidecs.matching.reference import ReferenceMatcher

MATCHERS = ("reference",)
SNAPSHOT_FORMAT = "faidecs.snapshot/1"


@dataclass(slots=True)
class _SubscriptionState:
    subscription: Subscription
    conjunctions: list[AnyConjunctionState]  # as written
    order: tuple[int, ...]  # canonical evaluation order


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

    def __init__(self, program: Program, *, matcher: str = "reference"):
        if matcher not in MATCHERS:
            raise ValueError(f"unknown matcher {matcher!r}; available: {', '.join(MATCHERS)}")
        self.matcher = matcher
        self._types: dict[str, EventType] = dict(program.types)
        self._validator = EventValidator(self._types)
        self._subscriptions: dict[str, _SubscriptionState] = {}
        self._published = 0
        for sub in program.subscriptions:
            self._add(sub)

    @classmethod
    def from_source(cls, text: str, *, filename: str = "<program>", matcher: str = "reference") -> "Engine":
        """Compile a program; raises :class:`~faidecs.errors.ProgramError` with positions."""
        return cls(compile_program(text, filename), matcher=matcher)

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
        def make(c: Conjunction) -> ConjunctionState:
            return ConjunctionState(ReferenceMatcher(c, sub.matching), sub.disposal)

        states: list[AnyConjunctionState] = []
        for c in sub.conjunctions:
            staged = sub.covering is Covering.STAGED and len(c.components()) > 1
            states.append(StagedConjunctionState(c, make) if staged else make(c))
        self._subscriptions[sub.name] = _SubscriptionState(sub, states, sub.evaluation_order)

    def subscribe(self, text: str) -> list[str]:
        """Add the subscriptions (and any new types) declared in ``text`` at run time; they start
        with empty queues. Returns their names. Raises ``ProgramError`` and changes nothing if
        ``text`` does not check."""
        program = compile_program(text, "<subscribe>", known_types=self._types, taken_names=self._subscriptions)
        self._types.update(program.types)
        for sub in program.subscriptions:
            self._add(sub)
        return [s.name for s in program.subscriptions]

    def unsubscribe(self, name: str) -> None:
        """Remove a subscription and its queues."""
        if name not in self._subscriptions:
            raise SubscriptionNotFound(f"no subscription named {name!r}")
        del self._subscriptions[name]

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
            declared = self._types.get(event.type)
            if declared is not event.event_type and declared != event.event_type:
                raise EventError(
                    "event of a type this engine does not declare (or declares differently)",
                    event_id=event.id,
                    type_name=event.type,
                )
        self._published += 1
        deliveries: list[Delivery] = []
        for state in self._subscriptions.values():
            for index in state.order:
                relation = state.conjunctions[index].offer(event)
                if relation is not None:
                    sub = state.subscription
                    deliveries.append(Delivery(sub.name, index, relation, sub.conjunctions[index].signature))
        return deliveries

    def publish_many(self, events: Iterable[Event | Mapping[str, Any]]) -> Iterator[Delivery]:
        for event in events:
            yield from self.publish(event)

    # --- state -----------------------------------------------------------------------------

    def state_json(self) -> dict[str, list[dict[str, Any]]]:
        """Per subscription, per conjunction as written, per type: the queued ids, oldest first
        (a staged conjunction adds its waiting component relations under ``"staged"``)."""
        return {name: [c.state_json() for c in s.conjunctions] for name, s in self._subscriptions.items()}

    def check(self) -> None:
        """Assert internal invariants (used by the tests after every step)."""
        for s in self._subscriptions.values():
            assert len(s.conjunctions) == len(s.subscription.conjunctions)
            for c in s.conjunctions:
                c.check()

    def snapshot(self) -> dict[str, Any]:
        """The engine's exact state as JSON-compatible data: program, queues and counters.
        A replica or a joining subscriber starts from it with :meth:`restore`."""
        return {
            "format": SNAPSHOT_FORMAT,
            "program": self.source(),
            "published": self._published,
            "queues": {name: [c.snapshot() for c in s.conjunctions] for name, s in self._subscriptions.items()},
        }

    @classmethod
    def restore(cls, snapshot: Mapping[str, Any], *, matcher: str = "reference") -> "Engine":
        """An engine in exactly the state ``snapshot`` describes."""
        if not isinstance(snapshot, Mapping) or snapshot.get("format") != SNAPSHOT_FORMAT:
            raise SnapshotError(f"not a faidecs snapshot (expected format {SNAPSHOT_FORMAT!r})")
        try:
            engine = cls.from_source(snapshot["program"], filename="<snapshot>", matcher=matcher)
            published = snapshot["published"]
            queues = snapshot["queues"]
        except KeyError as exc:
            raise SnapshotError(f"snapshot lacks {exc.args[0]!r}") from None
        if not isinstance(published, int) or published < 0:
            raise SnapshotError("snapshot 'published' must be a non-negative integer")
        engine._published = published
        if not isinstance(queues, Mapping) or set(queues) != set(engine._subscriptions):
            raise SnapshotError("snapshot queues do not name exactly the program's subscriptions")
        for name, state in engine._subscriptions.items():
            conj_queues = queues[name]
            if not isinstance(conj_queues, list) or len(conj_queues) != len(state.conjunctions):
                raise SnapshotError(f"subscription {name}: expected {len(state.conjunctions)} conjunction states")
            for k, (conj, saved) in enumerate(zip(state.conjunctions, conj_queues)):
                try:
                    conj.restore(saved, engine._validator.validate)
                except (EventError, SnapshotError) as exc:
                    raise SnapshotError(f"subscription {name}, conjunction {k}: {exc}") from None
        return engine
