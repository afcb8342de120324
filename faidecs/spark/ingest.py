"""Reading event logs into the pipeline's flat table, with the total order made explicit.

The flat table has one row per event: ``order`` (bigint, the total order), ``type``, ``id``, and
one column per attribute of each type (``T$attr``, null on rows of other types), typed as the
program declares. JSON lines are the input format of ``faidecs run`` (``{"id", "type", "attrs"}``);
CSV and Parquet hold ``id``, ``type`` and the attributes as columns (Parquet may also nest them in
an ``attrs`` struct). A directory is read whole, including ``type=T`` partition folders.

Order: the ``order_column`` when given (unique integers), else the input's order: files by name,
lines (rows) within a file as stored. Files are read unsplit so that each file's rows keep their
order, and ``order = file number · 2⁴⁰ + row number in the file``.

Every event is checked as the embedded engine checks it (known type, an id, every attribute of the
right kind and no other, ids unique); a bad input stops the replay with the file and line (or the
order value) of the first bad rows and what is wrong. Nothing is dropped silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from faidecs.errors import FaidecsError
from faidecs.spark.plan import SPARK_KINDS, Plan, column

ROWS_PER_FILE = 1 << 40


class SparkInputError(FaidecsError):
    """Events the pipeline cannot take: says where and what."""


def detect_format(path: str) -> str:
    p = Path(path)
    files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith((".", "_")))
    if not files:
        raise SparkInputError(f"{path}: no input files")
    suffixes = {f.suffix.lower() for f in files}
    for fmt, known in (("json", {".json", ".jsonl", ".ndjson"}), ("csv", {".csv"}), ("parquet", {".parquet"})):
        if suffixes <= known:
            return fmt
    raise SparkInputError(f"{path}: cannot tell the format from {', '.join(sorted(suffixes))}; give format=")


def read_events(spark: Any, path: str, plan: Plan, *, fmt: str | None = None, order_column: str | None = None) -> Any:
    """The flat, validated table of the events at ``path`` (see the module doc)."""
    from pyspark.sql import functions as F

    fmt = fmt or detect_format(path)
    # Unsplit files: a file's rows stay in one partition, in order (its row numbers are exact).
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(1 << 50))
    if fmt == "json":
        raw = spark.read.text(path)
        text_type = F.get_json_object("value", "$.type")
        raw = raw.withColumn("_type", F.coalesce(text_type, F.col("type")) if "type" in raw.columns else text_type)
    elif fmt == "csv":
        raw = spark.read.option("header", True).csv(path)
        raw = raw.withColumn("_type", F.col("type").cast("string"))
    elif fmt == "parquet":
        raw = spark.read.option("mergeSchema", "true").parquet(path)  # per-type files differ
        raw = raw.withColumn("_type", F.col("type").cast("string"))
    else:
        raise SparkInputError(f"unknown format {fmt!r}: json, csv or parquet")
    raw = raw.withColumn("_file", F.input_file_name()).withColumn("_row", F.monotonically_increasing_id())
    base = 1 if fmt == "json" else 2  # the first row's line: JSON lines have no header
    if order_column is not None:
        if order_column not in raw.columns and fmt != "json":
            raise SparkInputError(f"{path}: no column {order_column!r} to order by")
        source = F.get_json_object("value", f"$.{order_column}") if fmt == "json" else F.col(order_column)
        # ``_line`` holds the row id here: a file's first id is looked up only for a row reported bad.
        raw = raw.withColumn("order", source.try_cast("bigint")).withColumn("_line", F.col("_row"))
    else:
        # Row ids count on across the files packed into one partition: a file's lines start at
        # its first id, so every file's first id is needed (one pass) to number the events.
        files = raw.groupBy("_file").agg(F.min("_row").alias("_first")).collect()
        names = sorted(r["_file"] for r in files)
        first = {r["_file"]: r["_first"] for r in files}
        index = F.create_map(*[x for k, n in enumerate(names) for x in (F.lit(n), F.lit(k))])
        start = F.create_map(*[x for n in names for x in (F.lit(n), F.lit(first[n]))])
        raw = raw.withColumn("_line", F.col("_row") - start[F.col("_file")] + base)
        raw = raw.withColumn("order", index[F.col("_file")] * F.lit(ROWS_PER_FILE) + F.col("_line"))

    from pyspark import StorageLevel

    # Kept: the checks below and the correlation then read the parsed rows once, not each anew.
    flat = typed_rows(raw, plan, fmt).persist(StorageLevel.MEMORY_AND_DISK)
    _reject(flat, order_column, base)
    return flat.drop("_problem", "_file", "_line")


def typed_rows(raw: Any, plan: Plan, fmt: str) -> Any:
    """The flat table of raw rows (with ``_type``, ``order``, ``_file``, ``_line`` set), each row
    with ``_problem``: what is wrong with it, or null. Batch and streaming reads share it."""
    from pyspark.sql import functions as F

    # One projection, a CASE per column on the row's type: the input is read once, not once per
    # type (and a branch is evaluated only for rows of its type).
    if fmt == "json":
        id_col = F.from_json("value", "id STRING")["id"]
        id_given = F.get_json_object("value", "$.id").isNotNull()
    else:
        id_col = F.col("id").cast("string")
        id_given = F.col("id").isNotNull()
    columns: list[Any] = []
    problem = None
    for t in plan.types.values():
        mine = F.col("_type") == t.name
        values, given = [], []
        extra = F.lit(False)
        if fmt == "json":
            attrs = ", ".join(f"`{a.name}`: {SPARK_KINDS[a.kind]}" for a in t.attributes)
            parsed = F.from_json("value", f"attrs STRUCT<{attrs}>") if t.attributes else None
            keys = F.json_object_keys(F.get_json_object("value", "$.attrs"))
            declared = (
                F.array(*[F.lit(a.name) for a in t.attributes]) if t.attributes else F.array().cast("array<string>")
            )
            extra = F.size(F.array_except(F.coalesce(keys, F.array().cast("array<string>")), declared)) > 0
            for a in t.attributes:
                assert parsed is not None
                values.append(parsed["attrs"][a.name])
                given.append(F.get_json_object("value", f"$.attrs.{a.name}").isNotNull())
        else:
            nested = "attrs" in raw.columns
            for a in t.attributes:
                src = F.col(f"attrs.{a.name}") if nested else F.col(a.name) if a.name in raw.columns else F.lit(None)
                if a.kind.value == "bool" and fmt == "csv":
                    src = F.when(F.lower(src) == "true", True).when(F.lower(src) == "false", False)
                values.append(src.try_cast(SPARK_KINDS[a.kind]))
                given.append(src.isNotNull())
        problems = [F.when(~id_given | id_col.isNull(), F.lit("no id (a string)"))]
        for a, value, g in zip(t.attributes, values, given):
            columns.append(F.when(mine, value).alias(column(t.name, a.name)))
            problems.append(
                F.when(~g, F.lit(f"attribute {a.name} missing")).when(
                    value.isNull(), F.lit(f"attribute {a.name} is not a {a.kind.value}")
                )
            )
        problems.append(F.when(extra, F.lit(f"an attribute {t.name} does not declare")))
        found = F.coalesce(*problems)
        problem = F.when(mine, found) if problem is None else problem.when(mine, found)
    unknown = F.when(F.col("_type").isNull(), F.lit("no type")).otherwise(
        F.concat(F.lit("type "), F.col("_type"), F.lit(" is not declared"))
    )
    problem = unknown if problem is None else problem.otherwise(unknown)
    return raw.select(
        "order",
        "_file",
        "_line",
        F.coalesce(F.col("_type"), F.lit("?")).alias("type"),
        id_col.alias("id"),
        problem.alias("_problem"),
        *columns,
    )


def _reject(flat: Any, order_column: str | None, base: int) -> None:
    from pyspark.sql import functions as F

    def where(row: Any) -> str:
        line = row["_line"]
        if order_column is not None:  # a row id: count from the file's first one
            first = flat.where(F.col("_file") == row["_file"]).agg(F.min("_line")).first()[0]
            line = line - first + base
        return f"{str(row['_file']).rsplit('/', 1)[-1]}:{line}"

    # One pass for the rows' own problems and missing order values (nulls sort first).
    wrong = F.col("_problem").isNotNull()
    if order_column is not None:
        wrong = wrong | F.col("order").isNull()
    bad = flat.where(wrong).orderBy("order").limit(5).collect()
    if bad and bad[0]["order"] is None:
        raise SparkInputError(f"{where(bad[0])}: {order_column} is not an integer")
    if bad:
        lines = [f"{where(r)}: {r['_problem']}" for r in bad]
        raise SparkInputError("bad events (the first ones):\n  " + "\n  ".join(lines))
    if order_column is not None:
        twice = flat.groupBy("order").count().where("count > 1").limit(3).collect()
        if twice:
            raise SparkInputError(
                f"{order_column} {twice[0]['order']} is given to {twice[0]['count']} events: the order must be total"
            )
    dupes = flat.groupBy("id").agg(F.count("*").alias("n"), F.min("order").alias("o")).where("n > 1").limit(3).collect()
    if dupes:
        raise SparkInputError(f"duplicate event id {dupes[0]['id']!r} ({dupes[0]['n']} events)")


__all__ = ["SparkInputError", "detect_format", "read_events", "typed_rows"]
