"""Messages from authenticated peers that contradict the deployment's declarations are caught
before the protocol core sees them: an event type declared otherwise, a filter that reads an
attribute the type does not have at that position or of another kind, a role of an unknown type."""

from __future__ import annotations

from dataclasses import replace

from faidecs.grammar import compile_program
from faidecs.grammar.model import Kind
from faidecs.matching.events import EventValidator
from faidecs.merging.filters import Filter
from faidecs.overlay.core.admission import inconsistency
from faidecs.overlay.core.messages import Decide, Decision, Forward, Publish, Register

HERE = compile_program('type A(x: int, y: str)\ntype B(x: int)\nsubscription S: A and B and A.x > 2 and A.y = "k"\n')
THERE = compile_program("type A(y: str, x: int)\ntype B(x: int)\nsubscription S: A and B and A.x > 2\n")
TYPES = dict(HERE.types)


def _filter(program: object) -> Filter:
    return Filter.of(program.subscriptions[0].conjunctions[0])  # type: ignore[attr-defined]


def test_consistent_messages_pass() -> None:
    event = EventValidator(TYPES).validate({"id": "a1", "type": "A", "attrs": {"x": 3, "y": "k"}})
    f = _filter(HERE)
    assert inconsistency(Publish("p", 0, event), TYPES) is None
    assert inconsistency(Register(("A",), "merger:x", "m1", f), TYPES) is None
    assert inconsistency(Forward(("A",), 0, 0, "event", event), TYPES) is None
    assert inconsistency(Decide(("A",), 1, (Decision(0, 1, 0, "mark", filter=f),), 0), TYPES) is None


def test_an_event_type_declared_otherwise_is_caught() -> None:
    theirs = EventValidator(dict(THERE.types)).validate({"id": "a1", "type": "A", "attrs": {"x": 3, "y": "k"}})
    problem = inconsistency(Publish("p", 0, theirs), TYPES)
    assert problem is not None and "type A(y: str, x: int)" in problem and "type A(x: int, y: str)" in problem


def test_a_filter_reading_another_position_or_kind_is_caught() -> None:
    theirs = _filter(THERE)  # A.x is at position 1 there
    problem = inconsistency(Register(("A",), "merger:x", "m1", theirs), TYPES)
    assert problem is not None and "no attribute x at position 1" in problem
    pred, slot = next(iter(_filter(HERE).alternatives["A"]))[0]
    wrong_kind = replace(pred, left=replace(pred.left, kind=Kind.FLOAT))  # type: ignore[type-var]
    f = Filter({"A": frozenset({((wrong_kind, slot),)})})
    problem = inconsistency(Decide(("A",), 1, (Decision(0, 1, 0, "mark", filter=f),), 0), TYPES)
    assert problem is not None and "not float" in problem


def test_a_role_of_an_undeclared_type_is_caught() -> None:
    assert "undeclared type C" in (inconsistency(Register(("C",), "merger:x", "m1", Filter.nothing()), TYPES) or "")
