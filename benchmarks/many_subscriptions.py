"""Issue 17, "Thousands of subscriptions": the engine with many subscriptions, measured as a user
would see it through ``faidecs.Engine``.

    .venv/bin/python benchmarks/many_subscriptions.py [--quick] [--only esper,desks,churn,cold_start,programs]
        [--events N] [--baseline-rev REV | --no-baseline] [--out benchmarks/results]

Workloads (benchmarks/subscription_workloads.py): the Esper kit shape (N subscriptions, one per
symbol), desks (200 subscriptions in 20 shapes joined on the symbol, growing queues), churn
(subscribe / publish / unsubscribe), cold start (empty and warm kernel cache) and a sequence of
small random programs in one process. Each measurement runs in a fresh process with its own
``FAIDECS_CACHE_DIR``; streams are seeded. Targets in the same run: this tree with the default
matcher, this tree with ``matcher="reference"`` and the engine at ``--baseline-rev`` (a temporary
git worktree), the last two capped in size and time where they are slow (the output says where).

Prints Markdown on stdout and writes ``many_subscriptions[-quick].json`` and ``.md`` to ``--out``.
``--quick`` takes about 3.5 min on the 2-core development machine with the engine at 6dee2a0 (most
of it compiling that design's kernels, two to three seconds each); the full size has not been
timed yet: expect tens of minutes, a good part of it the previous design's kernels. ``--tree``
measures another checkout (such as an engineer's worktree) with this script.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import machine  # noqa: E402  (benchmarks/ is put on sys.path just above)

TREE = HERE.parent
WORKLOADS = ("esper", "desks", "churn", "cold_start", "programs")
ESPER_MODES = ("publish", "dict", "batch")
Result = dict[str, Any]


@dataclass
class Target:
    """Code to measure: a tree, a matcher, and a kernel cache kept warm for the whole run (the
    steady-state workloads share it; cold-start and programs get fresh ones)."""

    name: str
    tree: Path
    matcher: str | None = None
    cache: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="faidecs-many-cache-")))
    features: Result = field(default_factory=dict)


# --- running workers ---------------------------------------------------------------------------


def run_worker(target: Target, workload: str, args: Result, timeout: float, cache: Path | None = None) -> Result:
    """One measurement in a fresh interpreter. The worker prints its result as the last line of
    stdout; a worker past ``timeout`` is killed with its whole process group (a kernel compiler
    it started included) and reported with the phase it was in."""
    env = {**os.environ, "PYTHONPATH": str(target.tree), "FAIDECS_CACHE_DIR": str(cache or target.cache)}
    args = {"wait_timeout_s": timeout / 2, **args}  # a kernel wait that hangs is reported, not killed
    if target.matcher is not None:
        args = {**args, "matcher": target.matcher}
    command = [
        sys.executable,
        str(HERE / "many_subscriptions.py"),
        "--worker",
        workload,
        "--json-args",
        json.dumps(args),
    ]
    began = time.perf_counter()
    proc = subprocess.Popen(
        command,
        cwd=target.tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        phases = [line for line in err.splitlines() if line.startswith("phase:")]
        return {"error": f"did not finish in {timeout:.0f} s ({phases[-1] if phases else 'starting'})", "args": args}
    finally:
        _reap_group(proc.pid)
    process_s = time.perf_counter() - began
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}: {err.strip()[-800:]}", "args": args}
    result = json.loads(out.strip().splitlines()[-1])
    return {**result, "args": args, "process_s": process_s}


def _reap_group(pgid: int) -> None:
    """A worker's children (a kernel compiler) must not outlive it into the next measurement."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def worker_main(name: str, json_args: str) -> None:
    sys.path.insert(0, str(HERE))
    import subscription_workloads

    result = subscription_workloads.WORKERS[name](json.loads(json_args))
    print(json.dumps(result))


# --- the baseline tree -------------------------------------------------------------------------


def add_worktree(rev: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix="faidecs-baseline-")) / "tree"
    subprocess.run(
        ["git", "-C", str(TREE), "worktree", "add", "--detach", str(path), rev], check=True, capture_output=True
    )
    return path


def remove_worktree(path: Path) -> None:
    subprocess.run(
        ["git", "-C", str(TREE), "worktree", "remove", "--force", str(path)], check=False, capture_output=True
    )
    shutil.rmtree(path.parent, ignore_errors=True)
    subprocess.run(["git", "-C", str(TREE), "worktree", "prune"], check=False, capture_output=True)


# --- sizes -------------------------------------------------------------------------------------


def plan(opts: argparse.Namespace) -> Result:
    """Sizes per workload: ``main`` for this tree's default matcher, ``reference`` and
    ``baseline`` capped (in subscriptions, events, seconds) where they are slow. ``pick(quick,
    full)``: --quick keeps the whole run to a few minutes even on the previous design, whose
    kernels take seconds each to compile."""

    def pick(quick: Any, full: Any) -> Any:
        return quick if opts.quick else full

    events = opts.events or pick(20_000, 1_000_000)
    many = pick([3, 6], [10, 100, 1_000, 10_000])
    return {
        "timeout_s": pick(300, 1_200),
        "esper": {
            "main": {"subs": many, "events": events, "budget_s": pick(20, 120)},
            "reference": {"subs": many, "events": min(events, pick(5_000, 100_000)), "budget_s": pick(5, 30)},
            "baseline": {
                "subs": pick([3], [10, 100]),
                "events": min(events, pick(5_000, 200_000)),
                "budget_s": pick(5, 30),
            },
            "batch_size": pick(5_000, 250_000),
        },
        "desks": {
            # The second full-size row has the previous design's size, for a ratio.
            "main": pick(
                [{"shapes": 4, "per_shape": 1}], [{"shapes": 20, "per_shape": 10}, {"shapes": 20, "per_shape": 5}]
            ),
            "reference": {"budget_s": pick(5, 60)},
            "baseline": {"shapes": pick(4, 20), "per_shape": pick(1, 5), "budget_s": pick(5, 60)},
            "symbols": pick(1_000, 10_000),
            "events": events,
            "budget_s": pick(10, 120),
        },
        "churn": {
            "base": pick(3, 100),
            "cycles": pick(30, 1_000),
            "per_cycle": 5,
            "warm_events": pick(2_000, 20_000),
            "budget_s": {"main": pick(8, 300), "reference": pick(8, 120), "baseline": pick(4, 60)},
        },
        "cold_start": {
            "main": pick(5, 1_000),
            "baseline": pick(3, 100),
            "events": pick(20_000, 100_000),
            "after_events": pick(5_000, 50_000),
            "budget_s": pick(5, 30),
        },
        "programs": {
            "count": pick(20, 455),
            "events": 50,
            "cap_s": {"main": pick(15, 600), "reference": pick(15, 600), "baseline": pick(8, 120)},
        },
    }


# --- workloads ---------------------------------------------------------------------------------


def esper(targets: dict[str, Target], p: Result, seed: int) -> list[Result]:
    rows = []
    for role, target in targets.items():
        sizes = p["esper"][role]
        modes = ("publish",) if role == "reference" else ESPER_MODES
        for n in sizes["subs"]:
            for mode in modes:
                args = {"subs": n, "events": sizes["events"], "mode": mode, "seed": seed, "budget_s": sizes["budget_s"]}
                args["batch_size"] = p["esper"]["batch_size"]
                rows.append({"target": role, **run_worker(target, "esper", args, p["timeout_s"])})
                log(f"esper {role} N={n} {mode}", rows[-1])
    return rows


def desks(targets: dict[str, Target], p: Result, seed: int) -> list[Result]:
    d = p["desks"]
    rows = []
    for role, target in targets.items():
        shapes = d["main"] if role == "main" else [d[role] if role == "baseline" else d["main"][0]]
        for shape in shapes:
            budget = d["budget_s"] if role == "main" else d[role]["budget_s"]
            events = d["events"]
            args = {
                "shapes": shape["shapes"],
                "per_shape": shape["per_shape"],
                "symbols": d["symbols"],
                "events": events,
                "windows": [events // 100, events // 10, events],
                "seed": seed,
                "budget_s": budget,
            }
            rows.append({"target": role, **run_worker(target, "desks", args, p["timeout_s"])})
            log(f"desks {role} {shape['shapes'] * shape['per_shape']} subs", rows[-1])
    return rows


def churn(targets: dict[str, Target], p: Result, seed: int) -> list[Result]:
    c = p["churn"]
    rows = []
    for role, target in targets.items():
        args = {k: c[k] for k in ("base", "cycles", "per_cycle", "warm_events")}
        args.update(seed=seed, budget_s=c["budget_s"][role])
        rows.append({"target": role, **run_worker(target, "churn", args, p["timeout_s"])})
        log(f"churn {role}", rows[-1])
    return rows


def cold_start(targets: dict[str, Target], p: Result, seed: int) -> list[Result]:
    """Per target and kernel mode: a fresh cache (cold), then the same folder again (warm)."""
    c = p["cold_start"]
    rows = []
    for role, target in targets.items():
        modes: list[str | None] = [None]
        if role != "reference" and target.features.get("kernels_kw"):
            modes.append("eager")
        for kernels in modes:
            cache = Path(tempfile.mkdtemp(prefix="faidecs-many-cold-"))
            try:
                for state in ("cold", "warm") if role != "reference" else ("-",):
                    args = {
                        "subs": c["baseline"] if role == "baseline" else c["main"],
                        "events": c["events"],
                        "after_events": c["after_events"],
                        "budget_s": c["budget_s"],
                        "seed": seed,
                        "kernels": kernels,
                    }
                    rows.append(
                        {
                            "target": role,
                            "cache": state,
                            **run_worker(target, "cold_start", args, p["timeout_s"], cache),
                        }
                    )
                    log(f"cold_start {role} {kernels or 'default'} {state}", rows[-1])
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    return rows


def programs(targets: dict[str, Target], p: Result, seed: int) -> list[Result]:
    c = p["programs"]
    rows = []
    for role, target in targets.items():
        cache = Path(tempfile.mkdtemp(prefix="faidecs-many-programs-"))  # random constants: cold
        try:
            args = {"count": c["count"], "events": c["events"], "seed": seed, "cap_s": c["cap_s"][role]}
            rows.append({"target": role, **run_worker(target, "programs", args, c["cap_s"][role] + 300, cache)})
            log(f"programs {role}", rows[-1])
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    return rows


def log(what: str, row: Result) -> None:
    status = row.get("error") or f"{row.get('process_s', 0):.1f} s"
    print(f"[{what}] {status}", file=sys.stderr, flush=True)


# --- the report --------------------------------------------------------------------------------

ROLE_NAMES = {"main": "this tree", "reference": "reference matcher", "baseline": "previous design"}


def num(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def cell(row: Result | None, value: float | None, digits: int = 0) -> str:
    """A figure, marked * where the time budget cut the measurement short."""
    if row is None:
        return ""
    if "error" in row:
        return "error"
    return num(value, digits) + ("*" if row.get("capped") else "")


def spread(values: list[float | None]) -> float | None:
    vals = [v for v in values if v]
    return max(vals) / min(vals) if len(vals) > 1 else None


def errors(rows: list[Result], what: str) -> list[str]:
    return [f"- {what} {ROLE_NAMES[r['target']]}: {r['error']}" for r in rows if "error" in r]


def ratio(a: Result | None, b: Result | None) -> str:
    """a's rate over b's, marked † where they published different numbers of events."""
    if not a or not b or not a.get("events_per_s") or not b.get("events_per_s"):
        return "—"
    mark = "†" if a["events"] != b["events"] else ""
    return f"{a['events_per_s'] / b['events_per_s']:.1f}x{mark}"


def wait_cell(row: Result) -> str:
    if row.get("wait_s") is None:
        return "n/a"
    return num(row["wait_s"], 2) + (" (timed out)" if row.get("wait_timed_out") else "")


def agreement(result: Result) -> list[str]:
    """Deliveries must not depend on the matcher or the design: compare every pair of
    measurements that published the same events (same program, same stream, same count)."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}

    def add(key: tuple[Any, ...], who: str, value: Any) -> None:
        groups.setdefault(key, {})[who] = value

    for r in result.get("esper", []):
        if "error" not in r:
            add(("esper", r["args"]["subs"], r["events"]), f"{r['target']}/{r['args']['mode']}", r["deliveries"])
    for r in result.get("desks", []):
        if "error" not in r:
            subs = r["args"]["shapes"] * r["args"]["per_shape"]
            for w in r["windows"]:
                add(("desks", subs, w["from"], w["to"]), r["target"], w["deliveries"])
    for r in result.get("cold_start", []):
        if "error" not in r:
            add(("cold start", r["args"]["subs"]), f"{r['target']}/{r['cache']}", r["events_to_first"])
    for r in result.get("programs", []):
        if "error" not in r:
            add(("programs", r["programs_done"]), r["target"], r["deliveries"])
    compared = [g for g in groups.values() if len(g) > 1]
    bad = [f"- {key}: {found}" for key, found in groups.items() if len(set(found.values())) > 1]
    if bad:
        return ["**Deliveries differ** between measurements of the same events:", "", *bad]
    return [f"Deliveries agree wherever measurements published the same events ({len(compared)} such groups)."]


def esper_report(rows: list[Result], p: Result) -> list[str]:
    by = {(r["target"], r["args"]["subs"], r["args"]["mode"]): r for r in rows}
    lines = [
        "## Esper kit: N subscriptions, one per symbol",
        "",
        "| target | N | events | publish() validated ev/s | µs/event | publish(dict) ev/s | publish_batch ev/s "
        "| from_source s | wait_for_kernels s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(t, n) for t, n, _ in by}, key=lambda k: (list(ROLE_NAMES).index(k[0]), k[1]))
    for t, n in keys:
        pub, dic, bat = (by.get((t, n, m)) for m in ESPER_MODES)
        first = pub or dic or bat or {}
        lines.append(
            f"| {ROLE_NAMES[t]} | {n:,} | {num(first.get('events'))} | {cell(pub, (pub or {}).get('events_per_s'))} | "
            f"{cell(pub, (pub or {}).get('us_per_event'), 2)} | {cell(dic, (dic or {}).get('events_per_s'))} | "
            f"{cell(bat, (bat or {}).get('events_per_s'))} | {num(first.get('from_source_s'), 2)} | "
            f"{wait_cell(first)} |"
        )
    for t, n in keys:  # ratios where the previous design ran the same N
        if t != "main" or ("baseline", n, "publish") not in by:
            continue
        cells = [ratio(by.get(("main", n, m)), by.get(("baseline", n, m))) for m in ESPER_MODES]
        lines.append(f"| this tree / previous design | {n:,} | | {cells[0]} | | {cells[1]} | {cells[2]} | | |")
    lines += ["", "Per-event time spread across N (max/min):"]
    for t, role_name in ROLE_NAMES.items():
        parts = []
        for m in ESPER_MODES:
            s = spread([by[k].get("us_per_event") for k in by if k[0] == t and k[2] == m])
            if s is not None:
                parts.append(f"{m} {s:.2f}x")
        if parts:
            lines.append(f"- {role_name}: " + ", ".join(parts))
    e = p["esper"]
    lines += [
        "",
        (
            "Symbols: N (each event concerns exactly one subscription); Quote/Trade half each; "
            f"publish_batch in batches of {e['batch_size']:,} events. "
            f"Caps: reference matcher publish() only, first {e['reference']['events']:,} events, "
            f"{e['reference']['budget_s']} s; previous design N in {e['baseline']['subs']}, first "
            f"{e['baseline']['events']:,} events, {e['baseline']['budget_s']} s; this tree {e['main']['budget_s']} s. "
            "`*`: stopped by its time budget (the events column of its row says how many it published). "
            "`†`: the two rates are over different numbers of events (the previous design's are capped)."
        ),
    ]
    return lines + errors(rows, "esper")


def desks_report(rows: list[Result], p: Result) -> list[str]:
    lines = [
        "## Desks: shapes joined on the symbol, each with its own constants, unbounded queues",
        "",
        "| target | shapes × copies | events | ev/s | µs/event | queued (total / longest) | deliveries |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            continue
        subs = f"{r['args']['shapes']} × {r['args']['per_shape']}"
        for w in r["windows"]:
            capped = {"capped": r["capped"] and w is r["windows"][-1]}
            lines.append(
                f"| {ROLE_NAMES[r['target']]} | {subs} | {w['from']:,}–{w['to']:,} "
                f"| {cell(capped, w['events_per_s'])} | "
                f"{num(w['us_per_event'], 2)} | {w['queued_total']:,} / {w['queue_max']:,} | {w['deliveries']:,} |"
            )
    lines += ["", "Per-event time spread over the windows (max/min):"]
    for r in rows:
        if "error" not in r:
            s = spread([w["us_per_event"] for w in r["windows"]])
            subs = r["args"]["shapes"] * r["args"]["per_shape"]
            lines.append(
                f"- {ROLE_NAMES[r['target']]}, {subs} subscriptions: {num(s, 2)}x; "
                f"from_source {r['from_source_s']:.2f} s"
            )
    mains = {
        r["args"]["shapes"] * r["args"]["per_shape"]: r for r in rows if r["target"] == "main" and "error" not in r
    }
    for b in (r for r in rows if r["target"] == "baseline" and "error" not in r):
        a = mains.get(b["args"]["shapes"] * b["args"]["per_shape"])
        if a and a["windows"] and b["windows"]:
            wa, wb = a["windows"][0], b["windows"][0]
            ratio = wa["events_per_s"] / wb["events_per_s"]
            cut = f" (the previous design's cut at {wb['to']:,} events)" if wb["to"] != wa["to"] else ""
            lines.append(f"- this tree / previous design on the first window: {ratio:.1f}x{cut}")
    d = p["desks"]
    lines += [
        "",
        (
            f"{d['symbols']:,} symbols. Caps: reference matcher {d['reference']['budget_s']} s; previous design "
            f"{d['baseline']['shapes'] * d['baseline']['per_shape']} subscriptions, {d['baseline']['budget_s']} s. "
            "`*`: the window was cut by the time budget."
        ),
    ]
    return lines + errors(rows, "desks")


def churn_report(rows: list[Result], p: Result) -> list[str]:
    lines = [
        "## Churn: subscribe / publish 5 events / unsubscribe",
        "",
        "| target | base subscriptions | cycles | subscribe ms median / p99 | unsubscribe ms median / p99 "
        "| RSS MiB before → after | children RSS MiB after |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            continue
        s, u = r["subscribe_ms"], r["unsubscribe_ms"]
        lines.append(
            f"| {ROLE_NAMES[r['target']]} | {r['args']['base']} | {cell(r, r['cycles_done'])} "
            f"| {num(s['median'], 2)} / {num(s['p99'], 2)} | {num(u['median'], 2)} / {num(u['p99'], 2)} "
            f"| {r['memory_before']['rss_mib']:.0f} → {r['memory_after']['rss_mib']:.0f} ({r['rss_ratio']:.2f}x) "
            f"| {r['memory_after']['children_rss_mib']:.0f} |"
        )
    b = p["churn"]["budget_s"]
    lines += [
        "",
        f"Time budgets: this tree {b['main']} s, reference {b['reference']} s, "
        f"previous design {b['baseline']} s (`*`: hit).",
    ]
    return lines + errors(rows, "churn")


def cold_report(rows: list[Result], p: Result) -> list[str]:
    lines = [
        "## Cold start: Esper kit, times from the from_source call",
        "",
        "| target | kernels | cache | N | import s | from_source s | first delivery s (events) | full speed s "
        "| ev/s after | matchers at first delivery |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            continue
        first = f"{num(r['first_delivery_s'], 3)} ({num(r['events_to_first'])})"
        full = (
            "n/a"
            if r["full_speed_s"] is None
            else num(r["full_speed_s"], 2) + (" (timed out)" if r["wait_timed_out"] else "")
        )
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(r["matchers_at_first"].items()))
        lines.append(
            f"| {ROLE_NAMES[r['target']]} | {r['kernels'] or 'default'} | {r['cache']} | {r['args']['subs']:,} | "
            f"{r['import_s']:.2f} | {r['from_source_s']:.2f} | {first} | {full} | "
            f"{num(r['rate_after']['events_per_s'])} | {kinds} |"
        )
    return lines + errors(rows, "cold start")


def programs_report(rows: list[Result], p: Result) -> list[str]:
    c = p["programs"]
    lines = [
        f"## A sequence of {c['count']} small programs in one process ({c['events']} events each, empty kernel cache)",
        "",
        "| target | programs done | total s | process s | ms/program median / p99 / max | peak RSS MiB "
        "| RSS at end MiB | deliveries |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            continue
        ms = r["program_ms"]
        done = f"{r['programs_done']}" + (f" (cap {r['args']['cap_s']} s hit)" if r["capped"] else "")
        lines.append(
            f"| {ROLE_NAMES[r['target']]} | {done} | {r['total_s']:.1f} | {r['process_s']:.1f} "
            f"| {num(ms['median'], 1)} / {num(ms['p99'], 1)} / {num(ms['max'], 1)} "
            f"| {r['hwm_mib']:.0f} | {r['rss_mib']:.0f} | {r['deliveries']:,} |"
        )
    lines += [
        "",
        (
            "process s: the worker process from start to exit (interpreter start, import and shutdown included: "
            "a kernel compiler still running at exit shows here)."
        ),
    ]
    return lines + errors(rows, "programs")


def goals(result: Result) -> list[str]:
    """The issue's goals, judged on this tree's default matcher."""
    out: list[str] = []

    def judge(text: str, value: float | None, ok: bool | None, missing: str = "not measured") -> None:
        verdict = missing if value is None or ok is None else ("met" if ok else "**not met**")
        out.append(f"- {text}: {verdict}")

    main = [r for r in result.get("esper", []) if r["target"] == "main" and "error" not in r]
    for mode, goal in (("publish", 300_000), ("dict", 150_000), ("batch", 3_000_000)) if "esper" in result else ():
        rates = [r["events_per_s"] for r in main if r["args"]["mode"] == mode]
        low = min(rates) if rates else None
        judge(f"Esper {mode} ≥ {goal:,} ev/s at every N (lowest {num(low)})", low, None if low is None else low >= goal)
        s = spread([r["us_per_event"] for r in main if r["args"]["mode"] == mode])
        judge(f"Esper {mode} per-event time flat across N, ≤ 1.5x ({num(s, 2)}x)", s, None if s is None else s <= 1.5)
    for r in (r for r in result.get("desks", []) if r["target"] == "main" and "error" not in r):
        low = min(w["events_per_s"] for w in r["windows"])
        s = spread([w["us_per_event"] for w in r["windows"]])
        subs = r["args"]["shapes"] * r["args"]["per_shape"]
        judge(f"desks ({subs} subscriptions) ≥ 200,000 ev/s in every window (lowest {num(low)})", low, low >= 200_000)
        judge(f"desks ({subs} subscriptions) flat, ≤ 1.5x ({num(s, 2)}x)", s, None if s is None else s <= 1.5)
    for r in (r for r in result.get("churn", []) if r["target"] == "main" and "error" not in r):
        worst = max(r["subscribe_ms"]["p99"] or 0, r["unsubscribe_ms"]["p99"] or 0)
        judge(f"churn ≤ 5 ms per subscribe and unsubscribe at p99 ({worst:.2f} ms)", worst, worst <= 5)
        judge(f"churn memory back within 10% ({r['rss_ratio']:.2f}x)", r["rss_ratio"], r["rss_ratio"] <= 1.10)
    for r in (r for r in result.get("cold_start", []) if r["target"] == "main" and r.get("cache") == "cold"):
        if "error" in r:
            judge("cold start", None, None)
            continue
        mode = r["kernels"] or "default"
        judge(f"cold start ({mode}) from_source ≤ 1 s ({r['from_source_s']:.2f} s)", 1, r["from_source_s"] <= 1)
        first = r["first_delivery_s"]
        judge(
            f"cold start ({mode}) first delivery ≤ 1 s ({num(first, 2)} s)",
            first,
            None if first is None else first <= 1,
        )
        full = r["full_speed_s"]
        judge(
            f"cold start ({mode}) full speed ≤ 30 s ({num(full, 2)} s)",
            full,
            None if full is None else full <= 30 and not r["wait_timed_out"],
            "n/a (the engine has no wait_for_kernels)",
        )
    for r in (r for r in result.get("programs", []) if r["target"] == "main" and "error" not in r):
        ok = not r["capped"] and r["total_s"] < 120
        judge(
            f"programs < 2 min ({r['programs_done']} in {r['total_s']:.0f} s, peak RSS {r['hwm_mib']:.0f} MiB)", 1, ok
        )
    return out


def markdown(result: Result) -> str:
    m = result["machine"]
    lines = [f"Machine: {m['cpu']}, {m['cores']} cores; Python {m['python']}. Started {result['started']}."]
    if result["quick"]:
        lines.append("**Quick run: small sizes, for development; not to be quoted.**")
    lines.append("")
    for role, t in result.get("targets", {}).items():
        feats = (
            "error"
            if "error" in t
            else f"kernels= {'yes' if t.get('kernels_kw') else 'no'}, "
            f"wait_for_kernels {'yes' if t.get('wait_for_kernels') else 'no'}"
        )
        lines.append(f"- {ROLE_NAMES[role]}: {t['name']}, {t['tree']} ({feats})")
    reports = {
        "esper": esper_report,
        "desks": desks_report,
        "churn": churn_report,
        "cold_start": cold_report,
        "programs": programs_report,
    }
    for name, report in reports.items():
        if name in result:
            lines += ["", *report(result[name], result["sizes"])]
    lines += ["", "## Checks", "", *agreement(result)]
    lines += [
        "",
        "## Goals (this tree, default matcher)" + (" — quick sizes, not the goals' sizes" if result["quick"] else ""),
        "",
    ]
    lines += goals(result)
    return "\n".join(lines) + "\n"


# --- main --------------------------------------------------------------------------------------


def prime(target: Target, timeout: float) -> Result:
    """Compile the package's own numba helpers for the tree and learn what its engine offers."""
    cache = Path(tempfile.mkdtemp(prefix="faidecs-many-prime-"))
    try:
        return run_worker(target, "prime", {}, timeout, cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes for development (~3 min); not to be quoted")
    parser.add_argument("--only", help=f"comma-separated workloads: {','.join(WORKLOADS)}")
    parser.add_argument("--events", type=int, help="events for the Esper and desks workloads (default 1,000,000)")
    parser.add_argument("--baseline-rev", default="6dee2a0", help="the previous design's commit (default 6dee2a0)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the previous design")
    parser.add_argument("--tree", default=str(TREE), help="the code to measure (default: this checkout)")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--json-args", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        worker_main(opts.worker, opts.json_args or "{}")
        return
    wanted = opts.only.split(",") if opts.only else list(WORKLOADS)
    unknown = set(wanted) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    sizes = plan(opts)
    result: Result = {
        "machine": machine(),
        "quick": opts.quick,
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "sizes": sizes,
        "seed": opts.seed,
    }
    m = result["machine"]
    # The report (stdout) starts with the machine too; this line is for whoever watches a long run.
    print(f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}.", file=sys.stderr, flush=True)
    tree = Path(opts.tree).resolve()
    targets = {
        "main": Target("this tree", tree),
        "reference": Target('this tree, matcher="reference"', tree, "reference"),
    }
    baseline_tree = None if opts.no_baseline else add_worktree(opts.baseline_rev)
    if baseline_tree is not None:
        targets["baseline"] = Target(f"previous design ({opts.baseline_rev})", baseline_tree)
    try:
        for role, target in targets.items():
            target.features = prime(target, sizes["timeout_s"])
            log(f"prime {role}", target.features)
        result["targets"] = {role: {"name": t.name, "tree": str(t.tree), **t.features} for role, t in targets.items()}
        if baseline_tree is not None:
            result["baseline_rev"] = subprocess.run(
                ["git", "-C", str(baseline_tree), "rev-parse", "HEAD"], check=False, capture_output=True, text=True
            ).stdout.strip()
        steps = {"esper": esper, "desks": desks, "churn": churn, "cold_start": cold_start, "programs": programs}
        for name in WORKLOADS:
            if name in wanted:
                began = time.perf_counter()
                result[name] = steps[name](targets, sizes, opts.seed)
                print(f"[{name}] done in {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)
    finally:
        for t in targets.values():
            shutil.rmtree(t.cache, ignore_errors=True)
        if baseline_tree is not None:
            remove_worktree(baseline_tree)
    text = markdown(result)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "many_subscriptions" + ("-quick" if opts.quick else "")
    (out / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / f"{stem}.md").write_text(text)
    print(text)
    print(f"written: {out / (stem + '.json')}, {out / (stem + '.md')}")


if __name__ == "__main__":
    main()
