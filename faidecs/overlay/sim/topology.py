"""The merger graph of a program: which mergers exist, where they run, who reads from whom.

Drawn as Graphviz text (no dependency) or as a PNG with matplotlib (the ``bench`` extra).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from faidecs.grammar.model import Subscription
from faidecs.merging.roles import Role, conjunction_role, is_root, merger_roles, parents, role_name
from faidecs.overlay.core.placement import DEFAULT_REPLICAS, place


@dataclass(slots=True)
class Topology:
    roles: list[Role]
    replicas: dict[Role, tuple[str, ...]]
    subscribers: dict[str, list[Role]]  # process -> the mergers it reads
    leaders: dict[Role, tuple[str, int]] = field(default_factory=dict)

    @staticmethod
    def of(
        types: Iterable[str],
        subscriptions: Mapping[str, Subscription],
        servers: list[str],
        replicas: int = DEFAULT_REPLICAS,
        leaders: Mapping[Role, tuple[str, int]] | None = None,
    ) -> Topology:
        reads = {name: sorted({conjunction_role(c) for c in sub.conjunctions}) for name, sub in subscriptions.items()}
        ordered = merger_roles(types, subscriptions.values())
        return Topology(ordered, {r: place(r, servers, replicas) for r in ordered}, reads, dict(leaders or {}))

    def edges(self) -> list[tuple[str, str, str]]:
        """(from, to, kind): kind is ``left``, ``right`` or ``subscriber``."""
        out: list[tuple[str, str, str]] = []
        for role in self.roles:
            if not is_root(role):
                left, right = parents(role)
                out.append((role_name(left), role_name(role), "left"))
                out.append((role_name(right), role_name(role), "right"))
        for name, roles in sorted(self.subscribers.items()):
            out += [(role_name(r), name, "subscriber") for r in roles]
        return out

    def label(self, role: Role) -> str:
        leader = self.leaders.get(role)
        reps = [f"{p}*" if leader and leader[0] == p else p for p in self.replicas[role]]
        epoch = f" e{leader[1]}" if leader else ""
        return f"{role_name(role)}\n{' '.join(reps)}{epoch}"

    def describe(self) -> str:
        lines = []
        for role in self.roles:
            inputs = "publishers" if is_root(role) else " + ".join(role_name(p) for p in parents(role))
            readers = sorted(n for n, rs in self.subscribers.items() if role in rs)
            leader = self.leaders.get(role)
            lead = f"; leader {leader[0]}, epoch {leader[1]}" if leader else ""
            lines.append(
                f"{role_name(role):<18} replicas {', '.join(self.replicas[role])}{lead}; reads {inputs}"
                + (f"; subscribers {', '.join(readers)}" if readers else "")
            )
        return "\n".join(lines) + "\n"

    def to_dot(self) -> str:
        lines = ["digraph faidecs {", "  rankdir=TB;", '  node [shape=box, fontname="Helvetica"];']
        for role in self.roles:
            label = self.label(role).replace("\n", "\\n")
            fill = ", style=filled, fillcolor=lightgrey" if is_root(role) else ""
            lines.append(f'  "{role_name(role)}" [label="{label}"{fill}];')
        for name in sorted(self.subscribers):
            lines.append(f'  "{name}" [shape=ellipse];')
        style = {"left": "solid", "right": "dashed", "subscriber": "dotted"}
        for a, b, kind in self.edges():
            lines.append(f'  "{a}" -> "{b}" [style={style[kind]}];')
        lines.append("}")
        return "\n".join(lines) + "\n"

    def draw(self, path: str) -> None:
        """A PNG (or any format matplotlib writes, by the file's extension)."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:  # pragma: no cover - depends on the installation
            raise RuntimeError("drawing needs matplotlib (pip install 'faidecs[bench]'); --dot needs nothing") from None
        layers: dict[int, list[str]] = {}
        for role in self.roles:
            layers.setdefault(len(role), []).append(role_name(role))
        depth = max(layers) + 1
        layers[depth] = sorted(self.subscribers)
        pos: dict[str, tuple[float, float]] = {}
        for level, names in layers.items():
            for k, name in enumerate(names):
                pos[name] = ((k + 1) / (len(names) + 1), 1 - (level - 1) / max(depth - 1, 1))
        width = max(len(n) for n in layers.values())
        fig, ax = plt.subplots(figsize=(max(6, 2.2 * width), 1.8 * depth + 1))
        style = {"left": "-", "right": "--", "subscriber": ":"}
        for a, b, kind in self.edges():
            (x0, y0), (x1, y1) = pos[a], pos[b]
            ax.annotate(
                "",
                xy=(x1, y1 + 0.04),
                xytext=(x0, y0 - 0.04),
                arrowprops={"arrowstyle": "->", "linestyle": style[kind], "color": "0.35"},
            )
        by_name = {role_name(r): r for r in self.roles}
        for name, (x, y) in pos.items():
            node = by_name.get(name)
            text = self.label(node) if node else name
            face = "#dddddd" if node and is_root(node) else ("#ffffff" if node else "#e8f0ff")
            ax.text(
                x,
                y,
                text,
                ha="center",
                va="center",
                fontsize=9,
                bbox={"boxstyle": "round" if node is None else "square", "facecolor": face, "edgecolor": "0.3"},
            )
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.15, 1.15)
        ax.axis("off")
        ax.set_title("mergers (replicas, leader *), left parent —, right parent --, subscribers ··", fontsize=9)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)


__all__ = ["Topology"]
