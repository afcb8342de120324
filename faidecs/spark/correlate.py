"""Correlation on Spark: every merger's events, in the total order, through the compiled matcher.

A program's mergers run in groups (:meth:`~faidecs.spark.plan.Plan.groups`): for batch replay a
few bins of mergers, one engine each, so that an event is copied once per bin rather than once per
merger; for streams one merger per group. Rows of the flat table (see :mod:`faidecs.spark.ingest`)
are copied to each group whose types include theirs and whose propagated unary predicates they
pass (:mod:`faidecs.spark.pushdown`), in one pass over the input. The copies are hash-partitioned
by group (program, group, and partition value for a partitioned merger) and sorted by (group,
order) within each partition, and ``mapInArrow`` walks each partition's Arrow batches: a group's
rows run through one engine (:class:`GroupRun`), batch after batch, by ``publish_batch`` (Arrow
columns to the matcher and relations back as a list column, no Python object per event but ids),
so memory is bounded by a batch, not a group. Groups run in parallel. The deliveries are sorted
back into the embedded engine's order."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from faidecs.grammar.model import Kind
from faidecs.matching.engine import Engine
from faidecs.matching.events import Event
from faidecs.matching.records import Matcher
from faidecs.spark.plan import COLUMN_SEPARATOR, Group, Plan, column
from faidecs.spark.pushdown import column_sql, group_filter, type_condition_sql

# ``nth``: a delivery's place among its conjunction's deliveries at one event (matching ALL may
# deliver several); ``timeout`` and ``aggregates`` (JSON) as in Delivery.to_json.
DELIVERY_SCHEMA = (
    "program int, order long, declared int, rank int, nth int, subscription string, conjunction int, "
    "relation array<string>, events string, timeout boolean, aggregates string"
)
#: The columns that put deliveries in the embedded engine's order.
DELIVERY_ORDER = ("program", "order", "declared", "rank", "nth")
# No leading underscores: transformWithStateInPandas hands rows over as namedtuples, which rename them.
GROUP = ["program", "merger", "partition"]
# Programs routed by one expression: past a few dozen, the generated code outgrows what Janino
# compiles and Spark falls back to interpreting it, slowly.
PROGRAMS_PER_SCAN = 16
_NUMPY = {Kind.INT: np.int64, Kind.FLOAT: np.float64, Kind.BOOL: bool, Kind.STR: object}


@lru_cache(maxsize=1024)
def _plan(text: str) -> Plan:
    return Plan.of(text)


@lru_cache(maxsize=1024)
def _groups(text: str, bins: int | None) -> tuple[Group, ...]:
    return _plan(text).groups(bins)


def slots(schema: Any) -> dict[str, str]:
    """Each attribute column ``T$a`` of the flat table to a narrow slot column (``slot_bigint0``,
    ``slot_double1``...), shared by the types: a row holds only its own type's attributes, so the
    j-th attribute of a kind of every type can travel in one column. The shuffle then moves as
    many attribute columns as the widest type has, not as all types together."""
    out: dict[str, str] = {}
    used: dict[tuple[str, str], int] = {}
    for f in schema.fields:
        if COLUMN_SEPARATOR not in f.name:
            continue
        type_name = f.name.split(COLUMN_SEPARATOR, 1)[0]
        kind = f.dataType.simpleString()
        j = used[(type_name, kind)] = used.get((type_name, kind), -1) + 1
        out[f.name] = f"slot_{kind}{j}"
    return out


def routed(flat: Any, programs: Mapping[int, str], bins: int | None = None) -> tuple[Any, dict[str, str]] | None:
    """Each row copied to the mergers that need it, with columns ``program``, ``merger``,
    ``partition``, ``order``, ``type``, ``id`` and the slot columns, and the slot of each attribute
    column (None: no merger needs any row)."""
    from pyspark.sql import functions as F

    layout = slots(flat.schema)
    narrow: dict[str, list[Any]] = {}
    for name, slot in layout.items():
        narrow.setdefault(slot, []).append(F.col(name))
    packed = [(F.coalesce(*cols) if len(cols) > 1 else cols[0]).alias(slot) for slot, cols in sorted(narrow.items())]
    pids = sorted(programs)
    pieces = []
    for start in range(0, len(pids), PROGRAMS_PER_SCAN):
        chunk = pids[start : start + PROGRAMS_PER_SCAN]
        routes = route_sql({pid: programs[pid] for pid in chunk}, bins)
        if routes is None:
            continue
        rows = flat.where(F.col("program").isin(chunk)) if len(chunk) < len(pids) else flat
        pieces.append(
            rows.select("program", "order", "type", "id", *packed, F.explode(F.expr(routes)).alias("_r")).select(
                "program",
                F.col("_r.m").alias("merger"),
                F.col("_r.k").alias("partition"),
                "order",
                "type",
                "id",
                *sorted(narrow),
            )
        )
    if not pieces:
        return None
    out = pieces[0]
    for more in pieces[1:]:
        out = out.unionByName(more)
    return out, layout


def correlate(
    flat: Any,
    programs: Mapping[int, str],
    *,
    matcher: Matcher = "compiled",
    with_events: bool = True,
    clock: Any = None,
    bins: int | None = 0,
) -> Any:
    """Deliveries of every program on its events (``flat`` has a ``program`` column), as a
    DataFrame in :data:`DELIVERY_SCHEMA`, sorted as the embedded engine delivers them.

    ``bins``: each program's (unpartitioned) mergers run in at most this many engines, so an event
    is copied once per bin, not once per merger; 0 (the default): the cluster's default
    parallelism (with many subscriptions every bin needs most types, so each bin more is nearly
    one more copy of the input: 2 bins ran the benchmark 12% faster than 4 on local[2]); None:
    one engine per merger.

    ``clock``: a Spark accumulator that receives the seconds the workers spend in the engines
    (for benchmarks: time in matching against time in Spark)."""
    texts = dict(programs)
    if bins == 0:
        bins = flat.sparkSession.sparkContext.defaultParallelism
    found = routed(flat, texts, bins)
    if found is None:
        return flat.sparkSession.createDataFrame([], DELIVERY_SCHEMA)
    rows, layout = found
    ordered = rows.repartition(*GROUP).sortWithinPartitions(*GROUP, "order")

    def run(batches: Iterable[Any]) -> Iterator[Any]:
        return run_sorted(batches, texts, layout, matcher, with_events, clock, bins)

    from pyspark import StorageLevel

    # Kept: the global sort samples its input first, which would otherwise run every engine twice.
    out = ordered.mapInArrow(run, DELIVERY_SCHEMA).persist(StorageLevel.MEMORY_AND_DISK)
    return out.orderBy(*DELIVERY_ORDER)


def route_sql(programs: Mapping[int, str], bins: int | None = None) -> str | None:
    """Per row, the mergers it goes to and its partition key there: an array of (m, k) structs,
    as one SQL expression (a CASE on program and type). One parsed expression rather than a
    Column built call by call: building thousands of Columns through Py4J took longer than
    running the job."""
    cases = []
    for pid, text in programs.items():
        plan = _plan(text)
        targets: dict[str, list[str]] = {}
        for m, group in enumerate(_groups(text, bins)):
            filt = group_filter(group)
            for t in group.types:
                key = "''"
                if group.partition_by is not None:
                    kind = plan.types[t].attributes[plan.types[t].position(group.partition_by)].kind
                    key = _key_sql(column_sql(t, group.partition_by), kind)
                entry = f"named_struct('m', {m}, 'k', {key})"
                condition = type_condition_sql(filt, t)
                targets.setdefault(t, []).append(entry if condition is None else f"IF({condition}, {entry}, NULL)")
        for t, entries in targets.items():
            cases.append(
                f"WHEN program = {int(pid)} AND type = '{t}' "
                f"THEN filter(array({', '.join(entries)}), e -> e IS NOT NULL)"
            )
    return f"CASE {' '.join(cases)} END" if cases else None


def _key_sql(value: str, kind: Kind) -> str:
    """A partition value as a grouping key; -0.0 is 0.0 (as in the engine's dict of partitions)."""
    if kind is Kind.FLOAT:
        value = f"IF({value} = 0.0D, 0.0D, {value})"
    return f"CAST({value} AS STRING)"


def run_sorted(
    batches: Iterable[Any],
    texts: Mapping[int, str],
    layout: Mapping[str, str],
    matcher: Matcher,
    with_events: bool,
    clock: Any = None,
    bins: int | None = None,
) -> Iterator[Any]:
    """Walk Arrow record batches sorted by (group, order): one engine per group, fed run after run."""
    import pyarrow.compute as pc

    current: GroupRun | None = None
    spent = 0.0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        programs = batch.column("program").to_numpy(zero_copy_only=False)
        mergers = batch.column("merger").to_numpy(zero_copy_only=False)
        partitions = pc.dictionary_encode(batch.column("partition"))
        codes = partitions.indices.to_numpy(zero_copy_only=False)
        changed = (programs[1:] != programs[:-1]) | (mergers[1:] != mergers[:-1]) | (codes[1:] != codes[:-1])
        bounds = [0, *(np.flatnonzero(changed) + 1).tolist(), batch.num_rows]
        for a, b in zip(bounds, bounds[1:]):
            key = (int(programs[a]), int(mergers[a]), partitions.dictionary[int(codes[a])].as_py())
            if current is None or current.key != key:
                pid, m, _ = key
                plan = _plan(texts[pid])
                current = GroupRun(key, pid, plan, _groups(texts[pid], bins)[m], layout, matcher, with_events)
            started = time.perf_counter()
            out = current.feed_arrow(batch.slice(a, b - a))
            spent += time.perf_counter() - started
            if out is not None:
                yield out
    if clock is not None:
        clock.add(spent)


class GroupRun:
    """One group's engine and what it needs to turn batches of rows into delivery rows."""

    def __init__(
        self,
        key: Any,
        pid: int,
        plan: Plan,
        group: Group,
        layout: Mapping[str, str],
        matcher: Matcher,
        with_events: bool,
        engine: Engine | None = None,
    ):
        self.key = key
        self.layout = layout
        self.pid = pid
        self.plan = plan
        self.group = group
        self.with_events = with_events
        # A replay is bound by throughput and its first batch is large: load (or compile) the
        # kernels before it rather than run it on the reference matcher meanwhile.
        self.engine = engine or Engine(group.program(plan.types), matcher=matcher, kernels="eager")
        self.parts = dict(group.named)
        self.names = list(group.types)
        # The extended language's deliveries carry timeouts and aggregates, and several may come
        # from one event (ALL) or have varying lengths (groups): such a group (alone in its
        # engine, Plan.groups) publishes its rows one by one, as publish_batch does inside.
        self.one_by_one = group.extended

    def feed_arrow(self, batch: Any) -> Any:
        """The deliveries of an Arrow record batch of rows (sorted by order, all of this group), as
        a record batch of :data:`DELIVERY_SCHEMA` (None: no delivery); the engine keeps its state
        for the next rows. Columns go from Arrow to the matcher as arrays, and the relations back
        as one list column: no Python object per row but the ids."""
        import pyarrow as pa
        import pyarrow.compute as pc

        encoded = pc.dictionary_encode(batch.column("type"))
        index = {t: i for i, t in enumerate(self.names)}
        lookup = np.array([index.get(t, -1) for t in encoded.dictionary.to_pylist()], dtype=np.int64)
        codes = lookup[encoded.indices.to_numpy(zero_copy_only=False)]
        if (codes < 0).any():
            raise AssertionError(f"a row of a type outside merger {'⊔'.join(self.names)} reached it")
        tables: dict[str, dict[str, Any]] = {}
        for i, t in enumerate(self.names):
            wanted = ["id"] + [self.layout[column(t, a.name)] for a in self.plan.types[t].attributes]
            mine = batch.select(wanted).filter(pa.array(codes == i))  # other types' rows hold nulls here
            table: dict[str, Any] = {"id": mine.column(0).to_numpy(zero_copy_only=False)}
            for j, a in enumerate(self.plan.types[t].attributes, start=1):
                table[a.name] = mine.column(j).to_numpy(zero_copy_only=False)
            tables[t] = table
        orders = batch.column("order").to_numpy(zero_copy_only=False)
        if self.one_by_one:
            out = self._each(tables, np.asarray(self.names, dtype=object)[codes], orders)
            return None if out is None else self._arrow(out)
        result = self.engine.publish_batch(tables, codes)
        rows = None
        if self.with_events:
            slots = sorted(set(self.layout.values()) & set(batch.schema.names))
            rows = _Rows(
                np.asarray(self.names, dtype=object)[codes],
                batch.column("id").to_numpy(zero_copy_only=False),
                # Values as Python objects: numpy would turn an int column with nulls to floats.
                {c: _objects(batch.column(c)) for c in slots},
                self.plan,
                self.layout,
                result,
            )
        out = self._deliveries(result, orders, rows)
        return None if out is None else self._arrow(out)

    def _arrow(self, out: dict[str, Any]) -> Any:
        import pyarrow as pa

        n = len(out["order"])
        offsets = pa.array(out["offsets"], pa.int32())
        return pa.RecordBatch.from_arrays(
            [
                pa.array(np.full(n, self.pid, dtype=np.int32)),
                pa.array(out["order"], pa.int64()),
                pa.array(out["declared"], pa.int32()),
                pa.array(out["rank"], pa.int32()),
                pa.array(out["nth"], pa.int32()),
                pa.array(out["subscription"], pa.string()),
                pa.array(out["conjunction"], pa.int32()),
                pa.ListArray.from_arrays(offsets, pa.array(out["ids"], pa.string())),
                pa.array(out["events"], pa.string()) if out["events"] is not None else pa.nulls(n, pa.string()),
                pa.array(out["timeout"], pa.bool_()),
                pa.array(out["aggregates"], pa.string()),
            ],
            schema=_arrow_schema(),
        )

    def feed(self, pdf: Any) -> Any:
        """As :meth:`feed_arrow`, for a pandas DataFrame of rows (streaming hands those over);
        returns a DataFrame of :data:`DELIVERY_SCHEMA`."""
        import pandas as pd

        types = pdf["type"].to_numpy(dtype=object)
        tables: dict[str, dict[str, Any]] = {}
        for t in self.names:
            mine = pdf[types == t]  # before the cast: other types' rows hold nulls here
            table: dict[str, Any] = {"id": mine["id"].to_numpy(dtype=object)}
            for a in self.plan.types[t].attributes:
                table[a.name] = mine[self.layout[column(t, a.name)]].to_numpy(dtype=_NUMPY[a.kind])
            tables[t] = table
        orders = pdf["order"].to_numpy(dtype=np.int64)
        if self.one_by_one:
            out = self._each(tables, types, orders)
        else:
            result = self.engine.publish_batch(tables, types)
            rows = None
            if self.with_events:
                columns = {c: pdf[c].to_numpy(dtype=object) for c in set(self.layout.values()) if c in pdf}
                rows = _Rows(types, pdf["id"].to_numpy(dtype=object), columns, self.plan, self.layout, result)
            out = self._deliveries(result, orders, rows)
        if out is None:
            return _empty()
        ids, offsets = out.pop("ids"), out.pop("offsets")
        out["relation"] = [ids[a:b].tolist() for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
        return pd.DataFrame(
            {"program": self.pid, **{c.split()[0]: out.get(c.split()[0]) for c in DELIVERY_SCHEMA.split(", ")[1:]}}
        )

    def _deliveries(self, result: Any, orders: np.ndarray, rows: _Rows | None) -> dict[str, Any] | None:
        """Delivery columns as arrays, group after group (the global sort restores delivery
        order); a relation is ``ids[offsets[r]:offsets[r + 1]]``."""
        live = [g for g in result.groups if len(g.positions)]
        if not live:
            return None
        sizes = [len(g.positions) for g in live]
        total = sum(sizes)
        parts = [self.parts[g.subscription] for g in live]
        widths = np.repeat([g.arrivals.shape[1] for g in live], sizes)
        offsets = np.zeros(len(widths) + 1, dtype=np.int64)
        np.cumsum(widths, out=offsets[1:])
        return {
            "order": np.concatenate([orders[g.positions] for g in live]),
            "declared": np.repeat([p.declared for p in parts], sizes),
            "rank": np.repeat([p.ranks[g.conjunction] for p, g in zip(parts, live)], sizes),
            "subscription": np.repeat(np.asarray([p.subscription.name for p in parts], dtype=object), sizes),
            "conjunction": np.repeat([p.indices[g.conjunction] for p, g in zip(parts, live)], sizes),
            "ids": np.concatenate([result.ids(g.arrivals).reshape(-1) for g in live]),
            "offsets": offsets,
            "events": [rows.relation(r) for g in live for r in g.arrivals] if rows else None,
            # The papers' language delivers at most one relation per conjunction and event.
            "nth": np.zeros(total, dtype=np.int32),
            "timeout": np.zeros(total, dtype=bool),
            "aggregates": [None] * total,
        }

    def _each(
        self, tables: Mapping[str, Mapping[str, Any]], types: np.ndarray, orders: np.ndarray
    ) -> dict[str, Any] | None:
        """As :meth:`_deliveries`, from publishing the rows one by one (``types[b]`` is row b's
        type; the k-th row of a type is its table's k-th row)."""
        out: dict[str, list[Any]] = {
            k: []
            for k in (
                "order",
                "declared",
                "rank",
                "nth",
                "subscription",
                "conjunction",
                "events",
                "timeout",
                "aggregates",
            )
        }
        ids: list[str] = []
        offsets = [0]
        taken = dict.fromkeys(tables, 0)
        for b, t in enumerate(types.tolist()):
            r = taken[t]
            taken[t] += 1
            table = tables[t]
            attrs = {a.name: _plain(table[a.name][r]) for a in self.plan.types[t].attributes}
            seen: dict[tuple[str, int], int] = {}
            for d in self.engine.publish({"id": _plain(table["id"][r]), "type": t, "attrs": attrs}):
                part = self.parts[d.subscription]
                nth = seen[(d.subscription, d.conjunction)] = seen.get((d.subscription, d.conjunction), -1) + 1
                out["order"].append(int(orders[b]))
                out["declared"].append(part.declared)
                out["rank"].append(part.ranks[d.conjunction])
                out["nth"].append(nth)
                out["subscription"].append(part.subscription.name)
                out["conjunction"].append(part.indices[d.conjunction])
                out["timeout"].append(d.timeout)
                out["aggregates"].append(json.dumps(dict(d.aggregates)) if d.aggregates else None)
                if self.with_events:
                    events = (_event_json(e.id, e.type, {n: _plain(v) for n, v in e.attrs.items()}) for e in d.relation)
                    out["events"].append("[" + ", ".join(events) + "]")
                ids += d.ids
                offsets.append(len(ids))
        if not offsets[1:]:
            return None
        return {**out, "ids": np.asarray(ids, dtype=object), "offsets": np.asarray(offsets, dtype=np.int64),
                "events": out["events"] if self.with_events else None}  # fmt: skip


class _Rows:
    """Events of relations in the input JSON shape, from the batch's rows or the engine's older
    events, each written once."""

    def __init__(
        self,
        types: np.ndarray,
        ids: np.ndarray,
        columns: Mapping[str, np.ndarray],
        plan: Plan,
        layout: Mapping[str, str],
        result: Any,
    ):
        self.plan = plan
        self.layout = layout
        self.result = result
        self.first = result.first_arrival
        self.types = types
        self.ids = ids
        self.columns = columns
        self.written: dict[int, str] = {}

    def relation(self, arrivals: np.ndarray) -> str:
        return "[" + ", ".join(self.event(int(a)) for a in arrivals) + "]"

    def event(self, arrival: int) -> str:
        text = self.written.get(arrival)
        if text is None:
            if arrival >= self.first:
                b = arrival - self.first
                t = self.plan.types[self.types[b]]
                attrs = {a.name: _plain(self.columns[self.layout[column(t.name, a.name)]][b]) for a in t.attributes}
                text = _event_json(self.ids[b], t.name, attrs)
            else:
                e: Event = self.result.older_event(arrival)
                text = _event_json(e.id, e.type, {n: _plain(v) for n, v in e.attrs.items()})
            self.written[arrival] = text
        return text


@lru_cache(maxsize=1)
def _arrow_schema() -> Any:
    """:data:`DELIVERY_SCHEMA` in Arrow types."""
    import pyarrow as pa

    return pa.schema(
        [
            ("program", pa.int32()),
            ("order", pa.int64()),
            ("declared", pa.int32()),
            ("rank", pa.int32()),
            ("nth", pa.int32()),
            ("subscription", pa.string()),
            ("conjunction", pa.int32()),
            ("relation", pa.list_(pa.string())),
            ("events", pa.string()),
            ("timeout", pa.bool_()),
            ("aggregates", pa.string()),
        ]
    )


def _event_json(event_id: str, type_name: str, attrs: dict[str, Any]) -> str:
    return json.dumps({"id": event_id, "type": type_name, "attrs": attrs}, ensure_ascii=False)


def _objects(array: Any) -> np.ndarray:
    out = np.empty(len(array), dtype=object)
    out[:] = array.to_pylist()
    return out


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _empty() -> Any:
    """Typed empty columns: an untyped empty column is float64, not a list."""
    import pandas as pd

    return pd.DataFrame({c.split()[0]: pd.Series([], dtype=object) for c in DELIVERY_SCHEMA.split(", ")})


__all__ = ["DELIVERY_ORDER", "DELIVERY_SCHEMA", "GroupRun", "correlate", "route_sql", "routed", "run_sorted", "slots"]
