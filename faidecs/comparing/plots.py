"""``faidecs compare``'s PNG plots: throughput and deliveries per variant, queues over the stream.

matplotlib (the ``compare`` extra) is imported only here, when plots are asked for. The figures are
drawn on :class:`matplotlib.figure.Figure` objects, which render with Agg by themselves: pyplot's
global backend is left alone, so a notebook that calls :func:`write_plots` keeps its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from faidecs.comparing.report_parts import subscriptions
from faidecs.comparing.result import Comparison, VariantResult

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

EXTRA = "pip install 'faidecs[compare]'"


def write_plots(c: Comparison, folder: Path) -> dict[str, Path]:
    """Write ``throughput.png``, ``deliveries.png`` and ``queues.png`` into ``folder`` and return
    them by name (``"throughput"``, ...). A plot with nothing to show is not written: no variant
    ran, or none sampled its queues. Raises ModuleNotFoundError (``name`` the missing module, as
    faidecs.cli.extras reads it) when matplotlib is not installed."""
    figure = _figure_class()
    ran = [v for v in c.variants if v.skipped is None]
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    if ran:
        written["throughput"] = _save(_throughput(figure, ran), folder / "throughput.png")
        written["deliveries"] = _save(_deliveries(figure, ran, subscriptions(c)), folder / "deliveries.png")
    sampled = [v for v in ran if v.queues is not None and v.queues.arrivals]
    if sampled:
        written["queues"] = _save(_queues(figure, sampled, subscriptions(c)), folder / "queues.png")
    return written


def _figure_class() -> type[Figure]:
    try:
        from matplotlib.figure import Figure
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(f"the plots need {exc.name} (the compare extra): {EXTRA}", name=exc.name) from exc
    return Figure


def _save(fig: Figure, path: Path) -> Path:
    # No "Software" tag: the same comparison writes the same bytes, whichever matplotlib drew it.
    fig.savefig(path, format="png", dpi=100, metadata={"Software": None})
    return path


def _width(n: int) -> float:
    return max(6.0, 0.6 * n + 2)


def _label_variants(ax: Axes, names: list[str]) -> None:
    ax.set_xticks(range(len(names)))
    # Sixteen combinations do not fit side by side: slanted, they do.
    ax.set_xticklabels(names, rotation=45 if len(names) > 6 else 0, ha="right" if len(names) > 6 else "center")


def _throughput(figure: type[Figure], ran: list[VariantResult]) -> Figure:
    fig = figure(figsize=(_width(len(ran)), 4), layout="constrained")
    ax = fig.add_subplot()
    ax.bar(range(len(ran)), [v.throughput for v in ran], color="tab:blue")
    _label_variants(ax, [v.name for v in ran])
    ax.set_ylabel("events per second of publish()")
    ax.set_title("Throughput")
    return fig


def _deliveries(figure: type[Figure], ran: list[VariantResult], subs: tuple[str, ...]) -> Figure:
    fig = figure(figsize=(_width(len(ran) * max(1, len(subs)) // 2 + 1), 4), layout="constrained")
    ax = fig.add_subplot()
    bar = 0.8 / max(1, len(subs))
    for k, sub in enumerate(subs):
        delivered = [_relations(v, sub) for v in ran]
        offsets = [i - 0.4 + bar * (k + 0.5) for i in range(len(ran))]
        ax.bar(offsets, delivered, width=bar, label=sub)
    _label_variants(ax, [v.name for v in ran])
    ax.set_ylabel("relations delivered")
    ax.set_title("Deliveries per subscription")
    ax.legend()
    return fig


def _relations(v: VariantResult, sub: str) -> int:
    try:
        return v.subscription(sub).relations
    except KeyError:  # stopped before it subscribed
        return 0


def _queues(figure: type[Figure], sampled: list[VariantResult], subs: tuple[str, ...]) -> Figure:
    fig = figure(figsize=(9, 2.6 * len(subs) + 0.8), layout="constrained")
    axes = fig.subplots(len(subs), 1, sharex=True, squeeze=False)[:, 0]
    for ax, sub in zip(axes, subs):
        for i, v in enumerate(sampled):
            assert v.queues is not None  # sampled holds only variants with a series
            if sub in v.queues.queued:
                # One colour per variant in every panel, even where a variant lacks a subscription.
                ax.plot(v.queues.arrivals, v.queues.queued[sub], label=v.name, color=f"C{i % 10}")
        ax.set_title(f"Queued events of {sub}")
        ax.set_ylabel("queued events")
    axes[-1].set_xlabel("events published")
    legend: dict[str, Artist] = {}
    for ax in axes:
        handles, labels = ax.get_legend_handles_labels()
        legend.update(zip(labels, handles))
    fig.legend(list(legend.values()), list(legend), loc="outside right upper")
    return fig


__all__ = ["write_plots"]
