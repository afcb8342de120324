"""Batch replay on Spark: the papers' workload (10 types, 100 subscriptions) from Parquet.

    .venv/bin/python benchmarks/spark.py [--events 10000000] [--master local[2]] [--out benchmarks/results]

Events of types E0..E9 with three integer attributes uniform in [0, 1000], in Parquet files with a
``seq`` order column; each subscription joins k = 2 or 3 types with a threshold on the first type
(a unary predicate, pushed into Spark) and an equality band |x.b - y.b| < 50 between consecutive
types (as benchmarks/workloads.py's ``paper``). Reports events/s end to end (read, check, route,
shuffle, match, write the deliveries as Parquet), the Spark work alone without matching or output
(a ceiling for the pipeline on this machine), the seconds the workers spent in the engines
(summed over workers) against the wall time, and the same events through one embedded engine on
one core as the baseline, in the same run. Writes spark.json and spark.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import machine

TYPES = [f"E{i}" for i in range(10)]


def program(subscriptions: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    decls = "".join(f"type {t}(a: int, b: int, c: int)\n" for t in TYPES)
    subs = []
    for s in range(subscriptions):
        k = int(rng.choice((2, 2, 3)))
        names = [TYPES[i] for i in sorted(rng.choice(len(TYPES), k, replace=False).tolist())]
        preds = [f"{names[0]}.a < {int(rng.integers(200, 900))}"]
        preds += [f"{y}.b - {x}.b < 50 and {x}.b - {y}.b < 50" for x, y in zip(names, names[1:])]
        subs.append(f"subscription P{s}: " + " and ".join(preds))
    return decls + "\n".join(subs) + "\n"


def write_events(folder: Path, n: int, files: int, seed: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    per = -(-n // files)
    for f in range(files):
        lo, hi = f * per, min(n, (f + 1) * per)
        seq = np.arange(lo, hi, dtype=np.int64)
        table = pa.table(
            {
                "seq": seq,
                "id": pa.array([f"e{x}" for x in seq.tolist()]),
                "type": pa.array(np.array(TYPES, dtype=object)[rng.integers(0, len(TYPES), hi - lo)]),
                **{a: rng.integers(0, 1001, hi - lo).astype(np.int64) for a in "abc"},
            }
        )
        pq.write_table(table, folder / f"part-{f:04d}.parquet")


def embedded_rate(text: str, folder: Path, limit: int) -> dict[str, Any]:
    """One engine, one core, the columnar batch path, on the first ``limit`` events."""
    import pyarrow.parquet as pq

    from faidecs import Engine

    table = pq.read_table(sorted(folder.glob("*.parquet"))[0]).slice(0, limit).to_pandas()

    def columns(n: int) -> tuple[dict[str, Any], np.ndarray]:
        types = table["type"].to_numpy(dtype=object)[:n]
        part = table.iloc[:n]
        mine = {t: part[types == t] for t in TYPES}
        return {
            t: {"id": m["id"].to_numpy(dtype=object), **{a: m[a].to_numpy() for a in "abc"}} for t, m in mine.items()
        }, types

    # Kernels loaded before the clock starts, as the Spark workers' engines do (kernels="eager"):
    # a default engine would run its first batch on the reference matcher while they compile.
    Engine.from_source(text, kernels="eager").publish_batch(*columns(1000))
    tables, types = columns(len(table))
    engine = Engine.from_source(text, kernels="eager")
    started = time.perf_counter()
    result = engine.publish_batch(tables, types)
    seconds = time.perf_counter() - started
    return {"events": len(types), "seconds": seconds, "events_per_s": len(types) / seconds, "deliveries": len(result)}


def spark_floor(spark: Any, text: str, folder: Path) -> float:
    """Seconds for the Spark work every replay does before any matching: read and check the
    input, route the copies, shuffle and sort them by group and order (no engine, no output).
    With the engines' own time it bounds what the pipeline can reach on this machine."""
    from pyspark.sql import functions as F

    from faidecs.spark import Plan, read_events
    from faidecs.spark.correlate import GROUP, routed

    started = time.perf_counter()
    flat = read_events(spark, str(folder), Plan.of(text), order_column="seq").withColumn("program", F.lit(0))
    found = routed(flat, {0: text}, spark.sparkContext.defaultParallelism)
    assert found is not None
    rows, _ = found
    rows.repartition(*GROUP).sortWithinPartitions(*GROUP, "order").write.format("noop").mode("overwrite").save()
    seconds = time.perf_counter() - started
    flat.unpersist()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--subscriptions", type=int, default=100)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="8g", help="local mode runs in the driver: its JVM heap")
    parser.add_argument("--baseline-events", type=int, default=300_000)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()

    from faidecs.spark import replay, session, write

    text = program(args.subscriptions, seed=1)
    work = Path(tempfile.mkdtemp(prefix="faidecs-spark-bench-"))
    try:
        started = time.perf_counter()
        (work / "events").mkdir()
        write_events(work / "events", args.events, args.files, seed=2)
        generated = time.perf_counter() - started
        baseline = embedded_rate(text, work / "events", args.baseline_events)
        spark = session(args.master, spark_driver_memory=args.driver_memory)
        spark.conf.set("spark.sql.shuffle.partitions", str(max(8, 4 * spark_cores(args.master))))
        (work / "warm").mkdir()
        write_events(work / "warm", 20_000, 4, seed=3)
        # Start the workers and load the kernels on a small input: not part of the figure.
        replay(spark, text, str(work / "warm"), order_column="seq", with_events=False).count()
        clock = spark.sparkContext.accumulator(0.0)
        started = time.perf_counter()
        deliveries = replay(spark, text, str(work / "events"), order_column="seq", with_events=False, clock=clock)
        write(deliveries, str(work / "out"), "parquet")
        seconds = time.perf_counter() - started
        delivered = spark.read.parquet(str(work / "out")).count()
        floor = spark_floor(spark, text, work / "events")
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "machine": machine(),
        "master": args.master,
        "events": args.events,
        "subscriptions": args.subscriptions,
        "deliveries": delivered,
        "generate_s": round(generated, 1),
        "seconds": round(seconds, 1),
        "events_per_s": round(args.events / seconds),
        "matching_s": round(clock.value, 1),
        "spark_floor_s": round(floor, 1),
        "spark_floor_events_per_s": round(args.events / floor),
        "embedded_one_core": {k: round(v, 3) if isinstance(v, float) else v for k, v in baseline.items()},
    }
    result["ratio_to_embedded"] = round(result["events_per_s"] / baseline["events_per_s"], 2)
    print(json.dumps(result, indent=2))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "spark.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "spark.md").write_text(markdown(result))


def spark_cores(master: str) -> int:
    import os

    inside = master[master.find("[") + 1 : master.find("]")] if "[" in master else "1"
    return (os.cpu_count() or 1) if inside == "*" else int(inside)


def markdown(r: dict[str, Any]) -> str:
    m = r["machine"]
    return (
        f"Spark batch replay, {r['events']:,} events, {r['subscriptions']} subscriptions over 10 types, "
        f"`{r['master']}` on {m['cpu']} ({m['cores']} cores)\n\n"
        "| figure | value |\n|---|---|\n"
        f"| end to end (read, check, route, match, write) | {r['seconds']} s |\n"
        f"| events/s | {r['events_per_s']:,} |\n"
        f"| seconds in the engines (all workers) | {r['matching_s']} s |\n"
        f"| Spark alone: read, check, route, shuffle, sort (no matching, no output) | {r['spark_floor_s']} s "
        f"({r['spark_floor_events_per_s']:,} events/s) |\n"
        f"| deliveries | {r['deliveries']:,} |\n"
        f"| embedded engine, one core, batch path | {r['embedded_one_core']['events_per_s']:,.0f} events/s |\n"
        f"| Spark / embedded | {r['ratio_to_embedded']}x |\n"
    )


if __name__ == "__main__":
    main()
