"""Which conjunctions an arriving event can concern: one filter index per event type, across
every subscription of an engine (the idea of Esper's filter service).

ENQUEUE admits an event into a conjunction's queue iff some position of its type has all its
unary predicates true. A conjunction whose positions of a type all test one attribute against
constants can be found from the event's value of that attribute instead of being asked:

- equality (``T.symbol = "S17"``): a hash table from the constant to the conjunctions;
- ranges (``T.size > 100``, ``<``, ``<=``, ``>=``): conjunctions sorted by their threshold, so
  the ones an event passes are a prefix (``>``, ``>=``) or a suffix (``<``, ``<=``);
- anything else (``!=``, arithmetic, a position without unary predicates, bounded ages,
  partitioned and staged conjunctions): a residual list, offered every event of the type.

The index only narrows: every conjunction it returns still runs its own ENQUEUE test, so the
index may return too many (a range that holds for another position) but never too few. Lookups
use Python's own ``==`` and ``<``, which is how the reference matcher compares values (ints and
floats exactly, strings by code point). Results come back in delivery order (``rank``).

Cost per event: one hash lookup per indexed attribute, a bisection per range attribute, plus
the conjunctions returned; independent of how many conjunctions the event does not concern.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from sortedcontainers import SortedKeyList

from faidecs.errors import EngineStateError
from faidecs.grammar.model import AttrOf, Conjunction, Const, Kind

_RANGE_OPS = ("<", "<=", ">", ">=")


@dataclass(eq=False, slots=True)
class Route:
    """One conjunction of one subscription, as the engine offers it events.

    ``rank`` orders routes as deliveries are ordered (subscriptions in declaration order, each
    one's conjunctions in canonical order). ``types`` and ``offset`` give the conjunction's clock
    (arrivals of its types) from the engine's per-type counts, so a conjunction the index skips
    still sees its clock advance: ``offset + sum(seen[t] for t in types)``. ``clocked`` is false
    for states that count their own arrivals (partitioned and staged conjunctions, always offered
    every event of their types)."""

    rank: tuple[int, int]
    state: Any
    subscription: Any
    index: int
    types: tuple[str, ...]
    clocked: bool
    offset: int = 0
    access: dict[str, Access] = field(default_factory=dict)  # per type: how the index finds it
    # What each delivery names, looked up once.
    name: str = field(init=False)
    signature: tuple[Any, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.subscription.name
        self.signature = self.subscription.conjunctions[self.index].signature

    def arrivals(self, seen: Mapping[str, int]) -> int:
        """The engine's arrivals of this conjunction's types so far."""
        return sum(map(seen.__getitem__, self.types))

    def clock(self, seen: Mapping[str, int]) -> int:
        return self.offset + self.arrivals(seen)

    def take_clock(self, clock: int, seen: Mapping[str, int]) -> None:
        """Make :meth:`clock` read ``clock`` now (a new or restored state)."""
        self.offset = clock - self.arrivals(seen)


@dataclass(frozen=True, slots=True)
class Equal:
    """Admission needs ``values[position]`` to equal one of ``keys``."""

    position: int
    keys: frozenset[Any]


@dataclass(frozen=True, slots=True)
class Bounded:
    """Admission needs ``values[position] op constant`` for one of ``tests``."""

    position: int
    tests: tuple[tuple[str, Any], ...]


Access = Equal | Bounded | None


def access(conjunction: Conjunction, type_name: str, indexable: bool = True) -> Access:
    """How the index can find ``conjunction`` for events of ``type_name``: by equality on one
    attribute, by a range on one attribute, or not at all (``None``: offer every event)."""
    if not indexable:
        return None
    slots = [s for s in conjunction.signature if s.type_name == type_name]
    # Per slot: attribute position -> the (op, constant) tests on it.
    tests: list[dict[int, list[tuple[str, Any]]]] = []
    for slot in slots:
        found: dict[int, list[tuple[str, Any]]] = {}
        for p in conjunction.unary(slot):
            if isinstance(p.left, AttrOf) and isinstance(p.right, Const) and p.op in ("=", *_RANGE_OPS):
                if p.op != "=" and not (p.left.kind.numeric and p.right.kind.numeric):
                    continue
                if p.op == "=" and (p.left.kind is Kind.FLOAT or p.right.kind is Kind.FLOAT):
                    # Floats hash consistently with ==, but -0.0 and 0.0, and an int equal to a
                    # float, make the exactness argument longer than the gain: ranges cover them.
                    continue
                found.setdefault(p.left.position, []).append((p.op, p.right.value))
        tests.append(found)
    if not tests:
        return None
    common = set(tests[0]).intersection(*tests[1:])
    for position in sorted(common):
        equal = [next((c for op, c in t[position] if op == "="), None) for t in tests]
        if all(v is not None for v in equal):
            return Equal(position, frozenset(equal))
    for position in sorted(common):
        # One test per slot is enough to narrow: the slot's other tests run in ENQUEUE.
        chosen = [next(((op, c) for op, c in t[position] if op != "="), None) for t in tests]
        if all(c is not None for c in chosen):
            return Bounded(position, tuple(c for c in chosen if c is not None))
    return None


_by_rank = attrgetter("rank")


@dataclass(slots=True)
class _Ranges:
    """The range tests on one attribute: thresholds sorted, so the routes whose test a value
    passes are found by bisection."""

    above: Any = field(default_factory=lambda: SortedKeyList(key=lambda e: e[0]))  # v > c / v >= c
    below: Any = field(default_factory=lambda: SortedKeyList(key=lambda e: e[0]))  # v < c / v <= c

    def add(self, op: str, constant: Any, route: Route) -> None:
        (self.above if op in (">", ">=") else self.below).add((constant, op, route))

    def remove(self, op: str, constant: Any, route: Route) -> None:
        (self.above if op in (">", ">=") else self.below).remove((constant, op, route))

    def passed(self, value: Any, out: list[Route]) -> None:
        above, below = self.above, self.below
        for constant, op, route in above.islice(0, above.bisect_key_right(value)):
            if constant < value or op == ">=":
                out.append(route)
        for constant, op, route in below.islice(below.bisect_key_left(value), len(below)):
            if value < constant or op == "<=":
                out.append(route)


class TypeRouter:
    """The routes of one event type: residual ones, and ones indexed by attribute values.
    Adding or removing a route costs O(log n) per constant (plus a list insertion)."""

    def __init__(self, routes: Iterable[tuple[Route, Access]] = ()):
        self.residual: list[Route] = []
        self.equal: dict[int, dict[Any, list[Route]]] = {}
        self.ranges: dict[int, _Ranges] = {}
        self.size = 0
        for route, how in routes:
            self.add(route, how)

    def add(self, route: Route, how: Access) -> None:
        if how is None:
            insort(self.residual, route, key=_by_rank)
        elif isinstance(how, Equal):
            table = self.equal.setdefault(how.position, {})
            for key in how.keys:
                insort(table.setdefault(key, []), route, key=_by_rank)
        else:
            ranges = self.ranges.setdefault(how.position, _Ranges())
            for op, constant in how.tests:
                ranges.add(op, constant, route)
        self.size += 1
        self._refresh()

    def remove(self, route: Route, how: Access) -> None:
        if how is None:
            self.residual.remove(route)
        elif isinstance(how, Equal):
            table = self.equal[how.position]
            for key in how.keys:
                table[key].remove(route)
                if not table[key]:
                    del table[key]
            if not table:
                del self.equal[how.position]
        else:
            ranges = self.ranges[how.position]
            for op, constant in how.tests:
                ranges.remove(op, constant, route)
            if not ranges.above and not ranges.below:
                del self.ranges[how.position]
        self.size -= 1
        self._refresh()

    def _refresh(self) -> None:
        self._equal = tuple(self.equal.items())
        self._single = self._equal[0] if len(self._equal) == 1 and not self.ranges and not self.residual else None

    def routes(self, values: Sequence[Any]) -> Sequence[Route]:
        """The routes an event with these attribute values may concern, in delivery order."""
        single = self._single
        if single is not None:
            hit = single[1].get(values[single[0]])
            return hit if hit is not None else ()
        found: list[Route] = list(self.residual)
        sources = 1 if found else 0
        for position, table in self._equal:
            hit = table.get(values[position])
            if hit:
                found += hit
                sources += 1
        for position, ranges in self.ranges.items():
            before = len(found)
            ranges.passed(values[position], found)
            sources += 2 if len(found) > before else 0  # a range may yield one route twice
        if sources > 1:
            found = sorted(set(found), key=_by_rank)
        return found

    def __len__(self) -> int:
        return self.size

    def check(self) -> None:
        """Check the invariants: every list in delivery order, and ``size`` routes in all.
        Raises :class:`EngineStateError`."""
        routes = set(self.residual)
        if self.residual != sorted(self.residual, key=_by_rank):
            raise EngineStateError("the routes every event is offered to are not in delivery order")
        for position, table in self.equal.items():
            for key, hits in table.items():
                if not hits or hits != sorted(hits, key=_by_rank):
                    raise EngineStateError(
                        f"the routes of attribute {position} = {key!r} are "
                        + ("empty" if not hits else "not in delivery order")
                    )
                routes.update(hits)
        routes.update(e[2] for ranges in self.ranges.values() for e in (*ranges.above, *ranges.below))
        if len(routes) != self.size:
            raise EngineStateError(f"{len(routes)} routes in the index, expected {self.size}")
