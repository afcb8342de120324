"""``faidecs compare --html``: one self-contained page (inline CSS, the plots as ``data:`` URIs), so
it can be mailed or attached as one file and opened offline. Every value is escaped: event ids and
attributes are user data."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from html import escape
from pathlib import Path

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

#: a verdict symbol's CSS class
CLASSES = {"ok": "ok", "ok*": "notshown", "X": "violated", "X!": "contradicts", "?": "unknown", "-": "none"}

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 80em; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { padding: .2em .7em; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; }
td.r, th.r { text-align: right; font-variant-numeric: tabular-nums; }
td.ok { color: #1a7f37; } td.notshown { color: #9a6700; } td.violated { color: #cf222e; }
td.contradicts { color: #fff; background: #cf222e; font-weight: bold; } td.unknown { color: #8250df; }
td.none { color: #999; }
.legend, .notes { color: #555; }
img { max-width: 100%; display: block; margin: .5em 0 1.5em; }
pre { background: #f6f8fa; padding: .7em; overflow-x: auto; }
code { overflow-wrap: anywhere; }
"""


def html_report(c: Comparison, pngs: Mapping[str, Path] | None, *, docs: str = PROPERTIES_DOC) -> str:
    """The page; ``pngs`` (name -> file, :func:`~faidecs.comparing.plots.write_plots`) are read and
    embedded; property names link to ``docs`` (relative to where the page is written)."""
    e = escape
    out = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f"<title>faidecs compare: {e(c.program)}</title><style>{STYLE}</style></head><body>",
        "<h1>faidecs compare</h1>",
        f"<p>{e(header(c))}</p>",
        "<h2>Variants</h2>",
    ]
    variants = variant_table(c)
    out.append(
        _table(
            variants.columns,
            variants.align,
            [[_td(cell, a) for cell, a in zip(row, variants.align)] for row in variants.rows],
        )
    )
    out.append(_notes(variants.notes))
    if pngs:
        out.append("<h2>Plots</h2>")
        for name, path in pngs.items():
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            out.append(f'<img alt="{e(name)}" src="data:image/png;base64,{data}">')
    tables = property_tables(c)
    for pt in tables:
        out.append(f"<h2>Properties of {e(pt.subscription)}</h2>")
        rows = [
            [f'<td><a href="{e(property_link(p, docs))}">{e(p)}</a></td>']
            + [f'<td class="{CLASSES[s]}">{e(s)}</td>' for s in symbols]
            for p, symbols in pt.rows
        ]
        out.append(_table(("property",) + pt.variants, (LEFT,) * (1 + len(pt.variants)), rows))
        out.append(_notes(tuple(f"X! {note}" for note in pt.notes)))
    if tables:
        out.append(f'<p class="legend">{e(LEGEND)}</p>')
    out.append("<h2>Differences</h2>")
    out += _differences(c)
    out.append("<h2>Programs</h2>")
    for v in c.variants:
        if not v.program:  # skipped before its program was written
            continue
        out.append(f"<details><summary>{e(v.name)}</summary><pre>{e(v.program)}</pre></details>")
    out.append("</body></html>")
    return "\n".join(part for part in out if part) + "\n"


def _td(cell: str, align: str) -> str:
    return f"<td>{escape(cell)}</td>" if align == LEFT else f'<td class="r">{escape(cell)}</td>'


def _table(columns: tuple[str, ...], align: tuple[str, ...], rows: list[list[str]]) -> str:
    """A table of ``rows``, whose cells are ``<td>`` elements already."""
    head = "".join(
        f"<th>{escape(col)}</th>" if a == LEFT else f'<th class="r">{escape(col)}</th>'
        for col, a in zip(columns, align)
    )
    body = "".join("<tr>" + "".join(row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _notes(notes: tuple[str, ...]) -> str:
    if not notes:
        return ""
    return '<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"


def _differences(c: Comparison) -> list[str]:
    e = escape
    views = difference_views(c)
    out = []
    if views:
        out.append("<ul>")
        for d in views:
            first = f"; {e(d.first)}:" if d.first is not None else ";"
            out.append(
                f"<li><b>{e(d.title)}</b>: {e(d.counts)}{first}<ul>"
                f"<li><code>{e(d.a_delivered)}</code>;</li><li><code>{e(d.b_delivered)}</code></li></ul></li>"
            )
        out.append("</ul>")
    same = identical_line(c)
    if same is not None:
        out.append(f"<p>{e(same)}</p>")
    if not views and same is None:
        out.append("<p>No pairs compared.</p>")
    return out


__all__ = ["html_report"]
