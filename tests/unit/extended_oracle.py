"""A brute-force oracle for the extended language (docs/semantics.md, "The extended language").

It shares no code with the engine's extended matcher: at every arrival it lists every assignment
of queue positions (a run ``(start, end)`` for a group) to the signature's slots, keeps those the
matching option's structure allows and that are valid, sorts them by the search order written as
a key per slot, and takes the first (or, under ALL, every new one). Conditions are Python functions
of the relation, written by hand for each shape the tests use.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Ev = dict[str, Any]  # {"id", "type", "k", "v", "t", "arrival"}


@dataclass
class Shape:
    """One conjunction: ``slots`` as (type, index or "+" for a group) in signature order;
    ``valid(binding)`` gets per slot the event, or for a group the list of members."""

    source: str
    slots: list[tuple[str, Any]]
    valid: Callable[[list[Any], World], bool]
    negated: tuple[str, ...] = ()
    absence: Callable[[list[Any]], Ev] | None = None  # the anchor of `no N after X`
    window: tuple[float, str] | None = None  # (D, attribute)


@dataclass
class World:
    """What a condition may look at besides the binding: the negated events seen so far."""

    logged: list[Ev] = field(default_factory=list)
    watermark: float = float("-inf")


def _key(matching: str, slot: tuple[str, Any], choice: Any) -> tuple[Any, ...]:
    most_recent = matching in ("MR", "MRC")
    if slot[1] == "+":
        s, e = choice
        return (-e, s) if most_recent else (s, -e)
    return (-choice,) if most_recent else (choice,)


def _structural(matching: str, slots: list[tuple[str, Any]], choice: Sequence[Any]) -> bool:
    for k in range(1, len(slots)):
        if slots[k][1] == "+" or slots[k][1] == 0:
            continue
        here, before = choice[k], choice[k - 1]
        if matching in ("FR", "ALL") and not here > before:
            return False
        if matching == "MR" and not here < before:
            return False
        if matching == "FRC" and here != before + 1:
            return False
        if matching == "MRC" and here != before - 1:
            return False
    return True


def run(
    shape: Shape, matching: str, disposal: str, stream: list[Ev], admit: Callable[[Ev], bool] = lambda e: True
) -> list[tuple[list[str], bool]]:
    """Deliveries ``(ids, timeout)`` of ``shape`` on ``stream`` under the options."""
    types = list(dict.fromkeys(t for t, _ in shape.slots))
    queues: dict[str, list[Ev]] = {t: [] for t in types}
    world = World()
    max_time: float | None = None
    out: list[tuple[list[str], bool]] = []
    for event in stream:
        before = world.watermark
        if shape.window is not None:
            t = event[shape.window[1]]
            if t < before:
                continue  # late
            max_time = t if max_time is None else max(max_time, t)
            world.watermark = max_time
        if event["type"] in shape.negated:
            world.logged.append(event)
        enqueued = event["type"] in queues and admit(event)
        if enqueued:
            queues[event["type"]].append(event)
        if enqueued or shape.absence is not None:
            while True:  # an absence: MATCH again after each DEQUEUE, until nothing is found
                found = _match(shape, matching, disposal, queues, world, event if enqueued else None, before)
                out += found
                if shape.absence is None or not found or matching == "ALL" or disposal == "NONE":
                    break
        if shape.window is not None:
            cutoff = world.watermark - shape.window[0]
            for t in types:
                queues[t] = [e for e in queues[t] if e[shape.window[1]] >= cutoff]
    return out


def _match(
    shape: Shape,
    matching: str,
    disposal: str,
    queues: dict[str, list[Ev]],
    world: World,
    new: Ev | None,
    before: float,
) -> list[tuple[list[str], bool]]:
    per_slot: list[list[Any]] = []
    for type_name, index in shape.slots:
        n = len(queues[type_name])
        if index == "+":
            per_slot.append([(s, e) for s in range(n) for e in range(s, n)])
        else:
            per_slot.append(list(range(n)))
    candidates = []
    for choice in itertools.product(*per_slot):
        if not _structural(matching, shape.slots, choice):
            continue
        binding = [queues[t][c[0] : c[1] + 1] if i == "+" else queues[t][c] for (t, i), c in zip(shape.slots, choice)]
        if shape.window is not None:
            times = [e[shape.window[1]] for b in binding for e in (b if isinstance(b, list) else [b])]
            if max(times) - min(times) > shape.window[0]:
                continue
        if not shape.valid(binding, world):
            continue
        candidates.append((tuple(_key(matching, s, c) for s, c in zip(shape.slots, choice)), choice, binding))
    candidates.sort(key=lambda c: c[0])
    out = []
    for _, choice, binding in candidates:
        flat = [e for b in binding for e in (b if isinstance(b, list) else [b])]
        if disposal == "NONE":
            fresh = new is not None and any(e is new for e in flat)
            if not fresh and shape.absence is not None:
                assert shape.window is not None
                fresh = shape.absence(binding)[shape.window[1]] + shape.window[0] >= before
            if not fresh:
                continue
        out.append(([e["id"] for e in flat], shape.absence is not None))
        if matching != "ALL" and not (disposal == "NONE" and shape.absence is not None):
            if disposal != "NONE":
                _dispose(shape, queues, choice, disposal)
            break
    return out


def _dispose(shape: Shape, queues: dict[str, list[Ev]], choice: Sequence[Any], disposal: str) -> None:
    used: dict[str, list[int]] = {}
    for (t, i), c in zip(shape.slots, choice):
        used.setdefault(t, []).extend(range(c[0], c[1] + 1) if i == "+" else [c])
    for t, matched in used.items():
        q = queues[t]
        first, last = min(matched), max(matched)
        if disposal == "I":
            queues[t] = [e for j, e in enumerate(q) if j not in set(matched)]
        elif disposal == "PI":
            queues[t] = q[last + 1 :]
        elif disposal == "IP":
            queues[t] = q[:first]
        else:
            queues[t] = q[first + 1 :]
