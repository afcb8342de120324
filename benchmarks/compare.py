"""Issue 25: ``faidecs compare`` of all 16 option combinations against one option's ``faidecs
run``, on the same generated stream, each from a fresh process, as a user runs them.

    .venv/bin/python benchmarks/compare.py [--events N] [--max-age A] [--cache both|warm|cold] [--out DIR]

The stream is the stock workload of ``benchmarks/workloads.py`` (an earnings report followed by
three rising quotes of its symbol; FR+PI as written), one JSON object a line. Every command gets
``--max-age A`` (default 2,000 arrivals): under disposal I and IP, events that never match stay
queued, so without a bound their queues grow with the stream and the time per event with them
(the report shows it on a short prefix: ``--unbounded-events``). The goal: the comparison takes
at most 10x one ``faidecs run``. ``--cache cold`` gives both commands an empty kernel cache of
their own (``FAIDECS_CACHE_DIR``); ``warm`` a cache filled by a run before the timed ones.

Prints Markdown on stdout and writes ``compare.json`` to ``--out`` (default benchmarks/results).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import workloads  # noqa: E402  (benchmarks/ is put on sys.path just above)
from run import machine  # noqa: E402

FAIDECS = [sys.executable, "-m", "faidecs"]


def write_stream(n: int, folder: Path) -> tuple[Path, Path]:
    w = workloads.stock(n)
    program = folder / "stock.fdc"
    program.write_text(w.program, encoding="utf-8")
    events = folder / f"stock-{n}.jsonl"
    with open(events, "w", encoding="utf-8") as f:
        for e in w.events():
            f.write(json.dumps(e) + "\n")
    return program, events


def timed(args: list[str], cache: Path, kernels: str | None = None) -> tuple[float, str]:
    env = dict(os.environ, FAIDECS_CACHE_DIR=str(cache))
    env.pop("FAIDECS_KERNELS", None)
    if kernels is not None:
        env["FAIDECS_KERNELS"] = kernels
    start = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return seconds, done.stdout


def measure(program: Path, events: Path, age: int, cache: Path, out: Path) -> dict[str, Any]:
    """``faidecs run`` as users run it (kernels loaded in the background: the reference matcher
    runs the first events), ``faidecs run`` with ``FAIDECS_KERNELS=eager`` (every kernel loaded
    before the first event, as compare loads them), then the comparison."""
    bound = ["--max-age", str(age)]
    run = [*FAIDECS, "run", "--program", str(program), "--events", str(events), "--out", os.devnull, *bound]
    run_s, _ = timed(run, cache)
    eager_s, _ = timed(run, cache, kernels="eager")
    options = ["--options", "all", *bound, "--json", "--out", str(out)]
    compare_s, printed = timed(
        [*FAIDECS, "compare", "--program", str(program), "--events", str(events), *options], cache
    )
    return {
        "run_seconds": run_s,
        "eager_run_seconds": eager_s,
        "compare_seconds": compare_s,
        "ratio": compare_s / run_s,
        "eager_ratio": compare_s / eager_s,
        "result": json.loads(printed),
    }


def variants_table(result: dict[str, Any]) -> list[str]:
    lines = [
        "| variant | relations | never used | queue peak | engine s | ev/s | p50 µs | p99 µs | verify s | variant s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for v in result["variants"]:
        (s,) = v["subscriptions"]
        lines.append(
            f"| {v['name']} | {s['relations']:,} | {s['never_used']:,} | {s['peak_queue']:,} | "
            f"{v['engine_seconds']:.2f} | {v['throughput']:,.0f} | {v['latency']['p50']:.1f} | "
            f"{v['latency']['p99']:.1f} | {v['verify_seconds']:.2f} | {v['wall_seconds']:.1f} |"
        )
    return lines


def unbounded(n: int, folder: Path, cache: Path) -> list[str]:
    """Why the bound: the same comparison without it on a short prefix."""
    folder.mkdir(parents=True, exist_ok=True)
    program, events = write_stream(n, folder)
    _, printed = timed(
        [
            *FAIDECS,
            "compare",
            "--program",
            str(program),
            "--events",
            str(events),
            "--options",
            "all",
            "--json",
            "--no-verify",
        ],
        cache,
    )
    result = json.loads(printed)
    lines = [
        f"Without `--max-age`, {n:,} events (verification off):",
        "",
        "| variant | queue peak | ev/s |",
        "|---|---|---|",
    ]
    for v in result["variants"]:
        (s,) = v["subscriptions"]
        lines.append(f"| {v['name']} | {s['peak_queue']:,} | {v['throughput']:,.0f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--max-age", type=int, default=2000)
    parser.add_argument("--cache", choices=("both", "warm", "cold"), default="both")
    parser.add_argument("--unbounded-events", type=int, default=20_000)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    report: dict[str, Any] = {"machine": machine(), "events": args.events, "max_age": args.max_age}
    lines = [f"Machine: {report['machine']}", ""]
    with tempfile.TemporaryDirectory(prefix="faidecs-compare-") as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        program, events = write_stream(args.events, folder)
        lines.append(
            f"Stream: {args.events:,} events ({events.stat().st_size / 2**20:.0f} MiB), written in "
            f"{time.perf_counter() - start:.0f} s; every command with --max-age {args.max_age}."
        )
        lines.append("")
        lines += [
            "| kernel cache | faidecs run s | the same, kernels eager s | faidecs compare (16 options) s | ratio | "
            "ratio to eager | goal (≤ 10x the faster run) |",
            "|---|---|---|---|---|---|---|",
        ]
        warm_cache = folder / "warm-cache"
        kinds = ["cold", "warm"] if args.cache == "both" else [args.cache]
        found: dict[str, dict[str, Any]] = {}
        for kind in kinds:
            cache = folder / f"cold-cache-{len(found)}" if kind == "cold" else warm_cache
            if kind == "warm":  # fill it: one short run compiles what every option shares
                timed(
                    [
                        *FAIDECS,
                        "run",
                        "--program",
                        str(program),
                        "--events",
                        str(events),
                        "--out",
                        os.devnull,
                        "--max-age",
                        "10",
                    ],
                    cache,
                )
            m = measure(program, events, args.max_age, cache, folder / f"out-{kind}")
            found[kind] = m
            verdict = "met" if max(m["ratio"], m["eager_ratio"]) <= 10 else "missed"
            lines.append(
                f"| {kind} | {m['run_seconds']:.1f} | {m['eager_run_seconds']:.1f} | {m['compare_seconds']:.1f} | "
                f"{m['ratio']:.2f}x | {m['eager_ratio']:.2f}x | {verdict} |"
            )
        last = found[kinds[-1]]["result"]
        lines += [
            "",
            f"Reading and validating once: {last['read_seconds']:.1f} s; {last['workers']} workers; "
            f"the comparison's own total {last['seconds']:.1f} s ({kinds[-1]} cache).",
            "",
        ]
        lines += variants_table(last)
        lines += [""] + unbounded(
            args.unbounded_events, folder / "unbounded", warm_cache if "warm" in kinds else folder / "c"
        )
    report["runs"] = {k: {x: y for x, y in m.items() if x != "result"} for k, m in found.items()}
    # The figures, not the queue series (a thousand samples a variant): the plots hold those.
    report["variants"] = [{k: v for k, v in variant.items() if k != "queues"} for variant in last["variants"]]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compare.json").write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
