"""What every report of a :class:`Comparison` shows, as text cells: the terminal, Markdown and HTML
renderers only lay these parts out, so the three say the same thing in the same words.

User data (event ids and attribute values) is shortened here, never escaped: each renderer escapes
for its own format.
"""

from __future__ import annotations

from dataclasses import dataclass

from faidecs.brief import SHOWN_CHARS, brief
from faidecs.comparing.result import (
    Comparison,
    Difference,
    ShownEvent,
    ShownRelation,
    SubscriptionFigures,
    VariantResult,
    Verdict,
)

#: cell alignments: numbers to the right, so their digits line up
LEFT, RIGHT = "l", "r"


@dataclass(frozen=True, slots=True)
class Table:
    columns: tuple[str, ...]
    align: tuple[str, ...]  # LEFT or RIGHT per column
    rows: tuple[tuple[str, ...], ...]
    #: what a reader must know besides the cells (why a variant was skipped or stopped, drops)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PropertyTable:
    """One subscription's verdicts: a row per property, a symbol (:func:`symbol`) per variant."""

    subscription: str
    variants: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]  # (property, symbols)
    #: the explanations of the violations that contradict the lab: the lab's table is wrong there
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DifferenceView:
    """A :class:`Difference` that is not identical, in words."""

    title: str  # "S: A vs B"
    counts: str  # "common N, only A n, only B m"
    first: str | None  # "first at event #k (id:Type(...))"
    a_delivered: str  # "A delivered [...]"
    b_delivered: str


SYMBOLS = {"unproven": "?", "undecided": "?"}
LEGEND = (
    "ok: holds · ok*: holds here, though the lab finds it can be lost · X: violated, as the lab predicts "
    "(or the lab has no verdict) · X!: violated, CONTRADICTS THE LAB (it finds the property kept) · "
    "?: unproven or undecided · -: not judged"
)


def symbol(v: Verdict | None) -> str:
    if v is None:
        return "-"
    if v.run == "holds":
        return "ok*" if v.mark == "not shown" else "ok"
    if v.run == "violated":
        return "X!" if v.mark == "CONTRADICTS THE LAB" else "X"
    return SYMBOLS[v.run]


def number(value: float, decimals: int = 0) -> str:
    return f"{value:,.{decimals}f}"


def header(c: Comparison) -> str:
    ran = sum(1 for v in c.variants if v.skipped is None)
    rejected = f" ({number(c.rejected)} rejected)" if c.rejected else ""
    return (
        f"{number(c.events)} events{rejected} from {c.source}, program {c.program}: "
        f"{ran} of {len(c.variants)} variants ran on {c.workers} worker{'s' if c.workers != 1 else ''}, "
        f"matcher {c.matcher}, {number(c.seconds, 1)} s (reading {number(c.read_seconds, 1)} s)"
    )


def _per_subscription(subs: tuple[SubscriptionFigures, ...], cell: str) -> str:
    """One figure per subscription, named when there are several (``cell`` formats ``s``)."""
    if len(subs) == 1:
        return cell.format(s=subs[0])
    return ", ".join(f"{s.name} " + cell.format(s=s) for s in subs)


def _violated(v: VariantResult) -> str:
    names = [x.property + ("!" if x.mark == "CONTRADICTS THE LAB" else "") for x in v.verdicts if x.run == "violated"]
    return ", ".join(names) if names else "none"


def variant_table(c: Comparison) -> Table:
    columns = ("variant", "relations", "never used", "queue peak/final", "memory MiB", "ev/s", "p50 µs", "p99 µs")
    align = (LEFT, RIGHT, RIGHT, RIGHT, RIGHT, RIGHT, RIGHT, RIGHT, LEFT)
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    for v in c.variants:
        if v.skipped is not None:
            rows.append((v.name, "skipped") + ("",) * (len(columns) - 1))
            notes.append(f"{v.name} skipped: {v.skipped}")
            continue
        relations = number(sum(s.relations for s in v.subscriptions))
        if len(v.subscriptions) > 1:
            relations += " (" + _per_subscription(v.subscriptions, "{s.relations:,}") + ")"
        rows.append(
            (
                v.name + (" (stopped)" if v.stopped is not None else ""),
                relations,
                _per_subscription(v.subscriptions, "{s.never_used:,}"),
                _per_subscription(v.subscriptions, "{s.peak_queue:,}/{s.final_queue:,}"),
                "-" if v.memory_peak is None else number(v.memory_peak / 2**20, 1),
                number(v.throughput),
                "-" if v.latency is None else number(v.latency.p50, 1),
                "-" if v.latency is None else number(v.latency.p99, 1),
                _violated(v),
            )
        )
        if v.stopped is not None:
            notes.append(f"{v.name}: {v.stopped}")
        notes += [f"{v.name}: {s.name} dropped {s.drops:,} events (bounds)" for s in v.subscriptions if s.drops]
        notes += [f"{v.name}: {sub} ran on the {m} matcher" for sub, m in sorted(v.matchers.items()) if m != c.matcher]
    return Table(columns + ("violated",), align, tuple(rows), tuple(notes))


def subscriptions(c: Comparison) -> tuple[str, ...]:
    """Every subscription some variant ran, in the order the variants list them."""
    names: dict[str, None] = {}
    for v in c.variants:
        names.update((s.name, None) for s in v.subscriptions)
    return tuple(names)


def property_tables(c: Comparison) -> tuple[PropertyTable, ...]:
    ran = [v for v in c.variants if v.skipped is None]
    # The rows follow the whole run's verdicts (``faidecs verify --all`` order); a property that
    # only a later variant judged comes after them.
    order: dict[str, None] = {}
    for v in ran:
        order.update((x.property, None) for x in v.verdicts)
    tables = []
    for name in subscriptions(c):
        judged = {v.name: {x.property: x for x in _verdicts(v, name)} for v in ran}
        rows = tuple((p, tuple(symbol(judged[v.name].get(p)) for v in ran)) for p in order)
        notes = tuple(
            f"{v.name}, {x.property}: {note}"
            for v in ran
            for x in _verdicts(v, name)
            if x.mark == "CONTRADICTS THE LAB"
            for note in x.notes
        )
        tables.append(PropertyTable(name, tuple(v.name for v in ran), rows, notes))
    return tuple(tables)


def _verdicts(v: VariantResult, subscription: str) -> tuple[Verdict, ...]:
    try:
        return v.subscription(subscription).verdicts
    except KeyError:  # a variant that stopped before it subscribed: nothing judged ("-")
        return ()


def _short(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def event_text(e: ShownEvent) -> str:
    """``id:Type(attr=value, ...)``, values as :func:`brief` shows them."""
    attrs = ", ".join(f"{_short(k)}={brief(v)}" for k, v in e.attrs.items())
    return f"{_short(e.id)}:{_short(e.type)}({attrs})"


def relation_text(r: ShownRelation, other: str, conjunctions: bool) -> str:
    text = ("conjunction " + str(r.conjunction) + " " if conjunctions else "") + "["
    text += ", ".join(event_text(e) for e in r.events) + "]"
    if r.timeout:
        text += " by its deadline"
    return text + "".join(f" ({other} had already used {note})" for note in r.used_by_other)


def difference_views(c: Comparison) -> tuple[DifferenceView, ...]:
    return tuple(_view(d) for d in c.differences if not d.identical)


def _view(d: Difference) -> DifferenceView:
    # Conjunctions are named only where a relation is not the first conjunction's.
    conjunctions = any(r.conjunction for r in d.a_relations + d.b_relations)

    def delivered(name: str, other: str, relations: tuple[ShownRelation, ...]) -> str:
        if not relations:
            return f"{name} delivered nothing"
        return f"{name} delivered " + ", ".join(relation_text(r, other, conjunctions) for r in relations)

    first = None
    if d.first_arrival is not None:
        first = f"first at event #{d.first_arrival:,}"
        if d.trigger is not None:
            first += f" ({event_text(d.trigger)})"
    return DifferenceView(
        f"{d.subscription}: {d.a} vs {d.b}",
        f"common {d.common:,}, only {d.a} {d.only_a:,}, only {d.b} {d.only_b:,}",
        first,
        delivered(d.a, d.b, d.a_relations),
        delivered(d.b, d.a, d.b_relations),
    )


def identical_line(c: Comparison) -> str | None:
    """The pairs that deliver the same relations, in one line (None if there are none)."""
    same = [f"{d.subscription}: {d.a} = {d.b}" for d in c.differences if d.identical]
    if not same:
        return None
    shown = "; ".join(same[:6]) + ("; …" if len(same) > 6 else "")
    return f"{len(same)} pair{'s' if len(same) != 1 else ''} deliver the same relations ({shown})"


__all__ = [
    "LEGEND",
    "DifferenceView",
    "PropertyTable",
    "Table",
    "difference_views",
    "event_text",
    "header",
    "identical_line",
    "property_tables",
    "relation_text",
    "subscriptions",
    "symbol",
    "variant_table",
]
