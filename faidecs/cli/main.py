"""``faidecs`` command line entry point."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import IO

from faidecs.cli.extras import missing_extra_message
from faidecs.cli.inputs import CliError, bounds_of, positive, read_text
from faidecs.cli.rejects import reject_record
from faidecs.cli.text_format import TextFormat
from faidecs.errors import EventError, FaidecsError, ProgramError
from faidecs.grammar import compile_program
from faidecs.lab.describe import describe_program, program_json
from faidecs.matching.delivery import Delivery
from faidecs.matching.engine import Engine
from faidecs.matching.records import MATCHERS
from faidecs.runs.event_lines import LongLine, read_lines
from faidecs.runs.replay import replay

#: Inputs at least this large get a progress bar on stderr (when stderr is a terminal, or forced).
PROGRESS_MIN_BYTES = 8 * 1024 * 1024


@contextlib.contextmanager
def _open_out(path: str) -> Iterator[IO[str]]:
    if path == "-":
        yield sys.stdout
        return
    try:
        f = open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from None
    with f:
        yield f


@contextlib.contextmanager
def _open_events(path: str) -> Iterator[IO[str]]:
    if path == "-":
        yield sys.stdin
        return
    try:
        f = open(path, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from None
    with f:
        yield f


@contextlib.contextmanager
def _open_event_bytes(path: str) -> Iterator[IO[bytes] | IO[str]]:
    """An events file in binary: lines are split on LF only and decoded one by one, so that a
    CR or a bad byte spoils one line, not the stream. Standard input without a binary buffer
    (replaced by a test, say) is read as it is."""
    if path == "-":
        yield getattr(sys.stdin, "buffer", sys.stdin)
        return
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from None
    with f:
        yield f


def cmd_check(args: argparse.Namespace) -> int:
    text = read_text(args.file)
    program = compile_program(text, args.file)
    if args.json:
        print(json.dumps(program_json(program), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(describe_program(program))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    if args.metrics_port is not None:
        from faidecs.cli.metrics import require_prometheus

        require_prometheus()  # before anything is read or written
    from faidecs.cli.connect import check_args

    check_args(args)
    if args.program == "-" and args.events == "-":
        raise CliError("--program and --events cannot both read standard input")
    source_name = "<stdin>" if args.events == "-" else args.events
    text = read_text(args.program)
    bounds = bounds_of(args)
    engine = Engine.from_source(text, filename=args.program, matcher=args.matcher, bounds=bounds)
    if args.source is not None:
        from faidecs.cli.connect import run_source

        with contextlib.ExitStack() as stack:
            out = stack.enter_context(_open_out(args.out))
            if args.metrics_port is not None:
                from faidecs.cli.metrics import serve_engine

                stack.enter_context(serve_engine(engine, args.metrics_port, args.metrics_addr))
            code = run_source(args, engine, out, TextFormat(engine.subscriptions).format)
        if args.state_out:
            with _open_out(args.state_out) as f:
                f.write(json.dumps(engine.state_json(), ensure_ascii=False) + "\n")
        return code
    if args.on_error == "skip":
        rejects_path = args.rejects or ("stdin.rejects.jsonl" if args.events == "-" else f"{args.events}.rejects.jsonl")
    elif args.rejects:
        raise CliError("--rejects needs --on-error skip")
    else:
        rejects_path = None

    with contextlib.ExitStack() as stack:
        events = stack.enter_context(_open_event_bytes(args.events))
        out = stack.enter_context(_open_out(args.out))
        # Created even when nothing is rejected: a stale file from an earlier run must not remain.
        rejects = stack.enter_context(_open_out(rejects_path)) if rejects_path else None
        if args.metrics_port is not None:
            from faidecs.cli.metrics import serve_engine

            stack.enter_context(serve_engine(engine, args.metrics_port, args.metrics_addr))

        text_format = TextFormat(engine.subscriptions)

        def emit(d: Delivery) -> None:
            if args.format == "text":
                out.write(text_format.format(d) + "\n")
            else:
                out.write(json.dumps(d.to_json(with_events=args.with_events), ensure_ascii=False) + "\n")

        def reject(line: int, raw: str | bytes | LongLine, err: EventError) -> None:
            print(f"{source_name}:{err}", file=sys.stderr)
            assert rejects is not None
            rejects.write(json.dumps(reject_record(line, raw, err)) + "\n")

        progress = None
        size = os.path.getsize(args.events) if args.events != "-" else 0
        show = args.progress == "always" or (
            args.progress == "auto" and size >= PROGRESS_MIN_BYTES and sys.stderr.isatty()
        )
        if show and size:
            from tqdm import tqdm

            bar = stack.enter_context(tqdm(total=size, unit="B", unit_scale=True, desc="events", file=sys.stderr))

            def progress(raw: str | bytes | LongLine) -> None:
                if isinstance(raw, LongLine):
                    bar.update(raw.size + 1)
                else:
                    bar.update(len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass")))

        recorder = None
        if args.log:
            from faidecs.runs.processes import single_engine_log

            recorder = single_engine_log(engine)
        try:
            summary = replay(
                engine,
                read_lines(events),
                emit,
                on_error=args.on_error,
                reject=reject if rejects else None,
                progress=progress,
                recorder=recorder,
            )
        except EventError as err:
            out.flush()
            print(f"{source_name}:{err}", file=sys.stderr)
            print("faidecs: stopped at the first bad event (use --on-error skip to skip bad lines)", file=sys.stderr)
            return 1

    if recorder is not None:
        log = recorder.finish({name: queues for name, queues in engine.state_json().items()})
        with _open_out(args.log) as f:
            log.write(f)
    if args.state_out:
        with _open_out(args.state_out) as f:
            f.write(json.dumps(engine.state_json(), ensure_ascii=False) + "\n")
    if args.on_error == "skip":
        where = f" (written to {rejects_path})" if summary.rejected else ""
        print(
            f"faidecs: {summary.events} events, {summary.deliveries} deliveries, {summary.rejected} rejected{where}",
            file=sys.stderr,
        )
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from pathlib import Path

    from faidecs.properties import check
    from faidecs.runs.runlog import RunLog, merge_runlogs

    logs = []
    for name in args.log:
        if name != "-" and Path(name).is_dir():  # a run folder of `faidecs overlay up`
            from faidecs.overlay.runtime.launcher import merged_runlog

            logs.append((name, merged_runlog(Path(name))))
            continue
        with _open_events(name) as f:
            logs.append((name, RunLog.read(f, "<stdin>" if name == "-" else name)))
    log = logs[0][1] if len(logs) == 1 else merge_runlogs(logs)
    # A log cut at a line boundary reads fine: what it lacks is the end of the run.
    missing = log.incomplete()
    unfinished = None if missing is None else f"the run log is truncated ({missing})"
    report = check(log, unfinished=unfinished)
    if args.all:
        if args.json:
            print(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
        else:
            sys.stdout.write(report.table())
        failed, undecided = report.violated(), list(report.undecided)
    else:
        from faidecs.lab.promised import promised
        from faidecs.properties.promises import Judged

        layer = None
        if log.ordering is not None:
            from faidecs.ordering.promises import layer_promises

            layer = (log.ordering, layer_promises(log.ordering, ", ".join(args.log)))
        promises = {name: frozenset(promised(sub)) for name, sub in log.subscriptions().items()}
        judged = Judged(report, promises, layer)
        if args.json:
            print(json.dumps(judged.to_json(), indent=2, ensure_ascii=False))
        else:
            sys.stdout.write(judged.table())
        failed, undecided = judged.failed(), judged.undecided()
    if unfinished is not None:
        where = ", ".join("<stdin>" if name == "-" else name for name in args.log)
        print(f"faidecs: {where}: {unfinished}: {len(report.undecided)} properties not judged", file=sys.stderr)
    # A truncated log fails either way: what it lacks may hold a violation of a promise.
    return 1 if failed or undecided or unfinished is not None else 0


def cmd_lab(args: argparse.Namespace) -> int:
    if args.languages:  # the lab's recorded table, no runs
        from faidecs.lab.languages import markdown as languages_markdown

        sys.stdout.write(languages_markdown())
        return 0
    from pathlib import Path

    from faidecs.lab import COMBINATIONS, lab, render_table, run
    from faidecs.lab.generator import operator_extra
    from faidecs.lab.scenario import PARTITIONED
    from faidecs.matching.guarantees import EVERY_COMBINATION

    extra = (", covering staged" if args.staged else "") + (PARTITIONED if args.partitioned else "")
    # Staged covering has no extended matcher yet: the options of disposal NONE run plain only.
    combinations = COMBINATIONS if args.staged else EVERY_COMBINATION
    operator = args.operator or ""
    found = lab(
        runs=args.runs, seed=args.seed, combinations=combinations, extra=extra, workers=args.workers, operator=operator
    )
    extra += operator_extra(operator)
    if args.json:
        print(json.dumps({name: sorted(props) for name, props in found.items()}, indent=2))
    elif args.markdown:
        from faidecs.lab.report import markdown, operator_markdown

        if operator:
            sys.stdout.write(operator_markdown(operator, found, combinations, extra))
        else:
            sys.stdout.write(markdown(found, combinations, extra))
    else:
        sys.stdout.write(render_table(found, combinations, extra))
    if args.out:
        for combination, (name, props) in zip(combinations, found.items()):
            folder = Path(args.out) / name
            folder.mkdir(parents=True, exist_ok=True)
            for prop, finding in props.items():
                slug = prop.lower().replace("'", "-prime").replace(" ", "-")
                with open(folder / f"{slug}.jsonl", "w", encoding="utf-8") as f:
                    run(finding.shown(), combination, extra).write(f)
                if finding.proof is not None:  # the extension's proof, which the log alone cannot show
                    (folder / f"{slug}.proof.txt").write_text(finding.proof.explanation() + "\n", encoding="utf-8")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="faidecs", description="Fair decentralized event correlation.")
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check", help="check a program and print its normal form")
    check.add_argument("file", help="program file ('-' for stdin)")
    check.add_argument("--json", action="store_true", help="print the normal form as JSON")
    check.set_defaults(func=cmd_check)

    run = sub.add_parser("run", help="run a program on a JSON-lines event stream")
    run.add_argument("--program", required=True, help="program file")
    run.add_argument("--events", help="events, one JSON object a line ('-' for stdin)")
    run.add_argument(
        "--source", help="events from a broker instead: nats://HOST:PORT/SUBJECT or mqtt://HOST:PORT/TOPIC"
    )
    run.add_argument("--sink", help="with --source: deliveries to nats://HOST:PORT/SUBJECT or mqtt://HOST:PORT/TOPIC")
    run.add_argument("--max-events", type=positive, help="with --source: stop after N events (else at SIGINT/SIGTERM)")
    run.add_argument("--out", default="-", help="deliveries as JSON lines (default: stdout)")
    run.add_argument("--state-out", help="write the queues after the last event to this file ('-': stdout)")
    run.add_argument("--on-error", choices=("stop", "skip"), default="stop", help="what to do with a bad line")
    run.add_argument("--rejects", help="with --on-error skip: file for rejected lines (default: EVENTS.rejects.jsonl)")
    run.add_argument("--with-events", action="store_true", help="include each relation's events in the output")
    run.add_argument("--format", choices=("json", "text"), default="json", help="output format")
    run.add_argument("--progress", choices=("auto", "always", "never"), default="auto", help="progress bar on stderr")
    run.add_argument("--log", help="record the run as a run log (one process per subscription)")
    run.add_argument("--matcher", choices=MATCHERS, default="compiled", help="matcher (default: compiled)")
    run.add_argument("--max-queue", type=positive, help="bound every conjunction queue to N events")
    run.add_argument("--max-age", type=positive, help="drop queued events N arrivals old")
    run.add_argument(
        "--overflow", choices=("drop-oldest", "error"), default="drop-oldest", help="what a full bounded queue does"
    )
    run.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port while the run lasts")
    run.add_argument("--metrics-addr", default="127.0.0.1", help="address for --metrics-port (default 127.0.0.1)")
    run.set_defaults(func=cmd_run)

    verify = sub.add_parser(
        "verify", help="check a run log against what each process's options promise (exit 1 if one is broken)"
    )
    verify.add_argument(
        "log",
        nargs="+",
        help="run log ('-' for stdin); several (one per process) are merged; a run folder of overlay up",
    )
    verify.add_argument("--json", action="store_true", help="print the results as JSON")
    verify.add_argument(
        "--all", action="store_true", help="judge every property, promised or not (exit 1 on any violation)"
    )
    verify.set_defaults(func=cmd_verify)

    lab = sub.add_parser("lab", help="search counterexamples for every semantic option and property")
    lab.add_argument("--runs", type=int, default=3000, help="generated runs per combination (default 3000)")
    lab.add_argument("--seed", type=int, default=0, help="seed of the generator (default 0)")
    lab.add_argument("--json", action="store_true", help="print {combination: [violated properties]}")
    lab.add_argument("--markdown", action="store_true", help="print the table and every counterexample as Markdown")
    lab.add_argument("--out", help="write each counterexample as a run log under this folder")
    lab.add_argument("--staged", action="store_true", help="use the staged covering option for every subscription")
    lab.add_argument("--partitioned", action="store_true", help="partition every subscription by a key k of the events")
    lab.add_argument("--workers", type=int, help="worker processes (default: one per core)")
    lab.add_argument(
        "--languages",
        action="store_true",
        help="print docs/languages.md's tables from the recorded table (no runs): the peers' nearest strategies",
    )
    lab.add_argument(
        "--operator",
        choices=("group", "negation", "absence", "window"),
        help="scenarios use this operator of the extended language (absence and window: windowed runs)",
    )
    lab.set_defaults(func=cmd_lab)

    from faidecs.cli.compare import add_parser as add_compare

    add_compare(sub)

    from faidecs.cli.overlay import add_parser as add_overlay

    add_overlay(sub)

    from faidecs.cli.spark import add_parser as add_spark

    add_spark(sub)

    from faidecs.cli.ordering import add_parser as add_ordering

    add_ordering(sub)

    from faidecs.cli.dashboard import add_parser as add_dashboard

    add_dashboard(sub)
    return parser


def _command(args: argparse.Namespace) -> str:
    """``overlay keys``: the words of the command ``args`` runs."""
    words = [args.command]
    for key in ("overlay_command", "spark_command", "verb"):
        if getattr(args, key, None):
            words.append(getattr(args, key))
    return " ".join(words)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ModuleNotFoundError as exc:
        # A command that needs an optional extra (pyzmq for the overlay's processes, PySpark):
        # one line naming the extra, not a traceback. Any other missing module is a bug: raise it.
        message = missing_extra_message(exc, _command(args))
        if message is None:
            raise
        print(message, file=sys.stderr)
        return 2
    except ProgramError as err:
        print(err.format(), file=sys.stderr)
        return 1
    except FaidecsError as err:  # CliError among them
        print(f"faidecs: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # Output piped into e.g. `head`: stop quietly, as Unix tools do.
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
