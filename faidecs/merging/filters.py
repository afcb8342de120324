"""Propagated unary predicates: which events a consumer of a merger may need.

A filter maps each event type to a set of alternatives; an alternative is the unary predicates of
one slot of a conjunction (all must hold). An event passes if some alternative of its type holds.
The empty alternative accepts every event of its type. A merger's upstream filter is the union of
its consumers' filters restricted to its parent's types, so an event that cannot match anywhere
below a merger never reaches it. Coverage is decided on the predicates' syntax: sound (a covered
filter really is implied) but not complete, which costs at most one extra round of filter marks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from faidecs.grammar.model import Conjunction, Predicate, Slot, Window
from faidecs.matching.evaluate import PredicateFn, compile_predicate
from faidecs.matching.events import Event

Alternative = tuple[tuple[Predicate, Slot], ...]
ACCEPT_ALL: frozenset[Alternative] = frozenset({()})


@lru_cache(maxsize=4096)
def _compiled(pred: Predicate, slot: Slot) -> PredicateFn:
    return compile_predicate(pred, {slot: 0})


@dataclass(frozen=True, slots=True)
class Filter:
    """Per type, the alternatives an event must satisfy one of. Types not listed: nothing passes."""

    alternatives: Mapping[str, frozenset[Alternative]]

    @staticmethod
    def nothing() -> Filter:
        return Filter({})

    @staticmethod
    def of(conj: Conjunction, window: Window | None = None) -> Filter:
        """What a subscriber to ``conj`` needs: per slot, the slot's unary predicates; per
        negation, its predicates on the negated event alone (an event failing them is never
        logged, so it can block no relation). Under a ``window`` every event of the conjunction's
        types (negated ones included) moves the watermark, late or not, so every one passes."""
        if window is not None:
            return Filter({t: ACCEPT_ALL for t in sorted(conj.watched_types)})
        out: dict[str, set[Alternative]] = {}
        for slot in conj.signature:
            alt = tuple(sorted(((p, slot) for p in conj.unary(slot)), key=lambda ps: ps[0].text))
            out.setdefault(slot.type_name, set()).add(alt)
        for neg in conj.negations:
            own = [p for p in neg.predicates if p.slots == {neg.slot} and p.unary]
            out.setdefault(neg.type_name, set()).add(tuple((p, neg.slot) for p in sorted(own, key=lambda p: p.text)))
        return Filter({t: _normal(a) for t, a in out.items()})

    def union(self, other: Filter) -> Filter:
        types = set(self.alternatives) | set(other.alternatives)
        return Filter(
            {
                t: _normal(self.alternatives.get(t, frozenset()) | other.alternatives.get(t, frozenset()))
                for t in sorted(types)
            }
        )

    def restrict(self, types: Iterable[str]) -> Filter:
        keep = set(types)
        return Filter({t: a for t, a in self.alternatives.items() if t in keep})

    def covers(self, other: Filter) -> bool:
        """Every event ``other`` passes, this filter passes."""
        for t, alts in other.alternatives.items():
            mine = self.alternatives.get(t)
            if mine is None:
                return False
            if mine != ACCEPT_ALL and not alts <= mine:
                return False
        return True

    def passes(self, event: Event) -> bool:
        alts = self.alternatives.get(event.event_type.name)
        if alts is None:
            return False
        if alts is ACCEPT_ALL or alts == ACCEPT_ALL:  # the usual case for a type that is not filtered
            return True
        binding = (event,)
        return any(all(_compiled(p, s)(binding) for p, s in alt) for alt in alts)

    def describe(self) -> str:
        parts = []
        for t, alts in sorted(self.alternatives.items()):
            if alts == ACCEPT_ALL:
                parts.append(t)
            else:
                texts = sorted(" and ".join(p.text for p, _ in alt) for alt in alts)
                parts.append(f"{t} if " + " or ".join(f"({x})" for x in texts))
        return "; ".join(parts) if parts else "nothing"


def _normal(alts: Iterable[Alternative]) -> frozenset[Alternative]:
    alts = frozenset(alts)
    return ACCEPT_ALL if () in alts else alts


def union_all(filters: Iterable[Filter]) -> Filter:
    out = Filter.nothing()
    for f in filters:
        out = out.union(f)
    return out


__all__ = ["ACCEPT_ALL", "Filter", "union_all"]
