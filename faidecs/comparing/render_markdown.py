"""``compare.md``: the terminal report's tables in Markdown, each property linked to its definition,
the plots embedded, and every variant's program text folded away."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from urllib.parse import quote

from faidecs.comparing.property_links import PROPERTIES_DOC, property_link
from faidecs.comparing.report_parts import (
    LEFT,
    LEGEND,
    difference_views,
    header,
    identical_line,
    property_tables,
    variant_table,
)
from faidecs.comparing.result import Comparison

#: what Markdown would read as formatting (or a table's column break) in a user's value
SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def md(text: str) -> str:
    """``text`` shown as it is: Markdown's special characters escaped, on one line."""
    return SPECIAL.sub(r"\\\1", text.replace("&", "&amp;")).replace("\r", " ").replace("\n", " ")


def markdown_report(c: Comparison, *, images: Mapping[str, str] | None = None, docs: str = PROPERTIES_DOC) -> str:
    """The report as Markdown; ``images`` (name -> path relative to the report) are embedded, and
    property names link to ``docs`` (docs/properties.md, relative to the report)."""
    out = ["# faidecs compare", "", md(header(c)), "", "## Variants", ""]
    variants = variant_table(c)
    out += _table(variants.columns, variants.align, variants.rows)
    out += _notes(variants.notes)
    if images:
        out += ["", "## Plots", ""]
        out += [f"![{md(name)}]({_path(path)})" for name, path in images.items()]
    tables = property_tables(c)
    for pt in tables:
        out += ["", f"## Properties of {md(pt.subscription)}", ""]
        rows = tuple((f"[{md(p)}]({_path(property_link(p, docs))})",) + s for p, s in pt.rows)
        out += _table(("property",) + pt.variants, (LEFT,) * (1 + len(pt.variants)), rows, escaped=1)
        out += _notes(tuple(f"X! {note}" for note in pt.notes))
    if tables:
        out += ["", md(LEGEND)]
    out += ["", "## Differences", "", *_differences(c)]
    out += ["", "## Programs", ""]
    for v in c.variants:
        if not v.program:  # skipped before its program was written
            continue
        out += [f"<details><summary>{md(v.name)}</summary>", "", *_code(v.program), "", "</details>", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _path(path: str) -> str:
    # Percent-encoded, as a relative URL: a space or parenthesis would end Markdown's link.
    return quote(path, safe="/#")


def _table(
    columns: tuple[str, ...], align: tuple[str, ...], rows: tuple[tuple[str, ...], ...], escaped: int = 0
) -> list[str]:
    """A GFM table; the first ``escaped`` cells of each row are Markdown already."""
    lines = ["| " + " | ".join(map(md, columns)) + " |"]
    lines.append("|" + "|".join("---" if a == LEFT else "---:" for a in align) + "|")
    for row in rows:
        cells = list(row[:escaped]) + [md(cell) for cell in row[escaped:]]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _notes(notes: tuple[str, ...]) -> list[str]:
    return ["", *(f"- {md(note)}" for note in notes)] if notes else []


def _differences(c: Comparison) -> Iterator[str]:
    views = difference_views(c)
    for d in views:
        first = f"; {md(d.first)}:" if d.first is not None else ";"
        yield f"- **{md(d.title)}**: {md(d.counts)}{first}"
        yield f"  - {md(d.a_delivered)};"
        yield f"  - {md(d.b_delivered)}"
    same = identical_line(c)
    if same is not None:
        if views:
            yield ""  # a paragraph, not a continuation of the list's last item
        yield md(same)
    if not views and same is None:
        yield "No pairs compared."


def _code(text: str) -> list[str]:
    """A fenced block longer than any run of backticks in ``text``, so the text cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "text", text.rstrip("\n"), fence]


__all__ = ["markdown_report", "md"]
