"""``faidecs spark``: replay event logs on Spark (docs/spark.md)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from faidecs.cli.main import _read_text
from faidecs.errors import FaidecsError


class SparkMissing(FaidecsError):
    """PySpark is not installed."""


def cmd_run(args: argparse.Namespace) -> int:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkMissing("the Spark pipeline needs pyspark: pip install 'faidecs[spark]' (and Java 17)") from None
    from faidecs.grammar import compile_program
    from faidecs.spark import replay, session, write

    program = _read_text(args.program)
    compile_program(program, args.program)  # positioned errors before Spark starts
    started = time.perf_counter()
    spark = session(args.master)
    try:
        deliveries = replay(
            spark,
            program,
            args.events,
            fmt=args.format,
            order_column=args.order_column,
            matcher=args.matcher,
            with_events=not args.no_events,
        )
        deliveries = deliveries.cache()
        write(deliveries, args.out, args.out_format)
        count = deliveries.count()
    finally:
        spark.stop()
    print(f"{count} deliveries written to {args.out} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    spark = sub.add_parser("spark", help="replay event logs on Spark, with the embedded engine's deliveries")
    ssub = spark.add_subparsers(dest="spark_command", required=True)
    run = ssub.add_parser("run", help="replay a file or folder of events against a program")
    run.add_argument("--program", required=True, help="program file")
    run.add_argument("--events", required=True, help="events: JSON lines, CSV or Parquet; a file or a folder")
    run.add_argument("--out", required=True, help="folder for the deliveries")
    run.add_argument("--out-format", choices=("parquet", "json"), default="parquet", help="default parquet")
    run.add_argument("--format", choices=("json", "csv", "parquet"), help="input format (default: by extension)")
    run.add_argument("--order-column", help="integer column giving the total order (default: the input's order)")
    run.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    run.add_argument("--matcher", choices=("compiled", "reference"), default="compiled")
    run.add_argument("--no-events", action="store_true", help="write relation ids only, not the events")
    run.set_defaults(func=cmd_run)


__all__ = ["add_parser"]
