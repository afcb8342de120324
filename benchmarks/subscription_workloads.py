"""Workloads of ``many_subscriptions.py`` (issue 17): seeded programs and streams, and the worker
functions that measure them through the public ``faidecs.Engine`` API.

Every worker runs in a fresh process (``many_subscriptions.py --worker NAME --json-args ...``)
started with ``PYTHONPATH`` at the code tree being measured and ``FAIDECS_CACHE_DIR`` set, and
returns a JSON-compatible dict. Workers use ``kernels=`` and ``wait_for_kernels()`` where the
engine has them and do without where it does not, so one script measures old and new engines.
"""

from __future__ import annotations

import gc
import inspect
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import Workload

Args = dict[str, Any]
Result = dict[str, Any]

TYPES = "type Quote(symbol: str, price: float)\ntype Trade(symbol: str, price: float, size: int)\n"


# --- the process -------------------------------------------------------------------------------


def proc_status(field: str, pid: int | str = "self") -> int:
    """A ``/proc/PID/status`` memory field (VmRSS, VmHWM) in KiB; 0 if the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children_rss_kib() -> int:
    """VmRSS of this process's descendants: a kernel compiler running as a worker process
    counts towards what the engine costs, so it is reported beside our own."""
    total, todo = 0, [str(os.getpid())]
    while todo:
        pid = todo.pop()
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                kids = task.read_text().split()
            except OSError:
                continue
            for kid in kids:
                total += proc_status("VmRSS", kid)
                todo.append(kid)
    return total


def memory() -> Result:
    return {
        "rss_mib": proc_status("VmRSS") / 1024,
        "hwm_mib": proc_status("VmHWM") / 1024,
        "children_rss_mib": children_rss_kib() / 1024,
    }


STARTED = time.perf_counter()


def phase(name: str) -> None:
    """Progress on stderr: when the parent kills a worker at its time limit, the last phase says
    where it was (from_source of many kernels cannot be interrupted from inside)."""
    print(f"phase: {name} at {time.perf_counter() - STARTED:.1f} s", file=sys.stderr, flush=True)


class Deadline:
    """A measurement's time budget; loops look at it every ``every`` events (a clock read per
    event would show in the per-event figures)."""

    def __init__(self, seconds: float | None):
        self.at = None if seconds is None else time.perf_counter() + seconds
        self.hit = False

    def passed(self) -> bool:
        if self.at is not None and time.perf_counter() > self.at:
            self.hit = True
        return self.hit


# --- the engine under test ---------------------------------------------------------------------


def engine_class() -> Any:
    from faidecs import Engine

    return Engine


def features() -> Result:
    """What the engine in this process offers (the kernels work may or may not have landed)."""
    import faidecs

    Engine = engine_class()
    return {
        "kernels_kw": "kernels" in inspect.signature(Engine.__init__).parameters,
        "wait_for_kernels": hasattr(Engine, "wait_for_kernels"),
        "faidecs_file": faidecs.__file__,
    }


def make_engine(source: str, matcher: str | None, kernels: str | None = None) -> Any:
    """``Engine.from_source`` with the default matcher (and kernel mode) unless one is named;
    ``kernels`` is passed only where the engine takes it."""
    kwargs: dict[str, Any] = {}
    if matcher is not None:
        kwargs["matcher"] = matcher
    if kernels is not None and features()["kernels_kw"]:
        kwargs["kernels"] = kernels
    return engine_class().from_source(source, **kwargs)


def wait_kernels(engine: Any, timeout: float | None = None) -> tuple[float | None, bool]:
    """Seconds until every kernel runs (``wait_for_kernels``) and whether it gave up at
    ``timeout``; None where the engine has no such call (its kernels are all compiled when the
    constructor returns)."""
    if not hasattr(engine, "wait_for_kernels"):
        return None, False
    started = time.perf_counter()
    done = engine.wait_for_kernels(timeout=timeout)
    return time.perf_counter() - started, not done


def matcher_counts(engine: Any) -> dict[str, int]:
    """Conjunctions per matcher kind, from ``engine.matchers()``."""
    counts: dict[str, int] = {}
    for kinds in engine.matchers().values():
        for kind in kinds:
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def built(source: str, args: Args) -> tuple[Any, Result]:
    """An engine for ``source`` at full speed where the engine can say so, with the times."""
    phase("from_source")
    began = time.perf_counter()
    engine = make_engine(source, args.get("matcher"))
    info: Result = {"from_source_s": time.perf_counter() - began}
    phase("wait_for_kernels")
    info["wait_s"], info["wait_timed_out"] = wait_kernels(engine, args.get("wait_timeout_s"))
    info["matchers"] = matcher_counts(engine)
    return engine, info


# --- streams -----------------------------------------------------------------------------------


def quote_trade(n: int, symbols: int, seed: int, lo: float = 1.0, hi: float = 100.0) -> Workload:
    """Quotes and trades, half each, symbols ``S0..`` uniform, prices uniform in [lo, hi) to the
    cent, sizes 1..999. The program is filled in by the caller."""
    rng = np.random.default_rng(seed)
    names = np.array([f"S{k}" for k in range(symbols)], dtype=object)
    order = np.where(rng.random(n) < 0.5, "Quote", "Trade").astype(object)
    nq = int((order == "Quote").sum())
    nt = n - nq
    tables = {
        "Quote": {"symbol": names[rng.integers(0, symbols, nq)], "price": np.round(rng.uniform(lo, hi, nq), 2)},
        "Trade": {
            "symbol": names[rng.integers(0, symbols, nt)],
            "price": np.round(rng.uniform(lo, hi, nt), 2),
            "size": rng.integers(1, 1000, nt).astype(np.int64),
        },
    }
    return Workload("quote-trade", "", order, tables)


def batches(w: Workload, size: int) -> list[tuple[dict[str, dict[str, np.ndarray]], np.ndarray]]:
    """The stream cut into consecutive batches of ``size`` events (tables and order each)."""
    out = []
    seen = {t: 0 for t in w.tables}
    for start in range(0, len(w), size):
        order = w.order[start : start + size]
        tables = {}
        for t, cols in w.tables.items():
            count = int((order == t).sum())
            tables[t] = {a: col[seen[t] : seen[t] + count] for a, col in cols.items()}
            seen[t] += count
        out.append((tables, order))
    return out


# --- Esper kit ---------------------------------------------------------------------------------


def esper_program(n: int) -> str:
    """One subscription per symbol: a trade above the symbol's quote."""
    subs = (
        f'subscription S{k}: Quote.symbol = "S{k}" and Trade.symbol = "S{k}" and Trade.price > Quote.price'
        for k in range(n)
    )
    return TYPES + "\n".join(subs) + "\n"


def timed_publish(engine: Any, events: list[Any], deadline: Deadline) -> tuple[int, float, int]:
    """Publish ``events`` one by one until done or out of time: (events, seconds, deliveries).
    The budget is looked at after chunks that double from one event up to 1,024 while a chunk
    takes under 10 ms: a slow matcher (seconds per event) stops on time, a fast one pays one
    clock read per 1,024 events."""
    publish = engine.publish
    clock = time.perf_counter
    delivered = 0
    done = 0
    chunk = 1
    gc.collect()
    started = clock()
    while done < len(events):
        began = clock()
        for event in events[done : done + chunk]:
            delivered += len(publish(event))
        done = min(len(events), done + chunk)
        if deadline.passed():
            break
        if chunk < 1024 and clock() - began < 0.01:
            chunk *= 2
    return done, clock() - started, delivered


def timed_batches(engine: Any, parts: list[Any], deadline: Deadline) -> tuple[int, float, int]:
    delivered = 0
    done = 0
    gc.collect()
    started = time.perf_counter()
    for tables, order in parts:
        delivered += len(engine.publish_batch(tables, order))
        done += len(order)
        if deadline.passed():
            break
    return done, time.perf_counter() - started, delivered


def rate(done: int, seconds: float) -> Result:
    return {
        "events": done,
        "seconds": seconds,
        "events_per_s": done / seconds if seconds > 0 else None,
        "us_per_event": seconds / done * 1e6 if done else None,
    }


def esper(args: Args) -> Result:
    """events/s of one publishing path ("publish": validated events, "dict", "batch") with N
    subscriptions of the Esper kit shape."""
    n, events, mode = args["subs"], args["events"], args["mode"]
    engine, info = built(esper_program(n), args)
    phase("stream")
    # N symbols: every event concerns exactly one subscription at every N, so the time per
    # event across N shows what the subscriptions an event does not concern cost it.
    w = quote_trade(events, n, args["seed"])
    deadline = Deadline(args.get("budget_s"))
    if mode == "batch":
        parts = batches(w, args["batch_size"])
        phase("measure")
        done, seconds, delivered = timed_batches(engine, parts, deadline)
    else:
        stream: list[Any] = w.events()
        if mode == "publish":  # validation is the user's, before the timed loop
            stream = [engine.validate(e) for e in stream]
        else:  # the validator's first calls (building its pydantic models) are not per-event costs
            for e in stream[:100]:
                engine.validate(e)
        phase("measure")
        done, seconds, delivered = timed_publish(engine, stream, deadline)
    return {
        **info,
        **rate(done, seconds),
        "deliveries": delivered,
        "capped": deadline.hit,
        "matchers_after": matcher_counts(engine),
        **memory(),
    }


# --- desks -------------------------------------------------------------------------------------

# 20 conjunction shapes over Quote and Trade joined on the symbol; ``c`` is a price difference
# (0..5), ``p`` a price level (90..110), ``s`` a size (1..999), ``r`` a ratio (1.00..1.05). Each
# shape differs in structure: operators, attributes, arithmetic, instances, options.
DESK_SHAPES: tuple[tuple[str, str], ...] = (
    ("", "Quote.symbol = Trade.symbol and Trade.price > Quote.price + {c}"),
    ("", "Quote.symbol = Trade.symbol and Trade.price < Quote.price - {c}"),
    ("(disposal I)", "Quote.symbol = Trade.symbol and Trade.size > {s}"),
    ("", "Quote.symbol = Trade.symbol and Trade.price * Trade.size > {p} * {s}"),
    ("(matching MR)", "Quote.symbol = Trade.symbol and Trade.price - Quote.price >= {c} and Trade.size < {s}"),
    ("(disposal I)", "Quote.symbol = Trade.symbol and Quote.price > {p}"),
    ("", "Quote.symbol = Trade.symbol and Trade.price / Quote.price > {r}"),
    ("(matching MR, disposal I)", "Quote.symbol = Trade.symbol and Trade.price != Quote.price and Trade.size >= {s}"),
    ("", "Quote.symbol = Trade.symbol and Quote.price - Trade.price > {c} and Quote.price < {p}"),
    ("(disposal I)", "Quote[0].symbol = Quote[1].symbol and Quote[1].price > Quote[0].price + {c}"),
    ("", "Trade[0].symbol = Trade[1].symbol and Trade[1].size > Trade[0].size + {s}"),
    (
        "(disposal I)",
        (
            "Quote.symbol = Trade[0].symbol and Trade[0].symbol = Trade[1].symbol"
            " and Trade[1].price > Trade[0].price and Trade[0].price > Quote.price + {c}"
        ),
    ),
    ("(disposal IP)", "Quote.symbol = Trade.symbol and Trade.price <= Quote.price * {r}"),
    ("", "Quote.symbol = Trade.symbol and Trade.price + Quote.price > 2 * {p}"),
    ("(matching FRC)", "Quote.symbol = Trade.symbol and (Trade.price - Quote.price) * Trade.size > {c} * {s}"),
    ("(disposal I)", "Quote.symbol = Trade.symbol and Trade.size = {s}"),
    ("(disposal FP)", "Quote.symbol = Trade.symbol and Quote.price >= {p} and Trade.price <= {p} + {c}"),
    (
        "",
        (
            "Quote[0].symbol = Quote[1].symbol and Quote[1].symbol = Trade.symbol"
            " and Quote[1].price > Quote[0].price and Trade.price > Quote[1].price + {c}"
        ),
    ),
    ("(matching MRC, disposal I)", "Quote.symbol = Trade.symbol and -Trade.price < -{p}"),
    ("(disposal I)", "Quote.symbol = Trade.symbol and Trade.price - Quote.price < {c} and Trade.size > {s}"),
)


def desks_program(shapes: int, per_shape: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    subs = []
    for copy in range(per_shape):
        for k, (options, condition) in enumerate(DESK_SHAPES[:shapes]):
            constants = {
                "c": round(float(rng.uniform(0, 5)), 2),
                "p": round(float(rng.uniform(90, 110)), 2),
                "s": int(rng.integers(1, 1000)),
                "r": round(float(rng.uniform(1.0, 1.05)), 4),
            }
            head = f"subscription D{k}_{copy} {options}".rstrip()
            subs.append(f"{head}: {condition.format(**constants)}")
    return TYPES + "\n".join(subs) + "\n"


def queue_sizes(engine: Any) -> Result:
    """Queued events summed over every conjunction and type, and the longest single queue."""
    total, longest = 0, 0
    for conjunctions in engine.metrics()["subscriptions"].values():
        for c in conjunctions:
            for length in c["queues"].values():
                total += length
                longest = max(longest, length)
    return {"queued_total": total, "queue_max": longest}


def desks(args: Args) -> Result:
    """publish() of validated events in windows of the stream while the queues grow."""
    engine, info = built(desks_program(args["shapes"], args["per_shape"], args["seed"]), args)
    phase("stream")
    w = quote_trade(args["events"], args["symbols"], args["seed"] + 1, 90.0, 110.0)
    events = [engine.validate(e) for e in w.events()]
    deadline = Deadline(args.get("budget_s"))
    windows = []
    start = 0
    phase("measure")
    for stop in args["windows"]:
        stop = min(stop, len(events))
        done, seconds, delivered = timed_publish(engine, events[start:stop], deadline)
        windows.append({"from": start, "to": start + done, **rate(done, seconds), "deliveries": delivered})
        windows[-1].update(queue_sizes(engine))
        start += done
        if deadline.hit or start >= len(events):
            break
    return {**info, "windows": windows, "capped": deadline.hit, **memory()}


# --- churn -------------------------------------------------------------------------------------


def churn_subscription(name: str, symbol: str, gap: float) -> str:
    return (
        f'subscription {name}: Quote.symbol = "{symbol}" and Trade.symbol = "{symbol}"'
        f" and Trade.price > Quote.price + {gap}"
    )


def churn(args: Args) -> Result:
    """subscribe / publish a few events / unsubscribe, ``cycles`` times, beside ``base``
    subscriptions of the same shape; every new subscription has new constants."""
    rng = np.random.default_rng(args["seed"])
    symbols = max(1000, args["base"])
    base = [churn_subscription(f"B{k}", f"S{k}", round(float(rng.uniform(0, 5)), 2)) for k in range(args["base"])]
    engine, info = built(TYPES + "\n".join(base) + "\n", args)
    w = quote_trade(args["warm_events"] + args["cycles"] * args["per_cycle"], symbols, args["seed"] + 1)
    events = [engine.validate(e) for e in w.events()]
    phase("warm-up")
    timed_publish(engine, events[: args["warm_events"]], Deadline(None))
    gc.collect()
    before = memory()
    sub_ms: list[float] = []
    unsub_ms: list[float] = []
    deadline = Deadline(args.get("budget_s"))
    cursor = args["warm_events"]
    clock = time.perf_counter
    phase("cycles")
    for cycle in range(args["cycles"]):
        # A symbol of the stream (events can match) and a gap no earlier subscription had.
        text = churn_subscription(f"C{cycle}", f"S{int(rng.integers(0, symbols))}", 5 + cycle / 1000)
        t0 = clock()
        (name,) = engine.subscribe(text)
        t1 = clock()
        for event in events[cursor : cursor + args["per_cycle"]]:
            engine.publish(event)
        cursor += args["per_cycle"]
        t2 = clock()
        engine.unsubscribe(name)
        t3 = clock()
        sub_ms.append((t1 - t0) * 1e3)
        unsub_ms.append((t3 - t2) * 1e3)
        if deadline.passed():
            break
    gc.collect()
    after = memory()
    # A compiler may still be busy with subscriptions that are gone: how long until it is done.
    info["wait_after_s"], _ = wait_kernels(engine, args.get("wait_timeout_s"))
    gc.collect()
    return {
        **info,
        "cycles_done": len(sub_ms),
        "capped": deadline.hit,
        "subscribe_ms": spread(sub_ms),
        "unsubscribe_ms": spread(unsub_ms),
        "memory_before": before,
        "memory_after": after,
        "memory_after_wait": memory(),
        "rss_ratio": after["rss_mib"] / before["rss_mib"],
    }


def spread(values: list[float]) -> Result:
    if not values:
        return {"median": None, "p99": None, "max": None}
    a = np.asarray(values)
    return {"median": float(np.median(a)), "p99": float(np.percentile(a, 99)), "max": float(a.max())}


# --- cold start --------------------------------------------------------------------------------


def cold_start(args: Args) -> Result:
    """from_source with N Esper-kit subscriptions, then dicts published until the first delivery,
    then full speed. Every time is counted from the from_source call. The kernel cache (cold or
    warm) is whatever FAIDECS_CACHE_DIR holds: the parent decides."""
    began_import = time.perf_counter()
    engine_class()
    import_s = time.perf_counter() - began_import
    w = quote_trade(args["events"], max(1000, args["subs"]), args["seed"])
    stream = w.events()
    kernels = args.get("kernels")
    phase("from_source")
    t0 = time.perf_counter()
    engine = make_engine(esper_program(args["subs"]), args.get("matcher"), kernels)
    from_source_s = time.perf_counter() - t0
    first_s, first_events = None, None
    phase("first delivery")
    for k, event in enumerate(stream):
        if engine.publish(event):
            first_s, first_events = time.perf_counter() - t0, k + 1
            break
    at_first = matcher_counts(engine)
    phase("wait_for_kernels")
    waited, timed_out = wait_kernels(engine, args.get("wait_timeout_s"))
    full_s = None if waited is None else time.perf_counter() - t0
    rest = [engine.validate(e) for e in stream[first_events or 0 :][: args["after_events"]]]
    phase("rate after")
    done, seconds, _ = timed_publish(engine, rest, Deadline(args.get("budget_s")))
    return {
        "import_s": import_s,
        "from_source_s": from_source_s,
        "first_delivery_s": first_s,
        "events_to_first": first_events,
        "full_speed_s": full_s,
        "wait_timed_out": timed_out,
        "matchers_at_first": at_first,
        "matchers_after": matcher_counts(engine),
        "rate_after": rate(done, seconds),
        "kernels": kernels,
        **memory(),
    }


# --- a sequence of small programs ---------------------------------------------------------------

KINDS = ("int", "int", "float", "str", "bool")
VALUES: dict[str, Callable[[np.random.Generator], Any]] = {
    "int": lambda rng: int(rng.integers(0, 5)),
    "float": lambda rng: float(rng.choice([0.0, 0.5, 1.0, 2.5, 4.0])),
    "str": lambda rng: str(rng.choice(["x", "y", "z"])),
    "bool": lambda rng: bool(rng.integers(0, 2)),
}
NUMERIC_OPS = ("<", ">", "<=", ">=", "=", "!=")


def literal(kind: str, value: Any) -> str:
    if kind == "str":
        return f'"{value}"'
    if kind == "bool":
        return "true" if value else "false"
    return repr(value)


def small_program(rng: np.random.Generator) -> tuple[str, dict[str, list[tuple[str, str]]]]:
    """2-3 types, 1-3 subscriptions of 1-3 instances with unary and binary predicates on random
    constants (sometimes arithmetic, sometimes a second conjunction, sometimes an ordering of
    strings, which runs on the reference matcher), random options. Returns the text and the
    types' attributes."""
    types: dict[str, list[tuple[str, str]]] = {}
    for t in ["A", "B", "C"][: int(rng.integers(2, 4))]:
        extra = [(f"a{j}", str(rng.choice(KINDS))) for j in range(1, int(rng.integers(1, 4)))]
        types[t] = [("a0", "int"), *extra]  # an int first: numeric predicates always find one
    lines = [f"type {t}({', '.join(f'{a}: {k}' for a, k in attrs)})" for t, attrs in types.items()]
    for s in range(int(rng.integers(1, 4))):
        bodies = [conjunction(rng, types) for _ in range(2 if rng.random() < 0.2 else 1)]
        options = ""
        if rng.random() < 0.7:
            options = (
                f" (matching {rng.choice(['FR', 'MR', 'FRC', 'MRC'])}, disposal {rng.choice(['I', 'PI', 'IP', 'FP'])})"
            )
        lines.append(f"subscription P{s}{options}: " + " or ".join(f"({b})" for b in bodies))
    return "\n".join(lines) + "\n", types


def conjunction(rng: np.random.Generator, types: dict[str, list[tuple[str, str]]]) -> str:
    names = list(types)
    instances = sorted({(str(rng.choice(names)), 0) for _ in range(int(rng.integers(1, 4)))})
    if rng.random() < 0.2:  # a second instance of a type: T[1]
        instances.append((instances[0][0], 1))
    preds = []
    for _ in range(int(rng.integers(1, 4))):
        t, i = instances[int(rng.integers(0, len(instances)))]
        attr, kind = types[t][int(rng.integers(0, len(types[t])))]
        partners = [
            (u, j, b) for u, j in instances for b, k in types[u] if same_family(k, kind) and (u, j, b) != (t, i, attr)
        ]
        if partners and rng.random() < 0.5:
            u, j, b = partners[int(rng.integers(0, len(partners)))]
            right = f"{u}[{j}].{b}"
            if kind in ("int", "float") and rng.random() < 0.3:
                right += f" + {int(rng.integers(0, 3))}"
        else:
            right = literal(kind, VALUES[kind](rng))
        preds.append(f"{t}[{i}].{attr} {operator(rng, kind)} {right}")
    mentioned = " ".join(preds)
    preds += [f"{t}[{i}]" for t, i in instances if f"{t}[{i}]" not in mentioned]  # wildcards
    return " and ".join(preds)


def same_family(a: str, b: str) -> bool:
    numeric = ("int", "float")
    return (a in numeric and b in numeric) or a == b


def operator(rng: np.random.Generator, kind: str) -> str:
    if kind == "bool" or (kind == "str" and rng.random() < 0.8):
        return str(rng.choice(["=", "!="]))
    return str(rng.choice(NUMERIC_OPS))


def small_stream(rng: np.random.Generator, types: dict[str, list[tuple[str, str]]], n: int) -> list[Result]:
    names = list(types)
    out = []
    for k in range(n):
        t = names[int(rng.integers(0, len(names)))]
        out.append({"id": str(k + 1), "type": t, "attrs": {a: VALUES[kind](rng) for a, kind in types[t]}})
    return out


def programs(args: Args) -> Result:
    """``count`` small programs one after another in this process, each on ``events`` dicts."""
    rng = np.random.default_rng(args["seed"])
    deadline = Deadline(args.get("cap_s"))
    times: list[float] = []
    delivered = 0
    kinds: dict[str, int] = {}
    engine_class()  # the import is not the programs' cost
    phase("programs")
    started = time.perf_counter()
    for _ in range(args["count"]):
        text, types = small_program(rng)
        stream = small_stream(rng, types, args["events"])
        t0 = time.perf_counter()
        engine = make_engine(text, args.get("matcher"))
        for event in stream:
            delivered += len(engine.publish(event))
        times.append(time.perf_counter() - t0)
        for kind, count in matcher_counts(engine).items():  # what ran by the program's last event
            kinds[kind] = kinds.get(kind, 0) + count
        del engine
        if deadline.passed():
            break
    total = time.perf_counter() - started
    return {
        "programs_done": len(times),
        "capped": deadline.hit,
        "total_s": total,
        "program_ms": {k: (v * 1e3 if v is not None else None) for k, v in spread(times).items()},
        "deliveries": delivered,
        "matchers_at_end": kinds,
        **memory(),
    }


def prime(args: Args) -> Result:
    """A tiny engine with a throwaway kernel cache: numba's helpers that live in the package's own
    ``__pycache__`` get compiled once per code tree, so that "cold" below means an empty kernel
    cache, not a freshly unpacked package (as after a first use on a machine)."""
    engine = make_engine(esper_program(1), None)
    wait_kernels(engine, args.get("wait_timeout_s"))
    engine.publish({"type": "Quote", "attrs": {"symbol": "S0", "price": 1.0}})
    import numba

    return {**features(), "numba": numba.__version__, "numpy": np.__version__}


WORKERS: dict[str, Callable[[Args], Result]] = {
    "esper": esper,
    "desks": desks,
    "churn": churn,
    "cold_start": cold_start,
    "programs": programs,
    "prime": prime,
}
