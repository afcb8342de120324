"""The lab's findings as Markdown (``faidecs lab --markdown``): the table against the paper's,
and one shrunk counterexample per violated cell, drawn as its run."""

from __future__ import annotations

from typing import Any

from faidecs.lab.extension import Proof
from faidecs.lab.scenario import LabScenario, run
from faidecs.lab.search import Finding, combo_name, paper_row
from faidecs.matching.guarantees import PROPERTIES, Combination, Property
from faidecs.properties import check


def _cell(found: bool, paper: bool | None) -> str:
    if paper is None:
        return "✗" if found else "✓"
    if found == paper:
        return "✗" if found else "✓"
    return "**✗ (paper: kept)**" if found else "**✓ (paper: violated)**"


def table(found: dict[str, dict[Property, Finding]], combinations: tuple[Combination, ...], extra: str = "") -> str:
    head = "| combination | " + " | ".join(PROPERTIES) + " |"
    rule = "|---" * (len(PROPERTIES) + 1) + "|"
    rows = [head, rule]
    for c in combinations:
        name = combo_name(c, extra)
        paper = None if extra else paper_row(c)  # None too for options the paper lacks
        cells = [_cell(p in found[name], None if paper is None else p in paper) for p in PROPERTIES]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def counterexample(
    s: LabScenario, combination: Combination, prop: Property, extra: str = "", proof: Proof | None = None
) -> str:
    """The run of ``s`` (extended by ``proof``'s rounds, if any) and the violation it shows."""
    if proof is not None:
        s = proof.extended
    log = run(s, combination, extra)
    lines = ["```"]
    for name, _ in s.processes:
        lines.append(log.processes[name])
    for name, rule in s.reactions:
        lines.append(f"# {name} publishes {rule.type_name}(a={rule.value}) after each delivery, at most {rule.limit}x")
    records = sorted(
        [
            (
                p.time,
                f"publish {p.id}: {p.type}({', '.join(f'{k}={v}' for k, v in p.event['attrs'].items())})"
                + (f" by {p.publisher}" if p.publisher != "publisher" else ""),
            )
            for p in log.published
        ]
        + [(d.time, f"    {d.process} delivers [{', '.join(d.relation)}]") for d in log.delivered]
    )
    lines += [text for _, text in records]
    for name, queues in log.final.items():
        shown = "; ".join(_queues(q) for q in queues)
        lines.append(f"final queues of {name}: {shown}")
    lines.append("```")
    report = check(log, [prop])
    if report.results[prop]:
        lines.append(f"{report.results[prop][0].explanation}.")
    if proof is not None:
        if not report.results[prop]:
            overtaken = [v for v in report.unproven[prop] if v.events[0] == proof.event]
            lines.append(f"{(overtaken or report.unproven[prop])[0].explanation}.")
        lines.append(f"The lab's proof: {proof.explanation()}.")
    return "\n".join(lines)


def _queues(state: dict[str, Any]) -> str:
    """One conjunction's final queues; a partitioned one's partition by partition."""
    if "partitions" in state:
        return " | ".join(f"k={value}: {_queues(part)}" for value, part in state["partitions"].items())
    return ", ".join(f"{t}=[{', '.join(map(str, ids))}]" for t, ids in state.items() if t != "staged")


def markdown(found: dict[str, dict[Property, Finding]], combinations: tuple[Combination, ...], extra: str = "") -> str:
    out = [table(found, combinations, extra), ""]
    for c in combinations:
        name = combo_name(c, extra)
        if not found[name]:
            continue
        out.append(f"### {name}\n")
        for prop in PROPERTIES:
            finding = found[name].get(prop)
            if finding is None:
                continue
            how = (
                f"found after {finding.runs_needed} runs"
                if finding.origin == "search"
                else f"found by replaying a counterexample of {finding.origin}"
            )
            out.append(f"**{prop}** ({how})\n")
            out.append(counterexample(finding.scenario, c, prop, extra, finding.proof) + "\n")
    return "\n".join(out)


def operator_markdown(
    operator: str, found: dict[str, dict[Property, Finding]], combinations: tuple[Combination, ...], extra: str = ""
) -> str:
    """An operator's table (``faidecs lab --operator OP --markdown``): per combination what the
    lab found violated with the operator; a bold cell is lost with the operator but kept by the
    combination's own row (the measured table), and only those come with their counterexample."""
    from faidecs.lab.measured import MEASURED_VIOLATIONS

    head = "| combination | " + " | ".join(PROPERTIES) + " |"
    rows = [head, "|---" * (len(PROPERTIES) + 1) + "|"]
    added: list[tuple[Combination, Property, Finding]] = []
    for c in combinations:
        name = combo_name(c, extra)
        base = MEASURED_VIOLATIONS.get(c, ())
        cells = []
        for p in PROPERTIES:
            if p not in found[name]:
                cells.append("✓")
            elif p in base:
                cells.append("✗")
            else:
                cells.append("**✗ (operator)**")
                added.append((c, p, found[name][p]))
        rows.append(f"| {c.name} | " + " | ".join(cells) + " |")
    out = ["\n".join(rows) + "\n", ""]
    for c, prop, finding in added:
        how = (
            f"found after {finding.runs_needed} runs"
            if finding.origin == "search"
            else f"found by replaying a counterexample of {finding.origin}"
        )
        out.append(f"**{c.name} with {operator}: {prop}** ({how})\n")
        out.append(counterexample(finding.scenario, c, prop, extra, finding.proof) + "\n")
    return "\n".join(out)
