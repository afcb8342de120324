"""The reports of ``faidecs compare`` (terminal, Markdown, HTML, PNG plots) on a hand-built
:class:`Comparison`: three variants (one skipped), two subscriptions, a difference with a user's
``<script>`` in an attribute and an event the other variant had used, and a violation that
contradicts the lab."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from faidecs.comparing.property_links import ANCHOR, PROPERTIES_DOC, property_link
from faidecs.comparing.render_html import html_report
from faidecs.comparing.render_markdown import markdown_report
from faidecs.comparing.render_text import text_report, use_rich
from faidecs.comparing.result import (
    Comparison,
    Difference,
    Latency,
    QueueSeries,
    ShownEvent,
    ShownRelation,
    SubscriptionFigures,
    VariantResult,
    Verdict,
)
from faidecs.matching.guarantees import Property

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "<script>alert(1)</script>"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def verdicts(*, contradict: bool) -> tuple[Verdict, ...]:
    return (
        Verdict("No Duplication", "holds", "kept", "confirmed"),
        Verdict("Event Validity", "holds", "lost", "not shown"),
        Verdict(
            "Type Total Order",
            "violated",
            "kept" if contradict else "lost",
            "CONTRADICTS THE LAB" if contradict else "predicted",
            ("Fast and Slow deliver e3 and e7 in opposite orders",) if contradict else (),
        ),
        Verdict("Conjunction Validity", "unproven", None, ""),
    )


def figures(
    name: str, relations: int, never_used: int, peak: int, final: int, v: tuple[Verdict, ...]
) -> SubscriptionFigures:
    return SubscriptionFigures(name, "FR+PI", relations, 0, 100, never_used, peak, final, 0, v)


def variant(name: str, fast: int, slow: int, throughput: float, *, contradict: bool = False) -> VariantResult:
    v = verdicts(contradict=contradict)
    return VariantResult(
        name=name,
        program=f"subscribe Fast: T1 and T2 matching {name}\n# a ``` fence inside\n",
        events=1000,
        engine_seconds=0.5,
        wall_seconds=1.0,
        throughput=throughput,
        latency=Latency(p50=3.25, p90=5.0, p99=17.5, p999=40.0, max=90.0),
        memory_peak=3 * 2**20,
        matchers={"Fast": "compiled", "Slow": "compiled"},
        subscriptions=(figures("Fast", fast, 11, 40, 2, v), figures("Slow", slow, 22, 50, 5, v[:2])),
        verdicts=v,
        queues=QueueSeries(500, (500, 1000), {"Fast": (30, 2), "Slow": (10, 5)}),
    )


def event(position: int, id: str, type: str, **attrs: object) -> ShownEvent:
    return ShownEvent(position, id, type, dict(attrs))


@pytest.fixture(scope="module")
def comparison() -> Comparison:
    a = variant("FR+PI", 123, 45, 98765.4)
    b = variant("MR+PI", 120, 47, 87654.3, contradict=True)
    skipped = VariantResult("FR+NONE staged", "", skipped="disposal NONE has no staged covering")
    trigger = event(6, "e7", "T2", note=SCRIPT)
    diff = Difference(
        "Fast",
        "FR+PI",
        "MR+PI",
        identical=False,
        common=118,
        only_a=5,
        only_b=2,
        first_arrival=6,
        trigger=trigger,
        a_relations=(ShownRelation(0, (event(2, "e3", "T1", a=1), trigger)),),
        b_relations=(
            ShownRelation(
                0, (event(5, "e6", "T1", a=2), trigger), used_by_other=("e6: in its relation delivered at event #5",)
            ),
        ),
    )
    same = Difference("Slow", "FR+PI", "MR+PI", identical=True, common=45, only_a=0, only_b=0)
    return Comparison(
        program="stock.fdc",
        source="trades.jsonl",
        events=1000,
        rejected=3,
        read_seconds=0.25,
        seconds=4.5,
        workers=2,
        matcher="compiled",
        variants=(a, b, skipped),
        differences=(diff, same),
    )


def row(text: str, start: str) -> str:
    (line,) = [line for line in text.splitlines() if line.startswith(start)]
    return line


def test_plain_text_puts_each_figure_in_its_variants_row(comparison: Comparison) -> None:
    text = text_report(comparison, rich=False, width=200)
    assert "1,000 events (3 rejected) from trades.jsonl" in text and "on 2 workers" in text
    fr = row(text, "FR+PI ")
    for figure in (
        "168 (Fast 123, Slow 45)",
        "Fast 11, Slow 22",
        "Fast 40/2, Slow 50/5",
        "3.0",
        "98,765",
        "3.2",
        "17.5",
    ):
        assert figure in fr
    assert fr.rstrip().endswith("Type Total Order")
    mr = row(text, "MR+PI ")
    assert "167 (Fast 120, Slow 47)" in mr and "87,654" in mr and mr.rstrip().endswith("Type Total Order!")
    assert "skipped" in row(text, "FR+NONE staged")
    assert "FR+NONE staged skipped: disposal NONE has no staged covering" in text


def test_a_stopped_variant_says_why_with_its_drops_and_matchers(comparison: Comparison) -> None:
    a = comparison.variants[0]
    stopped = replace(
        a,
        stopped="stopped at event #601 (e601): subscription Fast, conjunction 0: queue T1 is full",
        events=600,
        subscriptions=(replace(a.subscriptions[0], drops=7), a.subscriptions[1]),
        matchers={"Fast": "compiled", "Slow": "reference"},
    )
    c = replace(comparison, variants=(stopped,), differences=())
    for text in (text_report(c, rich=False, width=200), markdown_report(c)):
        assert "FR+PI (stopped)" in text
        assert "FR+PI: stopped at event #601 (e601): subscription Fast, conjunction 0: queue T1 is full" in text
        assert "FR+PI: Fast dropped 7 events (bounds)" in text
        assert "FR+PI: Slow ran on the reference matcher" in text
        assert "Fast: ran on" not in text
    assert "no pairs compared" in text_report(c, rich=False)


def test_the_properties_table_marks_a_contradiction_of_the_lab(comparison: Comparison) -> None:
    text = text_report(comparison, rich=False, width=200)
    fast = text.split("Properties of Fast")[1].split("Properties of Slow")[0]
    assert row(fast, "property").split() == ["property", "FR+PI", "MR+PI"]  # the skipped variant has no column
    assert row(fast, "No Duplication").split()[-2:] == ["ok", "ok"]
    assert row(fast, "Event Validity").split()[-2:] == ["ok*", "ok*"]
    assert row(fast, "Type Total Order").split()[-2:] == ["X", "X!"]
    assert row(fast, "Conjunction Validity").split()[-2:] == ["?", "?"]
    assert "X! MR+PI, Type Total Order: Fast and Slow deliver e3 and e7 in opposite orders" in fast
    slow = text.split("Properties of Slow")[1].split("Differences")[0]
    assert row(slow, "Type Total Order").split()[-2:] == ["-", "-"]  # judged for Fast only
    assert "X!: violated, CONTRADICTS THE LAB" in text


def test_a_difference_shows_the_first_relations_and_what_the_other_had_used(comparison: Comparison) -> None:
    text = text_report(comparison, rich=False, width=300)
    diffs = text.split("\nDifferences\n")[1]
    assert "Fast: FR+PI vs MR+PI: common 118, only FR+PI 5, only MR+PI 2;" in diffs
    assert f"first at event #6 (e7:T2(note='{SCRIPT}')):" in diffs
    assert f"FR+PI delivered [e3:T1(a=1), e7:T2(note='{SCRIPT}')];" in diffs
    assert "MR+PI delivered [e6:T1(a=2), e7:T2(" in diffs
    assert "(FR+PI had already used e6: in its relation delivered at event #5)" in diffs
    assert "1 pair deliver the same relations (Slow: FR+PI = MR+PI)" in diffs


def test_plain_text_fits_the_width_by_wrapping(comparison: Comparison) -> None:
    text = text_report(comparison, rich=False, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "Fast 40/2," in text and "Slow 50/5" in text


def test_plain_text_works_without_rich(comparison: Comparison, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rich", None)  # "import rich" fails as on a base install
    with pytest.raises(ImportError):
        import rich  # noqa: F401
    assert not use_rich(sys.stdout)
    assert text_report(comparison) == text_report(comparison, rich=False)


class Tty:
    def isatty(self) -> bool:
        return True


def test_rich_draws_the_same_figures_and_shows_markup_literally(comparison: Comparison) -> None:
    assert use_rich(Tty())  # type: ignore[arg-type]
    text = ANSI.sub("", text_report(comparison, rich=True, width=200))
    assert "X!" in text and "ok*" in text and "98,765" in text
    assert f"note='{SCRIPT}'" in text
    assert "FR+NONE staged skipped" in text
    mr = [line for line in text.splitlines() if "MR+PI" in line and "87,654" in line]
    assert len(mr) == 1 and "Type Total Order!" in mr[0]


def github_anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_property_links_to_the_heading_whose_table_defines_it() -> None:
    page = (ROOT / PROPERTIES_DOC).read_text()
    sections: dict[str, str] = {}
    # "#" in fenced examples is not a heading: drop the code blocks first.
    prose = re.sub(r"^```.*?^```", "", page, flags=re.S | re.M)
    for part in re.split(r"^(?=#+ )", prose, flags=re.M)[1:]:
        title, _, body = part.partition("\n")
        sections[github_anchor(title.lstrip("#"))] = body
    assert set(ANCHOR) == {p.value for p in Property}
    for name, anchor in ANCHOR.items():
        assert anchor in sections, (name, anchor)
        assert f"\n| {name} |" in sections[anchor], f"{name} is not defined under #{anchor}"


def test_markdown_has_the_tables_links_images_and_programs(comparison: Comparison) -> None:
    md = markdown_report(comparison, images={"throughput": "throughput.png", "queues": "plots/queues over time.png"})
    fr = row(md, "| FR+PI |")
    assert "168 (Fast 123, Slow 45)" in fr and "98,765" in fr
    link = property_link("Type Total Order")
    fast = md.split("## Properties of Fast")[1].split("## Properties of Slow")[0]
    assert row(fast, "| [Type Total Order]").split(" | ")[1:] == ["X", "X! |"]
    assert f"[Type Total Order]({link})" in md
    assert "| [Event Validity](" in md and "| ok\\* | ok\\* |" in md
    assert "![throughput](throughput.png)" in md and "![queues](plots/queues%20over%20time.png)" in md
    assert "<details><summary>FR+PI</summary>" in md and "subscribe Fast: T1 and T2 matching FR+PI" in md
    assert "\n````text\n" in md  # longer than the program's own ``` fence
    assert "<script>" not in md and "\\<script\\>" in md
    assert "- **Fast: FR+PI vs MR+PI**: common 118" in md


def test_html_is_self_contained_and_escapes_user_data(comparison: Comparison, tmp_path: Path) -> None:
    png = tmp_path / "throughput.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    page = html_report(comparison, {"throughput": png})
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert 'src="data:image/png;base64,iVBORw0KGgpmYWtl"' in page
    assert f'<a href="{property_link("Type Total Order")}">Type Total Order</a>' in page
    assert '<td class="violated">X</td><td class="contradicts">X!</td>' in page
    assert '<td>FR+PI</td><td class="r">168 (Fast 123, Slow 45)</td>' in page
    assert "<details><summary>MR+PI</summary><pre>subscribe Fast" in page


@pytest.fixture(scope="module")
def plots(comparison: Comparison, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("matplotlib", reason="the plots need the compare extra")
    from faidecs.comparing.plots import write_plots

    return write_plots(comparison, tmp_path_factory.mktemp("plots") / "out")


def test_the_plots_are_pngs(plots: dict[str, Path]) -> None:
    assert {name: path.name for name, path in plots.items()} == {
        "throughput": "throughput.png",
        "deliveries": "deliveries.png",
        "queues": "queues.png",
    }
    for path in plots.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_plot_with_nothing_to_show_is_not_written(
    comparison: Comparison, plots: dict[str, Path], tmp_path: Path
) -> None:
    from faidecs.comparing.plots import write_plots

    unsampled = replace(comparison, variants=tuple(replace(v, queues=None) for v in comparison.variants))
    assert sorted(write_plots(unsampled, tmp_path / "a")) == ["deliveries", "throughput"]
    none_ran = replace(comparison, variants=(comparison.variants[2],))
    assert write_plots(none_ran, tmp_path / "b") == {}
    assert list((tmp_path / "b").iterdir()) == []


def test_a_missing_matplotlib_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, comparison: Comparison, tmp_path: Path
) -> None:
    from faidecs.cli.extras import missing_extra_message
    from faidecs.comparing.plots import write_plots

    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'faidecs\[compare\]'") as info:
        write_plots(comparison, tmp_path)
    assert missing_extra_message(info.value, "compare") == (
        "faidecs: compare needs the compare extra (matplotlib is not installed): pip install 'faidecs[compare]'"
    )
