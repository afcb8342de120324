"""The semantic-options lab: search runs that violate each property under each option, shrink
what is found, and compare the table with the paper's (ToIT 2013, Table 4.1)."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace

from faidecs.errors import ProgramError
from faidecs.lab.extension import Proof, prove_event_validity
from faidecs.lab.generator import operator_extra
from faidecs.lab.generator import scenario as generate
from faidecs.lab.scenario import LabScenario, partitioned, run
from faidecs.matching.guarantees import COMBINATIONS, PAPER_VIOLATIONS, PROPERTIES, Combination, Property
from faidecs.properties import check


def combo_name(combination: Combination, extra: str = "") -> str:
    """``FR+PI``, and with ``extra`` options ``FR+PI+covering staged``."""
    return combination.name + (f"+{extra.strip(', ')}" if extra else "")


@dataclass(frozen=True, slots=True)
class Finding:
    property: Property
    scenario: LabScenario
    runs_needed: int  # generated runs before it was found; 0 when carried over from another combination
    origin: str = "search"  # "search", or the combination whose counterexample revealed it
    unshrunk: LabScenario | None = None  # the run as generated, before shrinking
    #: an Event Validity finding of an overtaken event: the extension that proves it lost
    proof: Proof | None = None

    def shown(self) -> LabScenario:
        """The run that shows the violation: the scenario, extended when a proof extends it."""
        return self.scenario if self.proof is None else self.proof.extended


def _violates(s: LabScenario, combination: Combination, prop: Property, extra: str) -> bool:
    try:
        log = run(s, combination, extra)
    except ProgramError:
        return False
    report = check(log, [prop])
    if report.results[prop]:
        return True
    # An overtaken event is only unproven on the run itself; an extension may prove it lost.
    return prop in report.unproven and prove_event_validity(s, combination, extra) is not None


def _finding(
    prop: Property,
    s: LabScenario,
    combination: Combination,
    extra: str,
    runs_needed: int,
    origin: str = "search",
    unshrunk: LabScenario | None = None,
) -> Finding:
    """A finding, shrunk; for an overtaken event, with the extension that proves it."""
    small = shrink(s, combination, prop, extra)
    proof = None
    if prop == Property.EVENT_VALIDITY and not check(run(small, combination, extra), [prop]).results[prop]:
        proof = prove_event_validity(small, combination, extra)
    return Finding(prop, small, runs_needed, origin, unshrunk, proof)


def _reductions(s: LabScenario) -> Iterator[LabScenario]:
    for k in range(len(s.processes)):
        if len(s.processes) > 1:
            yield s.without_process(k)
    for k in range(len(s.events)):
        yield s.without_event(k)
    if s.reactions:
        yield replace(s, reactions=())
    for p, (name, conjs) in enumerate(s.processes):
        for c, conj in enumerate(conjs):
            if len(conjs) > 1:
                smaller = conjs[:c] + conjs[c + 1 :]
                yield replace(s, processes=s.processes[:p] + ((name, smaller),) + s.processes[p + 1 :])
            for a in range(len(conj)):
                if len(conj) > 1:
                    fewer = conj[:a] + conj[a + 1 :]
                    new = conjs[:c] + (fewer,) + conjs[c + 1 :]
                    yield replace(s, processes=s.processes[:p] + ((name, new),) + s.processes[p + 1 :])
    for k, (t, a) in enumerate(s.events):
        if a > 0:
            yield replace(s, events=s.events[:k] + ((t, a - 1),) + s.events[k + 1 :])
    for k, key in enumerate(s.keys):
        if key > 0:
            yield replace(s, keys=s.keys[:k] + (key - 1,) + s.keys[k + 1 :])


def shrink(s: LabScenario, combination: Combination, prop: Property, extra: str = "") -> LabScenario:
    """Greedily take pieces away while the run still violates ``prop``."""
    improved = True
    while improved:
        improved = False
        for smaller in _reductions(s):
            if _violates(smaller, combination, prop, extra):
                s, improved = smaller, True
                break
    return s


def explore(
    combination: Combination, runs: int, seed: int, extra: str = "", operator: str = ""
) -> dict[Property, Finding]:
    """The first counterexample found for each property in ``runs`` seeded runs, shrunk;
    ``operator``: the extended language's operator the scenarios use (see the generator)."""
    # The same scenarios with and without `extra`: staged and plain matching then differ only
    # where the scenario makes them differ, not by the luck of the draw.
    rng = random.Random(f"{seed}:{combo_name(combination)}" + (f":{operator}" if operator else ""))
    remaining = list(PROPERTIES)
    found: dict[Property, Finding] = {}
    for i in range(runs):
        s = generate(rng, keyed=partitioned(extra), operator=operator)
        report = check(run(s, combination, extra), remaining)
        proven = report.violated()
        if Property.EVENT_VALIDITY in report.unproven and prove_event_validity(s, combination, extra) is not None:
            proven.append(Property.EVENT_VALIDITY)
        for prop in proven:
            found[prop] = _finding(prop, s, combination, extra, i + 1, unshrunk=s)
            remaining.remove(prop)
        if not remaining:
            break
    return found


def _explore_args(args: tuple[Combination, int, int, str, str]) -> tuple[str, dict[Property, Finding]]:
    combination, runs, seed, extra, operator = args
    return combo_name(combination, extra), explore(combination, runs, seed, extra, operator)


def lab(
    runs: int = 3000,
    seed: int = 0,
    *,
    combinations: tuple[Combination, ...] = COMBINATIONS,
    extra: str = "",
    workers: int | None = None,
    operator: str = "",
) -> dict[str, dict[Property, Finding]]:
    """Explore every combination (in parallel over ``workers`` processes); the findings by
    :func:`combo_name`, in the order of ``combinations``. ``operator``: scenarios use this
    operator of the extended language (:data:`~faidecs.lab.generator.OPERATORS`); its runs
    take the options it needs (a window) besides ``extra``."""
    extra = extra + (operator_extra(operator) if operator_extra(operator) not in extra else "")
    jobs = [(c, runs, seed, extra, operator) for c in combinations]
    if extra and not operator:
        # Plain runs too: their counterexamples join the pool replayed below, since an option
        # such as `covering staged` changes only some scenarios.
        jobs += [(c, runs, seed, "", "") for c in combinations]
    workers = workers or min(len(jobs), os.cpu_count() or 1)
    if workers <= 1:
        results = [_explore_args(j) for j in jobs]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(_explore_args, jobs))
    everything = dict(results)
    found = {combo_name(c, extra): everything[combo_name(c, extra)] for c in combinations}
    # Second phase: a counterexample found under one combination often breaks another one too,
    # where the random search happened to miss it. Trying every found scenario everywhere costs a
    # few hundred runs and makes the table far less dependent on luck.
    pool_of = [
        (name, s)
        for name, props in everything.items()
        for f in props.values()
        for s in (f.scenario, f.unshrunk)
        if s is not None
    ]
    for c in combinations:
        name = combo_name(c, extra)
        for prop in PROPERTIES:
            if prop in found[name]:
                continue
            for origin, s in pool_of:
                if origin != name and _violates(s, c, prop, extra):
                    found[name][prop] = _finding(prop, s, c, extra, 0, origin)
                    break
    return found


def paper_row(combination: Combination) -> set[Property] | None:
    """What Table 4.1 says ``combination`` violates; None for the options the paper lacks
    (ALL, NONE)."""
    found = PAPER_VIOLATIONS.get(combination)
    return None if found is None else set(found)


def render_table(
    found: dict[str, dict[Property, Finding]], combinations: tuple[Combination, ...], extra: str = ""
) -> str:
    """One row per combination; `X` violated (found), `.` none found; `!` marks a cell that
    differs from the paper's Table 4.1."""
    abbrev = {p: "".join(w[0] for w in p.split()) for p in PROPERTIES}
    abbrev[Property.NO_DUPLICATION_PRIME] = "ND'"
    abbrev[Property.COVERING_AGREEMENT] = "CvA"
    head = "combination  " + " ".join(f"{abbrev[p]:>4}" for p in PROPERTIES)
    lines = [head]
    for c in combinations:
        name = combo_name(c, extra)
        paper = paper_row(c) if not extra else None
        cells = []
        for p in PROPERTIES:
            mark = "X" if p in found[name] else "."
            differs = paper is not None and (p in found[name]) != (p in paper)
            cells.append(f"{mark + ('!' if differs else ''):>4}")
        lines.append(f"{name:<12} " + " ".join(cells))
    lines.append("")
    lines.append("  ".join(f"{abbrev[p]}={p}" for p in PROPERTIES))
    if not extra:
        lines.append("X: the lab found a violation; .: none found; !: differs from the paper's Table 4.1")
    return "\n".join(lines) + "\n"
