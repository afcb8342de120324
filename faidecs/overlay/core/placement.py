"""``PROCESS(role)``: the replica set of a role, chosen from the membership by rendezvous hashing.

Rendezvous (highest-random-weight) hashing ranks every member by a hash of (member, role) and takes
the first ``replicas``: every process that knows the membership computes the same set without
talking to anyone, and adding or removing a member moves only the roles that member ranks high
for. The hash is BLAKE2b, which is stable across processes and Python versions (``hash()`` is not).
The order of the set matters: it is the order in which the coordination service offers leadership
and in which downstream processes try replicas.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from faidecs.merging.roles import Role, role_name

DEFAULT_REPLICAS = 3


def _weight(member: str, role: Role) -> int:
    digest = hashlib.blake2b(f"{member}\x00{role_name(role)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def place(role: Role, members: Iterable[str], replicas: int = DEFAULT_REPLICAS) -> tuple[str, ...]:
    """The ``replicas`` members that host ``role``, best ranked first."""
    pool = sorted(set(members))
    if replicas < 1:
        raise ValueError("a role needs at least one replica")
    if len(pool) < replicas:
        raise ValueError(f"{role_name(role)} needs {replicas} replicas; the membership has {len(pool)} members")
    return tuple(sorted(pool, key=lambda m: (-_weight(m, role), m))[:replicas])


__all__ = ["DEFAULT_REPLICAS", "place"]
