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
  e is lost for good: it is no longer in the process's final queue (it was disposed, and nothing
  disposed comes back).
- The same event, still queued, when a relation delivered after e used a younger event in a
  position e could have taken (*overtaken*), is **unproven**: not a violation, since a later
  relation may still take e (under I disposal it stays queued; the published FR+I case is
  delivered once two more events come). :func:`event_validity_unproven` lists these; the lab
  proves or drops each by extending the run (:mod:`faidecs.lab.extension`), a recorded run
  cannot be extended.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from faidecs.grammar.model import Conjunction, Disposal, Slot
from faidecs.matching.evaluate import PredicateFn, compile_predicate
from faidecs.matching.events import Event
from faidecs.properties.extended import Timeline, assignments, dominated, free_slots, members
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


def _unary_ok(conj: Conjunction, slot: Slot, event: Event, timeline: Timeline | None = None) -> bool:
    if timeline is not None:  # a group's member conditions, evaluated as the extended matcher does
        return timeline.unary_ok(conj.signature.index(slot), event)
    position, checks = _unary_checks(conj)[slot]
    binding: list[Event | None] = [None] * len(conj.signature)
    binding[position] = event
    return all(check(binding) for check in checks)


def _newest_first(stream: Stream) -> bool:
    return stream.subscription.matching.most_recent


#: the most assignments an extended conjunction's judgement tries on one question (groups make
#: them many); beyond it the question is left unanswered, which never reports a violation
SEARCH_LIMIT = 200_000


def _extended_witness(
    view: RunView, stream: Stream, candidates: list[list[Event]], new_only: bool
) -> tuple[list[Event], int] | None:
    """An assignment of ``candidates`` that MATCH would find valid at some arrival of the run
    (new there under disposal NONE), with that arrival; groups, negations and the window judged as
    :mod:`faidecs.properties.extended` says."""
    order = view.times
    timeline = view.timeline(stream)
    for tried, bound in enumerate(assignments(stream.conjunction, candidates, order, _newest_first(stream))):
        if tried >= SEARCH_LIMIT:
            return None
        at = timeline.valid_from(bound, new_only)
        if at is not None:
            return [e for b in bound for e in members(b)], at
    return None


def _extended_conjunction_validity(view: RunView, stream: Stream, last: int) -> Violation | None:
    """Conjunction Validity for an extended stream: among the events published after ``last``,
    a relation valid at some arrival (and new there under NONE: it then holds the arriving event,
    or its absence's deadline passed there), so MATCH found something to deliver."""
    conj = stream.conjunction
    timeline = view.timeline(stream)
    later = [e for e in view.seen(stream) if view.published[e.id].time > last and timeline.admitted(e)]
    candidates = [
        [e for e in later if e.type == s.type_name and timeline.unary_ok(k, e)] for k, s in enumerate(conj.signature)
    ]
    found = _extended_witness(view, stream, candidates, stream.subscription.disposal is Disposal.NONE)
    if found is None:
        return None
    relation, at = found
    return Violation(
        f"after its last delivery, {stream.name} received [{', '.join(e.id for e in relation)}], which "
        f"satisfies {conj.condition_text()} when {timeline.arrivals[at].id} arrived, and delivered nothing more",
        tuple(e.id for e in relation),
        (stream.process,),
        (last,) if stream.deliveries else (),
    )


def conjunction_validity(view: RunView) -> list[Violation]:
    order = view.times
    for stream in view.streams.values():
        conj = stream.conjunction
        if stream.process in view.log.left:
            continue  # it received nothing after leaving
        last = stream.deliveries[-1][0] if stream.deliveries else 0
        last = max(last, view.joined_at(stream.process))  # a joiner answers for what came after it
        if stream.subscription.extended:
            violation = _extended_conjunction_validity(view, stream, last)
            if violation is not None:
                return [violation]
            continue
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


@dataclass(frozen=True, slots=True)
class Overtaken:
    """An undelivered event still queued after a younger one took a position it could have
    taken: what the lab needs to extend the run (the stream, the event, its partners)."""

    process: str
    conjunction: int  # the conjunction's index as written
    event: str
    slot: Slot
    partners: tuple[str, ...]  # the partners completing a relation with ``event``, in publication order
    explanation: str

    def violation(self) -> Violation:
        return Violation(self.explanation, (self.event, *self.partners), (self.process,))


def _event_validity_cases(view: RunView) -> Iterator[Violation | Overtaken]:
    """Every undelivered event with partners that the stream lost: a :class:`Violation` when it
    was disposed (or, under disposal NONE, when another event takes its place for ever), an
    :class:`Overtaken` when it is still queued but a younger event took its place; one case per
    event (its first position with partners)."""
    order = view.times
    for stream in view.streams.values():
        conj = stream.conjunction
        extended = stream.subscription.extended
        free = free_slots(conj) if extended else binary_free_slots(conj)
        if not free or stream.process in view.log.joined or stream.process in view.log.left:
            continue  # a joiner never saw the events before it joined; a leaver those after
        delivered = stream.first_times()
        final = view.log.final.get(stream.process)
        queued: set[str] | None = None
        if final is not None and stream.index < len(final):
            queued = _held(final[stream.index])
        seen = view.seen(stream)  # the log lists publications in time order
        timeline = view.timeline(stream) if extended else None
        for k, e in enumerate(seen):
            if e.id in delivered:
                continue
            if timeline is not None and not timeline.admitted(e):
                continue  # late, or filtered out: never queued
            later = seen[k + 1 :]
            for slot in free:
                if slot.type_name != e.type or not _unary_ok(conj, slot, e, timeline):
                    continue
                candidates = [[e] if s == slot else [x for x in later if x.type == s.type_name] for s in conj.signature]
                if timeline is None:
                    witness = find_assignment(conj, candidates, order, _newest_first(stream))
                else:
                    candidates = [[x for x in c if timeline.admitted(x)] for c in candidates]
                    found = _extended_witness(view, stream, candidates, False)
                    witness = None if found is None else found[0]
                if witness is None:
                    continue
                partners = sorted((w.id for w in witness if w.id != e.id), key=order.__getitem__)
                shown = ", ".join(w.id for w in witness if w.id != e.id)
                head = (
                    f"{e.id} satisfies {slot}'s unary predicates of {conj.condition_text()} and partners "
                    f"[{shown}] followed, but {stream.process} never delivered it"
                )
                purged = (
                    timeline is not None
                    and timeline.window is not None
                    and timeline.time_of(e) < timeline.final_watermark() - timeline.window.duration
                )
                if queued is not None and e.id not in queued:
                    if not purged:  # a purged event may have been queued until its window closed
                        yield Violation(f"{head}: it was disposed", (e.id, *partners), (stream.process,))
                    break
                blocker = None if timeline is None else dominated(timeline, slot, e, seen)
                if blocker is not None:
                    what = "younger" if stream.subscription.matching.most_recent else "older"
                    yield Violation(
                        f"{head}: under disposal NONE nothing leaves the queues, and {blocker.id} ({what}, "
                        f"eligible for {slot} too) comes first in every relation that could take {e.id}: "
                        f"{e.id} is never delivered",
                        (e.id, *partners, blocker.id),
                        (stream.process,),
                    )
                    break
                took = _overtaken(view, stream, e, view.published[e.id].time, free)
                if took is not None:
                    yield Overtaken(
                        stream.process,
                        stream.index,
                        e.id,
                        slot,
                        tuple(partners),
                        f"{head} yet: {took}, and {e.id} is still queued (unproven: a later relation may take it)",
                    )
                break


def event_validity(view: RunView) -> list[Violation]:
    """The first event the run proves lost (disposed without delivery)."""
    for case in _event_validity_cases(view):
        if isinstance(case, Violation):
            return [case]
    return []


def overtaken_events(view: RunView) -> list[Overtaken]:
    """Every overtaken event still queued: unproven, for the lab to extend."""
    return [case for case in _event_validity_cases(view) if isinstance(case, Overtaken)]


def event_validity_unproven(view: RunView) -> list[Violation]:
    """The overtaken events, as findings that are neither violations nor proofs that it holds."""
    return [case.violation() for case in overtaken_events(view)]


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


def _overtaken(view: RunView, stream: Stream, e: Event, published: int, free: list[Slot]) -> str | None:
    conj = stream.conjunction
    for time, ids in stream.deliveries:
        if time < published:
            continue
        slots = view.slots(stream, ids)
        if slots is None:
            continue  # a relation that does not fit the signature: Admission's business
        for k, slot in enumerate(slots):
            other = view.published.get(ids[k])
            if (
                slot in free
                and slot.type_name == e.type
                and other is not None
                and other.time > published
                and _unary_ok(conj, slot, e, view.timeline(stream) if stream.subscription.extended else None)
            ):
                return f"{ids[k]}, published after it, took {slot} in the relation delivered at time {time}"
    return None
