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

from dataclasses import dataclass

from faidecs.grammar import compile_program
from faidecs.grammar.model import EventType, Kind, Program, Subscription
from faidecs.overlay.roles import Role, split_by_role

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

    def program(self, types: dict[str, EventType]) -> Program:
        return Program(dict(types), tuple(p.subscription for p in self.parts))


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


__all__ = ["COLUMN_SEPARATOR", "SPARK_KINDS", "Merger", "Part", "Plan", "column"]
