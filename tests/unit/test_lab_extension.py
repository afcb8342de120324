"""The lab proves an overtaken event lost only by extending its run (faidecs.lab.extension):
the published FR+I counterexample is not a loss, Theorem 1 (MR+I) and Theorem 5 (FRC+I) are;
`faidecs verify`, which cannot extend a recorded run, calls such an event unproven (issue 24)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faidecs.cli.main import main
from faidecs.lab import Combination, run
from faidecs.lab.extension import prove_event_validity
from faidecs.lab.report import counterexample
from faidecs.lab.scenario import LabScenario
from faidecs.lab.search import Finding, _violates
from faidecs.properties import Property, check

EV = Property.EVENT_VALIDITY


def _relations(s: LabScenario, combination: str) -> list[tuple[str, ...]]:
    return [d.relation for d in run(s, Combination.parse(combination)).delivered]


def test_published_fr_i_counterexample_is_unproven_and_its_extension_delivers_the_event() -> None:
    """p2: `T3[2] and T3[1].a >= 1`, a = 0, 0, 1, 0: e4 takes T3[2] and e2 stays queued. The
    lab finds no extension that keeps e2 from delivery: two more events (a = 1, 0) deliver it."""
    s = LabScenario((("p2", (("T3[2]", "T3[1].a >= 1"),)),), (("T3", 0), ("T3", 0), ("T3", 1), ("T3", 0)))
    fr_i = Combination.parse("FR+I")
    report = check(run(s, fr_i), [EV])
    assert report.violated() == [] and [v.events for v in report.unproven[EV]] == [("e2", "e3", "e4")]
    assert prove_event_validity(s, fr_i) is None
    assert not _violates(s, fr_i, EV, "")
    longer = LabScenario(s.processes, s.events + (("T3", 1), ("T3", 0)))
    assert _relations(longer, "FR+I") == [("e1", "e3", "e4"), ("e2", "e5", "e6")]


def test_mr_i_overtaken_event_is_proven_lost_by_a_repeating_extension() -> None:
    """Theorem 1: under MR+I each round [T1(a=0), T3(a=0)] pairs the newest T1 with the T3, and
    the queues come back to [e1]: e1 is never delivered although a partner comes every round."""
    s = LabScenario((("p4", (("T1[0]", "T3[0].a <= 1"),)),), (("T1", 0), ("T1", 0), ("T3", 0)))
    mr_i = Combination.parse("MR+I")
    assert not check(run(s, mr_i), [EV]).results[EV]  # on the run alone: unproven
    proof = prove_event_validity(s, mr_i)
    assert proof is not None
    assert (proof.kind, proof.event, proof.round, proof.rounds) == ("cycle", "e1", (("T1", 0), ("T3", 0)), 1)
    assert proof.extended.events == s.events + (("T1", 0), ("T3", 0))
    assert _relations(proof.extended, "MR+I") == [("e2", "e3"), ("e4", "e5")]
    assert run(proof.extended, mr_i).final["p4"] == [{"T1": ["e1"], "T3": []}]
    assert "e1 is never delivered (proven)" in proof.explanation()
    shown = counterexample(s, mr_i, EV, "", proof)
    assert "publish e5: T3(a=0)" in shown and "The lab's proof: extended by 1 round(s)" in shown
    assert Finding(EV, s, 1, proof=proof).shown() == proof.extended


def test_frc_i_overtaken_event_is_proven_lost_with_a_blocker() -> None:
    """Theorem 5: `T1[1].a != 0` under FRC+I. The partner copy alone (a=1) would pair with e1;
    a blocker a=0 before it makes the contiguous pair [blocker, partner] match instead, for ever."""
    s = LabScenario((("p2", (("T1[1].a != 0",),)),), (("T1", 0), ("T1", 0), ("T1", 1)))
    frc_i = Combination.parse("FRC+I")
    assert _relations(LabScenario(s.processes, s.events + (("T1", 1),)), "FRC+I")[-1] == ("e1", "e4")
    proof = prove_event_validity(s, frc_i)
    assert proof is not None and (proof.kind, proof.round) == ("cycle", (("T1", 0), ("T1", 1)))
    assert _violates(s, frc_i, EV, "")


def test_fp_and_pi_dispose_an_overtaken_event_at_once() -> None:
    """Under PI (and FP, where the younger event is the first matched) the overtaken event is
    disposed by the very delivery that skips it: the checker proves that on the run itself."""
    s = LabScenario((("p", (("T1[0]", "T3[0].a <= 1"),)),), (("T1", 0), ("T1", 0), ("T3", 0)))
    for name in ("MR+PI", "MR+FP"):
        report = check(run(s, Combination.parse(name)), [EV])
        (v,) = report.results[EV]
        assert v.events == ("e1", "e3") and "it was disposed" in v.explanation


def test_verify_calls_an_overtaken_event_unproven_not_violated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The former FR+I counterexample (issue 24): e2 overtaken by e4 and still queued. FR+I
    promises Event Validity; `faidecs verify` cannot extend the run, so it says unproven and
    exits 0, with the finding shown; `--json` has holds null and the finding under unproven."""
    program = tmp_path / "p.fdc"
    program.write_text("type T3(a: int)\nsubscription p2 (matching FR, disposal I): T3[2] and T3[1].a >= 1\n")
    events = tmp_path / "e.jsonl"
    events.write_text(
        "".join(
            json.dumps({"id": f"e{k}", "type": "T3", "attrs": {"a": a}}) + "\n" for k, a in enumerate((0, 0, 1, 0), 1)
        )
    )
    log = tmp_path / "run.jsonl"
    assert main(["run", "--program", str(program), "--events", str(events), "--log", str(log)]) == 0
    capsys.readouterr()
    assert main(["verify", str(log)]) == 0
    out = capsys.readouterr().out
    assert "Event Validity            unproven (not a violation)" in out
    assert "e4, published after it, took T3[2]" in out and "e2 is still queued" in out
    assert main(["verify", "--all", str(log), "--json"]) == 0
    entry = json.loads(capsys.readouterr().out)["Event Validity"]
    assert entry["holds"] is None and entry["violations"] == []
    assert entry["unproven"][0]["events"] == ["e2", "e3", "e4"]
