"""The workload of the dissertation's evaluation (seed 001, section 4.5), as a seeded generator.

The dissertation measured on the default workload of the Marketcetera trading system: 23 event
types, conjunctions of at most 6 types, 10 to 500 subscribers (traders), each event with 3 integer
attributes uniform in [0, 1000] (section 3.5.1's setup). Marketcetera's own type declarations are
not in the text, so the types here are ``T01`` .. ``T23``, each ``(a: int, b: int, c: int)``. The
three scenarios, as section 4.5.1 (and 3.5.1 before it) defines them:

- **A** (filtering at the subscribers): the conjunction overlay of Figure 4.2, a chain of
  mergers ``⊔[T01..T0k]``; subscribers spread evenly over the levels k = 2 .. ``max_types``, each
  subscribing to ``T01 and .. and T0k`` with a binary predicate only (nothing is pushed to the
  mergers). The predicate's selectivity differs by level so that every level has the same
  expected delivery rate: ``T01.a + .. + T0k.a < θ_k``, with θ_k the ``selectivity`` quantile of
  the sum of k uniform values (the Irwin–Hall distribution), so that a candidate relation passes
  with the same probability at every level.
- **B** (filtering at the mergers): the same chain and levels, with a unary predicate on every
  type of the conjunction instead, ``Ti.b < 1000 · selectivity``, which the mergers receive as
  filters and apply before forwarding.
- **C** (traffic separation): each subscription over a uniformly drawn set of k types out of all
  23, k uniform in 2 .. ``max_types``, with A's binary predicate.

Events: in A and B, uniform over the types the chain uses (the others would be published to
nobody); in C, uniform over all 23.

    from papers_workload import Workload
    w = Workload("C", subscribers=100, seed=1)
    w.program()       # the program text: types and one subscription per subscriber
    w.events(10_000)  # event dicts as `faidecs run` reads them
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

Scenario = Literal["A", "B", "C"]
TYPES = 23
MAX_TYPES = 6
VALUES = 1000  # attribute values are uniform integers in [0, VALUES]


def irwin_hall_cdf(x: float, k: int) -> float:
    """P(U1 + .. + Uk <= x) for k independent uniforms on [0, 1]."""
    if x <= 0:
        return 0.0
    if x >= k:
        return 1.0
    total = sum((-1) ** j * math.comb(k, j) * (x - j) ** k for j in range(int(math.floor(x)) + 1))
    return total / math.factorial(k)


def sum_threshold(k: int, p: float) -> int:
    """θ such that the sum of k attributes uniform in [0, VALUES] is below θ with probability p."""
    lo, hi = 0.0, float(k)
    for _ in range(60):  # bisection to far below one value unit
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if irwin_hall_cdf(mid, k) < p else (lo, mid)
    return round(hi * VALUES)


@dataclass(frozen=True)
class Workload:
    """One scenario for ``subscribers`` subscribers; every draw comes from ``seed``."""

    scenario: Scenario
    subscribers: int
    seed: int = 0
    max_types: int = MAX_TYPES
    selectivity: float = 0.1

    def __post_init__(self) -> None:
        if self.scenario not in ("A", "B", "C"):
            raise ValueError(f"scenario {self.scenario!r}: one of A, B, C")
        if not 2 <= self.max_types <= TYPES:
            raise ValueError(f"max_types {self.max_types}: between 2 and {TYPES}")
        if not 0 < self.selectivity <= 1:
            raise ValueError(f"selectivity {self.selectivity}: in (0, 1]")
        if self.subscribers < 1:
            raise ValueError("at least one subscriber")

    @property
    def type_names(self) -> list[str]:
        return [f"T{k:02d}" for k in range(1, TYPES + 1)]

    @cached_property
    def conjunctions(self) -> dict[str, tuple[str, ...]]:
        """Subscriber name -> the types of its conjunction, in the chain's (or drawn) order."""
        names = self.type_names
        rng = random.Random(f"papers:{self.scenario}:{self.seed}")
        levels = range(2, self.max_types + 1)
        out: dict[str, tuple[str, ...]] = {}
        for n in range(self.subscribers):
            if self.scenario == "C":
                k = rng.choice(levels)
                out[f"s{n + 1:03d}"] = tuple(sorted(rng.sample(names, k)))
            else:  # evenly over the levels of the chain
                out[f"s{n + 1:03d}"] = tuple(names[: levels[n % len(levels)]])
        return out

    def subscription(self, name: str) -> str:
        """Subscriber ``name``'s subscription, as the program declares it."""
        types = self.conjunctions[name]
        if self.scenario == "B":
            bound = round(VALUES * self.selectivity)
            condition = " and ".join(f"{t}.b < {bound}" for t in types)
        else:
            condition = " + ".join(f"{t}.a" for t in types) + f" < {sum_threshold(len(types), self.selectivity)}"
        return f"subscription {name}: {' and '.join(types)} and {condition}\n"

    def program(self) -> str:
        types = "".join(f"type {t}(a: int, b: int, c: int)\n" for t in self.type_names)
        return types + "".join(self.subscription(name) for name in self.conjunctions)

    @property
    def published_types(self) -> list[str]:
        """The types events are drawn from."""
        if self.scenario == "C":
            return self.type_names
        return self.type_names[: self.max_types]

    def events(self, n: int) -> list[dict[str, Any]]:
        rng = random.Random(f"papers-events:{self.scenario}:{self.seed}")
        types = self.published_types
        return [
            {
                "id": f"e{k}",
                "type": rng.choice(types),
                "attrs": {name: rng.randint(0, VALUES) for name in "abc"},
            }
            for k in range(n)
        ]


__all__ = ["MAX_TYPES", "TYPES", "VALUES", "Scenario", "Workload", "irwin_hall_cdf", "sum_threshold"]
