"""Human and JSON descriptions of a normalised program (what ``faidecs check`` prints)."""

from __future__ import annotations

from typing import Any

from faidecs.grammar.model import Conjunction, Covering, NegationKind, Program, Subscription
from faidecs.lab.languages import nearest
from faidecs.lab.promised import lost, lost_by, operators, promised
from faidecs.matching.guarantees import PAPER_VIOLATIONS, Combination, Property


def paper_lost(sub: Subscription) -> dict[Property, tuple[int, ...]]:
    """Table 4.1's losses for the options, with theorem numbers; none for options the paper
    lacks (ALL, NONE)."""
    return dict(PAPER_VIOLATIONS.get(Combination(sub.matching, sub.disposal), {}))


def losses(sub: Subscription) -> dict[Property, tuple[int, ...]]:
    """What the subscription's options may violate (the lab's table, :mod:`faidecs.lab.promised`),
    each with the theorems of the paper's counterexamples; none where only the lab found it."""
    paper = paper_lost(sub)
    return {p: paper.get(p, ()) for p in lost(sub)}


def paper_differs(sub: Subscription) -> dict[Property, tuple[int, ...]]:
    """What the paper's Table 4.1 counts as lost but the lab found kept (with the theorems)."""
    kept = promised(sub)
    return {p: t for p, t in paper_lost(sub).items() if p in kept}


def _source(sub: Subscription, prop: Property, theorems: tuple[int, ...]) -> str:
    if theorems:
        return f"Thm. {', '.join(map(str, theorems))}"
    if prop not in lost_by(sub.matching, sub.disposal, sub.covering):
        used = [o for o in operators(sub) if prop in lost_by(sub.matching, sub.disposal, sub.covering, (o,))]
        return f"the lab, with {' and '.join(used)}"
    if Combination(sub.matching, sub.disposal) not in PAPER_VIOLATIONS:
        return "the lab; the paper has no such option"
    return "the lab, not in the paper's table"


def conjunction_json(conj: Conjunction) -> dict[str, Any]:
    out: dict[str, Any] = {
        "index": conj.written_index,
        "signature": [conj.slot_text(s) for s in conj.signature],
        "unary": {str(s): [p.text for p in conj.unary(s)] for s in conj.signature if conj.unary(s)},
        "binary": [p.text for p in conj.binary],
        "canonical": conj.text,
    }
    if conj.extended:  # the extended language's keys only where it is used
        out["groups"] = sorted(conj.groups)
        out["negations"] = [n.text for n in conj.negations]
    return out


def subscription_json(sub: Subscription) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": sub.name,
        "matching": sub.matching.value,
        "disposal": sub.disposal.value,
        "covering": sub.covering.value,
        "conjunctions": [conjunction_json(c) for c in sub.conjunctions],
        "evaluation_order": list(sub.evaluation_order),
        "keeps": list(promised(sub)),
        "loses": {p: list(t) for p, t in losses(sub).items()},
        "paper_loses": {p: list(t) for p, t in paper_lost(sub).items()},
        "languages": {
            peer: {"strategy": n.strategy, "exact": n.exact, "differs": n.differs}
            for peer, n in nearest(sub.matching.value, sub.disposal.value).items()
        },
    }
    if sub.window is not None:
        w = sub.window
        out["window"] = {"duration": w.duration, "attribute": w.attribute, "lateness": w.lateness}
    if operators(sub):
        out["operators"] = list(operators(sub))
    return out


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
        partition = f", partition by {sub.partition_by}" if sub.partition_by else ""
        window = f", {sub.window.text}" if sub.window else ""
        options = f"matching {sub.matching.value}, disposal {sub.disposal.value}{staged}{partition}{window}"
        lines.append(f"subscription {sub.name} ({options})")
        for conj in sub.conjunctions:
            lines.append(f"  conjunction {conj.written_index}: {conj.condition_text()}")
            lines.append(f"    signature: [{', '.join(conj.slot_text(s) for s in conj.signature)}]")
            for slot in conj.signature:
                for p in conj.unary(slot):
                    if p.unary:  # a condition on a group as a whole is listed as `group:` below
                        lines.append(f"    unary  {conj.slot_text(slot)}: {p.text}")
            for p in conj.binary:
                lines.append(f"    {'group' if p.structural else 'binary'}: {p.text}")
            for n in conj.negations:
                kind = "absence" if n.kind is NegationKind.AFTER else "negation"
                lines.append(f"    {kind}: {n.text}")
        if sub.window is not None:
            late = (
                f"; events more than {sub.window.lateness!r} behind the latest are late" if sub.window.lateness else ""
            )
            lines.append(
                f"  window: relations span at most {sub.window.duration!r} of {sub.window.attribute}; "
                f"queues purged behind the watermark{late}"
            )
        if len(sub.conjunctions) > 1:
            lines.append(f"  evaluation order: {', '.join(str(i) for i in sub.evaluation_order)}")
        # One list of what is kept and one of what may be lost, both from the lab's table: the
        # paper's Table 4.1 only annotates them, so no property is said to be both.
        lines.append(f"  keeps: {', '.join(promised(sub)) or 'none'}")
        lost_here = losses(sub)
        shown = "; ".join(f"{p} ({_source(sub, p, t)})" for p, t in lost_here.items())
        lines.append(f"  loses: {shown or 'none'}")
        differs = paper_differs(sub)
        if differs:
            shown = "; ".join(f"{p} ({_source(sub, p, t)})" for p, t in differs.items())
            lines.append(f"  kept although the paper's table counts it lost: {shown}")
        used = operators(sub)
        if used:
            lines.append(
                f"  operators: {', '.join(used)} (each measured by the lab under these options; keeps: what all keep)"
            )
        lines.append("  (measured by the lab, docs/properties.md; Thm.: the paper's Table 4.1, ToIT 2013)")
        lines.append("  in other languages (docs/languages.md):")
        lines.extend(f"    {peer}: {n.text()}" for peer, n in nearest(sub.matching.value, sub.disposal.value).items())
    return "\n".join(lines) + "\n"
