"""The map from other languages (issue 24, item 4): one table in faidecs/lab/languages.py, which
docs/languages.md shows and `faidecs check` prints for every subscription."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faidecs.cli.main import main
from faidecs.lab.languages import (
    AWAITS,
    COMBINATIONS,
    NEAREST,
    OPERATORS,
    PEERS,
    markdown,
    measured_losses,
    nearest,
    operators_table,
    strategies_table,
)
from faidecs.lab.measured import MEASURED_VIOLATIONS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "languages.md"
BEGIN = "<!-- BEGIN faidecs lab --languages -->\n"
END = "<!-- END faidecs lab --languages -->\n"

# The 16 combinations of the papers, then ALL with NONE (issue 24's design: ALL only with NONE).
CHECKED = [f"{m}+{d}" for d in ("I", "PI", "IP", "FP") for m in ("FR", "FRC", "MR", "MRC")] + ["ALL+NONE"]


def generated_part(page: str) -> str:
    return page[page.index(BEGIN) + len(BEGIN) : page.index(END)]


def test_every_row_of_the_table_is_in_the_page() -> None:
    page = PAGE.read_text(encoding="utf-8")
    strategy_rows = strategies_table().splitlines()[2:]
    operator_rows = operators_table().splitlines()[2:]
    assert len(strategy_rows) == len(NEAREST) and len(operator_rows) == len(OPERATORS)
    missing = [row for row in strategy_rows + operator_rows if row not in page.splitlines()]
    assert missing == []
    for m, d in COMBINATIONS:  # each row names the options and every peer's strategy
        (row,) = [r for r in strategy_rows if r.startswith(f"| `matching {m}, disposal {d}` |")]
        for peer in PEERS:
            assert NEAREST[(m, d)][peer].strategy.replace("|", "\\|") in row


def test_the_page_is_what_the_lab_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """The tables are generated: after the lab's recorded table changes, `faidecs lab --languages`
    regenerates them and this test says when the page was not."""
    assert main(["lab", "--languages"]) == 0
    printed = capsys.readouterr().out
    assert printed == markdown()
    assert generated_part(PAGE.read_text(encoding="utf-8")) == printed


def test_what_a_combination_loses_is_the_labs_row() -> None:
    table = strategies_table()
    for combination, violated in MEASURED_VIOLATIONS.items():
        m, d = combination.matching.value, combination.disposal.value
        assert set(measured_losses(m, d) or ()) == set(violated)
        (row,) = [r for r in table.splitlines() if r.startswith(f"| `matching {m}, disposal {d}` |")]
        assert row.endswith(" | " + (", ".join(measured_losses(m, d) or ()) or "nothing") + " |")
    # a combination the lab has not measured is marked, never given a made-up column
    unmeasured = [(m, d) for m, d in COMBINATIONS if measured_losses(m, d) is None]
    for m, d in unmeasured:
        (row,) = [r for r in table.splitlines() if r.startswith(f"| `matching {m}, disposal {d}` |")]
        assert row.endswith(f" | {AWAITS} |")


def test_the_map_covers_every_option_combination_once() -> None:
    assert len(COMBINATIONS) == len(set(COMBINATIONS)) == 16 + 5  # the papers' 16, then NONE with each matching
    assert ("ALL", "I") not in NEAREST and ("ALL", "NONE") in NEAREST
    for m, d in COMBINATIONS:
        assert set(NEAREST[(m, d)]) == set(PEERS)
        for n in NEAREST[(m, d)].values():
            assert n.strategy and n.text().startswith(n.strategy if n.exact else "nearest ")
    with pytest.raises(ValueError, match="no map for matching ALL, disposal PI"):
        nearest("ALL", "PI")


def test_the_peers_defaults_are_all_and_none_exactly() -> None:
    """Every match, nothing consumed: what SASE, Flink, Esper, TESLA, CORE and OpenCEP call
    skip-till-any-match, followedByAny + noSkip, every -> every, each-within, CORE's and OpenCEP's
    defaults."""
    assert {p: n.text() for p, n in nearest("ALL", "NONE").items()} == {
        "SASE": "skip-till-any-match",
        "Flink CEP": "followedByAny with noSkip",
        "Esper": "every a=A -> every b=B",
        "TESLA": "each-within",
        "CORE": "SELECT ALL with CONSUME BY NONE",
        "OpenCEP": "MATCH_ANY",
    }
    # the dissertation's TESLA mappings stay, marked nearest
    assert nearest("FR", "I")["TESLA"].text().startswith("nearest each-within (the dissertation's mapping")
    assert nearest("FR", "PI")["TESLA"].strategy == "first-within"
    assert nearest("MR", "PI")["TESLA"].strategy == "last-within"


@pytest.mark.parametrize("combination", CHECKED)
def test_check_names_the_nearest_strategy_of_each_peer(
    combination: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    matching, disposal = combination.split("+")
    prog = tmp_path / "p.fdc"
    prog.write_text(
        f"type T(a: int)\ntype U(a: int)\nsubscription S (matching {matching}, disposal {disposal}): T.a < U.a\n"
        "subscription D: T\n",
        encoding="utf-8",
    )
    assert main(["check", str(prog)]) == 0
    lines = capsys.readouterr().out.splitlines()
    first = lines.index("  in other languages (docs/languages.md):")
    assert lines[first + 1 : first + 1 + len(PEERS)] == [
        f"    {peer}: {n.text()}" for peer, n in nearest(matching, disposal).items()
    ]
    # what the options keep comes from the lab's table; options it has no row for say so
    if measured_losses(matching, disposal) is None:
        assert f"  keeps, loses: {AWAITS} (its table has no row for these options yet)" in lines
    else:
        assert any(line.startswith("  keeps: ") for line in lines[:first])
    # the second subscription (FR+PI, the defaults) has its own block
    second = lines.index("  in other languages (docs/languages.md):", first + 1)
    assert lines[second + 1].startswith("    SASE: nearest skip-till-next-match")
    assert main(["check", "--json", str(prog)]) == 0
    sub, _ = json.loads(capsys.readouterr().out)["subscriptions"]
    assert (sub["keeps"] is None) == (measured_losses(matching, disposal) is None)
    assert sub["languages"] == {
        peer: {"strategy": n.strategy, "exact": n.exact, "differs": n.differs}
        for peer, n in nearest(matching, disposal).items()
    }
