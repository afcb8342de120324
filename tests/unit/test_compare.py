"""``faidecs compare`` and ``faidecs.compare``: each variant's deliveries equal a separate
``faidecs run`` of its program, its verdicts equal ``faidecs verify --all`` on its run log, and a
difference names the first relations where two options part ways (checked against an
independent replay of both)."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path
from typing import Any

import pytest

import faidecs
from faidecs import Bounds, Engine
from faidecs.cli.main import main
from faidecs.comparing import Comparison, OptionsError, compare
from faidecs.comparing.variants import parse_options, variants
from faidecs.comparing.verdicts import mark
from faidecs.matching import events as events_module
from faidecs.matching.guarantees import COMBINATIONS, EVERY_COMBINATION

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STOCK = EXAMPLES / "stock.fdc"


def stock_stream(n: int, seed: int) -> list[dict[str, Any]]:
    """Quotes of three symbols on a random walk, with an earnings report now and then."""
    rng = random.Random(seed)
    level = {s: 10.0 for s in ("A", "B", "C")}
    out = []
    for k in range(n):
        symbol = rng.choice("ABC")
        if rng.random() < 0.08:
            attrs = {"symbol": symbol, "eps": round(rng.uniform(0.5, 2.0), 2), "time": 10 * k}
            out.append({"id": f"e{k}", "type": "EarningsReport", "attrs": attrs})
        else:
            level[symbol] = round(level[symbol] * rng.uniform(0.94, 1.07), 2)
            attrs = {"symbol": symbol, "value": level[symbol], "time": 10 * k}
            out.append({"id": f"q{k}", "type": "StockQuote", "attrs": attrs})
    return out


def write_jsonl(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def every_option(tmp_path_factory: pytest.TempPathFactory) -> tuple[Comparison, Path, Path]:
    """All 21 combinations on a generated stream, in two forked workers, files and logs written."""
    folder = tmp_path_factory.mktemp("compare")
    events = write_jsonl(folder / "events.jsonl", stock_stream(500, seed=3))
    out = folder / "out"
    result = compare(STOCK, events, options="every", workers=2, out=out, logs=True)
    return result, events, out


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_every_variant_delivers_what_a_separate_faidecs_run_delivers(
    every_option: tuple[Comparison, Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    result, events, out = every_option
    assert [v.name for v in result.variants] == [c.name for c in EVERY_COMBINATION]
    assert result.workers == 2 and result.events == 500
    delivered_somewhere = 0
    for v in result.variants:
        assert v.skipped is None and v.stopped is None, v.name
        folder = out / v.slug
        log = tmp_path / f"{v.slug}.runlog.jsonl"
        code, printed, _ = run_cli(
            ["run", "--program", str(folder / "program.fdc"), "--events", str(events), "--log", str(log)], capsys
        )
        assert code == 0
        assert (folder / "deliveries.jsonl").read_text(encoding="utf-8") == printed, v.name
        # The log compare checks is the one faidecs run records, record for record.
        assert (folder / "runlog.jsonl").read_text(encoding="utf-8") == log.read_text(encoding="utf-8"), v.name
        counts = {s.name: s.relations for s in v.subscriptions}
        lines = [json.loads(line) for line in printed.splitlines()]
        assert counts == {name: sum(d["subscription"] == name for d in lines) for name in counts}
        delivered_somewhere += len(lines)
    assert delivered_somewhere > 0


def test_verdicts_equal_faidecs_verify_on_the_same_runs(
    every_option: tuple[Comparison, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    result, _, out = every_option
    seen = set()
    for v in result.variants:
        code, printed, _ = run_cli(["verify", "--all", "--json", str(out / v.slug / "runlog.jsonl")], capsys)
        verified = {name: found["holds"] for name, found in json.loads(printed).items()}
        mine = {x.property: {"holds": True, "violated": False}.get(x.run) for x in v.verdicts}
        assert mine == verified, v.name
        assert code == (1 if False in verified.values() else 0)
        seen.update(x.run for x in v.verdicts)
    assert {"holds", "violated"} <= seen  # the stream does break some property under some option


def test_the_options_part_ways_first_where_an_independent_replay_says(
    every_option: tuple[Comparison, Path, Path],
) -> None:
    result, events_path, _ = every_option
    events = [json.loads(line) for line in events_path.read_text(encoding="utf-8").splitlines()]

    def replay(variant: str) -> dict[str, list[tuple[int, list[str]]]]:
        engine = Engine.from_source(result.variant(variant).program, kernels="eager")
        out: dict[str, list[tuple[int, list[str]]]] = {s.name: [] for s in engine.subscriptions}
        for k, e in enumerate(events, start=1):
            for d in engine.publish(e):
                out[d.subscription].append((k, d.ids))
        return out

    differing = [d for d in result.differences if not d.identical]
    assert differing
    for d in differing[:6]:
        a, b = replay(d.a)[d.subscription], replay(d.b)[d.subscription]
        i = next(i for i in range(max(len(a), len(b))) if i >= len(a) or i >= len(b) or a[i] != b[i])
        first = min(x[i][0] for x in (a, b) if i < len(x))
        assert d.first_arrival == first and d.trigger is not None and d.trigger.id == events[first - 1]["id"]
        assert [[e.id for e in r.events] for r in d.a_relations] == [ids for k, ids in a[i:] if k == first]
        assert [[e.id for e in r.events] for r in d.b_relations] == [ids for k, ids in b[i:] if k == first]
        assert d.common + d.only_a == len(a) and d.common + d.only_b == len(b)


def test_a_difference_on_the_stock_example_names_the_first_diverging_relation() -> None:
    result = compare(STOCK, EXAMPLES / "stock.jsonl", options="FR+PI,MR+I", workers=1)
    d = next(x for x in result.differences if x.subscription == "RisingAfterEarnings" and x.a == "MR+I")
    assert d.b == "FR+PI"  # the subscription's own options
    assert not d.identical and (d.common, d.only_a, d.only_b) == (0, 0, 1)
    assert d.first_arrival == 7 and d.trigger is not None and d.trigger.id == "q5"
    assert d.a_relations == ()
    assert [[e.id for e in r.events] for r in d.b_relations] == [["er1", "q1", "q3", "q5"]]
    jump = next(x for x in result.differences if x.subscription == "Jump" and x.a == "FR+PI")
    assert jump.b == "MR+I"  # Jump is written MR+I
    assert jump.only_b == 3 and jump.only_a == 0


def test_events_are_validated_once_for_every_variant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = write_jsonl(tmp_path / "e.jsonl", stock_stream(200, seed=1))
    calls = []
    real = events_module.EventValidator.validate

    def counting(self: Any, obj: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(self, obj, **kw)

    monkeypatch.setattr(events_module.EventValidator, "validate", counting)
    result = compare(STOCK, events, options="FR+PI,MR+I,FRC+IP,MRC+FP", workers=1, verify=False)
    assert len(result.variants) == 4 and len(calls) == 200


def test_exact_peak_queue_and_never_used_events_equal_a_naive_count(tmp_path: Path) -> None:
    stream = stock_stream(300, seed=5)
    events = write_jsonl(tmp_path / "e.jsonl", stream)
    result = compare(STOCK, events, options="FR+I,MR+PI", workers=1, every=1, verify=False)
    for v in result.variants:
        engine = Engine.from_source(v.program, matcher="reference")
        peak = dict.fromkeys(("RisingAfterEarnings", "Jump"), 0)
        used: dict[str, set[str]] = {name: set() for name in peak}
        for e in stream:
            for d in engine.publish(e):
                used[d.subscription].update(d.ids)
            for name, conjunctions in engine.metrics()["subscriptions"].items():
                peak[name] = max(peak[name], sum(sum(c["queues"].values()) for c in conjunctions))
        for s in v.subscriptions:
            assert s.peak_queue == peak[s.name], (v.name, s.name)
            assert s.events_of_types == len(stream) if s.name == "RisingAfterEarnings" else True
            assert s.never_used == s.events_of_types - len(used[s.name])
        assert v.queues is not None and len(v.queues.arrivals) == 300
        assert v.latency is not None and 0 < v.latency.p50 <= v.latency.p99 <= v.latency.max


def test_options_that_do_not_apply_are_skipped_with_the_checkers_reason(tmp_path: Path) -> None:
    events = write_jsonl(tmp_path / "e.jsonl", stock_stream(50, seed=2))
    result = compare(STOCK, events, options="FR+PI,FR+NONE", covering="staged", workers=1)
    skipped = result.variant("FR+NONE staged")
    assert skipped.skipped is not None and "covering staged does not combine" in skipped.skipped
    assert result.variant("FR+PI staged").skipped is None
    assert all("FR+NONE staged" not in (d.a, d.b) for d in result.differences)


def test_a_bounded_queue_with_overflow_error_stops_its_variant_and_says_where(tmp_path: Path) -> None:
    events = write_jsonl(tmp_path / "e.jsonl", stock_stream(200, seed=4))
    result = compare(STOCK, events, options="MR+I", workers=1, bounds=Bounds(max_queue=3, overflow="error"))
    v = result.variant("MR+I")
    assert v.stopped is not None and v.stopped.startswith("stopped at event #") and 0 < v.events < 200


@pytest.mark.parametrize(
    ("text", "message"),
    [("FR+XX", "'FR+XX' is not a combination"), ("FR+PI,,MR+I", "empty item"), ("FR+PI,fr+pi", "named twice")],
)
def test_bad_option_lists_are_named(text: str, message: str) -> None:
    with pytest.raises(OptionsError, match=re.escape(message)):
        parse_options(text)


def test_option_lists() -> None:
    assert parse_options("all") == list(COMBINATIONS)
    assert parse_options("every") == list(EVERY_COMBINATION)
    assert [c.name if c else None for c in parse_options("MR+I, as-written")] == ["MR+I", None]
    both = variants(parse_options("FR+PI,as-written"), "both")
    assert [v.name for v in both] == ["FR+PI plain", "FR+PI staged", "as written plain", "as written staged"]
    assert [v.slug for v in both][1] == "FR+PI-staged"


def test_a_pair_naming_no_variant_is_refused(tmp_path: Path) -> None:
    events = write_jsonl(tmp_path / "e.jsonl", stock_stream(20, seed=2))
    with pytest.raises(OptionsError, match="'MR\\+PI' is not a variant here; they are: FR\\+PI, MR\\+I"):
        compare(STOCK, events, options="FR+PI,MR+I", pairs=[("FR+PI", "MR+PI")], workers=1)


@pytest.mark.parametrize(
    ("run", "lab", "expected"),
    [
        ("violated", "lost", "predicted"),
        ("violated", "kept", "CONTRADICTS THE LAB"),
        ("holds", "kept", "confirmed"),
        ("holds", "lost", "not shown"),
        ("unproven", "kept", ""),
        ("holds", None, ""),
    ],
)
def test_the_mark_says_what_the_run_and_the_lab_say_together(run: Any, lab: Any, expected: str) -> None:
    assert mark(run, lab) == expected


def test_the_public_api_returns_a_typed_result_that_serialises(tmp_path: Path) -> None:
    assert faidecs.compare is compare and faidecs.Comparison is Comparison
    stream = stock_stream(60, seed=9)
    result = faidecs.compare(STOCK.read_text(encoding="utf-8"), stream, options="as-written", workers=1)
    assert [v.name for v in result.variants] == ["as written"] and result.source == "<events>"
    assert all(d.identical for d in result.differences) or not result.differences
    assert json.loads(json.dumps(result.to_json()))["events"] == 60


def test_cli_stops_at_a_bad_line_and_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stream = [json.dumps(e) for e in stock_stream(5, seed=1)]
    stream[2] = '{"id": "x", "type": "StockQuote", "attrs": {"symbol": 1}}'
    events = tmp_path / "e.jsonl"
    events.write_text("\n".join(stream) + "\n", encoding="utf-8")
    code, out, err = run_cli(["compare", "--program", str(STOCK), "--events", str(events)], capsys)
    assert code == 1 and out == ""
    assert f"{events}:line 3" in err and "stopped at the first bad event" in err


def test_cli_skips_bad_lines_into_a_rejects_file_and_writes_every_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = [json.dumps(e) for e in stock_stream(40, seed=1)]
    stream[4] = "{not json"
    events = tmp_path / "e.jsonl"
    events.write_text("\n".join(stream) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["compare", "--program", str(STOCK), "--events", str(events), "--options", "FR+PI,MR+I"]
    code, printed, err = run_cli([*args, "--on-error", "skip", "--out", str(out), "--html", "--style", "plain"], capsys)
    assert code == 0
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["line"] for r in rejects] == [5] and rejects[0]["input"] == "{not json"
    assert "39 events" in printed and "Differences" in printed
    saved = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert saved["events"] == 39 and saved["rejected"] == 1
    assert [v["name"] for v in saved["variants"]] == ["FR+PI", "MR+I"]
    for name in ("compare.md", "compare.html", "throughput.png", "deliveries.png", "queues.png"):
        assert (out / name).is_file(), name
    assert (out / "MR+I" / "deliveries.jsonl").is_file() and not (out / "MR+I" / "runlog.jsonl").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--html"], "--html needs --out"),
        (["--logs"], "--logs needs --out"),
        (["--rejects", "r.jsonl"], "--rejects needs --on-error skip"),
        (["--overflow", "error"], "--overflow needs --max-queue"),
        (["--options", "XX"], "'XX' is not a combination"),
    ],
)
def test_cli_refuses_bad_options(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = write_jsonl(tmp_path / "e.jsonl", stock_stream(5, seed=1))
    code, _, err = run_cli(["compare", "--program", str(STOCK), "--events", str(events), *extra], capsys)
    assert code == 1 and message in err


def test_a_worker_that_dies_or_fails_is_named_with_its_variant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from faidecs.comparing import run as run_module
    from faidecs.errors import FaidecsError

    events = write_jsonl(tmp_path / "e.jsonl", stock_stream(20, seed=2))
    monkeypatch.setattr(run_module, "_run", lambda variant: os._exit(3))  # the forked child inherits it
    with pytest.raises(FaidecsError, match=r"variant (FR\+PI|MR\+I): its worker process died \(exit code 3"):
        compare(STOCK, events, options="FR+PI,MR+I", workers=2)

    def failing(variant: Any) -> Any:
        raise RuntimeError(f"no kernel for {variant.name}")

    monkeypatch.setattr(run_module, "_run", failing)
    failed = r"variant (FR\+PI|MR\+I) failed in its worker:\n(.|\n)*no kernel for (FR\+PI|MR\+I)"
    with pytest.raises(FaidecsError, match=failed):
        compare(STOCK, events, options="FR+PI,MR+I", workers=2)


def test_events_given_in_python_are_checked_like_a_files_lines() -> None:
    from faidecs.errors import EventError

    stream = stock_stream(3, seed=1)
    stream[2] = dict(stream[2], id=stream[0]["id"])
    with pytest.raises(EventError, match="line 3.*duplicate event id"):
        compare(STOCK, stream, options="FR+PI", workers=1)
    result = compare(STOCK, stream, options="FR+PI", workers=1, on_error="skip")
    assert (result.events, result.rejected) == (2, 1)


def test_a_bad_program_is_named_before_any_file_is_made(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = tmp_path / "bad.fdc"
    program.write_text("type T(a: int)\nsubscription S: T.b = 1\n", encoding="utf-8")
    events = write_jsonl(tmp_path / "e.jsonl", stock_stream(3, seed=1))
    out = tmp_path / "out"
    args = ["compare", "--program", str(program), "--events", str(events), "--on-error", "skip", "--out", str(out)]
    code, _, err = run_cli(args, capsys)
    assert code == 1 and f"{program}:2:" in err
    assert not out.exists()
