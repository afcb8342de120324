"""Streaming correlation: Structured Streaming over a folder of event files, one engine per group
(merger, and partition value) kept in Spark's state store between micro-batches.

Order: every event carries its place in the total order (``order_column``). A micro-batch's rows
of a group are run in that order; every event of a later micro-batch must come after every event
already run in its group (a log appended in order, files named in order). An event that would
have to be slotted before an event already run stops the query with both order values: it is
never run out of order, and never dropped.

Exactly once: the engine's snapshot and the last order run are the group's state in the state
store (RocksDB), committed with the micro-batch, and the file sink commits a micro-batch's
deliveries atomically. A query restarted from its checkpoint re-runs an unfinished micro-batch
from the state of the last finished one, so its deliveries are those of an uninterrupted query.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from faidecs.matching.engine import Engine
from faidecs.matching.records import Matcher
from faidecs.spark.correlate import DELIVERY_SCHEMA, GroupRun, _empty, _groups, _plan, routed
from faidecs.spark.ingest import SparkInputError, typed_rows
from faidecs.spark.plan import SPARK_KINDS, Plan

# Public (docs/architecture.md, "Public API"): a module of its own, not re-exported by
# faidecs.spark, because it imports PySpark's streaming API when it is imported.
__all__ = ["correlate_stream", "stream"]

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
STATE_SCHEMA = "snapshot string, last long"


def stream_schema(plan: Plan, fmt: str, order_column: str) -> str | None:
    """The file source's schema (Structured Streaming does not infer one): JSON lines are read as
    text; CSV holds strings (cast like the batch reader's); Parquet has the program's kinds."""
    if fmt == "json":
        return None
    fields: dict[str, str] = {
        "id": "string",
        "type": "string",
        order_column: "bigint" if fmt == "parquet" else "string",
    }
    for t in plan.types.values():
        for a in t.attributes:
            kind = SPARK_KINDS[a.kind] if fmt == "parquet" else "string"
            if fields.setdefault(a.name, kind) != kind:
                raise SparkInputError(
                    f"attribute {a.name} has two kinds across types: a Parquet stream needs one column type per name"
                )
    return ", ".join(f"`{n}` {k}" for n, k in fields.items())


def read_stream(spark: Any, path: str, plan: Plan, fmt: str, order_column: str, files_per_trigger: int | None) -> Any:
    """The flat table of a streaming file source; bad rows fail the query with file and what."""
    from pyspark.sql import functions as F

    reader = spark.readStream
    if files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", files_per_trigger)
    schema = stream_schema(plan, fmt, order_column)
    if fmt == "json":
        raw = reader.text(path)
        raw = raw.withColumn("_type", F.get_json_object("value", "$.type"))
        order = F.get_json_object("value", f"$.{order_column}")
    elif fmt in ("csv", "parquet"):
        raw = (
            (reader.option("header", True).schema(schema).csv(path))
            if fmt == "csv"
            else reader.schema(schema).parquet(path)
        )
        raw = raw.withColumn("_type", F.col("type").cast("string"))
        order = F.col(order_column)
    else:
        raise SparkInputError(f"unknown format {fmt!r}: json, csv or parquet")
    raw = raw.withColumn("order", order.try_cast("bigint"))
    raw = raw.withColumn("_file", F.input_file_name()).withColumn("_line", F.lit(None).cast("long"))
    flat = typed_rows(raw, plan, fmt)
    where = F.concat(
        F.element_at(F.split("_file", "/"), -1),
        F.lit(": "),
        F.lit(order_column),
        F.lit(" "),
        F.coalesce(F.col("order").cast("string"), F.lit("?")),
    )
    problem = F.coalesce(F.col("_problem"), F.when(F.col("order").isNull(), F.lit(f"{order_column} is not an integer")))
    # raise_error fails the query on the first bad row, naming it: nothing is skipped.
    checked = F.when(problem.isNotNull(), F.raise_error(F.concat(F.lit("bad event: "), where, F.lit(": "), problem)))
    return (
        flat.withColumn("_checked", checked)
        .where(F.col("_checked").isNull())
        .drop("_problem", "_file", "_line", "_checked")
    )


def correlate_stream(
    flat: Any, programs: Mapping[int, str], *, matcher: Matcher = "compiled", with_events: bool = True
) -> Any:
    """A streaming DataFrame of deliveries (:data:`DELIVERY_SCHEMA`) of every program on its
    events. Rows of one micro-batch come in no particular order: sort by (program, order,
    declared, rank, nth) for the embedded engine's delivery order."""
    texts = dict(programs)
    found = routed(flat, texts)
    if found is None:
        raise SparkInputError("no subscription needs any event: nothing to stream")
    rows, layout = found
    processor = _MergerProcessor(texts, dict(layout), matcher, with_events)
    return rows.groupBy("program", "merger", "partition").transformWithStateInPandas(
        processor, DELIVERY_SCHEMA, "Append", "None"
    )


class _MergerProcessor(StatefulProcessor):
    """One group's engine across micro-batches: restored from the state, fed the batch's rows in
    order, saved back."""

    def __init__(self, texts: Mapping[int, str], layout: Mapping[str, str], matcher: Matcher, with_events: bool):
        self.texts = texts
        self.layout = layout
        self.matcher = matcher
        self.with_events = with_events

    def init(self, handle: Any) -> None:
        self.state = handle.getValueState("engine", STATE_SCHEMA)

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        import pandas as pd

        frames = [r for r in rows if len(r)]
        if not frames:
            return
        pdf = pd.concat(frames, ignore_index=True).sort_values("order", kind="stable").reset_index(drop=True)
        pid, m = int(key[0]), int(key[1])
        plan = _plan(self.texts[pid])
        group = _groups(self.texts[pid], None)[m]  # a merger per group: state stays put if parallelism changes
        engine, last = None, None
        if self.state.exists():
            saved, last = self.state.get()
            engine = Engine.restore(json.loads(saved), matcher=self.matcher, kernels="eager")  # as GroupRun
        first = int(pdf["order"].iloc[0])
        if last is not None and first <= last:
            raise SparkInputError(
                f"event at order {first} arrived after order {last} was run for merger "
                f"{'⊔'.join(group.types)}: a stream must be appended in its order"
            )
        orders = pdf["order"].to_numpy()
        if (orders[1:] == orders[:-1]).any():
            twice = int(orders[1:][orders[1:] == orders[:-1]][0])
            raise SparkInputError(f"order {twice} is given to two events: the order must be total")
        run = GroupRun(tuple(key), pid, plan, group, self.layout, self.matcher, self.with_events, engine)
        out = run.feed(pdf)
        self.state.update((json.dumps(run.engine.snapshot()), int(orders[-1])))
        yield out if len(out) else _empty()

    def close(self) -> None:
        pass


def stream(
    spark: Any,
    program: str,
    events: str,
    out: str,
    checkpoint: str,
    *,
    order_column: str,
    fmt: str = "json",
    out_format: str = "parquet",
    matcher: Matcher = "compiled",
    with_events: bool = True,
    files_per_trigger: int | None = None,
    available_now: bool = False,
) -> Any:
    """Start the streaming query of ``program`` over the folder ``events``, writing deliveries to
    ``out`` (Parquet or JSON lines) with its checkpoint at ``checkpoint``. Returns the query."""
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
    plan = Plan.of(program)
    flat = read_stream(spark, events, plan, fmt, order_column, files_per_trigger)
    from pyspark.sql import functions as F

    deliveries = correlate_stream(
        flat.withColumn("program", F.lit(0)), {0: program}, matcher=matcher, with_events=with_events
    )
    columns = ["order", "declared", "rank", "subscription", "conjunction", "relation"] + (
        ["events"] if with_events else []
    )
    if any(sub.extended for sub in plan.subscriptions):  # sort by order, declared, rank, nth
        columns += ["nth", "timeout", "aggregates"]
    writer = deliveries.select(*columns).writeStream.format(out_format).option("checkpointLocation", checkpoint)
    writer = writer.outputMode("append")
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start(out)


__all__ = ["ROCKSDB", "correlate_stream", "read_stream", "stream", "stream_schema"]
