"""The notification properties of the ordering layers on hand-built run logs: each holds on a log
where it should and is violated, with its evidence, where it should not."""

from __future__ import annotations

from test_checker import TYPES, Record, dlv, final, make_log, pub, sub, verdict

from faidecs.properties import Property, check
from faidecs.properties.notification_fifo import fifo_violations_by_pair
from faidecs.properties.view import RunView
from faidecs.runs.runlog import RunLog


def ntf(time: int, process: str, event_id: str) -> Record:
    return {"record": "notify", "time": time, "process": process, "event": event_id}


P = {"p": sub("T1 or T2"), "q": sub("T1 or T2")}


def test_same_order_everywhere_holds() -> None:
    log = make_log(
        P, pub(1, "x", "T1"), pub(2, "y", "T2"), ntf(3, "p", "x"), ntf(4, "q", "x"), ntf(5, "p", "y"), ntf(6, "q", "y")
    )
    assert check(log, [Property.TOTAL_NOTIFICATION_ORDER, Property.NOTIFICATION_INTEGRITY]).violated() == []


def test_opposite_orders_violate_total_notification_order() -> None:
    log = make_log(
        P, pub(1, "x", "T1"), pub(2, "y", "T2"), ntf(3, "p", "x"), ntf(4, "q", "y"), ntf(5, "p", "y"), ntf(6, "q", "x")
    )
    found = check(log, [Property.TOTAL_NOTIFICATION_ORDER]).results[Property.TOTAL_NOTIFICATION_ORDER]
    assert len(found) == 1
    assert set(found[0].events) == {"x", "y"} and found[0].processes == ("p", "q")
    assert "before" in found[0].explanation


def test_pairwise_not_global_order_is_allowed() -> None:
    # The 3-cycle of seed 000's A2 remark: no two processes share a pair of events.
    types = TYPES
    procs = {"a": sub("T1 or T2"), "b": sub("T2 or T3"), "c": sub("T1 or T3")}
    log = make_log(
        procs,
        pub(1, "x", "T1"),
        pub(2, "y", "T2"),
        pub(3, "z", "T3"),
        ntf(4, "a", "x"),
        ntf(5, "a", "y"),
        ntf(6, "b", "y"),
        ntf(7, "b", "z"),
        ntf(8, "c", "z"),
        ntf(9, "c", "x"),
        types=types,
    )
    assert check(log, [Property.TOTAL_NOTIFICATION_ORDER]).violated() == []


def test_integrity_catches_duplicates_foreign_types_and_early_notifications() -> None:
    twice = make_log(P, pub(1, "x", "T1"), ntf(2, "p", "x"), ntf(3, "p", "x"))
    assert "twice" in check(twice).results[Property.NOTIFICATION_INTEGRITY][0].explanation
    foreign = make_log({"p": sub("T1")}, pub(1, "x", "T2"), ntf(2, "p", "x"))
    assert "does not subscribe" in check(foreign).results[Property.NOTIFICATION_INTEGRITY][0].explanation
    early = make_log(P, ntf(1, "p", "x"), pub(2, "x", "T1"))
    assert "before it was published" in check(early).results[Property.NOTIFICATION_INTEGRITY][0].explanation


def test_validity_needs_every_event_of_a_static_process_in_a_finished_run() -> None:
    records = [pub(1, "x", "T1"), pub(2, "y", "T2"), ntf(3, "p", "x"), ntf(4, "p", "y"), ntf(5, "q", "x")]
    unfinished = make_log(P, *records)
    assert check(unfinished, [Property.NOTIFICATION_VALIDITY]).violated() == []  # the run may go on
    finished = make_log(P, *records, final("p", {"T1": []}, {"T2": []}), final("q", {"T1": []}, {"T2": []}))
    found = check(finished, [Property.NOTIFICATION_VALIDITY]).results[Property.NOTIFICATION_VALIDITY]
    assert len(found) == 1 and found[0].events == ("y",) and found[0].processes == ("q",)


def test_joiners_and_leavers_are_not_owed_everything() -> None:
    text = make_log(P, pub(1, "x", "T1"), ntf(2, "p", "x"), final("p", {"T1": []}, {"T2": []})).dumps()
    lines = text.splitlines()
    lines[2] = lines[2].replace('"subscription"', '"joined": {"time": 1, "peer": null}, "subscription"')
    log = RunLog.read(lines)
    assert log.joined == {"q": (1, None)}
    assert check(log, [Property.NOTIFICATION_VALIDITY]).violated() == []


def test_notify_records_round_trip_and_verify_unchanged_for_logs_without_them() -> None:
    log = make_log(P, pub(1, "x", "T1"), ntf(2, "p", "x"), dlv(3, "p", "x"))
    again = RunLog.read(log.dumps().splitlines())
    assert [(n.time, n.process, n.event) for n in again.notified] == [(2, "p", "x")]
    plain = make_log({"p": sub("T1")}, pub(1, "x", "T1"), dlv(2, "p", "x"))
    verdict(plain, [])


# --- Notification FIFO Order (the latch layer, seed 002) -------------------------------------------


def test_notification_fifo_order_counts_every_out_of_order_notification() -> None:
    pubs = [
        pub(t, f"{who}{k}", "T1", publisher=who, seq=k)
        for t, (who, k) in enumerate([("p", 0), ("p", 1), ("p", 2), ("q", 0), ("q", 1)], 1)
    ]
    order = [("r", "p2"), ("r", "p0"), ("r", "p1"), ("r", "q0"), ("r", "q1"), ("s", "q1"), ("s", "q0"), ("s", "p0")]
    log = make_log({"r": sub("T1"), "s": sub("T1")}, *pubs, *(ntf(10 + i, who, e) for i, (who, e) in enumerate(order)))
    found = check(log, [Property.NOTIFICATION_FIFO_ORDER]).results[Property.NOTIFICATION_FIFO_ORDER]
    assert [v.events for v in found] == [("p0", "p2"), ("p1", "p2"), ("q0", "q1")]
    assert "r was handed p0 (seq 0 of p) after p2 (seq 2)" in found[0].explanation
    assert fifo_violations_by_pair(RunView(log)) == {("r", "p"): 2, ("s", "q"): 1}
    in_order = make_log(
        {"r": sub("T1")}, *pubs, *(ntf(10 + i, "r", e) for i, e in enumerate(["p0", "q0", "p1", "p2", "q1"]))
    )
    assert check(in_order, [Property.NOTIFICATION_FIFO_ORDER]).violated() == []
