"""The lab finds hard things: the papers' counterexamples and the ones it adds (a reduced run)."""

from __future__ import annotations

import json

import pytest

from faidecs.cli.main import main
from faidecs.lab import COMBINATIONS, Combination, explore, lab, run
from faidecs.lab.measured import MEASURED_VIOLATIONS
from faidecs.lab.scenario import LabScenario
from faidecs.matching.guarantees import EVERY_COMBINATION
from faidecs.properties import Property, check


def test_reduced_lab_finds_only_what_the_measured_table_holds() -> None:
    """A short lab run over all 16 combinations finds a subset of the measured table, and
    already most of it."""
    found = lab(runs=100, seed=7, workers=1)
    assert set(found) == {c.name for c in COMBINATIONS}
    total = 0
    for name, props in found.items():
        assert set(props) <= set(MEASURED_VIOLATIONS[Combination.parse(name)]), name
        total += len(props)
    assert total >= 0.6 * sum(len(v) for v in MEASURED_VIOLATIONS.values())


@pytest.mark.parametrize(
    ("combination", "prop"),
    [
        ("FR+PI", Property.COVERING_AGREEMENT),  # the JPDC 2012 Theorem 2.4.1 claim, refuted
        ("FRC+PI", Property.CONJUNCTION_VALIDITY),  # ToIT 2013 Theorem 5
        ("MR+PI", Property.EVENT_VALIDITY),  # Theorem 1
        ("FR+I", Property.TYPE_TOTAL_ORDER),  # Theorem 6
        ("MR+IP", Property.TYPE_FIFO_ORDER),  # Theorem 3
        ("FR+FP", Property.NO_DUPLICATION),  # Theorem 9
        ("FR+FP", Property.TYPE_FIFO_ORDER),  # Theorem 10
    ],
)
def test_known_counterexamples_are_found_and_shrunk(combination: str, prop: Property) -> None:
    findings = explore(Combination.parse(combination), runs=1500, seed=0)
    assert prop in findings
    scenario = findings[prop].scenario
    # Shrunk: a handful of events, and the run still shows the violation.
    assert len(scenario.events) <= 8
    assert check(run(scenario, Combination.parse(combination)), [prop]).results[prop]


def test_fr_pi_covering_counterexample_and_staged_fix() -> None:
    """`T1.a = T2.a` against `T1.a = T2.a and T3`: an early T1 event finds its partner only later.
    Plain FR+PI breaks Covering Agreement; `covering staged` keeps it."""
    scenario = LabScenario(
        processes=(("p1", (("T1[0].a = T2[0].a",),)), ("p2", (("T1[0].a = T2[0].a", "T3[0]"),))),
        events=(("T1", 1), ("T1", 2), ("T2", 2), ("T2", 1), ("T3", 1)),
    )
    plain = check(run(scenario, Combination.parse("FR+PI")))
    assert plain.violated() == [Property.COVERING_AGREEMENT]
    staged = check(run(scenario, Combination.parse("FR+PI"), ", covering staged"))
    assert staged.violated() == []


def test_lab_cli_json_and_counterexample_logs(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    assert main(["lab", "--runs", "8", "--json", "--workers", "1", "--out", str(tmp_path)]) == 0
    table = json.loads(capsys.readouterr().out)
    assert list(table) == [c.name for c in EVERY_COMBINATION]  # the paper's 16, then disposal NONE
    for name, props in table.items():
        assert props == sorted(props)
        for prop in props:
            slug = prop.lower().replace("'", "-prime").replace(" ", "-")
            log = tmp_path / name / f"{slug}.jsonl"
            # Each written counterexample is a runnable run log that shows its violation; an
            # overtaken event proven lost by a repeating extension is unproven on the log alone
            # (a run log cannot be extended), and its proof is written beside it.
            proof = tmp_path / name / f"{slug}.proof.txt"
            status = main(["verify", "--all", str(log), "--json"])
            report = json.loads(capsys.readouterr().out)
            if report[prop]["holds"] is None:
                assert prop == Property.EVENT_VALIDITY and report[prop]["unproven"]
                assert "is never delivered (proven)" in proof.read_text()
            else:
                assert status == 1
                assert report[prop]["holds"] is False


def test_partitioned_lab_finds_only_what_the_plain_table_holds() -> None:
    """`faidecs lab --partitioned`: every subscription partitioned by a key k. Each partition is
    an unpartitioned subscription on a sub-stream, so what it finds is in the plain measured
    table; a short run over four combinations already finds violations in partitioned runs."""
    combinations = tuple(Combination.parse(n) for n in ("FR+I", "FRC+PI", "MR+IP", "FR+FP"))
    found = lab(runs=40, seed=3, combinations=combinations, extra=", partition by k", workers=1)
    for c in combinations:
        props = found[f"{c.name}+partition by k"]
        assert set(props) <= set(MEASURED_VIOLATIONS[c]), c.name
    assert Property.NO_DUPLICATION in found["FR+FP+partition by k"]
