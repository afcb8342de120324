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


def since_gate(result: SimResult, at: int | float) -> int:
    """A virtual time as the command line gives times: ms since the gate, when every initial
    subscriber had started and the publications' clock began (``--crash m1@120``, an event's
    ``time``, ``--join S@150`` all count from there)."""
    return round(at - result.gate)


def publication_span(result: SimResult) -> tuple[int, int] | None:
    """When the first and the last publication were sent, in ms since the gate."""
    if not result.published_at:
        return None
    times = result.published_at.values()
    return since_gate(result, min(times)), since_gate(result, max(times))


def joined_at(result: SimResult) -> dict[str, int]:
    """Each joiner: when it asked to join, in ms since the gate (its ``--join`` time)."""
    return {p: since_gate(result, t) for p, t in result.joined_at.items()}


def left_at(result: SimResult) -> dict[str, int]:
    """Each leaver: when it left, in ms since the gate (its ``--leave`` time)."""
    return {p: since_gate(result, t) for p, t in result.left_at.items()}


def render(result: SimResult, subscriptions: dict[str, Subscription]) -> str:
    report, kept, failed = judge(result, subscriptions)
    span = publication_span(result)
    sent = f"publications sent from {span[0]} to {span[1]} ms" if span else "no publication sent"
    lines = [
        f"seed {result.seed}: {len(result.servers)} servers; {sent}, end {since_gate(result, result.end)} ms",
        f"(every time in ms from when all subscribers had started, {result.gate} ms into the run: the clock"
        " of --crash, --join, --leave and event times)",
        "",
    ]
    lines.append("topology (leader and epoch at the end):")
    lines += ["  " + line for line in topology_of(result, subscriptions).describe().splitlines()]
    lines.append("")
    lines.append("faults: " + ("; ".join(f.describe() for f in result.faults) if result.faults else "none"))
    asked = joined_at(result)
    joined = ", ".join(
        f"{p} at {asked[p]} ms ({'from ' + peer if peer else 'fresh'})"
        if p in asked
        else f"{p} did not start before the end"
        for p, (_, peer) in sorted(result.log.joined.items())
    )
    if joined:
        lines.append(f"joined: {joined}")
    if result.log.left:
        left = left_at(result)
        lines.append("left: " + ", ".join(f"{p} at {left[p]} ms" for p in sorted(result.log.left)))
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
        "time_origin_ms": result.gate,
        "publications_sent_ms": list(publication_span(result) or ()),
        "end_ms": since_gate(result, result.end),
        "joined": {
            p: {"at_ms": joined_at(result).get(p), "log_time": t, "peer": peer}
            for p, (t, peer) in result.log.joined.items()
        },
        "left": {p: {"at_ms": left_at(result)[p], "log_time": t} for p, t in result.log.left.items()},
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
