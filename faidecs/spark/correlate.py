"""Correlation on Spark: every merger's events, in the total order, through the compiled matcher.

Rows of the flat table (see :mod:`faidecs.spark.ingest`) are copied to each merger whose types
include theirs, grouped by (program, merger, partition value when every subscription at the
merger is partitioned by the same attribute), and each group runs through one engine in one call
of ``publish_batch`` inside a pandas UDF: Arrow batches in, columns to the matcher, no Python
object per event. Mergers (and partition values) run in parallel. The deliveries are sorted back
into the embedded engine's order.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Iterator, Mapping

import numpy as np

from faidecs.matching.engine import Engine
from faidecs.spark.plan import Plan, column

DELIVERY_SCHEMA = (
    "program int, order long, declared int, rank int, subscription string, conjunction int, "
    "relation array<string>, events string"
)


@lru_cache(maxsize=64)
def _plan(text: str) -> Plan:
    return Plan.of(text)


def correlate(flat: Any, programs: Mapping[int, str], *, matcher: str = "compiled", with_events: bool = True) -> Any:
    """Deliveries of every program on its events (``flat`` has a ``program`` column), as a
    DataFrame in :data:`DELIVERY_SCHEMA`, sorted as the embedded engine delivers them."""
    from pyspark.sql import functions as F

    texts = dict(programs)
    pieces = []
    for pid, text in texts.items():
        plan = _plan(text)
        mine = flat.where(F.col("program") == pid)
        for m, merger in enumerate(plan.mergers):
            cols = [column(t, a.name) for t in merger.role for a in plan.types[t].attributes]
            key = F.lit("")
            if merger.partition_by is not None:
                key = F.coalesce(*[F.col(column(t, merger.partition_by)).cast("string") for t in merger.role])
            rows = mine.where(F.col("type").isin(list(merger.role)))
            pieces.append(
                rows.select("program", F.lit(m).alias("_merger"), key.alias("_key"), "order", "type", "id", *cols)
            )
    if not pieces:
        return flat.sparkSession.createDataFrame([], DELIVERY_SCHEMA)
    grouped = pieces[0]
    for more in pieces[1:]:
        grouped = grouped.unionByName(more, allowMissingColumns=True)

    def run(pdf: Any) -> Any:
        return _run_group(pdf, texts, matcher, with_events)

    out = grouped.groupBy("program", "_merger", "_key").applyInPandas(run, DELIVERY_SCHEMA)
    return out.orderBy("program", "order", "declared", "rank")


def _run_group(pdf: Any, texts: Mapping[int, str], matcher: str, with_events: bool) -> Any:
    import pandas as pd

    pid = int(pdf["program"].iloc[0])
    plan = _plan(texts[pid])
    merger = plan.mergers[int(pdf["_merger"].iloc[0])]
    pdf = pdf.sort_values("order", kind="stable").reset_index(drop=True)
    types = pdf["type"].to_numpy(dtype=object)
    orders = pdf["order"].to_numpy(dtype=np.int64)
    tables: dict[str, dict[str, Any]] = {}
    for t in merger.role:
        sel = pdf[types == t]
        table: dict[str, Any] = {"id": sel["id"].to_numpy(dtype=object)}
        for a in plan.types[t].attributes:
            values = sel[column(t, a.name)]
            kind = a.kind.value
            table[a.name] = values.to_numpy(
                dtype=np.int64
                if kind == "int"
                else np.float64
                if kind == "float"
                else bool
                if kind == "bool"
                else object
            )
        tables[t] = table
    engine = Engine(merger.program(plan.types), matcher=matcher)
    result = engine.publish_batch(tables, types)
    by_name = {p.subscription.name: p for p in merger.parts}
    frames = []
    for g in result.groups:
        if len(g.positions) == 0:
            continue
        part = by_name[g.subscription]
        ids = result.ids(g.arrivals)
        events = [_events_json(pdf, plan, row) for row in g.arrivals] if with_events else [None] * len(g.positions)
        frames.append(
            pd.DataFrame(
                {
                    "program": pid,
                    "order": orders[g.positions],
                    "declared": part.declared,
                    "rank": part.ranks[g.conjunction],
                    "subscription": g.subscription,
                    "conjunction": part.indices[g.conjunction],
                    "relation": [list(r) for r in ids],
                    "events": events,
                }
            )
        )
    if not frames:  # typed empty columns: an untyped empty column is float64, not a list
        return pd.DataFrame({c.split()[0]: pd.Series([], dtype=object) for c in DELIVERY_SCHEMA.split(", ")})
    return pd.concat(frames, ignore_index=True)


def _events_json(pdf: Any, plan: Plan, positions: Iterator[int]) -> str:
    """The relation's events in the input JSON shape (a fresh engine: arrival = row)."""
    out = []
    for p in positions:
        row = pdf.iloc[int(p)]
        t = plan.types[row["type"]]
        attrs = {a.name: _plain(row[column(t.name, a.name)]) for a in t.attributes}
        out.append({"id": row["id"], "type": t.name, "attrs": attrs})
    return json.dumps(out, ensure_ascii=False)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


__all__ = ["DELIVERY_SCHEMA", "correlate"]
