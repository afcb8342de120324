"""What the Spark pipeline runs for a program: its mergers (as in the overlay) and, for each, the
part of every subscription that the merger serves.

A merger is the type set of a conjunction (``⊔𝕋(Φ)``); conjunctions with the same type set are
evaluated together, in one pass, by one engine holding those conjunctions of every subscription.
A conjunction's state depends only on the events of its own types in the total order, so each
merger's engine gives exactly the deliveries the embedded engine gives for those conjunctions; the
pipeline puts them back in the embedded engine's order by (event order, subscription in
declaration order, conjunction in canonical evaluation order).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from faidecs.grammar import compile_program
from faidecs.grammar.model import EventType, Kind, Program, Subscription
from faidecs.merging.roles import Role, split_by_role

COLUMN_SEPARATOR = "$"
SPARK_KINDS = {Kind.INT: "bigint", Kind.FLOAT: "double", Kind.STR: "string", Kind.BOOL: "boolean"}


def column(type_name: str, attribute: str) -> str:
    """The flat column of one attribute of one type (types may share attribute names). ``$``
    cannot occur in a name of the language, so no two (type, attribute) pairs share a column
    (``T__a`` would: type ``A`` with ``b__c`` and type ``A__b`` with ``c``)."""
    return f"{type_name}{COLUMN_SEPARATOR}{attribute}"


@dataclass(frozen=True)
class Part:
    """The conjunctions of one subscription that one merger serves."""

    subscription: Subscription  # restricted to those conjunctions (source: its normal form)
    indices: tuple[int, ...]  # their numbers in the whole subscription, as written
    declared: int  # the subscription's place in the program
    ranks: tuple[int, ...]  # their places in the subscription's canonical evaluation order


@dataclass(frozen=True)
class Merger:
    role: Role
    parts: tuple[Part, ...]
    partition_by: str | None  # every part partitioned by this attribute: the merger splits by value

    @property
    def extended(self) -> bool:
        """Serves a subscription of the extended language (run event by event, not in batches)."""
        return any(p.subscription.extended for p in self.parts)

    def program(self, types: dict[str, EventType]) -> Program:
        return Program(dict(types), tuple(p.subscription for p in self.parts))


@dataclass(frozen=True)
class Group:
    """The mergers one engine runs, on the union of their events: a merger alone (a stream's
    state is kept per merger), or a bin of mergers (batch replay: an event is copied once per bin
    rather than once per merger). Each conjunction's state depends only on the events of its own
    types, so one engine holding several mergers' conjunctions delivers what separate ones would."""

    mergers: tuple[Merger, ...]
    #: each part under its name in the group's engine: a subscription split over two mergers of
    #: the group needs two names there
    named: tuple[tuple[str, Part], ...]

    @staticmethod
    def of(mergers: tuple[Merger, ...], taken: frozenset[str]) -> Group:
        named: list[tuple[str, Part]] = []
        used = set(taken)
        seen: set[str] = set()
        for k, merger in enumerate(mergers):
            for part in merger.parts:
                name = part.subscription.name
                if name in seen:
                    n = k
                    while f"{name}_{n}" in used:
                        n += 1
                    name = f"{name}_{n}"
                used.add(name)
                seen.add(name)
                named.append((name, part))
        return Group(mergers, tuple(named))

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(sorted({t for m in self.mergers for t in m.role}))

    @property
    def partition_by(self) -> str | None:
        return self.mergers[0].partition_by if len(self.mergers) == 1 else None

    @property
    def extended(self) -> bool:
        return any(m.extended for m in self.mergers)

    def program(self, types: dict[str, EventType]) -> Program:
        subs = tuple(replace(p.subscription, name=n) for n, p in self.named)
        return Program(dict(types), subs)


@dataclass(frozen=True)
class Plan:
    types: dict[str, EventType]
    subscriptions: tuple[Subscription, ...]
    mergers: tuple[Merger, ...]

    @staticmethod
    def of(text: str, filename: str = "<program>") -> Plan:
        program = compile_program(text, filename)
        by_role: dict[Role, list[Part]] = {}
        for declared, sub in enumerate(program.subscriptions):
            evaluation = sub.evaluation_order
            for role, indices, part in split_by_role(sub):
                ranks = tuple(evaluation.index(k) for k in indices)
                by_role.setdefault(role, []).append(Part(part, indices, declared, ranks))
        mergers = []
        for role in sorted(by_role, key=lambda r: (len(r), r)):
            parts = tuple(by_role[role])
            attrs = {p.subscription.partition_by for p in parts}
            mergers.append(Merger(role, parts, attrs.pop() if len(attrs) == 1 else None))
        return Plan(dict(program.types), program.subscriptions, tuple(mergers))

    def groups(self, bins: int | None = None) -> tuple[Group, ...]:
        """One group per merger (``bins=None``), or the mergers in at most ``bins`` groups of about
        equal work (partitioned mergers stay alone: they split by value; so do those of the
        extended language, which run event by event, so that the bins keep the batch path). Work is estimated as
        (types of the merger) × (conjunctions it serves), types taken as equally frequent;
        largest first into the lightest bin, ties by position, so the result is deterministic."""
        names = frozenset(s.name for s in self.subscriptions)
        if bins is None:
            return tuple(Group.of((m,), names) for m in self.mergers)
        alone = [m for m in self.mergers if m.partition_by is not None or m.extended]
        rest = [m for m in self.mergers if m.partition_by is None and not m.extended]
        load = [0] * max(1, bins)
        members: list[list[Merger]] = [[] for _ in load]
        weight = {id(m): len(m.role) * sum(len(p.subscription.conjunctions) for p in m.parts) for m in rest}
        for m in sorted(rest, key=lambda m: -weight[id(m)]):
            b = min(range(len(load)), key=lambda b: (load[b], b))
            load[b] += weight[id(m)]
            members[b].append(m)
        binned = [Group.of(tuple(ms), names) for ms in members if ms]
        return tuple(binned + [Group.of((m,), names) for m in alone])


__all__ = ["COLUMN_SEPARATOR", "SPARK_KINDS", "Merger", "Part", "Plan", "column"]
