"""What every command reads from the command line: files given by name, and its errors."""

from __future__ import annotations

import argparse
import sys

from faidecs.errors import FaidecsError
from faidecs.matching.bounds import Bounds


class CliError(FaidecsError):
    """A problem with the command line itself (unreadable file, bad combination of options)."""


def read_text(path: str) -> str:
    """The text of ``path`` (``-``: standard input), or a CliError that says why not."""
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"{path} is not UTF-8 text: {exc.reason} at byte {exc.start}") from None


def positive(text: str) -> int:
    """An option's positive integer (argparse ``type=``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def bounds_of(args: argparse.Namespace) -> Bounds | None:
    """The bounds ``--max-queue``, ``--max-age`` and ``--overflow`` give (``faidecs run`` and
    ``faidecs compare``), or None."""
    if args.max_queue is not None or args.max_age is not None:
        return Bounds(max_queue=args.max_queue, max_age=args.max_age, overflow=args.overflow)
    if args.overflow != "drop-oldest":
        raise CliError("--overflow needs --max-queue")
    return None
