"""Issue 23, "Connectors": ``faidecs run --source`` against real brokers, as a user runs it.

    PYTHONPATH=. .venv/bin/python benchmarks/connectors.py [--events N] [--rounds R]

Starts a real ``nats-server -js`` and a real ``mosquitto`` (``faidecs.connect.servers``), and
times ``faidecs run --program examples/stock.fdc`` as a fresh process, from its start until it
exits, in four setups alternated round by round:

- ``file``: ``--events FILE`` (the baseline: the same events from a JSON-lines file);
- ``nats``: ``--source nats://…/SUBJECT --max-events N``, the N events stored on a JetStream
  stream before the process starts;
- ``nats→nats``: the same with ``--sink nats://…/SUBJECT``: each delivery published back through
  JetStream, waiting for the stream's acknowledgement;
- ``mqtt``: ``--source mqtt://…/TOPIC --max-events N``, the N events queued by mosquitto for the
  source's persistent session (created, subscribed, before they were published).

Each setup has a kernel cache of its own (``FAIDECS_CACHE_DIR``), empty for the first round
(``cold``: the compiled matcher's kernels are compiled in the run, by the engine's compile worker
process) and warm afterwards. After each run the benchmark waits, untimed, for the compile worker
the run may leave behind (it finishes the kernel in hand: the seconds are printed), and after
the cold round it fills each cache with every kernel the run needs, so that the warm rounds are
warm whatever ``--events`` is. Brokers are loaded before a round's runs start, outside the
timing; every run reads a subject or topic of its own. Each run's deliveries are checked
against the file run's: the same lines in the same order on ``--out``, or, for the sink, as many
as the file run's, counted by the process and by the stream. Prints the seconds of every run
and a Markdown table: seconds, events/s and the ratio to the file run of the same kind (cold, or
the best warm run), with the machine and the load average before and after (the figures are
only as quiet as the machine).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from run import machine  # noqa: E402  (benchmarks/ is put on sys.path just above)

from faidecs.connect.nats import stream_name  # noqa: E402
from faidecs.connect.servers import MosquittoServer, NatsServer  # noqa: E402

PROGRAM = ROOT / "examples" / "stock.fdc"
SETUPS = ("file", "nats", "nats→nats", "mqtt")
COUNTS = re.compile(r"faidecs: (\d+) events taken, (\d+) deliveries")


def stock_events(count: int, seed: int = 23) -> list[bytes]:
    """Quotes of two symbols with an earnings report every tenth event (tests/slow/connector_helpers.py's shape)."""
    import json

    rng = random.Random(seed)
    out: list[bytes] = []
    for i in range(count):
        symbol = rng.choice(("ACME", "INIT"))
        if i % 10 == 0:
            event = {"id": f"e{i}", "type": "EarningsReport", "attrs": {"symbol": symbol, "eps": 1.0, "time": i * 10}}
        else:
            value = round(rng.uniform(9, 12), 2)
            event = {"id": f"q{i}", "type": "StockQuote", "attrs": {"symbol": symbol, "value": value, "time": i * 10}}
        out.append(json.dumps(event).encode())
    return out


# Loading the brokers (outside the timing)


async def _nats_load(port: int, subject: str, payloads: list[bytes]) -> None:
    """Store ``payloads`` on a file-backed stream of ``subject`` named as the source names it."""
    import nats
    from nats.js.api import StorageType

    client = await nats.connect(f"nats://127.0.0.1:{port}")
    try:
        js = client.jetstream()
        name = stream_name(subject)
        await js.add_stream(name=name, subjects=[subject], storage=StorageType.FILE)
        # Plain publishes, flushed every 1,000: JetStream stores them without a round trip each.
        for start in range(0, len(payloads), 1000):
            for data in payloads[start : start + 1000]:
                await client.publish(subject, data)
            await client.flush(timeout=30)
        deadline = time.monotonic() + 30
        while (stored := (await js.stream_info(name)).state.messages) < len(payloads):
            if time.monotonic() > deadline:
                raise RuntimeError(f"stream {name} holds {stored} of {len(payloads)} messages")
            await asyncio.sleep(0.05)
    finally:
        await client.close()


async def _nats_stored(port: int, subject: str) -> int:
    import nats

    client = await nats.connect(f"nats://127.0.0.1:{port}")
    try:
        count: int = (await client.jetstream().stream_info(stream_name(subject))).state.messages
        return count
    finally:
        await client.close()


def _mqtt_client(port: int, client_id: str, *, persistent: bool, inflight: int = 20) -> Any:
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    client = mqtt.Client(
        callback_api_version=CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=not persistent
    )
    client.max_inflight_messages_set(inflight)
    client.connect("127.0.0.1", port)
    client.loop_start()
    return client


def mqtt_load(port: int, topic: str, client_id: str, payloads: list[bytes]) -> None:
    """Create the source's persistent session (subscribed at QoS 1), then publish ``payloads`` at QoS 1."""
    session = _mqtt_client(port, client_id, persistent=True)
    subscribed = threading.Event()
    session.on_subscribe = lambda *args: subscribed.set()
    session.subscribe(topic, qos=1)
    if not subscribed.wait(10):
        raise RuntimeError(f"mosquitto did not acknowledge the subscription to {topic}")
    session.disconnect()
    session.loop_stop()
    writer = _mqtt_client(port, f"bench-writer-{client_id}", persistent=False, inflight=1000)
    infos = [writer.publish(topic, data, qos=1) for data in payloads]
    for info in infos:
        info.wait_for_publish(60)
        if not info.is_published():
            raise RuntimeError(f"mosquitto did not acknowledge message {info.mid} on {topic}")
    writer.disconnect()
    writer.loop_stop()


# One timed run


def faidecs_run(args: list[str], cache: Path, out: Path, timeout: float, eager: bool = False) -> tuple[float, str]:
    """Seconds from the process's start to its exit, and its stderr. ``eager``: the kernels are
    loaded before the first event (``FAIDECS_KERNELS=eager``) rather than while the reference
    matcher takes the first events, so that the figure is the input's cost, not the race between
    the input's speed and the kernels' loading."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAIDECS_CACHE_DIR": str(cache)}
    if eager:
        env["FAIDECS_KERNELS"] = "eager"
    command = [sys.executable, "-m", "faidecs", "run", "--program", str(PROGRAM), "--out", str(out), *args]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}:\n{done.stderr}")
    return seconds, done.stderr


def kernel_workers(cache: Path) -> list[int]:
    """The kernel compile workers (faidecs.matching.kernel_worker) started with ``cache``: a run
    that ends early leaves its worker compiling the kernel in hand (into the cache) for a while."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if b"faidecs.matching.kernel_worker" not in (proc / "cmdline").read_bytes():
                continue
            if f"FAIDECS_CACHE_DIR={cache}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:
            continue  # gone, or not ours
    return found


def settle(cache: Path, timeout: float) -> float:
    """Wait until the kernel workers a run left behind have exited (they would take CPU from the
    next run, and a warm cache must hold their kernels); the seconds waited."""
    start = time.perf_counter()
    while kernel_workers(cache):
        if time.perf_counter() - start > timeout:
            raise RuntimeError(f"kernel workers for {cache} still running after {timeout:g} s")
        time.sleep(0.1)
    return time.perf_counter() - start


def fill_cache(events_file: Path, cache: Path, timeout: float) -> None:
    """Untimed, after the cold round: a run that compiles every kernel it needs in-process
    (``FAIDECS_KERNELS=eager``), so that the warm rounds find them all whatever N was."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAIDECS_CACHE_DIR": str(cache), "FAIDECS_KERNELS": "eager"}
    command = [sys.executable, "-m", "faidecs", "run", "--program", str(PROGRAM), "--events", str(events_file)]
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True, timeout=timeout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20_000, help="events per run (default 20,000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the first is cold (default 3)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a run may take before it counts as hung")
    args = parser.parse_args()
    if args.events < 1 or args.rounds < 1:
        parser.error("--events and --rounds must be positive")
    n = args.events
    payloads = stock_events(n)
    work = Path(tempfile.mkdtemp(prefix="faidecs-bench-connectors-"))
    caches = {setup: work / f"cache-{i}" for i, setup in enumerate(SETUPS)}
    events_file = work / "events.jsonl"
    events_file.write_bytes(b"".join(p + b"\n" for p in payloads))
    seconds: dict[str, list[float]] = {setup: [] for setup in SETUPS}
    seconds_eager: dict[str, list[float]] = {setup: [] for setup in SETUPS}
    load_before = os.getloadavg()
    try:
        with NatsServer(work / "nats") as nats, MosquittoServer(work / "mosquitto") as mosquitto:
            assert nats.port is not None and mosquitto.port is not None
            # Warm rounds run twice: as a user's run does (the kernels load while the reference
            # matcher takes the first events) and with the kernels loaded first.
            passes = [(k, e) for k in range(args.rounds) for e in ((False, True) if k else (False,))]
            for r, eager in passes:
                # Load the brokers for this pass before any of its runs, outside the timing.
                tag = f"r{r}{'e' if eager else ''}"
                subject, sink_subject, sink_out = f"bench.{tag}.in", f"bench.{tag}.sinkin", f"bench.{tag}.out"
                topic, client_id = f"bench/{tag}/in", f"bench-source-{tag}"
                asyncio.run(_nats_load(nats.port, subject, payloads))
                asyncio.run(_nats_load(nats.port, sink_subject, payloads))
                mqtt_load(mosquitto.port, topic, client_id, payloads)
                time.sleep(1.5)  # let mosquitto's once-a-second autosave of the queue pass
                runs: dict[str, list[str]] = {
                    "file": ["--events", str(events_file)],
                    "nats": ["--source", nats.url(subject), "--max-events", str(n)],
                    "nats→nats": ["--source", nats.url(sink_subject), "--max-events", str(n)]
                    + ["--sink", nats.url(sink_out)],
                    "mqtt": ["--source", mosquitto.url(topic, f"client_id={client_id}"), "--max-events", str(n)],
                }
                outputs: dict[str, bytes] = {}
                lingered: dict[str, float] = {}
                expected = 0
                for setup in SETUPS:
                    out = work / f"out-{tag}-{SETUPS.index(setup)}.jsonl"
                    took, stderr = faidecs_run(runs[setup], caches[setup], out, args.timeout, eager)
                    (seconds_eager if eager else seconds)[setup].append(took)
                    lingered[setup] = settle(caches[setup], args.timeout)
                    if r == 0:
                        fill_cache(events_file, caches[setup], args.timeout)
                    outputs[setup] = out.read_bytes()
                    if setup == "file":
                        expected = outputs["file"].count(b"\n")
                        continue
                    counted = COUNTS.search(stderr)
                    if counted is None:
                        raise RuntimeError(f"{setup}: no counts on stderr:\n{stderr}")
                    taken, delivered = int(counted[1]), int(counted[2])
                    if taken != n or delivered != expected:
                        raise RuntimeError(
                            f"{setup}: {taken} events, {delivered} deliveries; the file run: {n}, {expected}"
                        )
                    if setup == "nats→nats":
                        stored = asyncio.run(_nats_stored(nats.port, sink_out))
                        if stored != expected:
                            raise RuntimeError(f"{setup}: the sink's stream holds {stored} deliveries, not {expected}")
                    elif outputs[setup] != outputs["file"]:
                        raise RuntimeError(f"{setup}: its deliveries differ from the file run's")
                taken = seconds_eager if eager else seconds
                print(
                    f"round {r} ({'cold' if r == 0 else 'warm, kernels first' if eager else 'warm'}): "
                    + ", ".join(f"{s} {taken[s][-1]:.2f} s" for s in SETUPS)
                    + f"; {expected} deliveries each; kernel compiles went on after the run for "
                    + ", ".join(f"{lingered[s]:.1f}" for s in SETUPS)
                    + " s",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    info = machine()
    print()
    print(f"{n:,} events a run, {args.rounds} rounds; {info['cpu']}, {info['cores']} cores, Python {info['python']}")
    print(f"load average (1, 5, 15 min) before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")  # fmt: skip
    print()
    warm = args.rounds > 1
    head = "| setup | cold: seconds | events/s | vs file |"
    best_of = f"best of {args.rounds - 1}"
    print(
        head
        + (f" warm ({best_of}): seconds | events/s | vs file |" if warm else "")
        + (f" warm, kernels first ({best_of}): seconds | events/s | vs file |" if warm else "")
    )
    print("|---|---|---|---|" + ("---|---|---|---|---|---|" if warm else ""))
    for setup in SETUPS:
        cold, file_cold = seconds[setup][0], seconds["file"][0]
        row = f"| {setup} | {cold:.2f} | {n / cold:,.0f} | {file_cold / cold:.2f} |"
        if warm:
            best, file_best = min(seconds[setup][1:]), min(seconds["file"][1:])
            row += f" {best:.2f} | {n / best:,.0f} | {file_best / best:.2f} |"
            best, file_best = min(seconds_eager[setup]), min(seconds_eager["file"])
            row += f" {best:.2f} | {n / best:,.0f} | {file_best / best:.2f} |"
        print(row)


if __name__ == "__main__":
    main()
