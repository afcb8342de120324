"""The Spark pipeline: replay event logs against a program with PySpark, with exactly the
deliveries of the embedded engine (docs/spark.md).

Needs ``pyspark`` (the ``spark`` extra) and Java 17.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from faidecs.matching.records import Matcher
from faidecs.spark.ingest import SparkInputError, detect_format, read_events
from faidecs.spark.plan import Plan


def session(master: str = "local[2]", app: str = "faidecs", **conf: str) -> Any:
    """A SparkSession for the pipeline: Arrow on, few shuffle partitions, workers on this Python."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # Fewer, larger batches into the engines: each publish_batch call has a fixed cost.
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in conf.items():
        builder = builder.config(key.replace("_", "."), value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def replay(
    spark: Any,
    program: str,
    events: str,
    *,
    fmt: str | None = None,
    order_column: str | None = None,
    matcher: Matcher = "compiled",
    with_events: bool = True,
    clock: Any = None,
    bins: int | None = 0,
) -> Any:
    """The deliveries of ``program`` (text) on the events at ``events`` (a file or directory), as a
    DataFrame with columns order, subscription, conjunction, relation, events, in the order the
    embedded engine delivers them; a program of the extended language adds timeout and
    aggregates (JSON text, null when there are none), as ``Delivery.to_json`` gives them."""
    from pyspark.sql import functions as F

    from faidecs.spark.correlate import correlate

    plan = Plan.of(program)
    flat = read_events(spark, events, plan, fmt=fmt, order_column=order_column).withColumn("program", F.lit(0))
    out = correlate(flat, {0: program}, matcher=matcher, with_events=with_events, clock=clock, bins=bins)
    columns = ["order", "subscription", "conjunction", "relation"] + (["events"] if with_events else [])
    if any(sub.extended for sub in plan.subscriptions):
        columns += ["timeout", "aggregates"]
    return out.select(*columns)


def write(deliveries: Any, out: str, fmt: str = "parquet") -> None:
    """Write deliveries as Parquet or JSON lines (``fmt="json"``), in delivery order."""
    writer = deliveries.write.mode("overwrite")
    if fmt == "parquet":
        writer.parquet(out)
    elif fmt == "json":
        writer.json(out)
    else:
        raise ValueError(f"unknown output format {fmt!r}: parquet or json")


__all__ = ["Plan", "SparkInputError", "detect_format", "read_events", "replay", "session", "write"]
