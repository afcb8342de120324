"""The checker on partitioned subscriptions: each partition is judged as the unpartitioned
subscription it is, fed only the events of its value (docs/semantics.md, "Partitioned
subscriptions"); nothing is asked of a partition about another's events."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from faidecs.cli.main import main
from faidecs.lab import Combination, LabScenario, run
from faidecs.lab.generator import scenario
from faidecs.lab.scenario import PARTITIONED
from faidecs.properties import Property, check
from faidecs.runs.processes import run_processes
from faidecs.runs.runlog import Delivered

TYPES = "type A(k: int)\ntype B(k: int)\n"


def ab(event_id: str, k: int) -> dict[str, object]:
    return {"id": event_id, "type": event_id[0].upper(), "attrs": {"k": k}}


def test_issue_20_events_of_two_partitions_make_no_relation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`faidecs run --log` of `S (partition by k): A and B` on a1 (k=1), b2 (k=2): nothing is
    delivered, which is right, and `faidecs verify` says every property holds."""
    program, events, log = tmp_path / "p.fdc", tmp_path / "e.jsonl", tmp_path / "run.jsonl"
    program.write_text(TYPES + "subscription S (partition by k): A and B\n", encoding="utf-8")
    events.write_text("".join(json.dumps(ab(i, k)) + "\n" for i, k in [("a1", 1), ("b2", 2)]), encoding="utf-8")
    assert main(["run", "--program", str(program), "--events", str(events), "--log", str(log)]) == 0
    assert capsys.readouterr().out == ""
    assert main(["verify", str(log), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert all(result["holds"] is True for result in data.values())


def test_contiguity_and_predicates_are_per_partition() -> None:
    """FRC: a2 (k=2) between a1 and a3 (k=1) does not break their contiguity, since it is in
    another queue; and within one key `A.k != B.k` never holds, so nothing is owed."""
    sub = "subscription S (matching FRC, partition by k): A[0] and A[1] and B"
    log = run_processes(TYPES, {"p": sub}, [ab("a1", 1), ab("a2", 2), ab("a3", 1), ab("b1", 1)])
    assert [d.relation for d in log.delivered] == [("a1", "a3", "b1")]
    assert check(log).violated() == []
    never = "subscription S (matching FR, disposal I, partition by k): A and B and A.k != B.k"
    log = run_processes(TYPES, {"p": never}, [ab("a1", 1), ab("b2", 2), ab("b1", 1)])
    assert log.delivered == [] and check(log).violated() == []


def test_conjunction_validity_per_partition() -> None:
    """A relation of partition 1 delivered late does not excuse partition 2, whose events satisfy
    the conjunction but are never delivered: the hand-made deliveries say so."""
    sub = "subscription S (partition by k): A and B"
    log = run_processes(TYPES, {"p": sub}, [ab("a2", 2), ab("b2", 2), ab("a1", 1), ab("b1", 1)])
    assert [d.relation for d in log.delivered] == [("a2", "b2"), ("a1", "b1")]
    assert check(log).violated() == []
    log.delivered = log.delivered[1:]  # partition 2 never delivered [a2, b2]
    found = check(log, [Property.CONJUNCTION_VALIDITY]).results[Property.CONJUNCTION_VALIDITY]
    assert [v.events for v in found] == [("a2", "b2")]
    assert "p (partition k=2) received [a2, b2]" in found[0].explanation


def test_a_relation_that_mixes_partitions_is_not_admitted() -> None:
    log = run_processes(TYPES, {"p": "subscription S (partition by k): A and B"}, [ab("a1", 1), ab("b2", 2)])
    log.delivered.append(Delivered(9, "p", 0, ("a1", "b2")))  # no engine delivers this
    found = check(log, [Property.ADMISSION]).results[Property.ADMISSION]
    assert len(found) == 1 and "mixes partitions k=1, 2" in found[0].explanation


def test_unpartitioned_and_partitioned_processes_are_compared_within_a_partition() -> None:
    """p delivers every A at once; q (partitioned) pairs them with Bs of their key, out of the
    order published. Type Total Order compares them within a key only: it holds."""
    log = run_processes(
        TYPES,
        {"p": "subscription P: A", "q": "subscription Q (partition by k): A and B"},
        [ab("a1", 1), ab("a2", 2), ab("b2", 2), ab("b1", 1)],
    )
    assert [(d.process, d.relation) for d in log.delivered if d.process == "q"] == [
        ("q", ("a2", "b2")),
        ("q", ("a1", "b1")),
    ]
    assert check(log).violated() == []


def _per_key(s: LabScenario, key: int) -> LabScenario:
    keep = [k for k in range(len(s.events)) if s.key(k) == key]
    return LabScenario(s.processes, tuple(s.events[k] for k in keep), (), tuple(s.keys[k] for k in keep))


@pytest.mark.parametrize("combination", ["FR+PI", "MRC+I", "FRC+IP", "MR+FP"])
def test_partitioned_verdict_is_the_union_of_the_per_key_verdicts(combination: str) -> None:
    """The definition as a test: on generated runs (no reactions), the properties a partitioned
    run violates are exactly those that some key's events, run alone through the unpartitioned
    subscriptions, violate."""
    rng = random.Random(f"partitions:{combination}")
    c = Combination.parse(combination)
    for _ in range(40):
        s = scenario(rng, keyed=True)
        s = LabScenario(s.processes, s.events, (), s.keys)
        whole = set(check(run(s, c, PARTITIONED)).violated())
        parts: set[Property] = set()
        for key in sorted(set(s.keys)):
            parts |= set(check(run(_per_key(s, key), c)).violated())
        assert whole == parts, s.to_json()
