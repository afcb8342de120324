"""Merger roles: the root merger of one event type and the conjunction merger of a type sequence.

A role is named by its deduplicated type sequence in canonical order (types sorted by name, as the
normaliser sorts signatures): ``("A",)`` is the root merger ``[A]``, ``("A", "B", "C")`` the
conjunction merger ``⊔[A,B,C]``. The merger of ``⊔[T1..Tk]`` merges the stream of ``⊔[T1..Tk-1]``
(its left parent) with the stream of ``[Tk]`` (its right parent), so every role's stream restricted
to a prefix of its types is that prefix's stream: this is what makes right-extended subscriptions
agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from faidecs.grammar.model import Conjunction, Subscription

Role = tuple[str, ...]


def role_of(types: Iterable[str]) -> Role:
    """``⊔[T1..Tk]``: the distinct types in canonical order. ``⊔[T1,T1,T2] = [T1,T2]``."""
    role = tuple(sorted(set(types)))
    if not role:
        raise ValueError("a role needs at least one type")
    return role


def conjunction_role(conj: Conjunction) -> Role:
    """The merger a subscriber to ``conj`` registers at: ``PROCESS(⊔𝕋(Φ))``, where the types
    include negated ones (a negation's events must reach the subscriber in the same order)."""
    return role_of(conj.watched_types)


def split_by_role(sub: Subscription) -> list[tuple[Role, tuple[int, ...], Subscription]]:
    """``sub`` split by the merger that serves each conjunction, roles in order: the numbers of
    the conjunctions (as written) at that merger, and ``sub`` restricted to them (its source is
    the restricted normal form, so an engine's snapshot of it restores)."""
    groups: dict[Role, list[int]] = {}
    for k, conj in enumerate(sub.conjunctions):
        groups.setdefault(conjunction_role(conj), []).append(k)
    out = []
    for role, indices in sorted(groups.items()):
        part = replace(sub, conjunctions=tuple(sub.conjunctions[k] for k in indices))
        out.append((role, tuple(indices), replace(part, source=part.to_source())))
    return out


def is_root(role: Role) -> bool:
    return len(role) == 1


def parents(role: Role) -> tuple[Role, Role]:
    """(left, right) parents of a conjunction merger: ``⊔[T1..Tk-1]`` and ``[Tk]``."""
    if is_root(role):
        raise ValueError(f"{role_name(role)} is a root merger: publishers feed it")
    return role[:-1], role[-1:]


def ancestry(role: Role) -> list[Role]:
    """Every merger ``role`` depends on, itself included, roots first."""
    out: list[Role] = []
    for k in range(1, len(role) + 1):
        out.append(role[:k])
        if k > 1:
            out.append(role[k - 1 : k])
    return sorted(set(out), key=lambda r: (len(r), r))


def merger_roles(types: Iterable[str], subscriptions: Iterable[Subscription]) -> list[Role]:
    """Every merger a program needs: a root per type of ``types``, and for each conjunction of
    ``subscriptions`` its merger and that merger's ancestry; shortest first, then by name.

    >>> from faidecs.grammar import compile_program
    >>> program = compile_program("type A(x: int)\\ntype B(x: int)\\ntype C(x: int)\\nsubscription S: C and B and A")
    >>> [role_name(r) for r in merger_roles(program.types, program.subscriptions)]
    ['[A]', '[B]', '[C]', '⊔[A,B]', '⊔[A,B,C]']
    """
    roles: set[Role] = {role_of([t]) for t in types}
    for sub in subscriptions:
        for conj in sub.conjunctions:
            roles.update(ancestry(conjunction_role(conj)))
    return sorted(roles, key=lambda r: (len(r), r))


def role_name(role: Role) -> str:
    return f"[{role[0]}]" if is_root(role) else "⊔[" + ",".join(role) + "]"


__all__ = [
    "Role",
    "ancestry",
    "conjunction_role",
    "is_root",
    "merger_roles",
    "parents",
    "role_name",
    "role_of",
    "split_by_role",
]
