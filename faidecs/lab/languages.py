"""The map from other languages (issue 24, item 4): for each faidecs option combination, the
nearest selection and consumption strategy of SASE, Flink CEP, Esper, TESLA, CORE and OpenCEP,
and each peer operator beside its faidecs spelling.

This module is the one place that knowledge lives. ``faidecs check`` prints :func:`nearest` for
every subscription, and the tables of docs/languages.md are :func:`markdown`'s output
(``faidecs lab --languages`` prints them; a unit test keeps the page equal to it). What a
combination keeps comes from the lab's recorded table (:mod:`faidecs.lab.measured`), never from
this module: a combination the lab has not measured yet reads "awaits the lab".

Combinations are keyed by the option names as strings, so the map also covers options the
grammar may not have yet (``ALL``, ``NONE``, issue 24).

A peer's strategy is *exact* when it delivers the same relations as the faidecs options for a
sequence written as a conjunction with an order predicate (``A and B and A.time < B.time``) and,
where the peer has a window, the same window (``within D on time``); otherwise it is the
*nearest*, with what differs in a few words. The peers' spellings follow their documentation:
SASE+ (Agrawal et al., SIGMOD 2008), the Flink CEP Pattern API, the Esper EPL reference
(patterns and match_recognize), TESLA (Cugola and Margara, DEBS 2010; the dissertation's
section 4.4.1), CORE's CEQL grammar (CEQLQueryParser.g4) and OpenCEP's ConsumptionPolicy.
"""

from __future__ import annotations

from typing import NamedTuple

from faidecs.lab.measured import MEASURED_VIOLATIONS
from faidecs.matching.guarantees import PROPERTIES, Property

PEERS: tuple[str, ...] = ("SASE", "Flink CEP", "Esper", "TESLA", "CORE", "OpenCEP")

MATCHINGS: tuple[str, ...] = ("FR", "FRC", "MR", "MRC", "ALL")
DISPOSALS: tuple[str, ...] = ("I", "PI", "IP", "FP", "NONE")


class Nearest(NamedTuple):
    """A peer's strategy for a combination; exact when nothing ``differs``."""

    strategy: str
    differs: str = ""

    @property
    def exact(self) -> bool:
        return not self.differs

    def text(self) -> str:
        if self.exact:
            return self.strategy
        return f"nearest {self.strategy} ({self.differs})"


# Each peer's part for the matching option (which events a match takes) and for the disposal
# option (what a match uses up); a combination joins the two, unless _WHOLE names it outright.
# An empty strategy means the peer has nothing to write for that part.
_SELECTION: dict[str, dict[str, Nearest]] = {
    "SASE": {
        "FR": Nearest("skip-till-next-match", "faidecs: one match, oldest first"),
        "FRC": Nearest("partition contiguity", "faidecs: contiguous in each type's queue"),
        "MR": Nearest("skip-till-next-match", "faidecs: one match, newest first"),
        "MRC": Nearest("partition contiguity", "faidecs: contiguous in each type's queue, newest first"),
        "ALL": Nearest("skip-till-any-match"),
    },
    "Flink CEP": {
        "FR": Nearest("followedBy", "faidecs: one match, oldest first"),
        "FRC": Nearest("next, consecutive()", "faidecs: contiguous in each type's queue, not the stream"),
        "MR": Nearest("followedBy", "faidecs: one match, newest first"),
        "MRC": Nearest("next, consecutive()", "faidecs: contiguous in each type's queue, newest first"),
        "ALL": Nearest("followedByAny"),
    },
    "Esper": {
        "FR": Nearest("every a=A -> b=B", "faidecs: one match, oldest first"),
        "FRC": Nearest("match_recognize", "faidecs: contiguous in each type's queue, not the stream"),
        "MR": Nearest("every a=A -> (b=B and not A)", "faidecs: the newest A the predicates accept"),
        "MRC": Nearest("match_recognize", "faidecs: contiguous in each type's queue, newest first"),
        "ALL": Nearest("every a=A -> every b=B"),
    },
    "TESLA": {
        "FR": Nearest("first-within"),
        "FRC": Nearest("first-within", "TESLA has no contiguity"),
        "MR": Nearest("last-within"),
        "MRC": Nearest("last-within", "TESLA has no contiguity"),
        "ALL": Nearest("each-within"),
    },
    "CORE": {  # pycer 0.1.6 parses SELECT NEXT, LAST, STRICT, ... but applies none of them
        "FR": Nearest(
            "SELECT NEXT, LIMIT 1", "pycer 0.1.6 ignores NEXT; LIMIT 1 keeps the newest match, faidecs the oldest"
        ),
        "FRC": Nearest(
            "`:` and `:+`, LIMIT 1", "CORE: contiguous in the stream; faidecs: in each type's queue, oldest first"
        ),
        "MR": Nearest("LIMIT 1", "keeps the match CORE enumerates first: the newest in pycer 0.1.6, undocumented"),
        "MRC": Nearest("`:` and `:+`, LIMIT 1", "CORE: contiguous in the stream; faidecs: in each type's queue"),
        "ALL": Nearest("SELECT ALL"),
    },
    "OpenCEP": {
        "FR": Nearest("", "faidecs: one match, oldest first"),
        "FRC": Nearest("contiguous=[...]", "OpenCEP: contiguous in the stream; faidecs: in each type's queue"),
        "MR": Nearest("", "faidecs: one match, newest first"),
        "MRC": Nearest(
            "contiguous=[...]", "OpenCEP: contiguous in the stream; faidecs: in each type's queue, newest first"
        ),
        "ALL": Nearest(""),
    },
}

_CONSUMPTION: dict[str, dict[str, Nearest]] = {
    "SASE": {  # SASE consumes nothing: a run that completes leaves its events to the other runs
        "I": Nearest("", "faidecs removes the matched events"),
        "PI": Nearest("", "faidecs removes matched and older events"),
        "IP": Nearest("", "faidecs removes matched and younger events"),
        "FP": Nearest("", "faidecs removes events up to the first matched"),
        "NONE": Nearest(""),
    },
    "Flink CEP": {
        "I": Nearest("skipPastLastEvent", "faidecs keeps the unmatched events"),
        "PI": Nearest("skipPastLastEvent", "faidecs disposes per type, up to its last matched event"),
        "IP": Nearest("skipPastLastEvent", "faidecs keeps only events older than the match"),
        "FP": Nearest("skipToNext", "faidecs disposes per type, up to its first matched event"),
        "NONE": Nearest("noSkip"),
    },
    "Esper": {
        "I": Nearest("@SuppressOverlappingMatches", "Esper also drops the overlapping partial matches"),
        "PI": Nearest("@DiscardPartialsOnMatch", "Esper drops every partial match, faidecs older events"),
        "IP": Nearest("@DiscardPartialsOnMatch", "Esper drops every partial match, faidecs younger events"),
        "FP": Nearest("", "faidecs uses each event once as the first matched"),
        "NONE": Nearest(""),
    },
    "TESLA": {  # the dissertation: `consuming` is I disposal
        "I": Nearest("consuming", "faidecs may match without the arriving event"),
        "PI": Nearest("consuming", "faidecs also removes the older unmatched events"),
        "IP": Nearest("consuming", "faidecs also removes the younger unmatched events"),
        "FP": Nearest("", "faidecs removes events up to the first matched"),
        "NONE": Nearest(""),
    },
    "CORE": {
        "I": Nearest("CONSUME BY ANY", "CORE drops all partial matches, faidecs only the matched events"),
        "PI": Nearest("CONSUME BY ANY", "CORE drops all partial matches, faidecs keeps younger events"),
        "IP": Nearest("CONSUME BY ANY", "CORE drops all partial matches, faidecs keeps older events"),
        "FP": Nearest("CONSUME BY NONE", "faidecs removes events up to the first matched"),
        "NONE": Nearest("CONSUME BY NONE"),
    },
    "OpenCEP": {
        "I": Nearest("MATCH_SINGLE"),
        "PI": Nearest("MATCH_SINGLE", "faidecs also removes the older unmatched events"),
        "IP": Nearest("MATCH_SINGLE", "faidecs also removes the younger unmatched events"),
        "FP": Nearest("MATCH_ANY", "faidecs uses each event once as the first matched"),
        "NONE": Nearest("MATCH_ANY"),
    },
}

# Esper writes contiguity with match_recognize, whose consumption is its AFTER MATCH SKIP clause.
_CONSUMPTION_CONTIGUOUS: dict[str, dict[str, Nearest]] = {
    "Esper": {
        "I": Nearest("AFTER MATCH SKIP PAST LAST ROW", "faidecs keeps the unmatched events"),
        "PI": Nearest("AFTER MATCH SKIP PAST LAST ROW", "faidecs disposes per type, up to its last matched event"),
        "IP": Nearest("AFTER MATCH SKIP PAST LAST ROW", "faidecs keeps only events older than the match"),
        "FP": Nearest("AFTER MATCH SKIP TO NEXT ROW", "faidecs disposes per type, up to its first matched event"),
        "NONE": Nearest("ALL MATCHES"),
    },
}

# Whole combinations a peer names with one idiom: the dissertation's mappings of TESLA (Table 4.2,
# section 4.4.1; faidecs then had neither ALL nor NONE) and Esper's restarting pattern.
_WHOLE: dict[tuple[str, str], dict[str, Nearest]] = {
    ("FR", "I"): {
        "TESLA": Nearest("each-within", "the dissertation's mapping; TESLA delivers every match at once"),
    },
    ("FR", "PI"): {
        "TESLA": Nearest("first-within", "the dissertation's worst case; TESLA keeps the skipped events"),
        "Esper": Nearest("every (a=A -> b=B)", "Esper ignores an A that arrives while it waits; faidecs queues it"),
    },
    ("MR", "PI"): {
        "TESLA": Nearest("last-within", "the dissertation's worst case; TESLA keeps the skipped events"),
        "Esper": Nearest("every a=A -> (b=B and not A)", "any later A ends Esper's wait, even a rejected one"),
    },
}


def _join(selection: Nearest, consumption: Nearest) -> Nearest:
    strategy = " with ".join(s for s in (selection.strategy, consumption.strategy) if s)
    differs = "; ".join(d for d in (selection.differs, consumption.differs) if d)
    return Nearest(strategy or "no option", differs)


def _consumption(peer: str, matching: str, disposal: str) -> Nearest:
    if matching in ("FRC", "MRC") and peer in _CONSUMPTION_CONTIGUOUS:
        return _CONSUMPTION_CONTIGUOUS[peer][disposal]
    return _CONSUMPTION[peer][disposal]


def _valid(matching: str, disposal: str) -> bool:
    # design24: `matching ALL` only with `disposal NONE`
    return matching != "ALL" or disposal == "NONE"


#: The combinations of the map, in the lab's order (disposal, then matching), ALL+NONE last.
COMBINATIONS: tuple[tuple[str, str], ...] = tuple((m, d) for d in DISPOSALS for m in MATCHINGS if _valid(m, d))

#: (matching, disposal) -> peer -> its nearest strategy: the one table.
NEAREST: dict[tuple[str, str], dict[str, Nearest]] = {
    (m, d): {
        peer: _WHOLE.get((m, d), {}).get(peer) or _join(_SELECTION[peer][m], _consumption(peer, m, d)) for peer in PEERS
    }
    for m, d in COMBINATIONS
}


def nearest(matching: str, disposal: str) -> dict[str, Nearest]:
    """Each peer's nearest strategy to ``matching`` and ``disposal`` (option names)."""
    try:
        return NEAREST[(matching, disposal)]
    except KeyError:
        raise ValueError(f"no map for matching {matching}, disposal {disposal}") from None


def measured_losses(matching: str, disposal: str) -> tuple[Property, ...] | None:
    """What the lab found violated under these options (plain covering), or None while the lab
    has not measured them."""
    for combination, violated in MEASURED_VIOLATIONS.items():
        if (combination.matching.value, combination.disposal.value) == (matching, disposal):
            return tuple(p for p in PROPERTIES if p in violated)
    return None


AWAITS = "awaits the lab"

# The operators: what each peer writes, and the faidecs spelling (docs/semantics.md has the rules).
OPERATORS: tuple[tuple[str, str, dict[str, str]], ...] = (
    (
        "sequence (A then B)",
        "`A and B and A.time < B.time`",
        {
            "SASE": "`SEQ(A a, B b)`",
            "Flink CEP": '`begin("a").followedBy("b")`',
            "Esper": "`a=A -> b=B`",
            "TESLA": "`from B() and each A() within D from B`",
            "CORE": "`A ; B`",
            "OpenCEP": "`SeqOperator([...])`",
        },
    ),
    (
        "conjunction (any order)",
        "`A and B`",
        {
            "SASE": "none",
            "Flink CEP": "none",
            "Esper": "`a=A and b=B`",
            "TESLA": "`and`",
            "CORE": "none",
            "OpenCEP": "`AndOperator([...])`",
        },
    ),
    (
        "disjunction",
        "`... or ...`",
        {
            "SASE": "none",
            "Flink CEP": "none",
            "Esper": "`or`",
            "TESLA": "one rule per alternative",
            "CORE": "`OR`",
            "OpenCEP": "`OrOperator([...])`",
        },
    ),
    (
        "negation between two events",
        "`no C(preds) between A and B`",
        {
            "SASE": "`SEQ(A a, !(C c), B b)`",
            "Flink CEP": '`notFollowedBy("c")` between two patterns, `notNext`',
            "Esper": "`a=A -> (b=B and not C)`",
            "TESLA": "`not C() between A and B`",
            "CORE": "`NOT(C)` (in recent grammars)",
            "OpenCEP": "`NegationOperator(...)` inside `SeqOperator`",
        },
    ),
    (
        "absence with a timeout",
        "`A and no B(preds) after A`, `within D on time`",
        {
            "SASE": "`SEQ(A a, !(B b))` `WITHIN D`",
            "Flink CEP": '`notFollowedBy("b")` last, with `within(D)`; timed-out partial matches',
            "Esper": "`every a=A -> (timer:interval(D) and not B)`",
            "TESLA": "`not B() within D from A`",
            "CORE": "none",
            "OpenCEP": "`NegationOperator(...)` last in `SeqOperator`",
        },
    ),
    (
        "Kleene closure",
        "`T+` (one group, a contiguous run of Q[T])",
        {
            "SASE": "`B+ b[]`",
            "Flink CEP": "`oneOrMore()`, `times(n)`, `timesOrMore(n)`",
            "Esper": "`[n] A`, `A until B`; match_recognize `B+`",
            "TESLA": "rule hierarchies (no operator)",
            "CORE": "`+` and `:+` (contiguous)",
            "OpenCEP": "`KleeneClosureOperator(...)`",
        },
    ),
    (
        "aggregates over the group",
        "`count(T)`, `sum(T.a)`, `avg(T.a)`, `min(T.a)`, `max(T.a)`; `prev(T).a`",
        {
            "SASE": "`avg(b[..i-1].price)`, `b[i-1]`, `b.LEN`",
            "Flink CEP": "iterative conditions over `ctx.getEventsForPattern`",
            "Esper": "match_recognize `MEASURES`, `prev`",
            "TESLA": "`Avg(...)`, `Sum(...)`, `Min`, `Max`, `Count`",
            "CORE": "none",
            "OpenCEP": "`KCValueFormula`, `KCIndexFormula`",
        },
    ),
    (
        "window",
        "`within D on ATTR` (`lateness L`)",
        {
            "SASE": "`WITHIN D`",
            "Flink CEP": "`within(D)`",
            "Esper": "`timer:within(D)`; match_recognize `INTERVAL`",
            "TESLA": "`within D from A`",
            "CORE": "`WITHIN D EVENTS`, `WITHIN D [attr]`, `WITHIN D SECONDS`",
            "OpenCEP": "`timedelta(...)` of the `Pattern`",
        },
    ),
    (
        "partitions",
        "`(partition by k)`",
        {
            "SASE": "`[k]` equivalence test",
            "Flink CEP": "`keyBy(k)` on the input",
            "Esper": "match_recognize `PARTITION BY`; contexts",
            "TESLA": "parameters (`$x`) in the predicates",
            "CORE": "`PARTITION BY [k]`, `CONSUME BY PARTITION`",
            "OpenCEP": "predicates only",
        },
    ),
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def strategies_table() -> str:
    """One row per combination: each peer's nearest strategy and what the lab finds lost."""
    head = "| faidecs | " + " | ".join(PEERS) + " | loses (the lab; it keeps the rest) |"
    rows = [head, "|---" * (len(PEERS) + 2) + "|"]
    for m, d in COMBINATIONS:
        lost = measured_losses(m, d)
        shown = AWAITS if lost is None else (", ".join(lost) or "nothing")
        cells = [f"`matching {m}, disposal {d}`", *(_cell(NEAREST[(m, d)][p].text()) for p in PEERS), shown]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def operators_table() -> str:
    """One row per operator: the faidecs spelling and each peer's."""
    head = "| operator | faidecs | " + " | ".join(PEERS) + " |"
    rows = [head, "|---" * (len(PEERS) + 2) + "|"]
    for name, spelling, peers in OPERATORS:
        rows.append("| " + " | ".join([name, _cell(spelling), *(_cell(peers[p]) for p in PEERS)]) + " |")
    return "\n".join(rows) + "\n"


def named_strategies() -> dict[str, list[tuple[str, tuple[str, str]]]]:
    """Per peer, the strategies that name a faidecs combination outright: the exact ones, and the
    dissertation's mappings of TESLA (labelled with the combination they were mapped to)."""
    named: dict[str, list[tuple[str, tuple[str, str]]]] = {p: [] for p in PEERS}
    for combination in COMBINATIONS:
        for peer, n in NEAREST[combination].items():
            if n.exact:
                named[peer].append((n.strategy, combination))
            elif n.differs.startswith("the dissertation"):
                named[peer].append((f"{n.strategy} (as {'+'.join(combination)})", combination))
    return named


def properties_table() -> str:
    """The dissertation's Tables 4.2 and 4.3 extended: per peer and property, the strategies that
    lose it, by the lab's row of the combination each names; those not measured yet apart."""
    head = "| | " + " | ".join(PROPERTIES) + f" | {AWAITS} |"
    rows = [head, "|---" * (len(PROPERTIES) + 2) + "|"]
    for peer, strategies in named_strategies().items():
        cells: list[list[str]] = [[] for _ in PROPERTIES]
        waiting: list[str] = []
        for name, (m, d) in strategies:
            lost = measured_losses(m, d)
            if lost is None:
                waiting.append(f"{name} ({m}+{d})")
                continue
            for i, prop in enumerate(PROPERTIES):
                if prop in lost:
                    cells[i].append(name)
        shown = [_cell(", ".join(c)) or "-" for c in cells]
        rows.append(f"| {peer} | " + " | ".join(shown) + f" | {_cell(', '.join(waiting)) or '-'} |")
    return "\n".join(rows) + "\n"


def markdown() -> str:
    """The generated part of docs/languages.md (``faidecs lab --languages``)."""
    return (
        f"### Operators\n\n{operators_table()}\n"
        f"### Selection and consumption strategies\n\n{strategies_table()}\n"
        f"### What each peer's strategies lose (the dissertation's Tables 4.2 and 4.3, extended)\n\n"
        f"{properties_table()}"
    )


__all__ = [
    "AWAITS",
    "COMBINATIONS",
    "DISPOSALS",
    "MATCHINGS",
    "NEAREST",
    "OPERATORS",
    "PEERS",
    "Nearest",
    "markdown",
    "measured_losses",
    "nearest",
    "named_strategies",
    "operators_table",
    "properties_table",
    "strategies_table",
]
