"""The tables the lab measured (``faidecs lab --runs 3000 --seed 0 [--staged]``; docs/properties.md).

Event Validity counts an overtaken event (still queued) only where an extension of the run proves
it lost (:mod:`faidecs.lab.extension`, issue 24): so FR+I and FR+FP keep it, as Table 4.1 says.

The slow tests check on other seeded runs that each option keeps every property not listed here.
"""

from __future__ import annotations

from faidecs.grammar.model import Disposal, Matching
from faidecs.matching.guarantees import Combination, Property

M, D, P = Matching, Disposal, Property

#: combination -> properties the lab found violated (sorted by name), plain covering.
MEASURED_VIOLATIONS: dict[Combination, tuple[Property, ...]] = {
    Combination(M.FR, D.I): (
        P.CONJUNCTION_TOTAL_ORDER,
        P.COVERING_AGREEMENT,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.FRC, D.I): (
        P.CONJUNCTION_TOTAL_ORDER,
        P.CONJUNCTION_VALIDITY,
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.MR, D.I): (
        P.CONJUNCTION_TOTAL_ORDER,
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.MRC, D.I): (
        P.CONJUNCTION_TOTAL_ORDER,
        P.CONJUNCTION_VALIDITY,
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.FR, D.PI): (
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
    ),
    Combination(M.FRC, D.PI): (
        P.CONJUNCTION_VALIDITY,
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
    ),
    Combination(M.MR, D.PI): (
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
    ),
    Combination(M.MRC, D.PI): (
        P.CONJUNCTION_VALIDITY,
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
    ),
    Combination(M.FR, D.IP): (
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.FRC, D.IP): (
        P.CONJUNCTION_VALIDITY,
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.MR, D.IP): (
        P.CONJUNCTION_TOTAL_ORDER,
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.MRC, D.IP): (
        P.CONJUNCTION_TOTAL_ORDER,
        P.CONJUNCTION_VALIDITY,
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.FR, D.FP): (
        P.COVERING_AGREEMENT,
        P.NO_DUPLICATION,
        P.NO_DUPLICATION_PRIME,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.FRC, D.FP): (
        P.CONJUNCTION_VALIDITY,
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
        P.NO_DUPLICATION,
    ),
    Combination(M.MR, D.FP): (
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
        P.NO_DUPLICATION,
        P.NO_DUPLICATION_PRIME,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.MRC, D.FP): (
        P.CONJUNCTION_VALIDITY,
        P.COVERING_AGREEMENT,
        P.EVENT_VALIDITY,
        P.NO_DUPLICATION,
    ),
}

#: the same with every subscription ``covering staged`` (``faidecs lab --staged``).
STAGED_VIOLATIONS: dict[Combination, tuple[Property, ...]] = {
    Combination(M.FR, D.I): (
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.FRC, D.I): (
        P.CONJUNCTION_VALIDITY,
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.MR, D.I): (
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.MRC, D.I): (
        P.CONJUNCTION_VALIDITY,
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.FR, D.PI): (P.EVENT_VALIDITY,),
    Combination(M.FRC, D.PI): (
        P.CONJUNCTION_VALIDITY,
        P.EVENT_VALIDITY,
    ),
    Combination(M.MR, D.PI): (P.EVENT_VALIDITY,),
    Combination(M.MRC, D.PI): (
        P.CONJUNCTION_VALIDITY,
        P.EVENT_VALIDITY,
    ),
    Combination(M.FR, D.IP): (
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.FRC, D.IP): (
        P.CONJUNCTION_VALIDITY,
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.MR, D.IP): (
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.MRC, D.IP): (
        P.CONJUNCTION_VALIDITY,
        P.EVENT_VALIDITY,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.FR, D.FP): (
        P.NO_DUPLICATION,
        P.NO_DUPLICATION_PRIME,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.FRC, D.FP): (
        P.CONJUNCTION_VALIDITY,
        P.EVENT_VALIDITY,
        P.NO_DUPLICATION,
    ),
    Combination(M.MR, D.FP): (
        P.EVENT_VALIDITY,
        P.NO_DUPLICATION,
        P.NO_DUPLICATION_PRIME,
        P.TYPE_CAUSAL_ORDER,
        P.TYPE_FIFO_ORDER,
        P.TYPE_TOTAL_ORDER,
    ),
    Combination(M.MRC, D.FP): (
        P.CONJUNCTION_VALIDITY,
        P.EVENT_VALIDITY,
        P.NO_DUPLICATION,
    ),
}

__all__ = ["MEASURED_VIOLATIONS", "STAGED_VIOLATIONS"]
