"""What a simulated run reports: topology, faults, traffic, stream audits and properties.

The properties a run must keep are those the lab's measured table says every subscription's
options keep (faidecs/lab/promised.py, from faidecs/lab/measured.py); the others are printed too, but may fail.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from faidecs.grammar.model import Subscription
from faidecs.lab.promised import promised_by_all
from faidecs.matching.guarantees import Property
from faidecs.merging.roles import role_name
from faidecs.overlay.sim.simulator import SimResult
from faidecs.overlay.sim.topology import Topology
from faidecs.properties import Report, check


def kept_properties(subscriptions: Iterable[Subscription]) -> list[Property]:
    """The properties every subscription's matching, disposal and covering options keep."""
    return promised_by_all(subscriptions)


def topology_of(result: SimResult, subscriptions: dict[str, Subscription]) -> Topology:
    types = sorted({r[0] for r in result.roles if len(r) == 1})
    return Topology.of(
        types, subscriptions, result.servers, len(next(iter(result.placement.values()))), result.leadership
    )


def judge(result: SimResult, subscriptions: dict[str, Subscription]) -> tuple[Report, list[Property], list[Property]]:
    """The property report, the properties that must hold, and those of them violated."""
    report = check(result.log)
    kept = kept_properties(subscriptions.values())
    failed = [p for p in report.violated() if p in kept]
    return report, kept, failed


def render(result: SimResult, subscriptions: dict[str, Subscription]) -> str:
    report, kept, failed = judge(result, subscriptions)
    lines = [
        f"seed {result.seed}: {len(result.servers)} servers, publications from {result.gate} ms, end {result.end} ms",
        "",
    ]
    lines.append("topology (leader and epoch at the end):")
    lines += ["  " + line for line in topology_of(result, subscriptions).describe().splitlines()]
    lines.append("")
    lines.append("faults: " + ("; ".join(f.describe() for f in result.faults) if result.faults else "none"))
    joined = ", ".join(
        f"{p} at time {t} ({'from ' + peer if peer else 'fresh'})" for p, (t, peer) in sorted(result.log.joined.items())
    )
    if joined:
        lines.append(f"joined: {joined}")
    if result.log.left:
        lines.append("left: " + ", ".join(f"{p} at time {t}" for p, t in sorted(result.log.left.items())))
    lines.append(
        f"publications committed {len(result.log.published)}, deliveries {len(result.log.delivered)}, "
        f"messages {sum(result.messages.values())}, stale decisions rejected {result.stale_rejected()}"
    )
    lines.append("")
    if result.gaps:
        lines.append("stream audit: FAILED")
        lines += ["  " + g.describe() for g in result.gaps]
    else:
        lines.append("stream audit: every subscriber stream fed exactly its merger's committed stream")
    lines.append("")
    lines.append("properties (* = kept by these options, must hold):")
    for name, found in report.results.items():
        mark = "*" if name in kept else " "
        lines.append(f"  {mark} {name:<24} {'VIOLATED' if found else 'holds'}")
        for v in found[:1]:
            lines.append(f"      {v.explanation}")
    lines.append("")
    verdict = "OK" if not failed and not result.gaps else "FAILED"
    lines.append(f"{verdict}: " + (f"violated {', '.join(failed)}" if failed else "no kept property violated"))
    return "\n".join(lines) + "\n"


def to_json(result: SimResult, subscriptions: dict[str, Subscription]) -> dict[str, Any]:
    report, kept, failed = judge(result, subscriptions)
    return {
        "seed": result.seed,
        "ok": not failed and not result.gaps,
        "kept": kept,
        "violated": failed,
        "properties": report.to_json(),
        "gaps": [g.describe() for g in result.gaps],
        "faults": [f.describe() for f in result.faults],
        "joined": {p: {"time": t, "peer": peer} for p, (t, peer) in result.log.joined.items()},
        "left": dict(result.log.left),
        "topology": {
            role_name(r): {"replicas": list(result.placement[r]), "leader": list(result.leadership.get(r, ("", 0)))}
            for r in result.roles
        },
        "publications": len(result.log.published),
        "deliveries": len(result.log.delivered),
        "messages": dict(result.messages),
        "stale_rejected": result.stale_rejected(),
    }


def ok(result: SimResult, subscriptions: dict[str, Subscription]) -> bool:
    return not judge(result, subscriptions)[2] and not result.gaps


__all__ = ["judge", "kept_properties", "ok", "render", "to_json", "topology_of"]
