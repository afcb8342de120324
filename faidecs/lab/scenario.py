"""A lab scenario: processes with subscriptions, a stream of events, and reactive publishers.

Scenarios are plain data so that the shrinker can take pieces away and the lab can write them
out; :func:`run` turns one into a run log under one combination of matching and disposal options.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from faidecs.matching.delivery import Delivery
from faidecs.matching.guarantees import Combination
from faidecs.runs.processes import run_processes
from faidecs.runs.runlog import RunLog

TYPES = ("T1", "T2", "T3", "T4")
#: the type the lab's negations and absences name (``no T5 ...``); never matched, only watched
NEGATED = "T5"
TYPES_SOURCE = "".join(f"type {t}(a: int)\n" for t in TYPES)
#: the types of a partitioned lab run: a key ``k`` beside ``a``, so that partitions are chosen
#: independently of the values that predicates compare
KEYED_TYPES_SOURCE = "".join(f"type {t}(a: int, k: int)\n" for t in TYPES)
#: the option that ``faidecs lab --partitioned`` adds to every subscription
PARTITIONED = ", partition by k"
#: the window of the lab's windowed runs: on ``t``, the event's place in the publisher's stream
#: (1, 2, ...; a reaction has the time of the event that caused it), so time is monotone in the
#: order and a relation spans at most four consecutive publications
WINDOW = ", within 3 on t"


def partitioned(extra: str) -> bool:
    return "partition by" in extra


def windowed(extra: str) -> bool:
    return "within" in extra


def types_source(*, keyed: bool = False, timed: bool = False, negated: bool = False) -> str:
    """The lab's event types: ``a``, with ``k`` when partitioned and ``t`` when windowed; T5 too
    when a subscription negates it."""
    attrs = "a: int" + (", k: int" if keyed else "") + (", t: int" if timed else "")
    return "".join(f"type {t}({attrs})\n" for t in TYPES + ((NEGATED,) if negated else ()))


Conj = tuple[str, ...]  # atoms joined by `and`


@dataclass(frozen=True, slots=True)
class Reaction:
    """On each delivery, the process publishes one event of ``type_name`` with ``a = value``,
    at most ``limit`` times."""

    type_name: str
    value: int
    limit: int = 2


@dataclass(frozen=True, slots=True)
class LabScenario:
    processes: tuple[tuple[str, tuple[Conj, ...]], ...]  # (name, disjunction of conjunctions)
    events: tuple[tuple[str, int], ...]  # (type, a), published in this order
    reactions: tuple[tuple[str, Reaction], ...] = field(default=())
    #: each event's partition key ``k`` (partitioned runs; empty: every key 0)
    keys: tuple[int, ...] = field(default=())

    def subscription(self, name: str, combination: Combination, extra: str = "") -> str:
        conjs = dict(self.processes)[name]
        condition = " or ".join(" and ".join(c) for c in conjs)
        options = f"matching {combination.matching.value}, disposal {combination.disposal.value}{extra}"
        return f"subscription {name} ({options}): {condition}"

    def size(self) -> int:
        return len(self.events) * 10 + sum(len(c) + 5 for _, cs in self.processes for c in cs) + len(self.reactions)

    def without_event(self, k: int) -> LabScenario:
        return replace(self, events=self.events[:k] + self.events[k + 1 :], keys=self.keys[:k] + self.keys[k + 1 :])

    def key(self, k: int) -> int:
        return self.keys[k] if self.keys else 0

    def without_process(self, k: int) -> LabScenario:
        name = self.processes[k][0]
        return replace(
            self,
            processes=self.processes[:k] + self.processes[k + 1 :],
            reactions=tuple(r for r in self.reactions if r[0] != name),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "processes": {n: [list(c) for c in cs] for n, cs in self.processes},
            "events": [list(e) for e in self.events],
            "reactions": {n: [r.type_name, r.value, r.limit] for n, r in self.reactions},
        }
        if self.keys:
            out["keys"] = list(self.keys)
        return out


def run(scenario: LabScenario, combination: Combination, extra: str = "") -> RunLog:
    """The run log of ``scenario`` with every process using ``combination``'s matching and disposal.

    With ``partition by k`` in ``extra``, events carry their key ``k`` (a scenario without keys:
    all 0, one partition), and a reaction is published in the partition of the relation that
    caused it: a process reacting to a key's correlation speaks about that key."""
    processes = {name: scenario.subscription(name, combination, extra) for name, _ in scenario.processes}
    reactions = dict(scenario.reactions)
    made: dict[str, int] = {}

    def react(process: str, delivery: Delivery) -> list[Mapping[str, Any]]:
        rule = reactions.get(process)
        if rule is None or made.get(process, 0) >= rule.limit:
            return []
        made[process] = made.get(process, 0) + 1
        attrs = {"a": rule.value}
        if keyed:
            attrs["k"] = delivery.relation[0].attrs["k"]
        if timed:
            attrs["t"] = now
        return [{"id": f"{process}r{made[process]}", "type": rule.type_name, "attrs": attrs}]

    keyed, timed = partitioned(extra), windowed(extra)
    now = 0  # the time of the last event the publisher published (a reaction's time)

    def events() -> Iterator[dict[str, Any]]:
        nonlocal now
        for k, (t, a) in enumerate(scenario.events):
            attrs = {"a": a, "k": scenario.key(k)} if keyed else {"a": a}
            if timed:
                now = attrs["t"] = k + 1
            yield {"id": f"e{k + 1}", "type": t, "attrs": attrs}

    published = [t for t, _ in scenario.events] + [rule.type_name for _, rule in scenario.reactions]
    negated = NEGATED in published or any(
        NEGATED in atom for _, conjs in scenario.processes for c in conjs for atom in c
    )
    types = types_source(keyed=keyed, timed=timed, negated=negated)
    return run_processes(types, processes, events(), react=react if reactions else None, matcher="reference")
