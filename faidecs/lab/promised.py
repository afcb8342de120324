"""What faidecs promises for a subscription's options: the properties the lab's measured table
(:mod:`faidecs.lab.measured`) finds kept, for its matching, disposal and covering.

This is the one source of "keeps" for every tool: ``faidecs check`` prints it, ``faidecs verify``
judges it by default, ``faidecs overlay simulate`` and the slow tests require it. The paper's
Table 4.1 (:mod:`faidecs.matching.guarantees`) is printed beside it as the paper's claim; where the
two differ the lab's counterexample wins (docs/semantics.md, "Where the rules and the paper
disagree"), so no tool says "keeps" of a property the lab shows violated.

>>> from faidecs.grammar.model import Covering, Disposal, Matching
>>> from faidecs.matching.guarantees import Property
>>> Property.CONJUNCTION_TOTAL_ORDER in lost_by(Matching.MR, Disposal.I, Covering.PLAIN)
True
>>> Property.TYPE_FIFO_ORDER in promised_by(Matching.MRC, Disposal.FP, Covering.PLAIN)
True
"""

from __future__ import annotations

from collections.abc import Iterable

from faidecs.grammar.model import Covering, Disposal, Matching, NegationKind, Subscription
from faidecs.lab.measured import MEASURED_VIOLATIONS, OPERATOR_VIOLATIONS, STAGED_VIOLATIONS
from faidecs.matching.guarantees import PROPERTIES, Combination, Property


def operators(sub: Subscription) -> tuple[str, ...]:
    """The extended language's operators ``sub`` uses, as the lab names them (its tables)."""
    conjs = sub.conjunctions
    used = {
        "group": any(c.groups for c in conjs),
        "negation": any(n.kind is NegationKind.BETWEEN for c in conjs for n in c.negations),
        "absence": any(n.kind is NegationKind.AFTER for c in conjs for n in c.negations),
        "window": sub.window is not None,
    }
    return tuple(name for name, yes in used.items() if yes)


def lost_by(
    matching: Matching, disposal: Disposal, covering: Covering, used: Iterable[str] = ()
) -> tuple[Property, ...]:
    """The properties the lab found violated under these options, in :data:`PROPERTIES` order:
    the combination's row, and the row of each operator in ``used`` (:func:`operators`) under it.
    The lab measures each operator alone; a subscription with several is held to the union of
    their losses. Staged covering has no row for disposal NONE (the engine runs it plain only):
    there the plain row stands."""
    combination = Combination(matching, disposal)
    table = (
        STAGED_VIOLATIONS if covering is Covering.STAGED and combination in STAGED_VIOLATIONS else MEASURED_VIOLATIONS
    )
    found = set(table[combination])
    for operator in used:
        found.update(OPERATOR_VIOLATIONS[operator][combination])
    return tuple(p for p in PROPERTIES if p in found)


def promised_by(
    matching: Matching, disposal: Disposal, covering: Covering, used: Iterable[str] = ()
) -> tuple[Property, ...]:
    """The properties of the papers' table these options keep (the lab found no violation, and the
    slow tests check more seeded runs for each)."""
    lost = lost_by(matching, disposal, covering, used)
    return tuple(p for p in PROPERTIES if p not in lost)


def lost(sub: Subscription) -> tuple[Property, ...]:
    """What ``sub``'s options (and operators) may violate."""
    return lost_by(sub.matching, sub.disposal, sub.covering, operators(sub))


def promised(sub: Subscription) -> tuple[Property, ...]:
    """What ``sub``'s options (and operators) keep."""
    return promised_by(sub.matching, sub.disposal, sub.covering, operators(sub))


def promised_by_all(subscriptions: Iterable[Subscription]) -> list[Property]:
    """The properties every one of ``subscriptions`` keeps (what a run of them all must keep)."""
    lost_any: set[Property] = set()
    for sub in subscriptions:
        lost_any.update(lost(sub))
    return [p for p in PROPERTIES if p not in lost_any]


__all__ = ["lost", "lost_by", "operators", "promised", "promised_by", "promised_by_all"]
