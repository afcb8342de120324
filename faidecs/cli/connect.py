"""``faidecs run --source nats://…`` (or ``mqtt://…``): events from a broker, deliveries to a
sink or to ``--out``, until SIGINT/SIGTERM or ``--max-events``; counts on stderr at the end."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Callable
from typing import IO

from faidecs.cli.inputs import CliError
from faidecs.connect import open_sink, open_source, pump
from faidecs.matching.delivery import Delivery
from faidecs.matching.engine import Engine


def check_args(args: argparse.Namespace) -> None:
    """The options that go with ``--source`` and those that do not, before anything connects."""
    if args.source is None:
        for option, value in (("--sink", args.sink), ("--max-events", args.max_events)):
            if value is not None:
                raise CliError(f"{option} needs --source")
        if args.events is None:
            raise CliError("give --events FILE or --source URL")
        return
    if args.events is not None:
        raise CliError("give --events or --source, not both")
    for option, given in (
        ("--on-error skip", args.on_error != "stop"),
        ("--rejects", args.rejects is not None),
        ("--log", args.log is not None),
    ):
        if given:
            raise CliError(f"{option} does not go with --source (malformed messages go to the dead-letter subject)")


def run_source(args: argparse.Namespace, engine: Engine, out: IO[str], text: Callable[[Delivery], str]) -> int:
    """``text``: a delivery as ``--format text`` shows it."""
    source = open_source(args.source, engine.types)
    sink = open_sink(args.sink) if args.sink else None

    def emit(d: Delivery) -> None:
        if args.format == "text":
            out.write(text(d) + "\n")
        else:
            out.write(json.dumps(d.to_json(with_events=args.with_events), ensure_ascii=False) + "\n")
        out.flush()  # a consumer of a stream reads each delivery as it comes

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            summary = await pump(
                engine, source, sink=sink, emit=None if sink else emit, max_events=args.max_events, stop=stop
            )
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
        counts = getattr(source, "counts", None)
        dropped = f", {counts.dead_lettered} dead-lettered, {counts.duplicates} duplicates dropped" if counts else ""
        print(f"faidecs: {summary.events} events taken, {summary.deliveries} deliveries{dropped}", file=sys.stderr)
        return 0

    return asyncio.run(main())


__all__ = ["check_args", "run_source"]
