"""Human and JSON descriptions of a normalised program (what ``faidecs check`` prints)."""

from __future__ import annotations

from typing import Any

from faidecs.grammar.model import Conjunction, Covering, Program, Subscription
from faidecs.lab.measured import MEASURED_VIOLATIONS, STAGED_VIOLATIONS
from faidecs.matching.guarantees import Combination, Property, paper_kept, paper_lost


def measured_lost(sub: Subscription) -> tuple[Property, ...]:
    """What the project's lab found the subscription's options violate (docs/properties.md)."""
    table = STAGED_VIOLATIONS if sub.covering is Covering.STAGED else MEASURED_VIOLATIONS
    return table[Combination(sub.matching, sub.disposal)]


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
        "keeps": list(paper_kept(sub.matching, sub.disposal)),
        "loses": {p: list(t) for p, t in paper_lost(sub.matching, sub.disposal).items()},
        "lab_loses": list(measured_lost(sub)),
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
        lost = paper_lost(sub.matching, sub.disposal)
        lines.append(f"  keeps: {', '.join(paper_kept(sub.matching, sub.disposal))}")
        if lost:
            shown = "; ".join(f"{p} (Thm. {', '.join(map(str, t))})" for p, t in lost.items())
            lines.append(f"  loses: {shown}")
        else:
            lines.append("  loses: none")
        lines.append("  (per the paper's Table 4.1, ToIT 2013)")
        found = measured_lost(sub)
        lines.append(f"  the lab finds violated: {', '.join(found) if found else 'none'} (docs/properties.md)")
    return "\n".join(lines) + "\n"
