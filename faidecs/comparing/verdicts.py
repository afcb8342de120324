"""A run's property report beside the lab's general verdict for the options that ran.

The run's verdicts are the property checker's on the run log (``faidecs verify --all`` reads the
same log and gives the same ones). The lab's come from its measured table
(:mod:`faidecs.lab.promised`): a property is "lost" for a run when some subscription's options
(and operators) may violate it. Together they say whether this run shows a violation the lab
predicts, keeps what the lab says is kept, or contradicts the lab (which would be a bug).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from faidecs.comparing.result import LabVerdict, RunVerdict, Verdict
from faidecs.grammar.model import Subscription
from faidecs.lab.promised import lost
from faidecs.matching.guarantees import PROPERTIES, Property
from faidecs.properties import Report
from faidecs.properties.view import Violation

#: Type Local Order is half of Type Causal Order: the lab's table judges the whole.
_PART_OF = {Property.TYPE_LOCAL_ORDER: Property.TYPE_CAUSAL_ORDER}

#: Explanations kept per property (a run of a million events may violate one a million times).
NOTES = 3


def lab_verdict(prop: Property, subscriptions: Iterable[Subscription]) -> LabVerdict:
    judged = _PART_OF.get(prop, prop)
    if judged not in PROPERTIES:
        return None
    return "lost" if any(judged in lost(s) for s in subscriptions) else "kept"


def mark(run: RunVerdict, lab: LabVerdict) -> str:
    if lab is None or run in ("unproven", "undecided"):
        return ""
    if run == "violated":
        return "predicted" if lab == "lost" else "CONTRADICTS THE LAB"
    return "confirmed" if lab == "kept" else "not shown"


def _names(v: Violation, process: str | None) -> bool:
    """Whether ``v`` counts against ``process`` (None: the whole run); a violation that names no
    process counts against every one, as ``faidecs verify`` counts it."""
    return process is None or not v.processes or process in v.processes


def verdicts(
    report: Report, subscriptions: Mapping[str, Subscription], process: str | None = None
) -> tuple[Verdict, ...]:
    """Every property of ``report``, for the whole run (``process`` None) or one subscription."""
    judged = list(subscriptions.values()) if process is None else [subscriptions[process]]
    out = []
    for prop, found in report.results.items():
        lab = lab_verdict(prop, judged)
        mine = [v for v in found if _names(v, process)]
        unproven = [v for v in report.unproven.get(prop, []) if _names(v, process)]
        run: RunVerdict
        notes: tuple[str, ...]
        if prop in report.undecided:
            run, notes = "undecided", (report.undecided[prop],)
        elif mine:
            run, notes = "violated", tuple(v.explanation for v in mine[:NOTES])
        elif unproven:
            run, notes = "unproven", tuple(v.explanation for v in unproven[:NOTES])
        else:
            run, notes = "holds", ()
        out.append(Verdict(str(prop), run, lab, mark(run, lab), notes))
    return tuple(out)


__all__ = ["NOTES", "lab_verdict", "mark", "verdicts"]
