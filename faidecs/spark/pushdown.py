"""The unary predicates a merger propagates upstream, as Spark SQL conditions.

A merger needs an event only if some slot of some conjunction it serves accepts it (the overlay's
:class:`~faidecs.merging.filters.Filter`); the rest can be dropped before the shuffle. Dropping them
is exact because the engine admits an event into a conjunction's queues only if the event satisfies
that slot's unary predicates: an event no slot admits changes no state (tested in the overlay's
runs, where mergers filter the same way).

Only comparisons whose Spark meaning is provably the engine's are translated: an attribute against
a constant, or two attributes of the same event, of one kind (64-bit integers, finite doubles,
strings compared by code point, booleans). Anything else (arithmetic, an integer against a float)
is left to the engine: the pushed filter is then weaker, never stronger, so no event a slot needs
is ever dropped.
"""

from __future__ import annotations

from faidecs.grammar.model import AttrOf, Const, Kind, Predicate
from faidecs.matching.evaluate import INT64_MAX, INT64_MIN
from faidecs.merging.filters import ACCEPT_ALL, Filter, union_all
from faidecs.spark.plan import Group, Merger, column


def merger_filter(merger: Merger) -> Filter:
    """What the merger's consumers accept: the union over its conjunctions' slots."""
    return union_all(Filter.of(c, p.subscription.window) for p in merger.parts for c in p.subscription.conjunctions)


def group_filter(group: Group) -> Filter:
    """What a group of mergers accepts: the union of their filters."""
    return union_all(merger_filter(m) for m in group.mergers)


def literal_sql(value: float | str | bool, kind: Kind) -> str | None:
    """A Spark SQL literal of exactly this value (None: not representable)."""
    if kind is Kind.BOOL:
        return "true" if value else "false"
    if kind is Kind.INT:
        if not INT64_MIN <= int(value) <= INT64_MAX:
            return None
        return f"CAST('{int(value)}' AS BIGINT)"  # -2**63 has no literal form
    if kind is Kind.FLOAT:
        return f"CAST('{float(value)!r}' AS DOUBLE)"  # repr round-trips through Java's parser
    return f"CAST(X'{str(value).encode('utf-8').hex()}' AS STRING)"  # no quoting to get wrong


def column_sql(type_name: str, attribute: str) -> str:
    return "`" + column(type_name, attribute).replace("`", "``") + "`"


def _operand(value: object, type_name: str) -> str | None:
    if isinstance(value, AttrOf):
        return column_sql(type_name, value.attribute)
    if isinstance(value, Const):
        return literal_sql(value.value, value.kind)
    return None


def predicate_sql(pred: Predicate, type_name: str) -> str | None:
    """``pred`` (unary, on an event of ``type_name``) as a Spark SQL condition, or None when its
    Spark meaning could differ from the engine's."""
    kinds = {getattr(v, "kind", None) for v in (pred.left, pred.right)}
    if len(kinds) != 1:
        return None
    left, right = _operand(pred.left, type_name), _operand(pred.right, type_name)
    if left is None or right is None:
        return None
    return f"({left} {pred.op} {right})"


def type_condition_sql(filt: Filter, type_name: str) -> str | None:
    """The condition an event of ``type_name`` must meet to reach the merger; None: every event."""
    alts = filt.alternatives.get(type_name)
    if alts is None:
        return "false"
    if alts == ACCEPT_ALL:
        return None
    options = []
    for alt in sorted(alts, key=lambda a: [p.text for p, _ in a]):
        terms = [c for c in (predicate_sql(p, type_name) for p, _ in alt) if c is not None]
        if not terms:
            return None  # an alternative we cannot express accepts, for all we can tell, everything
        options.append("(" + " AND ".join(terms) + ")")
    return "(" + " OR ".join(options) + ")"


__all__ = ["column_sql", "group_filter", "literal_sql", "merger_filter", "predicate_sql", "type_condition_sql"]
