"""The property checker on runs of the extended language (issue 24): a group's members fill one
position, Admission judges groups, negations, absences and windows against the run, Event
Validity under disposal NONE and under a window; `faidecs check` describes the new operators and
what the lab measured for them."""

from __future__ import annotations

from typing import Any

import pytest

from faidecs.cli.main import main
from faidecs.grammar import compile_program
from faidecs.lab import Combination, run
from faidecs.lab.generator import OPERATORS, operator_extra
from faidecs.lab.measured import MEASURED_VIOLATIONS, OPERATOR_VIOLATIONS
from faidecs.lab.promised import lost, operators, promised
from faidecs.lab.scenario import LabScenario
from faidecs.lab.search import explore
from faidecs.matching.guarantees import EVERY_COMBINATION, NONE_COMBINATIONS, PROPERTIES
from faidecs.properties import Property, check
from faidecs.runs.processes import run_processes
from faidecs.runs.runlog import RunLog, RunRecorder

TYPES = "type A(a: int, t: int)\ntype B(a: int, t: int)\ntype N(a: int, t: int)\n"


def _event(i: str, type_name: str, a: int, t: int = 0) -> dict[str, Any]:
    return {"id": i, "type": type_name, "attrs": {"a": a, "t": t}}


def _forged(subscription: str, events: list[dict[str, Any]], deliveries: list[tuple[int, list[str]]]) -> RunLog:
    """A log of ``events`` with ``deliveries`` (after the event at each index) that no engine made."""
    recorder = RunRecorder(TYPES, {"p": subscription})
    for k, event in enumerate(events):
        recorder.publish(event)
        for after, ids in deliveries:
            if after == k:
                recorder.deliver("p", 0, ids)
    return recorder.finish({"p": [{}]})


def _engine_log(subscription: str, events: list[dict[str, Any]]) -> RunLog:
    return run_processes(TYPES, {"p": subscription}, events, matcher="reference")


def test_a_groups_members_fill_its_one_position() -> None:
    """ALL+NONE on `A+` delivers [e1], [e1, e2], [e2]: e2 is T[1], then T[0], both the group's
    one position, so No Duplication' fails (as under FP), and Admission holds."""
    log = _engine_log("subscription S (matching ALL, disposal NONE): A+", [_event("e1", "A", 1), _event("e2", "A", 2)])
    assert [d.relation for d in log.delivered] == [("e1",), ("e1", "e2"), ("e2",)]
    report = check(log, [Property.NO_DUPLICATION_PRIME, Property.ADMISSION, Property.CONJUNCTION_VALIDITY])
    (violation,) = report.results[Property.NO_DUPLICATION_PRIME]
    assert "twice in position A+" in violation.explanation
    assert report.violated() == [Property.NO_DUPLICATION_PRIME]


def test_engine_runs_of_every_operator_are_admitted() -> None:
    """What the engine delivers satisfies Admission's judgement of groups, negations, absences
    and windows (no false alarm), under each option that delivers them."""
    program = (
        "subscription S ({options}, within 5 on t): A+ and prev(A).a < A.a and count(A) >= 2 and sum(A.a) > B.a"
        " or B[1] and no N(N.a = B[0].a) between B[0] and B[1] or B and no N(N.a = B.a) after B"
    )
    events = [
        _event("a1", "A", 1, 1),
        _event("a2", "A", 2, 2),
        _event("b1", "B", 1, 3),
        _event("n1", "N", 0, 4),
        _event("a3", "A", 3, 5),
        _event("b2", "B", 2, 6),
        _event("n2", "N", 2, 7),
        _event("a4", "A", 1, 9),
        _event("b3", "B", 0, 20),
    ]
    for c in ("FR+PI", "MR+I", "FRC+NONE", "ALL+NONE"):
        m, d = c.split("+")
        log = _engine_log(program.format(options=f"matching {m}, disposal {d}"), events)
        assert log.delivered, c
        report = check(log, [Property.ADMISSION, Property.NO_CREATION, Property.CONJUNCTION_VALIDITY])
        assert report.violated() == [], (c, report.table())


@pytest.mark.parametrize(
    ("subscription", "events", "relation", "reason"),
    [
        (
            "subscription S: A and B and no N(N.a = A.a) between A and B",
            [_event("a", "A", 1), _event("n", "N", 1), _event("b", "B", 2)],
            ["a", "b"],
            "has n between its events",
        ),
        (
            "subscription S (within 3 on t): A and B",
            [_event("a", "A", 1, 1), _event("b", "B", 1, 9)],
            ["a", "b"],
            "spans 8 of t",
        ),
        (
            "subscription S (within 3 on t): A and no N after A",
            [_event("a", "A", 1, 1), _event("b", "B", 1, 3)],
            ["a"],
            "before the watermark passed its deadline (4)",
        ),
        (
            "subscription S (within 3 on t): A and no N after A",
            [_event("a", "A", 1, 1), _event("n", "N", 1, 2), _event("b", "A", 1, 9)],
            ["a"],
            "has n after its events",
        ),
        (
            "subscription S (within 3 on t): A",
            [_event("a", "A", 1, 8), _event("z", "A", 1, 2)],
            ["z"],
            "z, which arrived late",
        ),
        (
            "subscription S: A+ and prev(A).a < A.a",
            [_event("a1", "A", 2), _event("a2", "A", 1)],
            ["a1", "a2"],
            "does not satisfy A.a > prev(A).a",
        ),
        ("subscription S: A+ and count(A) >= 2", [_event("a1", "A", 2)], ["a1"], "does not satisfy count(A) >= 2"),
        ("subscription S: A+ and B", [_event("b", "B", 2)], ["b"], "does not fit the signature [A+, B[0]]"),
    ],
)
def test_admission_refuses_what_the_extended_rules_exclude(
    subscription: str, events: list[dict[str, Any]], relation: list[str], reason: str
) -> None:
    log = _forged(subscription, events, [(len(events) - 1, relation)])
    (violation,) = check(log, [Property.ADMISSION]).results[Property.ADMISSION]
    assert reason in violation.explanation


def test_event_validity_under_none_an_older_event_takes_the_place_for_ever() -> None:
    """FR+NONE, `A and B`: every B pairs with the oldest A (a1), and nothing leaves a NONE queue,
    so a2 is never delivered however many partners come; ALL delivers it with each B."""
    events = [_event("a1", "A", 0), _event("a2", "A", 0)] + [_event(f"b{k}", "B", 0) for k in range(4)]
    fr = _engine_log("subscription S (matching FR, disposal NONE): A and B", events)
    assert all(d.relation[0] == "a1" for d in fr.delivered) and len(fr.delivered) == 4
    (violation,) = check(fr, [Property.EVENT_VALIDITY]).results[Property.EVENT_VALIDITY]
    assert violation.events[0] == "a2" and "a1 (older, eligible for A[0] too)" in violation.explanation
    every = _engine_log("subscription S (matching ALL, disposal NONE): A and B", events)
    assert check(every, [Property.EVENT_VALIDITY]).violated() == []


def test_event_validity_under_a_window_a_purged_event_is_not_a_loss() -> None:
    """FR+I within 3 on t: a1 takes b1, a2 waits; b2 far beyond the window purges a2. Partners
    for a2 within its window could still have come before b2 (and would have been delivered with
    it), so the purge proves nothing: Event Validity is not violated. Under PI, a2 is disposed
    with a1's match while its window is open: that is a loss."""
    events = [_event("a1", "A", 0, 1), _event("a2", "A", 0, 1), _event("b1", "B", 0, 2), _event("b2", "B", 0, 9)]
    log = _engine_log("subscription S (matching FR, disposal I, within 3 on t): A and B", events)
    assert log.final["p"] == [{"A": [], "B": ["b2"]}]
    assert check(log, [Property.EVENT_VALIDITY]).violated() == []
    mr = _engine_log("subscription S (matching MR, disposal PI, within 3 on t): A and B", events[:3])
    (violation,) = check(mr, [Property.EVENT_VALIDITY]).results[Property.EVENT_VALIDITY]
    assert violation.events[0] == "a1" and "disposed" in violation.explanation


def test_lab_scenarios_with_operators_run_and_a_loss_is_shrunk() -> None:
    """The lab's operator scenarios compile and run under every option; a short search with a
    group under FR+NONE finds No Duplication lost, shrunk to a few events."""
    combination = Combination.parse("FR+NONE")
    found = explore(combination, runs=20, seed=0, operator="group")
    finding = found[Property.NO_DUPLICATION]
    assert len(finding.scenario.events) <= 4
    assert check(run(finding.scenario, combination), [Property.NO_DUPLICATION]).violated()
    scenario = LabScenario((("p", (("T1+", "prev(T1).a < T1.a"), ("T2[0]", "no T5 after T2[0]"))),), (("T1", 0),))
    for c in EVERY_COMBINATION:
        assert run(scenario, c, operator_extra("absence")).published


def test_check_describes_the_new_operators_and_their_measured_properties(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    source = TYPES + (
        "subscription Rising (matching FR, disposal PI, within 300 on t, lateness 5):\n"
        "    A+ and prev(A).a < A.a and count(A) >= 3 and avg(A.a) > B.a\n"
        "subscription Silent (within 60 on t): B and no N(N.a = B.a) after B\n"
        "subscription Jump (matching MR, disposal I): A[1].a > A[0].a and no N between A[0] and A[1]\n"
        "subscription Pairs (matching ALL, disposal NONE, within 10 on t): A and B and A.t < B.t\n"
    )
    path = tmp_path / "p.fdc"
    path.write_text(source)
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "subscription Rising (matching FR, disposal PI, within 300 on t, lateness 5)" in out
    assert "signature: [A+, B[0]]" in out and "unary  A+: count(A) >= 3" not in out
    assert "group: count(A) >= 3" in out and "group: A.a > prev(A).a" in out
    assert "absence: no N(B[0].a = N.a) after B[0]" in out
    assert "negation: no N between A[0] and A[1]" in out
    assert "window: relations span at most 10 of t" in out
    program = compile_program(source)
    assert out.count("  keeps: ") == out.count("  loses: ") == 4
    for sub in program.subscriptions:
        kept, gone = promised(sub), lost(sub)
        assert set(kept) | set(gone) == set(PROPERTIES) and not set(kept) & set(gone)
        assert f"  keeps: {', '.join(kept) or 'none'}" in out
        # From the measured tables: the combination's row and each operator's row under it.
        c = Combination(sub.matching, sub.disposal)
        expected = set(MEASURED_VIOLATIONS[c]).union(*(OPERATOR_VIOLATIONS[o][c] for o in operators(sub)))
        assert set(gone) == expected
    assert operators(program.subscriptions[0]) == ("group", "window")
    assert main(["check", "--json", str(path)]) == 0
    assert '"operators": [' in capsys.readouterr().out


def test_measured_tables_cover_every_option_and_operator() -> None:
    assert set(MEASURED_VIOLATIONS) == set(EVERY_COMBINATION)
    assert set(OPERATOR_VIOLATIONS) == set(OPERATORS)
    for table in OPERATOR_VIOLATIONS.values():
        assert set(table) == set(EVERY_COMBINATION)
    # Disposal NONE delivers an event in several relations: No Duplication is given up.
    for c in NONE_COMBINATIONS:
        assert Property.NO_DUPLICATION in MEASURED_VIOLATIONS[c]
