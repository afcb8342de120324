"""Which properties each semantic option combination keeps, as the papers state them.

Source: Wilkin, Jayaram, Eugster, "Fault tolerant event correlation", ToIT 2013, Table 4.1
(theorem numbers in parentheses). Cells that say a property is kept rest on the papers'
proofs; the lab (a later issue) measures the table on the rules faidecs implements.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from faidecs.grammar.model import Disposal, Matching


class Property(StrEnum):
    """Every property the checker (:mod:`faidecs.properties`) judges, in the order tools print
    them; each value is the property's name as the papers, the docs and the JSON output spell it.

    >>> Property.NO_DUPLICATION_PRIME
    <Property.NO_DUPLICATION_PRIME: "No Duplication'">
    >>> f"{Property.TYPE_TOTAL_ORDER} holds", Property("Event Validity") is Property.EVENT_VALIDITY
    ('Type Total Order holds', True)
    """

    NO_DUPLICATION = "No Duplication"
    NO_DUPLICATION_PRIME = "No Duplication'"
    NO_CREATION = "No Creation"
    ADMISSION = "Admission"
    CONJUNCTION_VALIDITY = "Conjunction Validity"
    EVENT_VALIDITY = "Event Validity"
    CONJUNCTION_AGREEMENT = "Conjunction Agreement"
    COVERING_AGREEMENT = "Covering Agreement"
    TYPE_TOTAL_ORDER = "Type Total Order"
    CONJUNCTION_TOTAL_ORDER = "Conjunction Total Order"
    DISJUNCTION_TOTAL_ORDER = "Disjunction Total Order"
    TYPE_FIFO_ORDER = "Type FIFO Order"
    #: with Type FIFO Order, makes Type Causal Order
    TYPE_LOCAL_ORDER = "Type Local Order"
    TYPE_CAUSAL_ORDER = "Type Causal Order"
    #: the notification properties of the ordering layers (vacuous in logs without ``notify`` records)
    TOTAL_NOTIFICATION_ORDER = "Total Notification Order"
    NOTIFICATION_INTEGRITY = "Notification Integrity"
    NOTIFICATION_VALIDITY = "Notification Validity"
    NOTIFICATION_FIFO_ORDER = "Notification FIFO Order"
    #: LoCaPS's gapless deliveries (seed 003)
    GAPLESS_FIFO_DELIVERY = "Gapless FIFO Delivery"
    GAPLESS_CAUSAL_DELIVERY = "Gapless Causal Delivery"


P = Property

#: The properties of the papers' table, in its order: what the semantic options keep or lose.
PROPERTIES: tuple[Property, ...] = (
    P.NO_DUPLICATION,
    P.NO_DUPLICATION_PRIME,
    P.NO_CREATION,
    P.ADMISSION,
    P.CONJUNCTION_VALIDITY,
    P.EVENT_VALIDITY,
    P.CONJUNCTION_AGREEMENT,
    P.COVERING_AGREEMENT,
    P.TYPE_TOTAL_ORDER,
    P.CONJUNCTION_TOTAL_ORDER,
    P.DISJUNCTION_TOTAL_ORDER,
    P.TYPE_FIFO_ORDER,
    P.TYPE_CAUSAL_ORDER,
)


class Combination(NamedTuple):
    """A matching option with a disposal option, named as the lab and the simulator name it.

    >>> c = Combination.parse("FRC+PI")
    >>> c.matching, c.disposal, c.name, f"{c}"
    (<Matching.FRC: 'FRC'>, <Disposal.PI: 'PI'>, 'FRC+PI', 'FRC+PI')
    """

    matching: Matching
    disposal: Disposal

    @property
    def name(self) -> str:
        return f"{self.matching.value}+{self.disposal.value}"

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def parse(name: str) -> Combination:
        """The combination named ``MATCHING+DISPOSAL`` (``FR+PI``)."""
        matching, plus, disposal = name.partition("+")
        if not plus:
            raise ValueError(f"not a combination: {name!r} (e.g. FR+PI)")
        return Combination(Matching(matching), Disposal(disposal))


#: Every combination, in the paper's table order: rows by disposal, then by matching.
COMBINATIONS: tuple[Combination, ...] = tuple(
    Combination(m, d)
    for d in (Disposal.I, Disposal.PI, Disposal.IP, Disposal.FP)
    for m in (Matching.FR, Matching.FRC, Matching.MR, Matching.MRC)
)

#: The combinations of the extended language (issue 24): disposal NONE with every matching
#: option (ALL only with NONE). The paper's table has none of them.
NONE_COMBINATIONS: tuple[Combination, ...] = tuple(
    Combination(m, Disposal.NONE) for m in (Matching.FR, Matching.FRC, Matching.MR, Matching.MRC, Matching.ALL)
)

#: Every valid combination: the paper's 16, then the 5 of disposal NONE.
EVERY_COMBINATION: tuple[Combination, ...] = COMBINATIONS + NONE_COMBINATIONS

_ND, _EV, _CV, _CA = P.NO_DUPLICATION, P.EVENT_VALIDITY, P.CONJUNCTION_VALIDITY, P.COVERING_AGREEMENT
_TT, _FIFO, _CAUSAL = P.TYPE_TOTAL_ORDER, P.TYPE_FIFO_ORDER, P.TYPE_CAUSAL_ORDER

M, D = Matching, Disposal

#: property -> theorem numbers of the counterexample, per combination.
PAPER_VIOLATIONS: dict[Combination, dict[Property, tuple[int, ...]]] = {
    Combination(M.FR, D.I): {_TT: (6,), _FIFO: (6,), _CAUSAL: (6,)},
    Combination(M.FRC, D.I): {_EV: (5,), _CV: (5,), _TT: (6,), _FIFO: (6,), _CAUSAL: (6,)},
    Combination(M.MR, D.I): {_EV: (1,), _CA: (2,), _TT: (6,), _FIFO: (3, 6), _CAUSAL: (4, 6)},
    Combination(M.MRC, D.I): {_EV: (1, 5), _CV: (5,), _CA: (2,), _TT: (6,), _FIFO: (3, 6), _CAUSAL: (4, 6)},
    Combination(M.FR, D.PI): {},
    Combination(M.FRC, D.PI): {_EV: (5,), _CV: (5,)},
    Combination(M.MR, D.PI): {_EV: (1,), _CA: (2,)},
    Combination(M.MRC, D.PI): {_EV: (1,), _CV: (5,), _CA: (2,)},
    Combination(M.FR, D.IP): {_EV: (7,), _CA: (8,)},
    Combination(M.FRC, D.IP): {_EV: (5, 7), _CV: (5,), _CA: (8,)},
    Combination(M.MR, D.IP): {_EV: (1,), _CA: (2,), _FIFO: (3,), _CAUSAL: (4,)},
    Combination(M.MRC, D.IP): {_EV: (1,), _CV: (5,), _CA: (2,), _FIFO: (3,), _CAUSAL: (4,)},
    Combination(M.FR, D.FP): {_ND: (9,), _FIFO: (10,), _CAUSAL: (10,)},
    Combination(M.FRC, D.FP): {_ND: (9,), _EV: (5,), _CV: (5,)},
    Combination(M.MR, D.FP): {_ND: (9,), _EV: (1,), _CA: (2,), _FIFO: (3, 10), _CAUSAL: (4, 10)},
    Combination(M.MRC, D.FP): {_ND: (9,), _EV: (1,), _CV: (5,), _CA: (2,), _FIFO: (3,), _CAUSAL: (4,)},
}


def paper_lost(matching: Matching, disposal: Disposal) -> dict[Property, tuple[int, ...]]:
    """Properties the paper says ``matching`` × ``disposal`` can violate, with theorem numbers."""
    return dict(PAPER_VIOLATIONS[Combination(matching, disposal)])


def paper_kept(matching: Matching, disposal: Disposal) -> tuple[Property, ...]:
    """Properties the paper says ``matching`` × ``disposal`` keeps. No Duplication' is the weaker
    form proposed for sliding windows (FP): it is kept wherever No Duplication is, and by FP."""
    lost = PAPER_VIOLATIONS[Combination(matching, disposal)]
    return tuple(p for p in PROPERTIES if p not in lost)


__all__ = [
    "COMBINATIONS",
    "EVERY_COMBINATION",
    "NONE_COMBINATIONS",
    "PAPER_VIOLATIONS",
    "PROPERTIES",
    "Combination",
    "Property",
    "paper_kept",
    "paper_lost",
]
