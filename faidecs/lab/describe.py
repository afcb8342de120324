"""Human and JSON descriptions of a normalised program (what ``faidecs check`` prints)."""

from __future__ import annotations

from typing import Any

from faidecs.grammar.model import Conjunction, Covering, Program, Subscription
from faidecs.lab.languages import AWAITS, nearest
from faidecs.lab.measured import MEASURED_VIOLATIONS, STAGED_VIOLATIONS
from faidecs.lab.promised import lost, promised
from faidecs.matching.guarantees import PAPER_VIOLATIONS, Combination, Property, paper_lost


def measured(sub: Subscription) -> bool:
    """Whether the lab's table has a row for the subscription's options: issue 24's ALL and NONE
    have none until the lab measures them, and `faidecs check` says so rather than failing."""
    table = STAGED_VIOLATIONS if sub.covering is Covering.STAGED else MEASURED_VIOLATIONS
    return Combination(sub.matching, sub.disposal) in table


def losses(sub: Subscription) -> dict[Property, tuple[int, ...]]:
    """What the subscription's options may violate (the lab's table, :mod:`faidecs.lab.promised`),
    each with the theorems of the paper's counterexamples; none where only the lab found it."""
    paper = paper_lost(sub.matching, sub.disposal)
    return {p: paper.get(p, ()) for p in lost(sub)}


def paper_differs(sub: Subscription) -> dict[Property, tuple[int, ...]]:
    """What the paper's Table 4.1 counts as lost but the lab found kept (with the theorems)."""
    kept = promised(sub)
    return {p: t for p, t in paper_lost(sub.matching, sub.disposal).items() if p in kept}


def _source(theorems: tuple[int, ...]) -> str:
    if not theorems:
        return "the lab, not in the paper's table"
    return f"Thm. {', '.join(map(str, theorems))}"


def conjunction_json(conj: Conjunction) -> dict[str, Any]:
    return {
        "index": conj.written_index,
        "signature": [str(s) for s in conj.signature],
        "unary": {str(s): [p.text for p in conj.unary(s)] for s in conj.signature if conj.unary(s)},
        "binary": [p.text for p in conj.binary],
        "canonical": conj.text,
    }


def subscription_json(sub: Subscription) -> dict[str, Any]:
    return {
        "name": sub.name,
        "matching": sub.matching.value,
        "disposal": sub.disposal.value,
        "covering": sub.covering.value,
        "conjunctions": [conjunction_json(c) for c in sub.conjunctions],
        "evaluation_order": list(sub.evaluation_order),
        "keeps": list(promised(sub)) if measured(sub) else None,
        "loses": {p: list(t) for p, t in losses(sub).items()} if measured(sub) else None,
        "paper_loses": {
            p: list(t) for p, t in PAPER_VIOLATIONS.get(Combination(sub.matching, sub.disposal), {}).items()
        },
        "languages": {
            peer: {"strategy": n.strategy, "exact": n.exact, "differs": n.differs}
            for peer, n in nearest(sub.matching.value, sub.disposal.value).items()
        },
    }


def program_json(program: Program) -> dict[str, Any]:
    return {
        "types": {t.name: {a.name: a.kind.value for a in t.attributes} for t in program.types.values()},
        "subscriptions": [subscription_json(s) for s in program.subscriptions],
    }


def describe_program(program: Program) -> str:
    lines: list[str] = []
    for t in program.types.values():
        lines.append(t.declaration())
    for sub in program.subscriptions:
        lines.append("")
        staged = ", covering staged" if sub.covering is Covering.STAGED else ""
        lines.append(f"subscription {sub.name} (matching {sub.matching.value}, disposal {sub.disposal.value}{staged})")
        for conj in sub.conjunctions:
            lines.append(f"  conjunction {conj.written_index}: {conj.condition_text()}")
            lines.append(f"    signature: [{', '.join(str(s) for s in conj.signature)}]")
            for slot in conj.signature:
                for p in conj.unary(slot):
                    lines.append(f"    unary  {slot}: {p.text}")
            for p in conj.binary:
                lines.append(f"    binary: {p.text}")
        if len(sub.conjunctions) > 1:
            lines.append(f"  evaluation order: {', '.join(str(i) for i in sub.evaluation_order)}")
        if not measured(sub):
            lines.append(f"  keeps, loses: {AWAITS} (its table has no row for these options yet)")
        else:
            lines.extend(_guarantees(sub))
        lines.append("  in other languages (docs/languages.md):")
        lines.extend(f"    {peer}: {n.text()}" for peer, n in nearest(sub.matching.value, sub.disposal.value).items())
    return "\n".join(lines) + "\n"


def _guarantees(sub: Subscription) -> list[str]:
    # One list of what is kept and one of what may be lost, both from the lab's table: the
    # paper's Table 4.1 only annotates them, so no property is said to be both.
    lines = [f"  keeps: {', '.join(promised(sub)) or 'none'}"]
    shown = "; ".join(f"{p} ({_source(t)})" for p, t in losses(sub).items())
    lines.append(f"  loses: {shown or 'none'}")
    differs = paper_differs(sub)
    if differs:
        shown = "; ".join(f"{p} ({_source(t)})" for p, t in differs.items())
        lines.append(f"  kept although the paper's table counts it lost: {shown}")
    lines.append("  (measured by the lab, docs/properties.md; Thm.: the paper's Table 4.1, ToIT 2013)")
    return lines
