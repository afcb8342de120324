"""Issue 23, "Metrics": what Prometheus exposition costs the embedded engine's publishers.

    PYTHONPATH=. .venv/bin/python benchmarks/metrics.py [--events N] [--rounds R] [--scrape-ms MS]

The same stream published one event at a time (``Engine.publish``) on a fresh engine per run, in
four setups, alternated round by round (the best of ``--rounds`` runs each is printed):

- ``plain``: no metrics;
- ``served``: ``faidecs.metrics.serve(engine)`` listening, never scraped;
- ``scraped``: served and scraped over HTTP by another process every ``--scrape-ms`` ms (default
  100 ms: 150 times Prometheus's usual 15 s, to make any cost visible);
- ``scraped+lock``: the same with ``lock=``, held by the publisher around each ``publish``.

``--overlay`` measures the overlay's processes instead (run it under ``flock
/tmp/faidecs-processes.lock`` where other runs share the machine): one 3-replica root merger and
one subscriber on loopback (benchmarks/deployed.py), the publisher as fast as the links take its
``--events`` events, without ``[metrics]`` and with it while every process is scraped every
``--scrape-ms`` ms, alternated ``--rounds`` times: events/s and the publication-to-delivery
latency from the run logs.

Workload: 20 subscriptions (one per symbol: a quote, a trade of the same symbol and a rising quote
after it, the Esper kit's shape) under the compiled matcher, with kernels compiled before timing.
Prints a Markdown table with the machine.
"""

from __future__ import annotations

import argparse
import gc
import random
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import nullcontext
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import machine  # noqa: E402  (benchmarks/ is put on sys.path just above)

from faidecs import Engine  # noqa: E402
from faidecs.metrics import serve  # noqa: E402

SYMBOLS = 20
#: The scraper process: scrape argv[1] every argv[2] ms until its stdin closes; print the count.
SCRAPER = """
import sys, threading, urllib.request
url, every = sys.argv[1], float(sys.argv[2]) / 1000
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
n = 0
while True:
    with urllib.request.urlopen(url, timeout=10) as r:
        r.read()
    n += 1
    if n == 1:
        print("ready", flush=True)
    if done.wait(every):
        break
print(n, flush=True)
"""
SETUPS = ("plain", "served", "scraped", "scraped+lock")


def program() -> str:
    lines = ["type Quote(symbol: int, value: float)", "type Trade(symbol: int, size: int)"]
    for k in range(SYMBOLS):
        lines.append(
            f"subscription S{k}: Quote[0].symbol = {k} and Trade.symbol = {k} and Quote[1].symbol = {k}"
            " and Quote[1].value > Quote[0].value"
        )
    return "\n".join(lines) + "\n"


def stream(n: int) -> list[dict[str, Any]]:
    rng = random.Random(23)
    out: list[dict[str, Any]] = []
    for i in range(n):
        symbol = rng.randrange(SYMBOLS)
        if rng.random() < 0.2:
            out.append({"id": f"e{i}", "type": "Trade", "attrs": {"symbol": symbol, "size": rng.randrange(100)}})
        else:
            out.append({"id": f"e{i}", "type": "Quote", "attrs": {"symbol": symbol, "value": rng.random() * 100}})
    return out


def run(setup: str, text: str, events: list[dict[str, Any]], scrape_ms: float) -> tuple[float, int]:
    """Events per second of one run, and the scrapes made during it (the first, before it, too)."""
    engine = Engine.from_source(text, kernels="eager")
    lock = threading.Lock() if setup == "scraped+lock" else None
    server = serve(engine, port=0, lock=lock) if setup != "plain" else None
    scraper = None
    if setup.startswith("scraped"):
        assert server is not None
        # Another process scrapes, as Prometheus would: its side of HTTP is not this process's CPU.
        scraper = subprocess.Popen(
            [sys.executable, "-c", SCRAPER, server.url, str(scrape_ms)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert scraper.stdout is not None
        scraper.stdout.readline()  # its first scrape is done: it is running
    guard = lock if lock is not None else nullcontext()
    gc.collect()
    scrapes = 0
    try:
        start = time.perf_counter()
        publish = engine.publish
        for event in events:
            with guard:
                publish(event)
        elapsed = time.perf_counter() - start
    finally:
        if scraper is not None:
            out, _ = scraper.communicate("")
            scrapes = int(out.split()[-1])
        if server is not None:
            server.close()
    return len(events) / elapsed, scrapes


def scrape_all(ports: list[int], every: float, stop: threading.Event, count: list[int]) -> None:
    """Scrape each port every ``every`` seconds until ``stop``; a process not up (yet) is skipped."""
    while not stop.wait(every):
        for port in ports:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                    response.read()
                count[0] += 1
            except OSError:
                continue


def overlay(n: int, rounds: int, scrape_ms: float, port: int) -> None:
    from deployed import measure, scratch, write_deployment

    from faidecs.net.zkserver import ZooKeeperServer

    program = "type A(x: int)\nsubscription OneA: A\n"
    events = [{"id": f"e{k}", "type": "A", "attrs": {"x": k % 100}} for k in range(n)]
    runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
    scrapes = [0]
    with ZooKeeperServer() as zk:
        for _ in range(rounds):
            for mode in runs:
                port += 200  # fresh ports: the last run's may linger in TIME_WAIT
                path = write_deployment(scratch(), program, events, {"s1": "OneA"}, port=port)
                stop = threading.Event()
                scraper = None
                if mode == "on":
                    with path.open("a") as f:
                        f.write(f"\n[metrics]\nbase_port = {port + 150}\n")
                    ports = [port + 150 + k for k in range(5)]  # 3 servers, s1, p1
                    scraper = threading.Thread(target=scrape_all, args=(ports, scrape_ms / 1000, stop, scrapes))
                    scraper.start()
                try:
                    runs[mode].append(measure(zk.address, path, expect_fed=n))
                finally:
                    stop.set()
                    if scraper is not None:
                        scraper.join()
                print(mode, runs[mode][-1]["events_per_s"], runs[mode][-1]["latency_ms"], flush=True)
    m = machine()
    print(f"{m['cpu']}, {m['cores']} cores; {n:,} events, {rounds} rounds, {scrapes[0]} scrapes in all")
    print()
    print("| metrics | events/s (each run) | latency p50 / p99 ms (each run) |")
    print("|---|---|---|")
    for mode, label in (("off", "none"), ("on", f"[metrics], scraped every {scrape_ms:g} ms")):
        rates = " / ".join(f"{r['events_per_s']:,}" for r in runs[mode])
        latency = " ; ".join(f"{r['latency_ms'].get('p50')} / {r['latency_ms'].get('p99')}" for r in runs[mode])
        print(f"| {label} | {rates} | {latency} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scrape-ms", type=float, default=100.0)
    parser.add_argument("--overlay", action="store_true", help="the overlay's processes instead of the engine")
    parser.add_argument("--port", type=int, default=18100, help="--overlay: first of the ports the runs use")
    args = parser.parse_args()
    if args.overlay:
        overlay(args.events, args.rounds, args.scrape_ms, args.port)
        return
    text, events = program(), stream(args.events)
    Engine.from_source(text, kernels="eager")  # the kernels, compiled or loaded, before any timing
    best: dict[str, float] = dict.fromkeys(SETUPS, 0.0)
    scrapes: dict[str, int] = dict.fromkeys(SETUPS, 0)
    for _ in range(args.rounds):
        for setup in SETUPS:
            rate, n = run(setup, text, events, args.scrape_ms)
            best[setup] = max(best[setup], rate)
            scrapes[setup] += n
    m = machine()
    print(f"{m['cpu']}, {m['cores']} cores, Python {m['python']}; {args.events:,} events, best of {args.rounds}")
    print()
    print("| setup | events/s | vs plain | scrapes (all rounds) |")
    print("|---|---|---|---|")
    for setup in SETUPS:
        print(f"| {setup} | {best[setup]:,.0f} | {best[setup] / best['plain']:.3f} | {scrapes[setup]} |")


if __name__ == "__main__":
    main()
