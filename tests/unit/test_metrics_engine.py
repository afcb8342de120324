"""The embedded engine's Prometheus endpoint (faidecs.metrics): scraped over HTTP and parsed with
prometheus-client's own parser, its values are Engine.metrics() after a known stream."""

from __future__ import annotations

import sys
import threading
import urllib.request
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from faidecs import Bounds, Engine, FaidecsError
from faidecs.metrics import EngineCollector, serve

PROGRAM = """
type Quote(symbol: str, value: float)
type Trade(symbol: str, size: int)

subscription Pairs: Quote and Trade
subscription SameSymbol:
    Quote.symbol = Trade.symbol
subscription BySymbol (partition by symbol):
    Quote.symbol = Trade.symbol
"""


def _stream(n: int) -> list[dict[str, Any]]:
    events = []
    for i in range(n):
        symbol = "ACME" if i % 3 else "INIT"
        if i % 4 == 0:
            events.append({"id": f"t{i}", "type": "Trade", "attrs": {"symbol": symbol, "size": i}})
        else:
            events.append({"id": f"q{i}", "type": "Quote", "attrs": {"symbol": symbol, "value": float(i)}})
    return events


def _scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _expected(metrics: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {("faidecs_engine_published_events_total", ()): float(metrics["published"])}
    for name, conjunctions in metrics["subscriptions"].items():
        for k, c in enumerate(conjunctions):
            labels = (("conjunction", str(k)), ("subscription", name))
            out[("faidecs_engine_deliveries_total", labels)] = float(c["deliveries"])
            out[("faidecs_engine_dropped_events_total", labels)] = float(c["drops"])
            for t, n in c["queues"].items():
                out[("faidecs_engine_queued_events", tuple(sorted((*labels, ("type", t)))))] = float(n)
    return out


@pytest.mark.parametrize("matcher", ["reference", "compiled"])
def test_scraped_values_are_the_engines_metrics(matcher: str) -> None:
    engine = Engine.from_source(
        PROGRAM, matcher=matcher, kernels="eager", bounds={"Pairs": Bounds(max_queue=2, overflow="drop-oldest")}
    )
    with serve(engine, port=0) as server:
        before = _scrape(server.url)
        assert before[("faidecs_engine_published_events_total", ())] == 0
        for event in _stream(40):
            engine.publish(event)
        scraped = _scrape(server.url)
    metrics = engine.metrics()
    expected = _expected(metrics)
    ours = {k: v for k, v in scraped.items() if k[0].startswith("faidecs_")}
    assert ours == expected
    # The stream makes every counter move: drops under Pairs' bound, deliveries in both.
    assert metrics["published"] == 40
    assert metrics["subscriptions"]["Pairs"][0]["drops"] > 0
    assert all(c["deliveries"] > 0 for cs in metrics["subscriptions"].values() for c in cs)


def test_scrapes_while_another_thread_publishes() -> None:
    """Scrapes race a publisher; with the lock each one is a moment between two publications,
    so the deliveries never exceed what the published events made, and the last one is exact."""
    engine = Engine.from_source(PROGRAM, matcher="reference")
    lock = threading.Lock()
    events = _stream(1000)
    done = threading.Event()

    def publish() -> None:
        for event in events:
            with lock:
                engine.publish(event)
        done.set()

    with serve(engine, port=0, lock=lock) as server:
        worker = threading.Thread(target=publish)
        worker.start()
        seen = []
        while not done.is_set():
            seen.append(_scrape(server.url)[("faidecs_engine_published_events_total", ())])
        worker.join()
        last = _scrape(server.url)
    assert seen == sorted(seen)  # a counter never goes back
    assert {k: v for k, v in last.items() if k[0].startswith("faidecs_")} == _expected(engine.metrics())


def test_collector_reads_without_a_lock_while_partitions_grow() -> None:
    """A partitioned conjunction grows a dict of partitions as new values come: a scrape without
    a lock reads again when one grew under it, and never fails."""
    engine = Engine.from_source(PROGRAM, matcher="reference")
    collector = EngineCollector(engine)
    stop = threading.Event()
    failures: list[BaseException] = []

    def scrape() -> None:
        while not stop.is_set():
            try:
                list(collector.collect())
            except BaseException as exc:  # noqa: BLE001 - what the test looks for
                failures.append(exc)
                return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, mid-iteration of the partitions
    reader = threading.Thread(target=scrape)
    reader.start()
    try:
        for i in range(800):  # a new symbol each time: a new partition of BySymbol
            engine.publish({"id": f"q{i}", "type": "Quote", "attrs": {"symbol": f"S{i}", "value": 1.0}})
    finally:
        stop.set()
        reader.join()
        sys.setswitchinterval(interval)
    assert failures == []
    assert engine.metrics()["subscriptions"]["BySymbol"][0]["queues"]["Quote"] == 800


def test_a_taken_port_is_a_clear_error() -> None:
    engine = Engine.from_source(PROGRAM, matcher="reference")
    with serve(engine, port=0) as server:
        with pytest.raises(FaidecsError, match=rf"metrics: cannot listen on 127.0.0.1:{server.port}"):
            serve(engine, port=server.port)


def test_faidecs_run_serves_metrics_while_it_reads(tmp_path: Any) -> None:
    """`faidecs run --metrics-port 0 --events -`: scraped while the run waits for more input, the
    endpoint shows what it has read so far."""
    import json
    import subprocess
    import sys as _sys

    program = tmp_path / "p.fdc"
    program.write_text(PROGRAM)
    proc = subprocess.Popen(
        [
            _sys.executable,
            "-m",
            "faidecs.cli.main",
            "run",
            "--program",
            str(program),
            "--events",
            "-",
            "--matcher",
            "reference",
            "--metrics-port",
            "0",
        ],  # fmt: skip
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None and proc.stdin is not None
        line = proc.stderr.readline()
        assert line.startswith("faidecs: metrics on http://127.0.0.1:"), line
        url = line.split(" on ", 1)[1].strip()
        events = _stream(12)
        proc.stdin.write("".join(json.dumps(e) + "\n" for e in events))
        proc.stdin.flush()
        engine = Engine.from_source(PROGRAM, matcher="reference")
        for e in events:
            engine.publish(e)
        expected = _expected(engine.metrics())
        for _ in range(200):  # until the run has read what was written (no time limit is asserted)
            scraped = {k: v for k, v in _scrape(url).items() if k[0].startswith("faidecs_")}
            if scraped.get(("faidecs_engine_published_events_total", ())) == len(events):
                break
            threading.Event().wait(0.05)
        assert scraped == expected
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        assert proc.wait(timeout=60) == 0


def test_without_prometheus_client_the_cli_names_the_extra(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from faidecs.cli.main import main

    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # import prometheus_client fails
    program = tmp_path / "p.fdc"
    program.write_text(PROGRAM)
    events = tmp_path / "e.jsonl"
    events.write_text("")
    out = tmp_path / "out.jsonl"
    code = main(["run", "--program", str(program), "--events", str(events), "--out", str(out), "--metrics-port", "0"])
    assert code == 2
    assert capsys.readouterr().err == (
        "faidecs: run needs the metrics extra (prometheus_client is not installed): pip install 'faidecs[metrics]'\n"
    )
    assert not out.exists()  # checked before anything was written
