"""``faidecs spark``: replay event logs on Spark (docs/spark.md)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from faidecs.cli.inputs import read_text
from faidecs.matching.records import MATCHERS


def _need_spark() -> None:
    """Fail before the program is read when PySpark is missing: ``faidecs.cli.main`` turns the
    ModuleNotFoundError into one line naming ``pip install 'faidecs[spark]'`` (and Java 17)."""
    import pyspark  # noqa: F401


def _program_and_session(args: argparse.Namespace) -> tuple[str, Any]:
    """The program's text, checked (positioned errors before Spark starts), and a session."""
    _need_spark()
    from faidecs.grammar import compile_program
    from faidecs.spark import session

    program = read_text(args.program)
    compile_program(program, args.program)
    return program, session(args.master, spark_driver_memory=args.driver_memory)


def cmd_run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    program, spark = _program_and_session(args)
    from faidecs.spark import replay, write

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


def cmd_stream(args: argparse.Namespace) -> int:
    program, spark = _program_and_session(args)
    from faidecs.spark.stream import stream

    try:
        query = stream(
            spark,
            program,
            args.events,
            args.out,
            args.checkpoint,
            order_column=args.order_column,
            fmt=args.format,
            out_format=args.out_format,
            matcher=args.matcher,
            with_events=not args.no_events,
            files_per_trigger=args.files_per_trigger,
            available_now=args.available_now,
        )
        print(f"streaming {args.events} -> {args.out} (checkpoint {args.checkpoint}); Ctrl-C stops", file=sys.stderr)
        try:
            query.awaitTermination()
        except KeyboardInterrupt:
            query.stop()
    finally:
        spark.stop()
    return 0


def _common(parser: Any) -> None:
    """The options ``run`` and ``stream`` share."""
    parser.add_argument("--program", required=True, help="program file")
    parser.add_argument("--out-format", choices=("parquet", "json"), default="parquet", help="default parquet")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--driver-memory", default="2g", help="driver JVM heap; local mode runs all in it (default 2g)")
    parser.add_argument("--matcher", choices=MATCHERS, default="compiled")
    parser.add_argument("--no-events", action="store_true", help="write relation ids only, not the events")


def add_parser(sub: Any) -> None:
    spark = sub.add_parser("spark", help="replay event logs on Spark, with the embedded engine's deliveries")
    ssub = spark.add_subparsers(dest="spark_command", required=True)
    run = ssub.add_parser("run", help="replay a file or folder of events against a program")
    _common(run)
    run.add_argument("--events", required=True, help="events: JSON lines, CSV or Parquet; a file or a folder")
    run.add_argument("--out", required=True, help="folder for the deliveries")
    run.add_argument("--format", choices=("json", "csv", "parquet"), help="input format (default: by extension)")
    run.add_argument("--order-column", help="integer column giving the total order (default: the input's order)")
    run.set_defaults(func=cmd_run)
    st = ssub.add_parser("stream", help="correlate a folder of event files as they arrive (Structured Streaming)")
    _common(st)
    st.add_argument("--events", required=True, help="folder that event files are added to")
    st.add_argument("--out", required=True, help="folder for the deliveries (a file sink: exactly once)")
    st.add_argument("--checkpoint", required=True, help="checkpoint folder: a restarted query resumes from it")
    st.add_argument("--order-column", required=True, help="integer field giving each event's place in the order")
    st.add_argument("--format", choices=("json", "csv", "parquet"), default="json", help="input format (default json)")
    st.add_argument("--files-per-trigger", type=int, help="at most this many new files per micro-batch")
    st.add_argument("--available-now", action="store_true", help="process the files there now, then stop")
    st.set_defaults(func=cmd_stream)


__all__ = ["add_parser"]
