"""The property checker (``faidecs.properties.check``) on hand-built run logs and on the papers'
counterexamples run through the real engine.

Each property of :data:`faidecs.properties.CHECKS` gets a log where it holds and one where it is
violated. The logs are written by hand (JSON lines, see :func:`make_log`), so they may contain
deliveries no correct engine makes. Every test asserts the exact list of violated properties and
the evidence (events, processes, delivery times) of the violation.

Judgements on finite runs follow the module docstrings of ``faidecs/properties/liveness.py`` and
``faidecs/properties/order.py``: order properties compare first deliveries within one stream
(process, conjunction); liveness looks for a promise that can no longer be kept.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from faidecs.matching.delivery import Delivery
from faidecs.matching.guarantees import PROPERTIES
from faidecs.properties import CHECKS, Property, Report, Violation, check
from faidecs.runs.processes import run_processes
from faidecs.runs.runlog import Delivered, Published, RunLog, RunLogError

TYPES = "type T1(a: int)\ntype T2(a: int)\ntype T3(a: int)\n"

Record = dict[str, Any]


# --- building logs by hand ---------------------------------------------------------------------


def pub(
    time: int, event_id: str, type_name: str, a: int = 1, *, publisher: str = "src", seq: int | None = None
) -> Record:
    """A publish record; ``seq`` defaults to ``time`` (increasing for every publisher)."""
    event = {"id": event_id, "type": type_name, "attrs": {"a": a}, "publisher": publisher}
    event["seq"] = time if seq is None else seq
    return {"record": "publish", "time": time, "event": event}


def dlv(time: int, process: str, *relation: str, conj: int = 0) -> Record:
    """A deliver record: ``process`` delivered ``relation`` for its conjunction ``conj`` (as written)."""
    return {"record": "deliver", "time": time, "process": process, "conjunction": conj, "relation": list(relation)}


def final(process: str, *queues: dict[str, list[str]]) -> Record:
    """A final record: the process's queues per conjunction (as written) after the last event."""
    return {"record": "final", "process": process, "queues": list(queues)}


def log_text(processes: dict[str, str], *records: Record, types: str = TYPES) -> str:
    """The JSON-lines text of a run log: header, one process record each, then ``records``."""
    head: list[Record] = [{"record": "header", "format": "faidecs.runs.runlog/1", "types": types}]
    head += [{"record": "process", "process": n, "subscription": s} for n, s in processes.items()]
    return "".join(json.dumps(r) + "\n" for r in head + list(records))


def make_log(processes: dict[str, str], *records: Record, types: str = TYPES) -> RunLog:
    """A hand-built run log, read back through :meth:`RunLog.read` (so it is well formed)."""
    return RunLog.read(log_text(processes, *records, types=types).splitlines())


def sub(condition: str, matching: str = "FR", disposal: str = "PI", name: str = "S") -> str:
    return f"subscription {name} (matching {matching}, disposal {disposal}): {condition}"


def verdict(log: RunLog, expected: list[str]) -> Report:
    """Check every property; assert exactly ``expected`` are violated, each with one violation."""
    report = check(log)
    assert report.violated() == expected, report.table()
    for name in expected:
        assert len(report.results[name]) == 1
    return report


def evidence(report: Report, name: str) -> Violation:
    return report.results[name][0]


def ev(event_id: str, type_name: str, a: int) -> dict[str, Any]:
    """An input event for :func:`run_processes`."""
    return {"id": event_id, "type": type_name, "attrs": {"a": a}}


# --- the checker's surface ---------------------------------------------------------------------


def test_checks_cover_every_property_in_order() -> None:
    assert list(CHECKS) == [
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
        "Type Local Order",
        "Type Causal Order",
        "Total Notification Order",
        "Notification Integrity",
        "Notification Validity",
        "Notification FIFO Order",
        "Gapless FIFO Delivery",
        "Gapless Causal Delivery",
    ]


def test_one_name_for_each_property() -> None:
    """The checker judges exactly the members of Property, in their order; the paper's table
    (PROPERTIES) is a part of them, in the same order; a name reads as its text."""
    assert list(CHECKS) == list(Property)
    assert list(PROPERTIES) == [p for p in Property if p in PROPERTIES]
    assert all(isinstance(p, Property) for p in CHECKS)
    assert f"{Property.NO_DUPLICATION_PRIME}" == "No Duplication'"
    assert json.dumps([Property.TYPE_FIFO_ORDER]) == '["Type FIFO Order"]'
    with pytest.raises(ValueError):
        check(make_log({"p": sub("T1")}), ["Type Fifo Order"])


def test_check_a_subset_of_properties() -> None:
    log = make_log({"p": sub("T1")}, pub(1, "x1", "T1"), pub(2, "x2", "T1"), dlv(3, "p", "x2"), dlv(4, "p", "x1"))
    report = check(log, ["Type FIFO Order", Property.NO_CREATION])  # names, or members
    assert list(report.results) == [Property.TYPE_FIFO_ORDER, Property.NO_CREATION]
    assert report.violated() == [Property.TYPE_FIFO_ORDER]
    assert all(isinstance(p, Property) for p in report.results)


def test_report_json_and_table() -> None:
    log = make_log({"p": sub("T1")}, pub(1, "x1", "T1"), pub(2, "x2", "T1"), dlv(3, "p", "x2"), dlv(4, "p", "x1"))
    report = check(log)
    data = report.to_json()
    assert list(data) == list(CHECKS)
    assert data["No Creation"] == {"holds": True, "violations": []}
    assert data["Type FIFO Order"]["holds"] is False
    assert data["Type FIFO Order"]["violations"] == [
        {
            "explanation": evidence(report, "Type FIFO Order").explanation,
            "events": ["x1", "x2"],
            "processes": ["p"],
            "deliveries": [3, 4],
        }
    ]
    table = report.table()
    assert "Type FIFO Order           VIOLATED" in table
    assert "No Creation               holds" in table


def test_empty_run_holds_everything() -> None:
    verdict(make_log({"p": sub("T1 and T2"), "q": sub("T1.a = T2.a", "MR", "I")}), [])


def test_event_published_twice_is_rejected() -> None:
    """Reading the log finds it, on the line of the second publication."""
    with pytest.raises(RunLogError, match=r"^<run log>:4: event id 'x' published twice"):
        make_log({"p": sub("T1")}, pub(1, "x", "T1"), pub(2, "x", "T1"))
    # A log built in memory has no lines: the checker still refuses it.
    log = RunLog(TYPES, {"p": sub("T1")}, [Published(1, pub(1, "x", "T1")["event"])] * 2)
    with pytest.raises(RunLogError, match="event id 'x' published twice"):
        check(log)


def test_delivery_for_a_missing_conjunction_is_rejected() -> None:
    with pytest.raises(RunLogError, match=r"^<run log>:4: field 'conjunction': process 'p' has no conjunction 1"):
        make_log({"p": sub("T1")}, pub(1, "x", "T1"), dlv(2, "p", "x", conj=1))
    log = RunLog(TYPES, {"p": sub("T1")}, [Published(1, pub(1, "x", "T1")["event"])], [Delivered(2, "p", 1, ("x",))])
    with pytest.raises(RunLogError, match="process p has no conjunction 1"):
        check(log)


# --- No Duplication ----------------------------------------------------------------------------


def test_no_duplication_holds_across_conjunctions() -> None:
    """One event in a relation of each of two conjunctions of one process is no duplication."""
    log = make_log(
        {"p": sub("T1 or T1 and T2")},
        pub(1, "x", "T1"),
        dlv(2, "p", "x", conj=0),
        pub(3, "y", "T2"),
        dlv(4, "p", "x", "y", conj=1),
    )
    verdict(log, [])


def test_no_duplication_violated_in_another_position() -> None:
    """A sliding window (FP) delivers x2 as T1[1] and then as T1[0]: No Duplication fails, No
    Duplication' (same position only) holds."""
    log = make_log(
        {"p": sub("T1[1]", "FR", "FP")},
        pub(1, "x1", "T1"),
        pub(2, "x2", "T1"),
        dlv(3, "p", "x1", "x2"),
        pub(4, "x3", "T1"),
        dlv(5, "p", "x2", "x3"),
    )
    report = verdict(log, [Property.NO_DUPLICATION])
    v = evidence(report, Property.NO_DUPLICATION)
    assert (v.events, v.processes, v.deliveries) == (("x2",), ("p",), (3, 5))


# --- No Duplication' ---------------------------------------------------------------------------


def test_no_duplication_prime_violated_in_the_same_position() -> None:
    log = make_log(
        {"p": sub("T1 and T2", "FR", "FP")},
        pub(1, "x1", "T1"),
        pub(2, "y1", "T2"),
        dlv(3, "p", "x1", "y1"),
        pub(4, "y2", "T2"),
        dlv(5, "p", "x1", "y2"),
    )
    report = verdict(log, [Property.NO_DUPLICATION, Property.NO_DUPLICATION_PRIME])
    for name in (Property.NO_DUPLICATION, Property.NO_DUPLICATION_PRIME):
        v = evidence(report, name)
        assert (v.events, v.processes, v.deliveries) == (("x1",), ("p",), (3, 5))
    assert "position T1[0]" in evidence(report, Property.NO_DUPLICATION_PRIME).explanation


# --- No Creation -------------------------------------------------------------------------------

NEVER_PUBLISHED = """\
{"record": "header", "format": "faidecs.runs.runlog/1", "types": "type T1(a: int)\\n"}
{"record": "process", "process": "p", "subscription": "subscription P: T1"}
{"record": "publish", "time": 1, "event": {"id": "x", "type": "T1", "attrs": {"a": 1}, "publisher": "src", "seq": 0}}
{"record": "deliver", "time": 2, "process": "p", "conjunction": 0, "relation": ["x"]}
{"record": "deliver", "time": 3, "process": "p", "conjunction": 0, "relation": ["ghost"]}
"""


def test_no_creation_holds() -> None:
    text = "".join(line + "\n" for line in NEVER_PUBLISHED.splitlines()[:4])
    verdict(RunLog.read(text.splitlines()), [])


def test_no_creation_violated_by_an_event_never_published() -> None:
    report = verdict(RunLog.read(NEVER_PUBLISHED.splitlines()), [Property.NO_CREATION])
    v = evidence(report, Property.NO_CREATION)
    assert (v.events, v.processes, v.deliveries) == (("ghost",), ("p",), (3,))
    assert "never published" in v.explanation


def test_no_creation_violated_by_a_delivery_before_the_publication() -> None:
    log = make_log(
        {"p": sub("T1")},
        dlv(1, "p", "x"),
        pub(2, "x", "T1"),
        pub(3, "y", "T1"),
        dlv(4, "p", "y"),
    )
    report = verdict(log, [Property.NO_CREATION])
    v = evidence(report, Property.NO_CREATION)
    assert (v.events, v.processes, v.deliveries) == (("x",), ("p",), (1,))
    assert "published only later" in v.explanation


def test_no_creation_ghost_delivered_by_two_processes() -> None:
    """The order checks must not crash on an unpublished id that two streams deliver."""
    log = make_log(
        {"p": sub("T1"), "q": sub("T1")},
        pub(1, "x", "T1"),
        dlv(2, "p", "x"),
        dlv(3, "q", "x"),
        dlv(4, "p", "ghost"),
        dlv(5, "q", "ghost"),
    )
    report = verdict(log, [Property.NO_CREATION])
    assert evidence(report, Property.NO_CREATION).events == ("ghost",)


def test_no_creation_ghost_delivered_before_the_process_publishes() -> None:
    """Type Local Order must not crash when a process that delivered an unpublished id publishes."""
    log = make_log(
        {"p": sub("T1")},
        dlv(1, "p", "ghost"),
        pub(2, "x", "T1", publisher="p"),
        dlv(3, "p", "x"),
    )
    report = verdict(log, [Property.NO_CREATION])
    assert evidence(report, Property.NO_CREATION).events == ("ghost",)


# --- Admission ---------------------------------------------------------------------------------


def test_admission_holds() -> None:
    log = make_log({"p": sub("T1.a < T2.a")}, pub(1, "x", "T1", 2), pub(2, "y", "T2", 3), dlv(3, "p", "x", "y"))
    verdict(log, [])


@pytest.mark.parametrize(
    ("relation", "reason"),
    [
        (("x", "y"), "does not satisfy T1[0].a < T2[0].a"),
        (("y", "x"), "has an event of the wrong type in some position"),
        (("x",), "has 1 events for 2 positions"),
        (("x", "y", "x"), "has 3 events for 2 positions"),
    ],
)
def test_admission_violated(relation: tuple[str, ...], reason: str) -> None:
    log = make_log({"p": sub("T1.a < T2.a")}, pub(1, "x", "T1", 5), pub(2, "y", "T2", 3), dlv(3, "p", *relation))
    expected = [Property.NO_DUPLICATION, Property.ADMISSION] if len(relation) == 3 else [Property.ADMISSION]
    report = verdict(log, expected)
    v = evidence(report, Property.ADMISSION)
    assert (v.events, v.processes, v.deliveries) == (relation, ("p",), (3,))
    assert reason in v.explanation


def test_admission_checks_every_conjunction_of_a_disjunction() -> None:
    log = make_log(
        {"p": sub("T1.a = 1 or T1.a = 2")},
        pub(1, "x", "T1", 1),
        dlv(2, "p", "x", conj=0),
        dlv(3, "p", "x", conj=1),
    )
    report = verdict(log, [Property.ADMISSION])
    v = evidence(report, Property.ADMISSION)
    assert (v.events, v.deliveries) == (("x",), (3,))
    assert "conjunction 1 does not satisfy T1[0].a = 2" in v.explanation


# --- Conjunction Validity ----------------------------------------------------------------------


def test_conjunction_validity_holds() -> None:
    log = make_log(
        {"p": sub("T1 and T2")},
        pub(1, "x1", "T1"),
        pub(2, "y1", "T2"),
        dlv(3, "p", "x1", "y1"),
        pub(4, "x2", "T1"),
        pub(5, "y2", "T2"),
        dlv(6, "p", "x2", "y2"),
        pub(7, "x3", "T1"),  # no partner yet
    )
    verdict(log, [])


def test_conjunction_validity_violated_after_the_last_delivery() -> None:
    """x2 and y2, published after the last delivery, satisfy the conjunction; nothing follows."""
    log = make_log(
        {"p": sub("T1 and T2")},
        pub(1, "x1", "T1"),
        pub(2, "y1", "T2"),
        dlv(3, "p", "x1", "y1"),
        pub(4, "x2", "T1"),
        pub(5, "y2", "T2"),
    )
    report = verdict(log, [Property.CONJUNCTION_VALIDITY])
    v = evidence(report, Property.CONJUNCTION_VALIDITY)
    assert (v.events, v.processes, v.deliveries) == (("x2", "y2"), ("p",), (3,))


def test_conjunction_validity_violated_without_any_delivery() -> None:
    log = make_log({"p": sub("T1.a = T2.a")}, pub(1, "x", "T1", 4), pub(2, "y", "T2", 4))
    report = verdict(log, [Property.CONJUNCTION_VALIDITY])
    v = evidence(report, Property.CONJUNCTION_VALIDITY)
    assert (v.events, v.processes, v.deliveries) == (("x", "y"), ("p",), ())


@pytest.mark.parametrize(("matching", "expected"), [("FR", [Property.CONJUNCTION_VALIDITY]), ("MR", [])])
def test_conjunction_validity_follows_the_instance_order(matching: str, expected: list[str]) -> None:
    """`T1[0].a > T1[1].a` on x(5), y(3): under FR T1[0] is the older (5 > 3 holds), under MR the
    newer (3 > 5 fails), so only FR promises a delivery (semantics file, worked example 2)."""
    log = make_log({"p": sub("T1[0].a > T1[1].a", matching)}, pub(1, "x", "T1", 5), pub(2, "y", "T1", 3))
    report = verdict(log, expected)
    if expected:
        assert evidence(report, Property.CONJUNCTION_VALIDITY).events == ("x", "y")


# --- Event Validity ----------------------------------------------------------------------------


def test_event_validity_holds_while_the_event_waits_in_the_queue() -> None:
    """FR+PI delivers the oldest T1; x1 is still queued at the end (final record): not lost."""
    log = make_log(
        {"p": sub("T1 and T2", "FR", "PI")},
        pub(1, "x0", "T1"),
        pub(2, "x1", "T1"),
        pub(3, "y1", "T2"),
        dlv(4, "p", "x0", "y1"),
        final("p", {"T1": ["x1"], "T2": []}),
    )
    verdict(log, [])


def test_event_validity_holds_for_an_event_failing_its_unary_predicates() -> None:
    log = make_log(
        {"p": sub("T1.a > 0 and T2", "MR", "PI")},
        pub(1, "x0", "T1", 0),
        pub(2, "x1", "T1", 1),
        pub(3, "y1", "T2"),
        dlv(4, "p", "x1", "y1"),
        final("p", {"T1": [], "T2": []}),
    )
    verdict(log, [])


def test_event_validity_violated_by_a_disposed_event() -> None:
    """MR+PI (Theorem 1): y1 pairs with the newest T1, and PI disposes x0, which the final record
    no longer holds although y1 followed it."""
    log = make_log(
        {"p": sub("T1 and T2", "MR", "PI")},
        pub(1, "x0", "T1"),
        pub(2, "x1", "T1"),
        pub(3, "y1", "T2"),
        dlv(4, "p", "x1", "y1"),
        final("p", {"T1": [], "T2": []}),
    )
    report = verdict(log, [Property.EVENT_VALIDITY])
    v = evidence(report, Property.EVENT_VALIDITY)
    assert (v.events, v.processes, v.deliveries) == (("x0", "y1"), ("p",), ())
    assert "it was disposed" in v.explanation


def test_event_validity_unproven_when_a_younger_event_took_its_position() -> None:
    """Without a final record: x1, published after x0, took T1[0] in a later relation. x0 may
    still be queued, and a later relation may take it: unproven, not a violation."""
    log = make_log(
        {"p": sub("T1 and T2", "MR", "I")},
        pub(1, "x0", "T1"),
        pub(2, "x1", "T1"),
        pub(3, "y1", "T2"),
        dlv(4, "p", "x1", "y1"),
    )
    report = verdict(log, [])
    (v,) = report.unproven[Property.EVENT_VALIDITY]
    assert (v.events, v.processes) == (("x0", "y1"), ("p",))
    assert "x1, published after it, took T1[0] in the relation delivered at time 4" in v.explanation
    assert "unproven" in v.explanation
    assert report.to_json()[Property.EVENT_VALIDITY]["holds"] is None
    assert "Event Validity            unproven (not a violation)" in report.table()


def test_event_validity_published_fr_i_counterexample_is_unproven_and_delivered_later() -> None:
    """The lab's former FR+I counterexample (`T3[2] and T3[1].a >= 1`, a = 0, 0, 1, 0): e4 took
    T3[2] and e2 stays queued, so the checker calls it unproven; two more events (a = 1, 0) and
    the reference matcher delivers e2 (issue 24)."""
    condition = "T3[2] and T3[1].a >= 1"
    types = "type T3(a: int)"
    stream = [ev(f"e{k}", "T3", a) for k, a in enumerate((0, 0, 1, 0), 1)]
    log = run_processes(types, {"p2": sub(condition, "FR", "I", "p2")}, stream, matcher="reference")
    report = check(log, [Property.EVENT_VALIDITY])
    assert report.violated() == []
    (v,) = report.unproven[Property.EVENT_VALIDITY]
    assert v.events == ("e2", "e3", "e4")
    longer = stream + [ev("e5", "T3", 1), ev("e6", "T3", 0)]
    extended = run_processes(types, {"p2": sub(condition, "FR", "I", "p2")}, longer, matcher="reference")
    assert [d.relation for d in extended.delivered] == [("e1", "e3", "e4"), ("e2", "e5", "e6")]
    after = check(extended, [Property.EVENT_VALIDITY])
    assert after.violated() == [] and not after.unproven


def test_event_validity_ignores_positions_linked_by_binary_predicates() -> None:
    """Only positions without binary predicates promise delivery: x0 is disposed, yet T1 is
    linked to T2 by `T1.a = T2.a`."""
    log = make_log(
        {"p": sub("T1.a = T2.a", "MR", "PI")},
        pub(1, "x0", "T1"),
        pub(2, "x1", "T1"),
        pub(3, "y1", "T2"),
        dlv(4, "p", "x1", "y1"),
        final("p", {"T1": [], "T2": []}),
    )
    verdict(log, [])


# --- Conjunction Agreement ---------------------------------------------------------------------


def test_conjunction_agreement_holds_in_any_order_of_writing() -> None:
    """Two processes that write one conjunction differently deliver the same relation."""
    log = make_log(
        {"p": sub("T1.a = T2.a"), "q": sub("T2.a = T1.a")},
        pub(1, "x1", "T1"),
        pub(2, "y1", "T2"),
        dlv(3, "p", "x1", "y1"),
        dlv(4, "q", "x1", "y1"),
    )
    verdict(log, [])


def test_conjunction_agreement_violated() -> None:
    log = make_log(
        {"p": sub("T1.a = T2.a", "FR", "I"), "q": sub("T1.a = T2.a", "FR", "I")},
        pub(1, "x1", "T1"),
        pub(2, "x2", "T1"),
        pub(3, "y1", "T2"),
        dlv(4, "p", "x1", "y1"),
        dlv(5, "q", "x2", "y1"),
    )
    report = verdict(log, [Property.CONJUNCTION_AGREEMENT])
    v = evidence(report, Property.CONJUNCTION_AGREEMENT)
    assert (v.events, v.processes, v.deliveries) == (("x1", "y1"), ("p", "q"), (4,))


def test_conjunction_agreement_compares_only_equal_options() -> None:
    """FR and MR subscribers to one conjunction are different subscriptions: no agreement owed."""
    log = make_log(
        {"p": sub("T1.a = T2.a", "FR", "I"), "q": sub("T1.a = T2.a", "MR", "I")},
        pub(1, "x1", "T1"),
        pub(2, "x2", "T1"),
        pub(3, "y1", "T2"),
        dlv(4, "p", "x1", "y1"),
        dlv(5, "q", "x2", "y1"),
    )
    verdict(log, [])


# --- Covering Agreement ------------------------------------------------------------------------

COVERING = {"n": sub("T1.a = T2.a"), "w": sub("T1.a = T2.a and T3")}


def covering_log(wide_relation: tuple[str, ...], processes: dict[str, str] = COVERING) -> RunLog:
    """The FR+PI covering counterexample, written by hand; the wide process ``w`` delivers
    ``wide_relation`` when T3 arrives."""
    return make_log(
        processes,
        pub(1, "x1", "T1", 1),
        pub(2, "x2", "T1", 2),
        pub(3, "y2", "T2", 2),
        dlv(4, "n", "x2", "y2"),
        pub(5, "y1", "T2", 1),
        pub(6, "z", "T3", 1),
        dlv(7, "w", *wide_relation),
    )


def test_covering_agreement_holds() -> None:
    verdict(covering_log(("x2", "y2", "z")), [])


def test_covering_agreement_violated() -> None:
    """`T1.a = T2.a and T3` delivers the T1/T2 part [x1, y1], which `T1.a = T2.a` never delivered."""
    report = verdict(covering_log(("x1", "y1", "z")), [Property.COVERING_AGREEMENT])
    v = evidence(report, Property.COVERING_AGREEMENT)
    assert (v.events, v.processes, v.deliveries) == (("x1", "y1", "z"), ("w", "n"), (7,))
    assert "never delivered its part [x1, y1]" in v.explanation


def test_covering_agreement_needs_a_type_disjoint_extension() -> None:
    """`T1.a = T2.a and T2.a = T3.a` does not extend `T1.a = T2.a` by a part with other types."""
    processes = {"n": sub("T1.a = T2.a"), "w": sub("T1.a = T2.a and T2.a = T3.a")}
    verdict(covering_log(("x1", "y1", "z"), processes), [])


def test_covering_agreement_compares_only_equal_options() -> None:
    processes = {"n": sub("T1.a = T2.a", "FR", "PI"), "w": sub("T1.a = T2.a and T3", "FR", "I")}
    verdict(covering_log(("x1", "y1", "z"), processes), [])


# --- Type Total Order --------------------------------------------------------------------------


def type_total_log(q_first: str, q_second: str) -> RunLog:
    """p (`T1`) delivers x1 then x2; q (`T1.a = T2.a`) pairs them with T2 events in the order of
    the T2 events' arrival. x1 and x2 come from different publishers (no FIFO order between them)."""
    a = {"y1": 1, "y2": 2}
    return make_log(
        {"p": sub("T1", "FR", "I"), "q": sub("T1.a = T2.a", "FR", "I")},
        pub(1, "x1", "T1", 1, publisher="s1"),
        dlv(2, "p", "x1"),
        pub(3, "x2", "T1", 2, publisher="s2"),
        dlv(4, "p", "x2"),
        pub(5, q_first, "T2", a[q_first]),
        dlv(6, "q", "x" + q_first[1], q_first),
        pub(7, q_second, "T2", a[q_second]),
        dlv(8, "q", "x" + q_second[1], q_second),
    )


def test_type_total_order_holds() -> None:
    verdict(type_total_log("y1", "y2"), [])


def test_type_total_order_violated() -> None:
    report = verdict(type_total_log("y2", "y1"), [Property.TYPE_TOTAL_ORDER])
    v = evidence(report, Property.TYPE_TOTAL_ORDER)
    assert (v.events, v.processes, v.deliveries) == (("x1", "x2"), ("p", "q"), (2, 4, 6, 8))


# --- Conjunction Total Order -------------------------------------------------------------------


def test_conjunction_total_order_holds() -> None:
    log = make_log(
        {"p": sub("T1.a = T2.a and T3", "FR", "I"), "q": sub("T1.a = T2.a", "FR", "I")},
        pub(1, "x1", "T1", 1, publisher="s1"),
        pub(2, "y1", "T2", 1, publisher="s1"),
        dlv(3, "q", "x1", "y1"),
        pub(4, "x2", "T1", 2, publisher="s2"),
        pub(5, "y2", "T2", 2, publisher="s2"),
        dlv(6, "q", "x2", "y2"),
        pub(7, "z1", "T3"),
        dlv(8, "p", "x1", "y1", "z1"),
        pub(9, "z2", "T3"),
        dlv(10, "p", "x2", "y2", "z2"),
    )
    verdict(log, [])


def test_conjunction_total_order_violated_with_type_total_order() -> None:
    """p delivers the common part [x1, y1] before [x2, y2], q the other way round; the events of
    each relation, being new, reverse Type Total Order too."""
    log = make_log(
        {"p": sub("T1.a = T2.a and T3", "FR", "I"), "q": sub("T1.a = T2.a", "FR", "I")},
        pub(1, "x1", "T1", 1, publisher="s1"),
        pub(2, "y1", "T2", 1, publisher="s2"),
        pub(3, "x2", "T1", 2, publisher="s3"),
        pub(4, "y2", "T2", 2, publisher="s4"),
        pub(5, "z1", "T3"),
        dlv(6, "p", "x1", "y1", "z1"),
        dlv(7, "q", "x2", "y2"),
        pub(8, "z2", "T3"),
        dlv(9, "p", "x2", "y2", "z2"),
        dlv(10, "q", "x1", "y1"),
    )
    report = verdict(log, [Property.TYPE_TOTAL_ORDER, Property.CONJUNCTION_TOTAL_ORDER])
    v = evidence(report, Property.CONJUNCTION_TOTAL_ORDER)
    assert (v.events, v.processes, v.deliveries) == (("x1", "y1", "x2", "y2"), ("p", "q"), (6, 9, 7, 10))
    assert v.explanation.startswith("on T1, T2: ")
    t = evidence(report, Property.TYPE_TOTAL_ORDER)
    assert (t.events, t.processes) == (("x1", "x2"), ("p", "q"))


def test_conjunction_total_order_violated_alone() -> None:
    """Sliding windows over `T1[1]`: both processes first deliver x1..x4 in one order (Type Total
    Order holds) but deliver the later relations [x2, x3] and [x4, x1] in opposite orders."""
    log = make_log(
        {"p": sub("T1[1] and T3", "FR", "FP"), "q": sub("T1[1]", "FR", "FP")},
        pub(1, "x1", "T1"),
        pub(2, "x2", "T1"),
        pub(3, "x3", "T1"),
        pub(4, "x4", "T1"),
        pub(5, "z1", "T3"),
        pub(6, "z2", "T3"),
        pub(7, "z3", "T3"),
        pub(8, "z4", "T3"),
        dlv(9, "p", "x1", "x2", "z1"),
        dlv(10, "q", "x1", "x2"),
        dlv(11, "p", "x3", "x4", "z2"),
        dlv(12, "q", "x3", "x4"),
        dlv(13, "p", "x2", "x3", "z3"),
        dlv(14, "q", "x4", "x1"),
        dlv(15, "p", "x4", "x1", "z4"),
        dlv(16, "q", "x2", "x3"),
    )
    report = verdict(log, [Property.NO_DUPLICATION, Property.CONJUNCTION_TOTAL_ORDER])
    v = evidence(report, Property.CONJUNCTION_TOTAL_ORDER)
    assert (v.events, v.processes, v.deliveries) == (("x2", "x3", "x4", "x1"), ("p", "q"), (13, 15, 14, 16))


def test_conjunction_total_order_compares_only_equal_options() -> None:
    """Same deliveries as the alone case, q with another disposal: not compared."""
    log = make_log(
        {"p": sub("T1[1]", "FR", "FP"), "q": sub("T1[1]", "FR", "PI")},
        pub(1, "x1", "T1"),
        pub(2, "x2", "T1"),
        pub(3, "x3", "T1"),
        pub(4, "x4", "T1"),
        dlv(5, "p", "x1", "x2"),
        dlv(6, "q", "x1", "x2"),
        dlv(7, "p", "x3", "x4"),
        dlv(8, "q", "x3", "x4"),
        dlv(9, "p", "x2", "x3"),
        dlv(10, "q", "x4", "x1"),
        dlv(11, "p", "x4", "x1"),
        dlv(12, "q", "x2", "x3"),
    )
    verdict(log, [Property.NO_DUPLICATION])


# --- Disjunction Total Order -------------------------------------------------------------------


def disjunction_log(q_order: tuple[int, int]) -> RunLog:
    """p and q share the conjunctions `T1.a > 0` and `T2.a > 0` (q writes them the other way
    round); p delivers [x] then [y], q in ``q_order`` (times 5 and 6)."""
    q_conj = {"x": 1, "y": 0}
    q_time = dict(zip(("x", "y"), q_order))
    q_records = sorted((q_time[e], e) for e in ("x", "y"))
    return make_log(
        {"p": sub("T1.a > 0 or T2.a > 0"), "q": sub("T2.a > 0 or T1.a > 0")},
        pub(1, "x", "T1"),
        pub(2, "y", "T2"),
        dlv(3, "p", "x", conj=0),
        dlv(4, "p", "y", conj=1),
        *(dlv(t, "q", e, conj=q_conj[e]) for t, e in q_records),
    )


def test_disjunction_total_order_holds() -> None:
    verdict(disjunction_log((5, 6)), [])


def test_disjunction_total_order_violated() -> None:
    report = verdict(disjunction_log((6, 5)), [Property.DISJUNCTION_TOTAL_ORDER])
    v = evidence(report, Property.DISJUNCTION_TOTAL_ORDER)
    assert (v.events, v.processes, v.deliveries) == (("x", "y"), ("p", "q"), (3, 4, 6, 5))


# --- Type FIFO Order ---------------------------------------------------------------------------

FIFO = """\
{"record": "header", "format": "faidecs.runs.runlog/1", "types": "type T1(a: int)\\n"}
{"record": "process", "process": "p", "subscription": "subscription P: T1"}
{"record": "publish", "time": 1, "event": {"id": "x1", "type": "T1", "attrs": {"a": 1}, "publisher": "%s", "seq": 0}}
{"record": "publish", "time": 2, "event": {"id": "x2", "type": "T1", "attrs": {"a": 2}, "publisher": "%s", "seq": 1}}
{"record": "deliver", "time": 3, "process": "p", "conjunction": 0, "relation": ["x2"]}
{"record": "deliver", "time": 4, "process": "p", "conjunction": 0, "relation": ["x1"]}
"""


def test_type_fifo_order_holds_across_publishers() -> None:
    """FIFO orders the events of one publisher only."""
    verdict(RunLog.read((FIFO % ("s1", "s2")).splitlines()), [])


def test_type_fifo_order_violated() -> None:
    report = verdict(
        RunLog.read((FIFO % ("s", "s")).splitlines()), [Property.TYPE_FIFO_ORDER, Property.TYPE_CAUSAL_ORDER]
    )
    for name in (Property.TYPE_FIFO_ORDER, Property.TYPE_CAUSAL_ORDER):
        v = evidence(report, name)
        assert (v.events, v.processes, v.deliveries) == (("x1", "x2"), ("p",), (3, 4))


def test_type_fifo_order_uses_seq_not_publication_time() -> None:
    """The publisher's ``seq`` orders its events: here x2 carries the lower one."""
    log = make_log(
        {"p": sub("T1")},
        pub(1, "x1", "T1", seq=5, publisher="s"),
        pub(2, "x2", "T1", seq=4, publisher="s"),
        dlv(3, "p", "x2"),
        dlv(4, "p", "x1"),
    )
    verdict(log, [])


# --- Type Local Order --------------------------------------------------------------------------


def local_log(p_order: tuple[str, str]) -> RunLog:
    """r delivers x1, then publishes x2 of the same type (a reactive publisher); p delivers both
    in ``p_order``. r's subscription admits only x1, so r never delivers x2 itself."""
    return make_log(
        {"r": sub("T1.a = 1"), "p": sub("T1", "FR", "I")},
        pub(1, "x1", "T1", 1),
        dlv(2, "r", "x1"),
        pub(3, "x2", "T1", 2, publisher="r", seq=0),
        dlv(4, "p", p_order[0]),
        dlv(5, "p", p_order[1]),
    )


def test_type_local_order_holds() -> None:
    verdict(local_log(("x1", "x2")), [])


def test_type_local_order_violated_by_a_reactive_publisher() -> None:
    report = verdict(local_log(("x2", "x1")), [Property.TYPE_LOCAL_ORDER, Property.TYPE_CAUSAL_ORDER])
    for name in (Property.TYPE_LOCAL_ORDER, Property.TYPE_CAUSAL_ORDER):
        v = evidence(report, name)
        assert (v.events, v.processes, v.deliveries) == (("x1", "x2"), ("r", "p"), (2, 4, 5))


def test_type_local_order_ignores_other_types() -> None:
    """A reaction of another type is not ordered after what caused it."""
    log = make_log(
        {"r": sub("T1"), "p": sub("T1 or T2", "FR", "I")},
        pub(1, "x1", "T1", 1),
        dlv(2, "r", "x1"),
        pub(3, "y", "T2", publisher="r", seq=0),
        dlv(4, "p", "y", conj=1),
        dlv(5, "p", "x1", conj=0),
    )
    verdict(log, [])


# --- Type Causal Order -------------------------------------------------------------------------


def test_type_causal_order_reports_fifo_first() -> None:
    """When both parts fail, Type Causal Order's evidence is the FIFO one."""
    log = make_log(
        {"r": sub("T1.a = 1"), "p": sub("T1", "FR", "I")},
        pub(1, "x1", "T1", 1),
        pub(2, "x0", "T1", 3),
        dlv(3, "r", "x1"),
        pub(4, "x2", "T1", 2, publisher="r", seq=0),
        dlv(5, "p", "x2"),
        dlv(6, "p", "x0"),
        dlv(7, "p", "x1"),
    )
    report = verdict(log, [Property.TYPE_FIFO_ORDER, Property.TYPE_LOCAL_ORDER, Property.TYPE_CAUSAL_ORDER])
    assert evidence(report, Property.TYPE_CAUSAL_ORDER) == evidence(report, Property.TYPE_FIFO_ORDER)
    assert evidence(report, Property.TYPE_LOCAL_ORDER).events == ("x1", "x2")


# --- the papers' counterexamples through the engine --------------------------------------------

THEOREM_6_EVENTS = [
    ev("v", "T1", 10),
    ev("w", "T3", 5),
    ev("v'", "T1", 6),
    ev("w'", "T3", 3),
    ev("u", "T2", 8),
    ev("u'", "T2", 12),
]


def theorem_6(disposal: str) -> RunLog:
    """ToIT 2013, Theorem 6: `T1.a < T2.a` and `T1.a > T3.a`; T1(v), T3(w < v), T1(v'),
    T3(w' < v'), T2(u: v' < u < v), T2(u' > v)."""
    processes = {"p": sub("T1.a < T2.a", "FR", disposal), "q": sub("T1.a > T3.a", "FR", disposal)}
    return run_processes(TYPES, processes, THEOREM_6_EVENTS)


def test_theorem_6_fr_i_violates_type_total_and_fifo_order() -> None:
    report = verdict(theorem_6("I"), [Property.TYPE_TOTAL_ORDER, Property.TYPE_FIFO_ORDER, Property.TYPE_CAUSAL_ORDER])
    total = evidence(report, Property.TYPE_TOTAL_ORDER)
    assert (total.events, total.processes) == (("v'", "v"), ("p", "q"))
    fifo = evidence(report, Property.TYPE_FIFO_ORDER)
    assert (fifo.events, fifo.processes) == (("v", "v'"), ("p",))


def test_theorem_6_events_under_fr_pi_violate_nothing() -> None:
    """PI disposes v with v' in p: the order properties hold (FR+PI keeps everything)."""
    verdict(theorem_6("PI"), [])


def test_theorem_8_fr_ip_covering_agreement() -> None:
    """ToIT 2013, Theorems 7 and 8: `T1[1]` and `T1[1] and T3` under FR+IP. The wide process's
    first match disposes x3 (after its first matched event), which the narrow one still holds; the
    two then pair different T1 events, and the wide one delivers [x4, x5], which the narrow never
    delivers (it delivered [x3, x4])."""
    processes = {"n": sub("T1[1]", "FR", "IP"), "w": sub("T1[1] and T3", "FR", "IP")}
    events = [ev("x1", "T1", 0), ev("x2", "T1", 0), ev("x3", "T1", 0), ev("z1", "T3", 0)]
    events += [ev("x4", "T1", 0), ev("x5", "T1", 0), ev("z2", "T3", 0)]
    log = run_processes(TYPES, processes, events)
    delivered = [(d.process, d.relation) for d in log.delivered]
    assert delivered == [
        ("n", ("x1", "x2")),
        ("w", ("x1", "x2", "z1")),
        ("n", ("x3", "x4")),
        ("w", ("x4", "x5", "z2")),
    ]
    report = verdict(log, [Property.EVENT_VALIDITY, Property.COVERING_AGREEMENT])
    cover = evidence(report, Property.COVERING_AGREEMENT)
    assert (cover.events, cover.processes) == (("x4", "x5", "z2"), ("w", "n"))
    validity = evidence(report, Property.EVENT_VALIDITY)
    assert validity.events[0] == "x3" and validity.processes == ("w",)
    assert "it was disposed" in validity.explanation


PI_COVERING_EVENTS = [ev("x1", "T1", 1), ev("x2", "T1", 2), ev("y2", "T2", 2), ev("y1", "T2", 1), ev("z", "T3", 1)]


def test_fr_pi_covering_counterexample() -> None:
    """`T1.a = T2.a` vs `T1.a = T2.a and T3` under FR+PI on T1(1), T1(2), T2(2), T2(1), T3(1): the
    narrow process delivers [x2, y2] and disposes x1; the wide one waits for T3 and delivers
    [x1, y1, z]."""
    processes = {"n": sub("T1.a = T2.a"), "w": sub("T1.a = T2.a and T3")}
    log = run_processes(TYPES, processes, PI_COVERING_EVENTS)
    assert [(d.process, d.relation) for d in log.delivered] == [("n", ("x2", "y2")), ("w", ("x1", "y1", "z"))]
    report = verdict(log, [Property.COVERING_AGREEMENT])
    v = evidence(report, Property.COVERING_AGREEMENT)
    assert (v.events, v.processes) == (("x1", "y1", "z"), ("w", "n"))


def test_covering_staged_removes_the_fr_pi_violation() -> None:
    processes = {
        "n": sub("T1.a = T2.a"),
        "w": "subscription S (matching FR, disposal PI, covering staged): T1.a = T2.a and T3",
    }
    log = run_processes(TYPES, processes, PI_COVERING_EVENTS)
    assert [(d.process, d.relation) for d in log.delivered] == [("n", ("x2", "y2")), ("w", ("x2", "y2", "z"))]
    verdict(log, [])


def test_reactive_publisher_through_the_engine_keeps_type_local_order() -> None:
    """One total order for all processes: a reaction is published after what caused it, so every
    process that delivers both delivers the cause first."""
    processes = {"r": sub("T1.a = 1"), "p": sub("T1", "FR", "I")}

    def react(process: str, delivery: Delivery) -> list[dict[str, Any]]:
        return [ev("x2", "T1", 2)] if process == "r" else []

    log = run_processes(TYPES, processes, [ev("x1", "T1", 1)], react=react)
    assert [(p.id, p.publisher) for p in log.published] == [("x1", "publisher"), ("x2", "r")]
    verdict(log, [])
