"""Where two variants part ways for one subscription, and why.

Both variants saw the same events in the same order, so their deliveries line up by the event
whose publication delivered them. The first difference is the first event at which the two
delivered something different; the report shows what each delivered there, with the events,
and for each event of one side's relation that the other variant had already put in a relation
of its own: disposal took it there, which is most often why the two part ways.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from faidecs.comparing.measure import Compact
from faidecs.comparing.result import Difference, ShownEvent, ShownRelation
from faidecs.matching.events import Event


def shown(events: Sequence[Event], position: int) -> ShownEvent:
    e = events[position]
    return ShownEvent(position + 1, e.id, e.type, e.attrs)


def _first_use(deliveries: Sequence[Compact]) -> dict[int, int]:
    """Event position -> the arrival at which a relation first used it."""
    first: dict[int, int] = {}
    for d in deliveries:
        for p in d.positions:
            first.setdefault(p, d.arrival)
    return first


def _at(deliveries: Sequence[Compact], start: int, arrival: int) -> list[Compact]:
    out = []
    for d in deliveries[start:]:
        if d.arrival != arrival:
            break
        out.append(d)
    return out


def _relations(found: list[Compact], events: Sequence[Event], other_first: dict[int, int]) -> tuple[ShownRelation, ...]:
    out = []
    for d in found:
        used = tuple(
            f"{events[p].id}: in its relation delivered at event #{other_first[p] + 1}"
            for p in d.positions
            if p in other_first and other_first[p] <= d.arrival
        )
        out.append(ShownRelation(d.conjunction, tuple(shown(events, p) for p in d.positions), d.timeout, used))
    return tuple(out)


def difference(
    subscription: str, a: str, b: str, da: Sequence[Compact], db: Sequence[Compact], events: Sequence[Event]
) -> Difference:
    """How the deliveries ``da`` (variant ``a``) and ``db`` (variant ``b``) of ``subscription`` differ."""

    def key(d: Compact) -> tuple[int, tuple[int, ...], bool]:
        return (d.conjunction, d.positions, d.timeout)

    ca, cb = Counter(map(key, da)), Counter(map(key, db))
    common = sum((ca & cb).values())
    only_a, only_b = sum((ca - cb).values()), sum((cb - ca).values())
    i = 0
    while i < len(da) and i < len(db) and da[i].arrival == db[i].arrival and key(da[i]) == key(db[i]):
        i += 1
    if i == len(da) and i == len(db):
        return Difference(subscription, a, b, True, common, only_a, only_b)
    arrival = min(d.arrival for d in (da[i] if i < len(da) else None, db[i] if i < len(db) else None) if d is not None)
    # The relations of this event that both still agree on come before index i; from i on, what
    # each delivered at this event is where they part ways.
    return Difference(
        subscription,
        a,
        b,
        False,
        common,
        only_a,
        only_b,
        first_arrival=arrival + 1,
        trigger=shown(events, arrival),
        a_relations=_relations(_at(da, i, arrival), events, _first_use(db)),
        b_relations=_relations(_at(db, i, arrival), events, _first_use(da)),
    )


__all__ = ["difference", "shown"]
