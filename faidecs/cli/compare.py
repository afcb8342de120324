"""``faidecs compare``: the semantic options side by side on the user's program and events."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from faidecs.cli.inputs import CliError, bounds_of, positive, read_text
from faidecs.cli.rejects import reject_record
from faidecs.errors import EventError
from faidecs.matching.records import MATCHERS
from faidecs.runs.event_lines import LongLine

if TYPE_CHECKING:
    from faidecs.comparing import Comparison


def _pairs(text: str) -> list[tuple[str, str]]:
    """``A:B,C:D`` (variant names as the report prints them; ``as-written`` for "as written")."""
    out = []
    for item in text.split(","):
        a, colon, b = item.strip().partition(":")
        if not colon or not a.strip() or not b.strip():
            raise argparse.ArgumentTypeError(f"--pairs: {item.strip()!r} is not A:B (e.g. FR+PI:MR+I)")
        out.append((_variant_name(a), _variant_name(b)))
    return out


def _variant_name(text: str) -> str:
    """A variant as named on the command line: ``as-written`` (no space) is "as written"."""
    return text.strip().replace("as-written", "as written")


def _docs_link(out: Path) -> str:
    """docs/properties.md relative to ``out`` when run in a clone, else the path in the repository."""
    here = Path("docs/properties.md")
    return os.path.relpath(here.resolve(), out.resolve()) if here.is_file() else "docs/properties.md"


def cmd_compare(args: argparse.Namespace) -> int:
    from faidecs.comparing import compare
    from faidecs.comparing.render_text import text_report
    from faidecs.grammar import compile_program

    if args.events == "-":
        raise CliError("--events must be a file: compare reads the stream once, then runs it for every variant")
    if args.html and not args.out:
        raise CliError("--html needs --out (the page is written there)")
    if args.logs and not args.out:
        raise CliError("--logs needs --out (the run logs are written there)")
    bounds = bounds_of(args)
    # Checked before any file is made: a program error leaves no empty rejects file behind.
    program = compile_program(read_text(args.program), args.program)
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    rejects = None
    if args.on_error == "skip":
        rejects_path = Path(args.rejects) if args.rejects else (out or Path(".")) / "rejects.jsonl"
        rejects = open(rejects_path, "w", encoding="utf-8")
    elif args.rejects:
        raise CliError("--rejects needs --on-error skip")

    def reject(line: int, raw: str | bytes | LongLine, err: EventError) -> None:
        print(f"{args.events}:{err}", file=sys.stderr)
        assert rejects is not None
        rejects.write(json.dumps(reject_record(line, raw, err)) + "\n")

    try:
        result = compare(
            program,
            Path(args.events),
            options=args.options,
            covering=args.covering,
            pairs=args.pairs,
            bounds=bounds,
            matcher=args.matcher,
            workers=args.workers,
            every=args.sample_every,
            verify=not args.no_verify,
            out=out,
            logs=args.logs,
            on_error=args.on_error,
            reject=reject if rejects is not None else None,
            filename=args.program,
        )
    except EventError as err:
        print(f"{args.events}:{err}", file=sys.stderr)
        print("faidecs: stopped at the first bad event (use --on-error skip to skip bad lines)", file=sys.stderr)
        return 1
    finally:
        if rejects is not None:
            rejects.close()
    as_json = json.dumps(result.to_json(), indent=2, ensure_ascii=False, default=str)
    if args.json:
        print(as_json)
    else:
        rich = {"auto": None, "rich": True, "plain": False}[args.style]
        sys.stdout.write(text_report(result, rich=rich, width=shutil.get_terminal_size().columns))
    if out is not None:
        _write_files(result, as_json, out, args.html)
    contradictions = sorted(
        {f"{v.name}: {x.property}" for v in result.variants for x in v.verdicts if x.mark == "CONTRADICTS THE LAB"}
    )
    for line in contradictions:
        print(
            f"faidecs: {line} is violated on this run although the lab finds it kept: please report it", file=sys.stderr
        )
    return 0


def _write_files(result: Comparison, as_json: str, out: Path, html: bool) -> None:
    from faidecs.comparing.plots import write_plots
    from faidecs.comparing.render_html import html_report
    from faidecs.comparing.render_markdown import markdown_report

    (out / "compare.json").write_text(as_json + "\n", encoding="utf-8")
    pngs = write_plots(result, out)
    docs = _docs_link(out)
    images = {name: path.name for name, path in pngs.items()}
    (out / "compare.md").write_text(markdown_report(result, images=images, docs=docs), encoding="utf-8")
    if html:
        (out / "compare.html").write_text(html_report(result, pngs, docs=docs), encoding="utf-8")
    print(
        f"faidecs: compare.json, compare.md{', compare.html' if html else ''} and plots written to {out}",
        file=sys.stderr,
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compare",
        help="run a program under every semantic option over the same events and compare the runs",
        description="Run PROGRAM over EVENTS once per option combination (the subscriptions' own "
        "matching and disposal replaced in turn), and report per option and subscription: relations "
        "delivered, events never used, queue lengths, memory, throughput and latency, the properties "
        "the run keeps and violates beside the lab's verdict, and where the options part ways.",
    )
    p.add_argument("--program", required=True, help="program file")
    p.add_argument("--events", required=True, help="events, one JSON object a line (a file)")
    p.add_argument(
        "--options",
        default="all",
        help="all (the 16 combinations, default), every (also the 5 of disposal NONE), as-written, "
        "or a list: FR+PI,MR+I,as-written",
    )
    p.add_argument(
        "--covering",
        choices=("as-written", "plain", "staged", "both"),
        default="as-written",
        help="covering option of every variant; both: each combination plain and staged",
    )
    p.add_argument(
        "--pairs",
        type=_pairs,
        help="variants to diff, A:B,C:D (default: each variant against each subscription's own options)",
    )
    p.add_argument(
        "--out", help="write compare.json, compare.md, the plots, and per variant its program and deliveries"
    )
    p.add_argument("--html", action="store_true", help="with --out: also compare.html, one self-contained page")
    p.add_argument("--logs", action="store_true", help="with --out: also each variant's run log (for faidecs verify)")
    p.add_argument("--json", action="store_true", help="print compare.json's content instead of the tables")
    p.add_argument(
        "--style", choices=("auto", "rich", "plain"), default="auto", help="tables drawn by rich (auto: on a terminal)"
    )
    p.add_argument("--matcher", choices=MATCHERS, default="compiled", help="matcher (default: compiled)")
    p.add_argument("--workers", type=positive, help="processes for the variants (default: one per core)")
    p.add_argument(
        "--sample-every",
        type=positive,
        help="sample queue lengths and memory after every N events (default: 1,000 samples; 1: the exact peak)",
    )
    p.add_argument("--no-verify", action="store_true", help="do not check the runs' properties")
    p.add_argument("--max-queue", type=positive, help="bound every conjunction queue to N events (every variant)")
    p.add_argument("--max-age", type=positive, help="drop queued events N arrivals old (every variant)")
    p.add_argument(
        "--overflow", choices=("drop-oldest", "error"), default="drop-oldest", help="what a full bounded queue does"
    )
    p.add_argument("--on-error", choices=("stop", "skip"), default="stop", help="what to do with a bad line")
    p.add_argument("--rejects", help="with --on-error skip: file for rejected lines (default: OUT/rejects.jsonl)")
    p.set_defaults(func=cmd_compare)


__all__ = ["add_parser", "cmd_compare"]
