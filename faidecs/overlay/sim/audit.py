"""Audits of a simulated run against the mergers' committed streams.

:func:`stream_gaps` compares what each subscriber stream fed its engine with what its merger
committed after the stream's start and its filter passes: loss, duplication and reordering all
show. :func:`expected_deliveries` replays those committed streams, merged by timestamp as the
client merges them, through fresh embedded engines: the deliveries a subscriber must have made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from faidecs.matching.engine import Engine
from faidecs.matching.events import Event
from faidecs.matching.records import Matcher
from faidecs.merging.roles import Role, role_name
from faidecs.overlay.core.messages import Decision
from faidecs.overlay.core.replica import MergerReplica
from faidecs.overlay.core.subscriber import Stream, SubscriberClient


class CommittedRun(Protocol):
    """What an audit reads of a finished run (a :class:`~faidecs.overlay.sim.simulator.SimResult`)."""

    @property
    def placement(self) -> Mapping[Role, tuple[str, ...]]: ...

    @property
    def replicas(self) -> Mapping[str, Mapping[Role, MergerReplica]]: ...

    @property
    def clients(self) -> Mapping[str, SubscriberClient]: ...

    def log_of(self, role: Role) -> list[Decision]: ...

    def event_at(self, role: Role, d: Decision) -> Event | None: ...


@dataclass(slots=True)
class StreamGap:
    """A subscriber stream that did not receive exactly its merger's committed stream."""

    process: str
    role: Role
    expected: int
    got: int
    detail: str

    def describe(self) -> str:
        return (
            f"{self.process}, stream {role_name(self.role)}: {self.detail} (expected {self.expected}, got {self.got})"
        )


def committed_for(result: CommittedRun, process: str, s: Stream) -> list[tuple[int, int, Event]]:
    """(ts, position, event) of every committed entry after the stream's start that its filter
    passes: what the stream must feed its engine, in order."""
    role = s.role
    # Marks from the replica with the longest committed log: a crashed one may lack later marks.
    replica = max((result.replicas[p][role] for p in result.placement[role]), key=lambda r: r.log.commit)
    out: list[tuple[int, int, Event]] = []
    for d in result.log_of(role):
        if d.kind != "event" or d.position <= s.start:
            continue
        event = result.event_at(role, d)
        # A stream started at a marker is served with its own filter (covered from the marker on).
        f = s.filter if s.how == "marker" else replica.filter_at(s.key, d.position)
        if event is None:
            raise AssertionError(f"{role_name(role)} position {d.position}: committed event unknown at the roots")
        if f is not None and f.passes(event):
            out.append((d.ts, d.position, event))
    return out


def stream_gaps(result: CommittedRun) -> list[StreamGap]:
    gaps: list[StreamGap] = []
    for name, client in result.clients.items():
        if client.gone:
            continue
        for role, s in client.streams.items():
            if not s.started:
                gaps.append(StreamGap(name, role, 0, 0, "never started"))
                continue
            expected = [(position, event.id) for _, position, event in committed_for(result, name, s)]
            if s.fed != expected:
                diff = next(
                    (k for k, (a, b) in enumerate(zip(s.fed, expected)) if a != b), min(len(s.fed), len(expected))
                )
                gaps.append(StreamGap(name, role, len(expected), len(s.fed), f"differs from entry {diff} on"))
    return gaps


def expected_deliveries(
    result: CommittedRun, process: str, matcher: Matcher = "reference"
) -> list[tuple[int, tuple[str, ...]]]:
    """(conjunction, relation) in order: fresh embedded engines, one per merger stream of the
    subscription, fed the committed streams merged by (timestamp, stream rank, position). Only for
    subscribers that started with empty queues (not for those that joined from a peer)."""
    client = result.clients[process]
    if client.joined_from is not None:
        raise ValueError(f"{process} joined from {client.joined_from}'s state: compare it with {client.joined_from}")
    merged: list[tuple[int, int, int, Role, Event]] = []
    engines: dict[Role, Engine] = {}
    for role, s in client.streams.items():
        engines[role] = Engine(s.engine_program, matcher=matcher)
        for ts, position, event in committed_for(result, process, s):
            merged.append((ts, s.rank, position, role, event))
    out: list[tuple[int, tuple[str, ...]]] = []
    for _, _, _, role, event in sorted(merged, key=lambda m: m[:3]):
        s = client.streams[role]
        for d in engines[role].publish(event):
            out.append((s.conjunctions[d.conjunction], tuple(d.ids)))
    return out


__all__ = ["CommittedRun", "StreamGap", "committed_for", "expected_deliveries", "stream_gaps"]
