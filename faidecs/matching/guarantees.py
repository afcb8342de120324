"""Which properties each semantic option combination keeps, as the papers state them.

Source: Wilkin, Jayaram, Eugster, "Fault tolerant event correlation", ToIT 2013, Table 4.1
(theorem numbers in parentheses). Cells that say a property is kept rest on the papers'
proofs; the lab (a later issue) measures the table on the rules faidecs implements.
"""

from __future__ import annotations

from faidecs.grammar.model import Disposal, Matching

PROPERTIES: tuple[str, ...] = (
    "No Duplication",
    "No Duplication'",
    "No Creation",
    "Admission",
    "Conjunction Validity",
    "Event Validity",
    "Conjunction Agreement",
    "Covering Agreement",
    "Type Total Order",
    "Conjunction Total Order",
    "Disjunction Total Order",
    "Type FIFO Order",
    "Type Causal Order",
)

_ND, _EV, _CV, _CA = "No Duplication", "Event Validity", "Conjunction Validity", "Covering Agreement"
_TT, _FIFO, _CAUSAL = "Type Total Order", "Type FIFO Order", "Type Causal Order"

M, D = Matching, Disposal

#: property -> theorem numbers of the counterexample, per (matching, disposal).
PAPER_VIOLATIONS: dict[tuple[Matching, Disposal], dict[str, tuple[int, ...]]] = {
    (M.FR, D.I): {_TT: (6,), _FIFO: (6,), _CAUSAL: (6,)},
    (M.FRC, D.I): {_EV: (5,), _CV: (5,), _TT: (6,), _FIFO: (6,), _CAUSAL: (6,)},
    (M.MR, D.I): {_EV: (1,), _CA: (2,), _TT: (6,), _FIFO: (3, 6), _CAUSAL: (4, 6)},
    (M.MRC, D.I): {_EV: (1, 5), _CV: (5,), _CA: (2,), _TT: (6,), _FIFO: (3, 6), _CAUSAL: (4, 6)},
    (M.FR, D.PI): {},
    (M.FRC, D.PI): {_EV: (5,), _CV: (5,)},
    (M.MR, D.PI): {_EV: (1,), _CA: (2,)},
    (M.MRC, D.PI): {_EV: (1,), _CV: (5,), _CA: (2,)},
    (M.FR, D.IP): {_EV: (7,), _CA: (8,)},
    (M.FRC, D.IP): {_EV: (5, 7), _CV: (5,), _CA: (8,)},
    (M.MR, D.IP): {_EV: (1,), _CA: (2,), _FIFO: (3,), _CAUSAL: (4,)},
    (M.MRC, D.IP): {_EV: (1,), _CV: (5,), _CA: (2,), _FIFO: (3,), _CAUSAL: (4,)},
    (M.FR, D.FP): {_ND: (9,), _FIFO: (10,), _CAUSAL: (10,)},
    (M.FRC, D.FP): {_ND: (9,), _EV: (5,), _CV: (5,)},
    (M.MR, D.FP): {_ND: (9,), _EV: (1,), _CA: (2,), _FIFO: (3, 10), _CAUSAL: (4, 10)},
    (M.MRC, D.FP): {_ND: (9,), _EV: (1,), _CV: (5,), _CA: (2,), _FIFO: (3,), _CAUSAL: (4,)},
}


def paper_lost(matching: Matching, disposal: Disposal) -> dict[str, tuple[int, ...]]:
    """Properties the paper says ``matching`` × ``disposal`` can violate, with theorem numbers."""
    return dict(PAPER_VIOLATIONS[(matching, disposal)])


def paper_kept(matching: Matching, disposal: Disposal) -> tuple[str, ...]:
    """Properties the paper says ``matching`` × ``disposal`` keeps. No Duplication' is the weaker
    form proposed for sliding windows (FP): it is kept wherever No Duplication is, and by FP."""
    lost = PAPER_VIOLATIONS[(matching, disposal)]
    return tuple(p for p in PROPERTIES if p not in lost)
