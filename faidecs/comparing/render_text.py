"""``faidecs compare``'s terminal report: plain text, or the same tables drawn by ``rich``.

The plain report needs nothing beyond the standard library, so a base install prints it; ``rich``
(the ``compare`` extra) is imported only to draw the rich one.
"""

from __future__ import annotations

import importlib.util
import io
import textwrap
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

from faidecs.comparing.report_parts import (
    LEFT,
    LEGEND,
    DifferenceView,
    PropertyTable,
    Table,
    difference_views,
    header,
    identical_line,
    property_tables,
    variant_table,
)
from faidecs.comparing.result import Comparison

if TYPE_CHECKING:
    from rich.console import Console

TITLE = "faidecs compare"
#: how rich colours a verdict symbol: a contradiction of the lab must stand out
STYLES = {"ok": "green", "ok*": "yellow", "X": "red", "X!": "bold white on red", "?": "magenta", "-": "dim"}


def use_rich(stream: TextIO) -> bool:
    """Draw with rich: it is installed and ``stream`` is a terminal (a pipe or file gets plain text)."""
    try:
        installed = importlib.util.find_spec("rich") is not None
    except ValueError:  # sys.modules holds rich without a spec (hidden, or a stand-in)
        installed = False
    isatty = getattr(stream, "isatty", None)
    return installed and callable(isatty) and bool(isatty())


def text_report(c: Comparison, *, rich: bool | None = None, width: int = 120) -> str:
    """The report as text; ``rich=None`` draws with rich when stdout is a terminal (:func:`use_rich`)."""
    if rich is None:
        import sys

        rich = use_rich(sys.stdout)
    return _rich_report(c, width) if rich else _plain_report(c, width)


def _tables(pt: PropertyTable) -> Table:
    columns = ("property",) + pt.variants
    return Table(columns, (LEFT,) * len(columns), tuple((p,) + symbols for p, symbols in pt.rows), pt.notes)


def _difference_lines(d: DifferenceView) -> list[str]:
    """The brief's one line, broken at its separators so that each delivery starts a line."""
    lines = [f"{d.title}: {d.counts};"]
    if d.first is not None:
        lines.append(f"  {d.first}:")
    return lines + [f"  {d.a_delivered};", f"  {d.b_delivered}"]


def _wrap(line: str, width: int) -> list[str]:
    indent = " " * (len(line) - len(line.lstrip()) + 2)
    return textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False) or [""]


# --- plain ----------------------------------------------------------------------------------------


def _plain_report(c: Comparison, width: int) -> str:
    out = [*_wrap(f"{TITLE}: {header(c)}", width), "", "Variants"]
    variants = variant_table(c)
    out += _plain_table(variants, width)
    out += [w for note in variants.notes for w in _wrap("  " + note, width)]
    tables = property_tables(c)
    for pt in tables:
        out += ["", f"Properties of {pt.subscription}"]
        out += _plain_table(_tables(pt), width)
        out += [w for note in pt.notes for w in _wrap("  X! " + note, width)]
    if tables:
        out += _wrap(LEGEND, width)
    out += ["", "Differences", *_plain_differences(c, width)]
    return "\n".join(out) + "\n"


def _plain_differences(c: Comparison, width: int) -> Iterator[str]:
    views = difference_views(c)
    for d in views:
        for line in _difference_lines(d):
            yield from _wrap(line, width)
    same = identical_line(c)
    if same is not None:
        yield from _wrap(same, width)
    if not views and same is None:
        yield "no pairs compared"


def _plain_table(t: Table, width: int) -> list[str]:
    """Columns two spaces apart; when the table is wider than ``width``, its widest columns wrap
    (never inside a word), as rich would do it."""
    cells = [t.columns, *t.rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(t.columns))]
    floors = [max((len(w) for row in cells for w in row[i].split()), default=1) for i in range(len(t.columns))]
    while sum(widths) + 2 * (len(widths) - 1) > width:
        i = max(range(len(widths)), key=lambda k: widths[k] - floors[k])
        if widths[i] <= floors[i]:
            break  # as narrow as words allow: wider than the terminal
        widths[i] -= 1
    lines = []
    for n, row in enumerate(cells):
        parts = [_wrap_cell(cell, w) for cell, w in zip(row, widths)]
        for k in range(max(len(p) for p in parts)):
            texts = [p[k] if k < len(p) else "" for p in parts]
            line = "  ".join(
                text.ljust(w) if a == LEFT else text.rjust(w) for text, w, a in zip(texts, widths, t.align)
            )
            lines.append(line.rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def _wrap_cell(cell: str, width: int) -> list[str]:
    """``cell`` in lines of ``width``, broken after a list's commas where it can ("Fast 40/2," and
    "Slow 50/5" stay whole), inside an item only where the item alone is too wide."""
    lines: list[str] = []
    items = cell.split(", ")
    for k, item in enumerate(items):
        item += "," if k < len(items) - 1 else ""
        if lines and len(lines[-1]) + 1 + len(item) <= width:
            lines[-1] += " " + item
        else:
            lines += textwrap.wrap(item, width, break_on_hyphens=False)
    return lines or [""]


# --- rich -----------------------------------------------------------------------------------------


def _rich_report(c: Comparison, width: int) -> str:
    from rich.console import Console
    from rich.text import Text

    buffer = io.StringIO()
    # A terminal's colours into a string: the caller prints it (NO_COLOR still turns them off).
    console = Console(file=buffer, width=width, force_terminal=True, color_system="standard")
    console.print(Text.assemble((TITLE, "bold"), ": " + header(c)))
    variants = variant_table(c)
    _rich_table(console, "Variants", variants)
    tables = property_tables(c)
    for pt in tables:
        _rich_table(console, f"Properties of {pt.subscription}", _tables(pt), symbols=True)
    if tables:
        console.print(Text(LEGEND, style="dim"))
    console.print()
    console.print(Text("Differences", style="bold"))
    for line in _plain_differences(c, width):
        console.print(Text(line), soft_wrap=True)
    return buffer.getvalue()


def _rich_table(console: Console, title: str, t: Table, *, symbols: bool = False) -> None:
    from rich import box
    from rich.table import Table as RichTable
    from rich.text import Text

    table = RichTable(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    for name, align in zip(t.columns, t.align):
        # fold, not rich's default ellipsis: a narrow terminal must not hide a subscription's name
        table.add_column(Text(name), justify="left" if align == LEFT else "right", overflow="fold")
    for row in t.rows:
        # Text, not str: rich would read "[...]" in a user's value as markup. A list in a cell (a
        # figure per subscription, the violated properties) gets a line per item.
        styled = [
            Text(cell, style=STYLES.get(cell, "")) if symbols and k else Text(cell.replace(", ", ",\n"))
            for k, cell in enumerate(row)
        ]
        table.add_row(*styled)
    console.print(table)
    for note in t.notes:
        console.print(Text(("  X! " if symbols else "  ") + note), soft_wrap=False)


__all__ = ["text_report", "use_rich"]
