"""Liveness on a finite run: Event Validity and Conjunction Validity.

A finite run cannot show that something never happens, so each check looks for a run in which
the promise can no longer be kept (see docs/properties.md for the exact judgements). A stream of a
partitioned subscription is one partition (see :mod:`faidecs.properties.view`): its relations and
its candidates are made of the events of its value only.

- **Conjunction Validity** fails if, among the events published after a stream's last delivery,
  some events already satisfy the conjunction (respecting the order its matching option gives
  to instances of one type: FR/FRC oldest first, MR/MRC newest first), and yet the stream
  delivered nothing more. Every later publication could repeat this pattern forever.
- **Event Validity** fails for an event e and a position P of its type that no binary predicate
  links to another position, if e satisfies P's unary predicates, the run contains partners
  published after e that complete a relation with e at P, e is never delivered by the stream, and
  e is lost for good: it is no longer in the process's final queue (it was disposed), or a
  relation delivered after e used a younger event in a position e could have taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from faidecs.grammar.model import Conjunction, Slot
from faidecs.matching.evaluate import PredicateFn, compile_predicate
from faidecs.matching.events import Event
from faidecs.properties.view import RunView, Stream, Violation, binary_free_slots


def find_assignment(
    conj: Conjunction,
    candidates: Sequence[Sequence[Event]],
    order: dict[str, int],
    newest_first: bool,
) -> list[Event] | None:
    """Some assignment of ``candidates[k]`` to slot k satisfying every predicate, with instances
    of one type in publication order (reversed for MR)."""
    positions = {slot: k for k, slot in enumerate(conj.signature)}
    checks: list[list] = [[] for _ in conj.signature]  # type: ignore[type-arg]
    for p in conj.predicates:
        checks[max(positions[s] for s in p.slots)].append(compile_predicate(p, positions))
    binding: list[Event | None] = [None] * len(conj.signature)

    def search(k: int) -> bool:
        if k == len(conj.signature):
            return True
        slot = conj.signature[k]
        for event in candidates[k]:
            if slot.index > 0:
                previous = binding[k - 1]
                assert previous is not None
                if event.id == previous.id or (order[event.id] < order[previous.id]) != newest_first:
                    continue
            binding[k] = event
            if all(check(binding) for check in checks[k]):
                if search(k + 1):
                    return True
        binding[k] = None
        return False

    return [e for e in binding if e is not None] if search(0) else None


@lru_cache(maxsize=256)
def _unary_checks(conj: Conjunction) -> dict[Slot, tuple[int, list[PredicateFn]]]:
    """Each slot's position and compiled unary predicates; compiled once per conjunction, since
    the checks below ask about every event and slot of a run."""
    positions = {s: k for k, s in enumerate(conj.signature)}
    return {s: (positions[s], [compile_predicate(p, positions) for p in conj.unary(s)]) for s in conj.signature}


def _unary_ok(conj: Conjunction, slot: Slot, event: Event) -> bool:
    position, checks = _unary_checks(conj)[slot]
    binding: list[Event | None] = [None] * len(conj.signature)
    binding[position] = event
    return all(check(binding) for check in checks)


def _newest_first(stream: Stream) -> bool:
    return stream.subscription.matching.most_recent


def conjunction_validity(view: RunView) -> list[Violation]:
    order = {e: p.time for e, p in view.published.items()}
    for stream in view.streams.values():
        conj = stream.conjunction
        if stream.process in view.log.left:
            continue  # it received nothing after leaving
        last = stream.deliveries[-1][0] if stream.deliveries else 0
        last = max(last, view.joined_at(stream.process))  # a joiner answers for what came after it
        later = [view.events[p.id] for p in view.log.published if p.time > last]
        later = [e for e in later if stream.sees(e)]
        candidates = [[e for e in later if e.type == s.type_name and _unary_ok(conj, s, e)] for s in conj.signature]
        found = find_assignment(conj, candidates, order, _newest_first(stream))
        if found is not None:
            return [
                Violation(
                    f"after its last delivery, {stream.name} received [{', '.join(e.id for e in found)}], which "
                    f"satisfies {conj.condition_text()}, and delivered nothing more",
                    tuple(e.id for e in found),
                    (stream.process,),
                    (last,) if stream.deliveries else (),
                )
            ]
    return []


def event_validity(view: RunView) -> list[Violation]:
    order = {e: p.time for e, p in view.published.items()}
    in_order = [view.events[p.id] for p in view.log.published]
    for stream in view.streams.values():
        conj = stream.conjunction
        free = binary_free_slots(conj)
        if not free or stream.process in view.log.joined or stream.process in view.log.left:
            continue  # a joiner never saw the events before it joined; a leaver those after
        delivered = stream.first_times()
        final = view.log.final.get(stream.process)
        queued: set[str] | None = None
        if final is not None and stream.index < len(final):
            queued = _held(final[stream.index])
        seen = [e for e in in_order if stream.sees(e)]  # the log lists publications in time order
        for k, e in enumerate(seen):
            if e.id in delivered:
                continue
            later = seen[k + 1 :]
            for slot in free:
                if slot.type_name != e.type or not _unary_ok(conj, slot, e):
                    continue
                candidates = [[e] if s == slot else [x for x in later if x.type == s.type_name] for s in conj.signature]
                witness = find_assignment(conj, candidates, order, _newest_first(stream))
                if witness is None:
                    continue
                lost = _lost(view, stream, e, view.published[e.id].time, free, queued)
                if lost is not None:
                    return [
                        Violation(
                            f"{e.id} satisfies {slot}'s unary predicates of {conj.condition_text()} and partners "
                            f"[{', '.join(w.id for w in witness if w.id != e.id)}] followed, but {stream.process} "
                            f"never delivered it: {lost}",
                            (e.id,) + tuple(w.id for w in witness if w.id != e.id),
                            (stream.process,),
                        )
                    ]
                break
    return []


def _held(state: dict[str, Any]) -> set[str]:
    """Ids a conjunction still holds: its queues, and for a staged conjunction the component
    relations waiting to be joined."""
    if "partitions" in state:  # a partitioned conjunction: every partition's queues
        return {i for part in state["partitions"].values() for i in _held(part)}
    held = {i for key, ids in state.items() if key != "staged" for i in ids}
    for waiting in state.get("staged", []):
        for relation in waiting:
            held.update(relation)
    return held


def _lost(
    view: RunView, stream: Stream, e: Event, published: int, free: list[Slot], queued: set[str] | None
) -> str | None:
    if queued is not None and e.id not in queued:
        return "it was disposed"
    conj = stream.conjunction
    for time, ids in stream.deliveries:
        if time < published:
            continue
        for k, slot in enumerate(conj.signature):
            other = view.published.get(ids[k])
            if (
                slot in free
                and slot.type_name == e.type
                and other is not None
                and other.time > published
                and _unary_ok(conj, slot, e)
            ):
                return f"{ids[k]}, published after it, took {slot} in the relation delivered at time {time}"
    return None
