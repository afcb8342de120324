"""Proving an overtaken event lost: extend a lab run with partner events and let the reference
matcher go on (issue 24, item 3).

The checker calls an undelivered event that a younger one overtook, but that is still queued,
*unproven* (:func:`faidecs.properties.liveness.overtaken_events`): a later relation may still
take it. The lab can extend its runs, so it tries to prove the loss. Each extension publishes
*rounds*, all alike: a round holds fresh copies (same type and values, in publication order, in
the event's partition) of the partners with which the event completes a relation in the run, so
partners keep coming; an adversary may add one *blocker* before, between or after them, an event
of one of the conjunction's types with a value the run uses. The reference matcher then runs the
extended scenario (every process, reactions included). An extension proves the loss when, within
:data:`ROUNDS` rounds and without delivering the event,

- the stream disposes it (it leaves the conjunction's queues; nothing disposed comes back, and the
  checker's own *disposed* judgement confirms it on the extended run), or
- the stream's conjunction comes back to the state it had one round earlier (every queued event
  with the same type and values at the same place, the event itself at its place) with no other
  event published in that round: the matcher is deterministic, so every further round repeats the
  last one and the event is never delivered, while partners keep coming.

Everything else (the event is delivered in every extension tried, or no extension decides within
the bound) leaves the finding unproven, and the lab does not count it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from faidecs.lab.scenario import LabScenario, run
from faidecs.matching.guarantees import Combination, Property
from faidecs.properties import check
from faidecs.properties.liveness import Overtaken, overtaken_events
from faidecs.properties.view import RunView
from faidecs.runs.runlog import RunLog

#: the most rounds an extension publishes (the bound of the proof search)
ROUNDS = 4

Round = tuple[tuple[str, int], ...]  # (type, a) in publication order


@dataclass(frozen=True, slots=True)
class Proof:
    """An extension of a scenario that proves an overtaken event lost."""

    extended: LabScenario  # the scenario with ``rounds`` rounds appended
    process: str
    event: str
    round: Round
    rounds: int
    kind: Literal["disposed", "cycle"]

    def explanation(self) -> str:
        shown = ", ".join(f"{t}(a={a})" for t, a in self.round)
        head = f"extended by {self.rounds} round(s) of [{shown}], each holding partners of {self.event}"
        if self.kind == "disposed":
            return f"{head}: {self.process} disposed {self.event} without delivering it (proven: it never comes back)"
        return (
            f"{head}: after the last round {self.process}'s queues are those after the round before (same types "
            f"and values, {self.event} in its place) and nothing else was published, so every further round "
            f"repeats it and {self.event} is never delivered (proven)"
        )


def _attrs(log: RunLog, event_id: str) -> dict[str, Any]:
    for p in log.published:
        if p.id == event_id:
            return dict(p.event["attrs"])
    raise KeyError(event_id)


def _candidates(log: RunLog, view: RunView, case: Overtaken) -> Iterator[Round]:
    base: Round = tuple((view.events[i].type, int(_attrs(log, i)["a"])) for i in case.partners)
    yield base
    conj = view.subscriptions[case.process].conjunctions[case.conjunction]
    values = sorted({int(p.event["attrs"]["a"]) for p in log.published})
    for type_name in sorted(set(conj.types)):
        for value in values:
            for k in range(len(base) + 1):
                yield base[:k] + ((type_name, value),) + base[k:]


def _extend(s: LabScenario, round_: Round, rounds: int, key: int) -> LabScenario:
    added = round_ * rounds
    keys = s.keys
    if keys or key:
        keys = tuple(s.keys or (0,) * len(s.events)) + (key,) * len(added)
    return replace(s, events=s.events + added, keys=keys)


def _canonical(state: Any, log: RunLog, event: str) -> Any:
    """A conjunction's state with each event id replaced by its type and values (``event`` by
    a mark): what the matcher's next steps depend on."""
    if isinstance(state, dict):
        return tuple(sorted((str(k), _canonical(v, log, event)) for k, v in state.items()))
    if isinstance(state, list):
        return tuple(_canonical(x, log, event) for x in state)
    if isinstance(state, str):
        if state == event:
            return ("the event",)
        for p in log.published:
            if p.id == state:
                return (p.type, tuple(sorted(p.event["attrs"].items())))
    return state


def _delivered(log: RunLog, case: Overtaken) -> bool:
    return any(
        d.process == case.process and d.conjunction == case.conjunction and case.event in d.relation
        for d in log.delivered
    )


def _state(log: RunLog, case: Overtaken) -> Any:
    return log.final[case.process][case.conjunction]


def _held(state: Any, event: str) -> bool:
    if isinstance(state, dict):
        return any(_held(v, event) for v in state.values())
    if isinstance(state, list):
        return any(_held(x, event) for x in state)
    return bool(state == event)


def _prove(s: LabScenario, combination: Combination, extra: str, log: RunLog, case: Overtaken) -> Proof | None:
    view = RunView(log)
    key = int(_attrs(log, case.event).get("k", 0))
    for round_ in _candidates(log, view, case):
        if _delivered(run(_extend(s, round_, ROUNDS, key), combination, extra), case):
            continue  # this adversary cannot keep the event from being delivered
        before = log
        for r in range(1, ROUNDS + 1):
            extended = _extend(s, round_, r, key)
            after = run(extended, combination, extra)
            if not _held(_state(after, case), case.event):
                if check(after, [Property.EVENT_VALIDITY]).results[Property.EVENT_VALIDITY]:
                    return Proof(extended, case.process, case.event, round_, r, "disposed")
                break
            # Nothing but the round published, and no reaction left to come: every process's
            # next round then sees the same events.
            reacted = sum(p.publisher != "publisher" for p in before.published)
            spent = reacted >= sum(rule.limit for _, rule in s.reactions)
            quiet = spent and len(after.published) == len(before.published) + len(round_)
            if quiet and _canonical(_state(after, case), after, case.event) == _canonical(
                _state(before, case), before, case.event
            ):
                return Proof(extended, case.process, case.event, round_, r, "cycle")
            before = after
    return None


def prove_event_validity(s: LabScenario, combination: Combination, extra: str = "") -> Proof | None:
    """An extension of ``s`` proving one of its overtaken events lost, or None (see the module)."""
    log = run(s, combination, extra)
    for case in overtaken_events(RunView(log)):
        proof = _prove(s, combination, extra, log, case)
        if proof is not None:
            return proof
    return None


__all__ = ["ROUNDS", "Proof", "prove_event_validity"]
