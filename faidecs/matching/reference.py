"""The reference matcher: ENQUEUE, MATCH and DEQUEUE exactly as ``docs/semantics.md`` states them.

This is the oracle every faster matcher is tested against, so it follows the rules line by line
and favours being obviously right over being fast. It prunes with every predicate as soon as all
its instances are bound, which never changes which assignment is found first.

Cost: ENQUEUE evaluates the unary predicates of the event's positions once. MATCH is a
depth-first search over signature slots; with pruning its cost is the number of partial
assignments that survive their predicates, at most ``prod(len(Q[T]) for each slot)`` in the
worst case. DEQUEUE is linear in the queue lengths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from faidecs.grammar.model import Conjunction, Disposal, Matching
from faidecs.matching.evaluate import PredicateFn, compile_predicate
from faidecs.matching.events import Event

Queues = dict[str, list[Event]]
T = TypeVar("T")  # a queue, or a list kept beside it (arrival numbers, ticks)


class ReferenceMatcher:
    """Matching logic for one conjunction under one matching option. Stateless: the queues are
    passed in, so one matcher serves every copy of the conjunction's state."""

    def __init__(self, conjunction: Conjunction, matching: Matching):
        self.conjunction = conjunction
        self.matching = matching
        self.signature = conjunction.signature
        positions = {slot: k for k, slot in enumerate(self.signature)}
        # Each predicate is checked at the slot that binds the last of its instances.
        self._checks: list[list[PredicateFn]] = [[] for _ in self.signature]
        # Unary predicates per slot, for ENQUEUE.
        self._unary: list[list[PredicateFn]] = [[] for _ in self.signature]
        for pred in conjunction.predicates:
            fn = compile_predicate(pred, positions)
            self._checks[max(positions[s] for s in pred.slots)].append(fn)
            if pred.unary:
                (slot,) = pred.slots
                self._unary[positions[slot]].append(fn)
        self._slots_of_type: dict[str, list[int]] = {}
        for k, slot in enumerate(self.signature):
            self._slots_of_type.setdefault(slot.type_name, []).append(k)

    # --- ENQUEUE ---------------------------------------------------------------------------

    def admits(self, event: Event) -> bool:
        """True iff some position `T[i]` of the event's type has all its unary predicates
        satisfied by the event (a position without unary predicates accepts every event)."""
        binding: list[Event | None] = [None] * len(self.signature)
        for k in self._slots_of_type.get(event.type, ()):
            binding[k] = event
            if all(check(binding) for check in self._unary[k]):
                return True
            binding[k] = None
        return False

    # --- MATCH -----------------------------------------------------------------------------

    def _candidates(self, k: int, queue: Sequence[Event], chosen: list[int]) -> range | list[int]:
        """Queue positions slot ``k`` tries, in the order the matching option prescribes."""
        first = self.signature[k].index == 0
        # The slot before is the same type's instance i-1, unless this one is instance 0.
        return candidates(self.matching, first, len(queue), -1 if first else chosen[k - 1])

    def match(self, queues: Queues) -> list[int] | None:
        """The first assignment in search order that satisfies every predicate, as one queue
        position per signature slot, or None."""
        n = len(self.signature)
        binding: list[Event | None] = [None] * n
        chosen: list[int] = [-1] * n

        def search(k: int) -> bool:
            if k == n:
                return True
            queue = queues[self.signature[k].type_name]
            for pos in self._candidates(k, queue, chosen):
                binding[k] = queue[pos]
                if all(check(binding) for check in self._checks[k]):
                    chosen[k] = pos
                    if search(k + 1):
                        return True
            binding[k] = None
            return False

        return chosen if search(0) else None


def candidates(matching: Matching, first_instance: bool, n: int, previous: int) -> range | list[int]:
    """Queue positions (of a queue of ``n``) an instance tries, in the order ``matching``
    prescribes; ``previous``: the position chosen for the type's instance before it. ALL tries
    them as FR does."""
    if first_instance:
        return range(n - 1, -1, -1) if matching.most_recent else range(n)
    if matching in (Matching.FR, Matching.ALL):
        return range(previous + 1, n)
    if matching is Matching.MR:
        return range(previous - 1, -1, -1)
    if matching is Matching.FRC:
        return [previous + 1] if previous + 1 < n else []
    return [previous - 1] if previous >= 1 else []  # MRC


def expired(ticks: Sequence[int], limit: int) -> int:
    """How many events at the front of a queue have a tick at or before ``limit`` (an age bound)."""
    old = 0
    while old < len(ticks) and ticks[old] <= limit:
        old += 1
    return old


# --- DEQUEUE -------------------------------------------------------------------------------


def dispose(queue: list[T], matched: Sequence[int], disposal: Disposal) -> list[T]:
    """The queue of one type after a match that used the positions ``matched`` of it."""
    first, last = min(matched), max(matched)
    if disposal is Disposal.I:
        used = set(matched)
        return [e for i, e in enumerate(queue) if i not in used]
    if disposal is Disposal.PI:
        return queue[last + 1 :]
    if disposal is Disposal.IP:
        return queue[:first]
    return queue[first + 1 :]  # FP
