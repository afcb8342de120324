"""The benchmark suite: one command, figures printed, JSON + Markdown + PNG written.

    .venv/bin/python benchmarks/run.py [--quick] [--out benchmarks/results]

Every workload is seeded (benchmarks/workloads.py). Speed-ups are ratios measured in the same
run on the same events: the compiled matcher (batch path and per-event path) against the
reference matcher. Peers run the same workload where they can be installed here (see
benchmarks/peers/); their absence is reported, never papered over.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workloads  # noqa: E402
from workloads import Workload  # noqa: E402

try:
    from faidecs import Bounds, Engine
except ImportError:  # an older tree measured as a baseline, from before Bounds was exported
    from faidecs import Engine
    from faidecs.matching.bounds import Bounds  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numba

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numba": numba.__version__,
        "numpy": np.__version__,
        "platform": platform.platform(),
    }


def best_of(repeat: int, fn: Callable[[], Any]) -> float:
    """The fastest of ``repeat`` runs, in seconds (each run on a fresh engine built by ``fn``'s caller)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def batch_rate(w: Workload, bounds: Bounds | None = None, repeat: int = 3) -> tuple[float, int]:
    Engine.from_source(w.program, bounds=bounds).publish_batch(w.head(100).tables, w.head(100).order)  # compile
    delivered = 0

    def run() -> None:
        nonlocal delivered
        engine = Engine.from_source(w.program, bounds=bounds)
        delivered = len(engine.publish_batch(w.tables, w.order))

    return len(w) / best_of(repeat, run), delivered


def per_event(w: Workload, matcher: str, n: int, bounds: Bounds | None = None) -> dict[str, Any]:
    """Per-event ``publish`` of pre-validated events: rate and latency percentiles."""
    engine = Engine.from_source(w.program, matcher=matcher, bounds=bounds)
    events = [engine.validate(e) for e in w.events(n)]
    lat = np.empty(len(events), dtype=np.int64)
    clock = time.perf_counter_ns
    delivered = 0
    gc.collect()
    started = time.perf_counter()
    for k, event in enumerate(events):
        t0 = clock()
        delivered += len(engine.publish(event))
        lat[k] = clock() - t0
    seconds = time.perf_counter() - started
    return {
        "events": len(events),
        "events_per_s": len(events) / seconds,
        "deliveries": delivered,
        "latency_us": {
            "p50": float(np.percentile(lat, 50)) / 1e3,
            "p99": float(np.percentile(lat, 99)) / 1e3,
            "p999": float(np.percentile(lat, 99.9)) / 1e3,
            "max": float(lat.max()) / 1e3,
        },
    }


def dict_rate(w: Workload, n: int) -> float:
    """``publish`` of raw dicts: validation included."""
    engine = Engine.from_source(w.program)
    events = w.events(n)
    started = time.perf_counter()
    for e in events:
        engine.publish(e)
    return len(events) / (time.perf_counter() - started)


def peak_memory(w: Workload, bounds: Bounds | None = None) -> float:
    """Peak bytes allocated (tracemalloc, numpy included) while a batch runs, in MiB."""
    engine = Engine.from_source(w.program, bounds=bounds)
    gc.collect()
    tracemalloc.start()
    engine.publish_batch(w.tables, w.order)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def compared(w: Workload, ref_events: int, repeat: int, bounds: Bounds | None = None) -> dict[str, Any]:
    """Compiled (batch and per event) against the reference, on the same first ``ref_events``."""
    head = w.head(ref_events)
    ref = per_event(head, "reference", ref_events, bounds)
    comp = per_event(head, "compiled", ref_events, bounds)
    head_batch, head_delivered = batch_rate(head, bounds, repeat=repeat)
    assert comp["deliveries"] == ref["deliveries"] == head_delivered, "matchers disagree"
    return {
        "reference_events_per_s": ref["events_per_s"],
        "compiled_publish_events_per_s": comp["events_per_s"],
        "compiled_batch_events_per_s": head_batch,
        "speedup_batch": head_batch / ref["events_per_s"],
        "speedup_publish": comp["events_per_s"] / ref["events_per_s"],
        "on_events": ref_events,
    }


def stock(args: argparse.Namespace) -> dict[str, Any]:
    w = workloads.stock(args.n)
    rate, delivered = batch_rate(w, repeat=args.repeat)
    out = {
        "workload": "stock FR+PI",
        "events": len(w),
        "batch_events_per_s": rate,
        "deliveries": delivered,
        "publish": per_event(w, "compiled", args.n_event),
        "publish_dict_events_per_s": dict_rate(w, min(args.n_event, 50_000)),
        "peak_mib": peak_memory(w),
        "vs_reference": compared(w, args.n_ref, args.repeat),
    }
    return out


def paper(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for k in (2, 3, 4):
        w = workloads.paper(args.n // 2, k, args.subscribers)
        rate, delivered = batch_rate(w, repeat=args.repeat)
        rows.append(
            {
                "workload": f"paper k={k}, {args.subscribers} subscribers",
                "events": len(w),
                "batch_events_per_s": rate,
                "deliveries": delivered,
                "peak_mib": peak_memory(w),
                # The reference slows down with k; each gets a prefix it runs in a few seconds.
                "vs_reference": compared(w, {2: args.n_ref, 3: args.n_ref // 2, 4: args.n_ref // 4}[k], 1),
            }
        )
    return rows


def sequence(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for last in (True, False):
        for k in (2, 3, 5):
            for window in (100, 1_000, 10_000):
                w = workloads.sequence(args.n, k, window, last_occurs=last)
                # A time bound of one window keeps the queues to what can still match.
                bounds = Bounds(max_age=window + 1)
                rate, delivered = batch_rate(w, bounds, repeat=args.repeat)
                rows.append(
                    {
                        "workload": w.name,
                        "k": k,
                        "window": window,
                        "last_occurs": last,
                        "events": len(w),
                        "batch_events_per_s": rate,
                        "deliveries": delivered,
                    }
                )
        unbounded, _ = batch_rate(workloads.sequence(args.n, 3, 1_000, last_occurs=last), None, repeat=args.repeat)
        rows.append(
            {
                "workload": f"sequence-k3-w1000{'' if last else '-nomatch'} unbounded",
                "k": 3,
                "window": 1000,
                "last_occurs": last,
                "events": args.n,
                "batch_events_per_s": unbounded,
                "bounded": False,
            }
        )
    return rows


def sequence_reference(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The compiled matcher against the reference on sequence workloads (k=3, window 1000, time
    bound of one window as in the sequence step), on the same prefix of events. The reference
    searches every pair of the two growing queues on every arrival: it gets a short prefix."""
    rows = []
    for last in (True, False):
        w = workloads.sequence(args.n, 3, 1_000, last_occurs=last)
        ref = compared(w, args.n_ref // (5 if last else 25), 1, Bounds(max_age=1_001))
        rows.append({"workload": w.name, "events": ref["on_events"], "vs_reference": ref})
    return rows


def adversarial(args: argparse.Namespace) -> dict[str, Any]:
    """Time per event against queue length: the queue grows by about one event every two arrivals."""
    w = workloads.adversarial(args.n_adv)
    engine = Engine.from_source(w.program)
    engine.publish_batch(w.head(10).tables, w.head(10).order)
    segments = []
    size = 2_000
    start = 10
    while start < len(w):
        stop = min(len(w), start + size)
        part_order = w.order[start:stop]
        tables = {}
        for t in ("A", "B"):
            before = int((w.order[:start] == t).sum())
            count = int((part_order == t).sum())
            tables[t] = {"a": w.tables[t]["a"][before : before + count]}
        began = time.perf_counter()
        engine.publish_batch(tables, part_order)
        seconds = time.perf_counter() - began
        queues = engine.metrics()["subscriptions"]["Never"][0]["queues"]
        segments.append({"queue_length": sum(queues.values()), "ns_per_event": seconds / (stop - start) * 1e9})
        start = stop
    ref = compared(w, args.n_ref_adv, 1)
    return {"workload": "adversarial MR+I, no match", "events": len(w), "segments": segments, "vs_reference": ref}


COMPILE_SNIPPET = """
import json, sys, time
t0 = time.perf_counter()
import numba
import numpy as np
from faidecs.matching import kernel_ops, kernel_runtime
# Once per process, whatever the program: numba's own start-up (its first compilation sets up
# LLVM) and loading the shared helpers' machine code. Measured apart from the conjunctions.
numba.njit(lambda x: x + 1)(1)
q = np.zeros((4, 3), np.int64)
meta = np.zeros(8, np.int64)
kernel_runtime.expire(q, meta, 0, 0, 6)
kernel_runtime.make_room(q, meta, 0, 0, 0, 6)
kernel_runtime.append(q, meta, 0, 0, 1, np.zeros((1, 1), np.int64), 0)
kernel_runtime.dispose(q, meta, 0, np.zeros(1, np.int64), np.zeros(1, np.int64), 1)
for f in (kernel_ops.add_int, kernel_ops.sub_int, kernel_ops.mul_int):
    f(1, 2)
kernel_ops.neg_int(1)
kernel_ops.cmp_int_float(1, 1.0)
t1 = time.perf_counter()
from faidecs.grammar import compile_program
from faidecs.matching.kernel_cache import load
from faidecs.matching.kernel_source import generate
program = compile_program(sys.stdin.read())
out = []
for sub in program.subscriptions:
    for c in sub.conjunctions:
        out.append(load(generate(c, program.types)).seconds)
print(json.dumps({"import_s": t1 - t0, "kernels_s": out}))
"""


def compile_times(args: argparse.Namespace) -> dict[str, Any]:
    """Cold: a fresh kernel cache (numba's runtime helpers stay compiled, as after a first use on
    a machine). Cached: the same program again in a new process."""
    program = workloads.stock(10).program + "\n" + workloads.sequence(10, 5, 100).program.split("subscription")[0]
    program += "subscription Seq: " + workloads.sequence(10, 5, 100).program.split("subscription Seq: ")[1]
    cache = tempfile.mkdtemp(prefix="faidecs-bench-cache-")
    env = {**os.environ, "FAIDECS_CACHE_DIR": cache}
    try:
        runs = []
        for _ in range(2):
            done = subprocess.run(
                [sys.executable, "-c", COMPILE_SNIPPET],
                input=program,
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            runs.append(json.loads(done.stdout))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "conjunctions": ["stock (4 slots, 10 predicates)", "sequence k=5 (5 slots, 5 predicates)"],
        "cold_s": runs[0]["kernels_s"],
        "cached_s": runs[1]["kernels_s"],
        "process_start_s": runs[1]["import_s"],
    }


def memory_per_event(args: argparse.Namespace) -> dict[str, Any]:
    """Bytes per queued event: the adversarial workload never matches, so every event stays."""
    out = {}
    for path in ("batch", "publish"):
        w = workloads.adversarial(40_000)
        engine = Engine.from_source(w.program)
        engine.publish_batch(w.head(2).tables, w.head(2).order)
        events = [engine.validate(e) for e in w.events()][2:] if path == "publish" else None
        gc.collect()
        tracemalloc.start()
        before, _ = tracemalloc.get_traced_memory()
        if path == "batch":
            engine.publish_batch(w.tables, w.order)
        else:
            assert events is not None
            for e in events:
                engine.publish(e)
        after, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        queued = sum(engine.metrics()["subscriptions"]["Never"][0]["queues"].values())
        out[path] = {"queued": queued, "bytes_per_event": (after - before) / queued}
    return out


def peers(args: argparse.Namespace) -> list[dict[str, Any]]:
    """CORE through pycer, in its own interpreter (its wheels need Python 3.13): set
    FAIDECS_PYCER_PYTHON or have /tmp/pycer-venv (see benchmarks/peers/README.md)."""
    python = os.environ.get("FAIDECS_PYCER_PYTHON", "/tmp/pycer-venv/bin/python")
    script = HERE / "peers" / "pycer_sequence.py"
    rows: list[dict[str, Any]] = []
    if not Path(python).exists() or not script.exists():
        return [{"engine": "pycer", "available": False, "why": f"no interpreter with pycer at {python}"}]
    for last in (True, False):
        for k in (3, 5):
            w = workloads.sequence(args.n_peer, k, 1_000, last_occurs=last)
            with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
                for e in w.events():
                    f.write(json.dumps({"type": e["type"], **e["attrs"]}) + "\n")
                path = f.name
            try:
                done = subprocess.run(
                    [
                        python,
                        str(script),
                        "--events",
                        path,
                        "--k",
                        str(k),
                        "--window",
                        "1000",
                        "--noise-types",
                        "4",
                        "--semantics",
                        "first",
                    ],
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
            finally:
                os.unlink(path)
            if done.returncode != 0:
                rows.append({"engine": "pycer", "workload": w.name, "available": False, "why": done.stderr[-500:]})
                continue
            peer = json.loads(done.stdout.strip().splitlines()[-1])
            ours, _ = batch_rate(w, Bounds(max_age=1_001), repeat=args.repeat)
            ours_event = per_event(w, "compiled", min(len(w), args.n_event), Bounds(max_age=1_001))["events_per_s"]
            rows.append(
                {
                    "engine": "pycer",
                    "available": True,
                    "workload": w.name,
                    "events": len(w),
                    "peer_events_per_s": peer["events_per_s"],
                    "peer_matches": peer.get("matches"),
                    "faidecs_batch_events_per_s": ours,
                    "faidecs_publish_events_per_s": ours_event,
                    "ratio_batch": ours / peer["events_per_s"],
                    "ratio_publish": ours_event / peer["events_per_s"],
                    "notes": peer.get("notes", ""),
                }
            )
    return rows


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        f"Machine: {m['cpu']}, {m['cores']} cores; Python {m['python']}, numba {m['numba']}, numpy {m['numpy']}.",
        "",
        "| workload | events | compiled batch ev/s | compiled publish() ev/s | reference ev/s "
        "| speed-up batch | speed-up publish() |",
        "|---|---|---|---|---|---|---|",
    ]

    def row(name: str, r: dict[str, Any]) -> None:
        v = r["vs_reference"]
        lines.append(
            f"| {name} | {r['events']:,} | {r.get('batch_events_per_s', v['compiled_batch_events_per_s']):,.0f} | "
            f"{v['compiled_publish_events_per_s']:,.0f} | {v['reference_events_per_s']:,.0f} | "
            f"{v['speedup_batch']:,.0f}x | {v['speedup_publish']:,.1f}x |"
        )

    s = result["stock"]
    row("stock FR+PI", s)
    for r in result["paper"]:
        row(r["workload"], r)
    for r in result.get("sequence_reference", []):
        first = r["vs_reference"]["on_events"]
        row(
            f"{r['workload']} (its first {first:,} events)",
            {**r, "events": first, "batch_events_per_s": r["vs_reference"]["compiled_batch_events_per_s"]},
        )
    row(
        "adversarial MR+I (speed-up on its first events)",
        {
            **result["adversarial"],
            "batch_events_per_s": result["adversarial"]["vs_reference"]["compiled_batch_events_per_s"],
        },
    )
    lat = s["publish"]["latency_us"]
    lines += [
        "",
        f"Stock, per-event publish() of validated events: {s['publish']['events_per_s']:,.0f} ev/s; latency "
        f"p50 {lat['p50']:.1f} µs, p99 {lat['p99']:.1f} µs, p99.9 {lat['p999']:.1f} µs; publish() of raw dicts "
        f"(pydantic validation included): {s['publish_dict_events_per_s']:,.0f} ev/s. Peak memory of the 1M-event "
        f"batch: {s['peak_mib']:.0f} MiB.",
        "",
        "Sequence workload (batch path, time bound of one window):",
        "",
        "| k | window | last type occurs | ev/s |",
        "|---|---|---|---|",
    ]
    for r in result["sequence"]:
        bound = "" if r.get("bounded", True) else " (unbounded)"
        lines.append(
            f"| {r['k']} | {r['window']:,}{bound} | {'yes' if r['last_occurs'] else 'no'} | "
            f"{r['batch_events_per_s']:,.0f} |"
        )
    nomatch = [r["batch_events_per_s"] for r in result["sequence"] if not r["last_occurs"]]
    lines += ["", f"No-match spread (max/min over k and window): {max(nomatch) / min(nomatch):.2f}x.", ""]
    lines += [
        "Adversarial (no match, queues grow): time per event against queue length:",
        "",
        "| queue length | ns/event |",
        "|---|---|",
    ]
    for seg in result["adversarial"]["segments"][:: max(1, len(result["adversarial"]["segments"]) // 8)]:
        lines.append(f"| {seg['queue_length']:,} | {seg['ns_per_event']:,.0f} |")
    c = result["compile"]
    lines += [
        "",
        f"Compile time per conjunction: cold {', '.join(f'{x:.2f} s' for x in c['cold_s'])}; cached "
        f"{', '.join(f'{x * 1e3:.0f} ms' for x in c['cached_s'])} ({'; '.join(c['conjunctions'])}); numba import "
        f"start-up and shared helpers {c['process_start_s']:.2f} s once per process.",
        "",
        f"Memory per queued event: batch path {result['memory']['batch']['bytes_per_event']:.0f} B, per-event "
        f"path {result['memory']['publish']['bytes_per_event']:.0f} B (the published Event objects are kept).",
        "",
        "Peers:",
        "",
    ]
    for p in result["peers"]:
        if not p.get("available"):
            lines.append(f"- {p['engine']}: not run ({p.get('why', '').strip()[:200]})")
        else:
            lines.append(
                f"- {p['engine']} on {p['workload']}: {p['peer_events_per_s']:,.0f} ev/s; faidecs batch "
                f"{p['faidecs_batch_events_per_s']:,.0f} ev/s ({p['ratio_batch']:.1f}x), publish() "
                f"{p['faidecs_publish_events_per_s']:,.0f} ev/s ({p['ratio_publish']:.1f}x)"
            )
    return "\n".join(lines) + "\n"


def plots(result: dict[str, Any], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    names, batch, publish, reference = [], [], [], []
    for r in [result["stock"], *result["paper"]]:
        names.append(r["workload"].replace(" subscribers", " subs"))
        batch.append(r["batch_events_per_s"])
        publish.append(r["vs_reference"]["compiled_publish_events_per_s"])
        reference.append(r["vs_reference"]["reference_events_per_s"])
    fig, ax = plt.subplots(figsize=(8, 4))
    x = np.arange(len(names))
    ax.bar(x - 0.25, batch, 0.25, label="compiled, batch")
    ax.bar(x, publish, 0.25, label="compiled, publish()")
    ax.bar(x + 0.25, reference, 0.25, label="reference")
    ax.set_yscale("log")
    ax.set_xticks(x, names, rotation=15, fontsize=8)
    ax.set_ylabel("events/s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=120)
    files.append("throughput.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    for last in (True, False):
        rows = [r for r in result["sequence"] if r["last_occurs"] is last and r.get("bounded", True)]
        labels = [f"k{r['k']}/w{r['window']}" for r in rows]
        ax.plot(labels, [r["batch_events_per_s"] for r in rows], marker="o", label="match" if last else "no match")
    ax.set_ylabel("events/s (batch)")
    ax.tick_params(axis="x", labelrotation=45, labelsize=7)
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "sequence.png", dpi=120)
    files.append("sequence.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    seg = result["adversarial"]["segments"]
    ax.plot([s["queue_length"] for s in seg], [s["ns_per_event"] for s in seg], marker=".")
    ax.set_xlabel("queue length (events)")
    ax.set_ylabel("ns per event")
    ax.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(out / "adversarial.png", dpi=120)
    files.append("adversarial.png")
    plt.close("all")
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--out", default=str(HERE / "results"), help="folder for latest.json, latest.md, *.png")
    parser.add_argument(
        "--steps", help="comma-separated steps to rerun, merged into the existing latest.json (default: all)"
    )
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    args.n = 1_000_000 // scale
    args.n_event = 200_000 // scale
    args.n_ref = 50_000 // scale
    args.n_adv = 60_000 // scale
    # The reference searches every pair on every arrival here (no incremental search): its cost
    # grows with the cube of the stream, so it gets a short prefix.
    args.n_ref_adv = 600 // scale
    args.n_peer = 200_000 // scale
    args.subscribers = 20
    args.repeat = 1 if args.quick else 3
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"machine": machine(), "quick": args.quick, "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    if args.steps:
        result = {**json.loads((out / "latest.json").read_text()), **result}
    steps: list[tuple[str, Callable[[argparse.Namespace], Any]]] = [
        ("compile", compile_times),
        ("stock", stock),
        ("paper", paper),
        ("sequence", sequence),
        ("sequence_reference", sequence_reference),
        ("adversarial", adversarial),
        ("memory", memory_per_event),
        ("peers", peers),
    ]
    wanted = set(args.steps.split(",")) if args.steps else {name for name, _ in steps}
    for name, step in steps:
        if name not in wanted:
            continue
        began = time.perf_counter()
        result[name] = step(args)
        print(f"[{name}] {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
        (out / "latest.json").write_text(json.dumps(result, indent=2) + "\n")  # a partial run keeps its steps
    text = markdown(result)
    (out / "latest.md").write_text(text)
    result["plots"] = plots(result, out)
    print(text)
    print(f"written: {out / 'latest.json'}, {out / 'latest.md'}, " + ", ".join(str(out / p) for p in result["plots"]))


if __name__ == "__main__":
    main()
