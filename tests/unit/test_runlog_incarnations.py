"""Run logs across restarts: a restarted process writes its own file beside its predecessor's
(faidecs/net/processlog.py), deliveries carry ids, and the merge (merge_runlogs, merged_runlog)
takes the incarnations of a process as one: a repeated delivery id or (publisher, seq) counts
once, the same one with other content is refused naming both logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from faidecs.net.processlog import ProcessLog, incarnation_of
from faidecs.overlay.runtime.launcher import merged_runlog
from faidecs.runs.runlog import Delivered, Published, RunLog, RunLogError, merge_runlogs

TYPES = "type A(x: int)\ntype B(x: int)\n"
SUB = "subscription S: A and B"


def event(event_id: str, type_name: str, seq: int, publisher: str = "p1", x: int = 1) -> dict[str, object]:
    return {"id": event_id, "type": type_name, "attrs": {"x": x}, "publisher": publisher, "seq": seq}


def read(path: Path) -> RunLog:
    return RunLog.read(path.read_text().splitlines(), str(path))


def test_a_restarted_process_writes_its_own_file(tmp_path: Path) -> None:
    first = ProcessLog(tmp_path / "s1.x.runlog", TYPES, "s1.x", SUB)
    first.start()
    first.deliver(0, ("a1", "b1"), "s1.x/⊔[A,B]/3/0")
    first.close()
    second = ProcessLog(tmp_path / "s1.x.runlog", TYPES, "s1.x", SUB)
    assert (second.path.name, second.incarnation) == ("s1.x@1.runlog", 1)
    second.start()
    second.deliver(0, ("a2", "b2"))
    second.close()
    third = ProcessLog(tmp_path / "s1.x.runlog", TYPES, "s1.x", SUB)
    third.close()
    assert third.path.name == "s1.x@2.runlog"
    assert [incarnation_of(p) for p in sorted(tmp_path.iterdir())] == [("s1.x", 0), ("s1.x", 1), ("s1.x", 2)]
    assert read(tmp_path / "s1.x.runlog").delivered == [
        Delivered(read(tmp_path / "s1.x.runlog").delivered[0].time, "s1.x", 0, ("a1", "b1"), "s1.x/⊔[A,B]/3/0")
    ]
    assert read(tmp_path / "s1.x@1.runlog").delivered[0].id is None  # no id: read as before


def log_of(published: list[dict[str, object]], delivered: list[Delivered], t0: int = 0) -> RunLog:
    log = RunLog(TYPES, {"s1": SUB})
    log.published = [Published(t0 + k, dict(e)) for k, e in enumerate(published, start=1)]
    log.delivered = delivered
    return log


def test_merge_keeps_a_repeated_delivery_and_publication_once() -> None:
    a, b = event("a1", "A", 0), event("b1", "B", 1)
    before = log_of([a, b], [Delivered(10, "s1", 0, ("a1", "b1"), "s1/x/1/0")])
    # The restarted publisher logs b1 again; the restarted subscriber delivers it again.
    after = log_of([b], [Delivered(20, "s1", 0, ("a1", "b1"), "s1/x/1/0")], t0=15)
    merged = merge_runlogs([("s1.runlog", before), ("s1@1.runlog", after)])
    assert [p.id for p in merged.published] == ["a1", "b1"]
    assert [(d.relation, d.id) for d in merged.delivered] == [(("a1", "b1"), "s1/x/1/0")]
    # Deliveries without ids (older logs, other layers) are kept as they are.
    plain = merge_runlogs([("x", log_of([a, b], [Delivered(10, "s1", 0, ("a1", "b1"))] * 2))])
    assert len(plain.delivered) == 2


def test_merge_refuses_the_same_id_with_another_relation() -> None:
    a, b, b2 = event("a1", "A", 0), event("b1", "B", 1), event("b2", "B", 2)
    before = log_of([a, b, b2], [Delivered(10, "s1", 0, ("a1", "b1"), "s1/x/1/0")])
    after = log_of([], [Delivered(20, "s1", 0, ("a1", "b2"), "s1/x/1/0")])
    with pytest.raises(RunLogError, match=r"s1@1.runlog: delivery s1/x/1/0 of s1 .*'b2'.* but s1.runlog has it"):
        merge_runlogs([("s1.runlog", before), ("s1@1.runlog", after)])


def test_merge_refuses_the_same_publication_with_other_content() -> None:
    one = log_of([event("a1", "A", 0)], [])
    other = log_of([event("a1", "A", 0, x=2)], [], t0=5)
    with pytest.raises(RunLogError, match=r"p1@1.runlog: publication 0 of p1 is .* but p1.runlog has it as"):
        merge_runlogs([("p1.runlog", one), ("p1@1.runlog", other)])


def test_merged_runlog_takes_the_incarnations_as_one_process(tmp_path: Path) -> None:
    """A subscriber killed (no final record, its last line cut short) and restarted: the merged
    log has one process that did not leave, each relation once."""
    logs = tmp_path / "logs"
    logs.mkdir()
    publisher = ProcessLog(logs / "p1.runlog", TYPES, "p1", None)
    for e in [event("a1", "A", 0), event("b1", "B", 1), event("b2", "B", 2)]:
        publisher.publish(e)
    publisher.close()
    first = ProcessLog(logs / "s1.runlog", TYPES, "s1", SUB)
    first.start()
    first.deliver(0, ("a1", "b1"), "s1/⊔[A,B]/2/0")
    first.close()
    with (logs / "s1.runlog").open("ab") as f:
        f.write(b'{"record": "deliver", "ti')  # killed mid-write
    second = ProcessLog(logs / "s1.runlog", TYPES, "s1", SUB)
    second.start()
    second.deliver(0, ("a1", "b1"), "s1/⊔[A,B]/2/0")  # since its checkpoint: again
    second.deliver(0, ("a1", "b2"), "s1/⊔[A,B]/3/0")
    second.final([{"A": ["a1"], "B": []}])
    second.close()
    merged = merged_runlog(tmp_path)
    assert merged.left == {} and "s1" in merged.final
    assert [d.relation for d in merged.delivered] == [("a1", "b1"), ("a1", "b2")]
    again = RunLog.read(merged.dumps().splitlines())  # the merged log is a valid run log, ids and all
    assert [d.id for d in again.delivered] == ["s1/⊔[A,B]/2/0", "s1/⊔[A,B]/3/0"]


def test_merged_runlog_judges_a_killed_last_incarnation_as_left(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    publisher = ProcessLog(logs / "p1.runlog", TYPES, "p1", None)
    publisher.publish(event("a1", "A", 0))
    publisher.publish(event("b1", "B", 1))
    publisher.close()
    for _ in range(2):
        s = ProcessLog(logs / "s1.runlog", TYPES, "s1", SUB)
        s.start()
        s.deliver(0, ("a1", "b1"), "s1/⊔[A,B]/2/0")
        s.close()  # killed: no final record
    merged = merged_runlog(tmp_path)
    assert list(merged.left) == ["s1"] and len(merged.delivered) == 1
