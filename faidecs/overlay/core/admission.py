"""Whether a well-formed message agrees with the deployment's declarations.

The wire format checks shape and kinds (:mod:`faidecs.overlay.runtime.wire`); it cannot know the
deployment's types. A message from an authenticated peer whose event type is declared otherwise
here, or whose filter reads an attribute at a position the type does not have, would make the
core index past an event's values or match against the wrong attribute. The node drops such a
message, logged and counted, before the core sees it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from faidecs.grammar.model import ArithOp, AttrOf, EventType, Negate, Value
from faidecs.matching.events import Event
from faidecs.merging.filters import Filter
from faidecs.overlay.core.messages import (
    Decide,
    Decision,
    EpochState,
    Forward,
    ForwardBatch,
    Message,
    NewLog,
    Publish,
    Register,
)


def inconsistency(msg: Message, types: Mapping[str, EventType]) -> str | None:
    """What in ``msg`` contradicts ``types``, or None when nothing does."""
    role = getattr(msg, "role", None)
    if role is not None:
        for t in role:
            if t not in types:
                return f"role names an undeclared type {t}"
    events: list[Event | None] = []
    filters: list[Filter | None] = []
    if isinstance(msg, (Publish, Forward)):
        events.append(msg.event)
    if isinstance(msg, ForwardBatch):
        events += [e.event for e in msg.entries]
        filters += [e.filter for e in msg.entries]
    for event in events:
        problem = _event(event, types) if event is not None else None
        if problem:
            return problem
    if isinstance(msg, (Register, Forward)):
        filters.append(msg.filter)
    filters += [d.filter for d in _decisions(msg)]
    for f in filters:
        problem = _filter(f, types) if f is not None else None
        if problem:
            return problem
    return None


def _decisions(msg: Message) -> Iterable[Decision]:
    if isinstance(msg, (Decide, NewLog, EpochState)):
        return msg.decisions
    return ()


def _event(event: Event, types: Mapping[str, EventType]) -> str | None:
    declared = types.get(event.type)
    if event.event_type is declared:
        return None  # decoded against the deployment's own declarations (wire.Declared)
    if declared is None:
        return f"event {event.id} has an undeclared type {event.type}"
    if event.event_type != declared:
        return f"event {event.id}: {event.event_type.declaration()} is declared here as {declared.declaration()}"
    return None


def _filter(f: Filter, types: Mapping[str, EventType]) -> str | None:
    for type_name, alternatives in f.alternatives.items():
        if type_name not in types:
            return f"filter names an undeclared type {type_name}"
        for alternative in alternatives:
            for predicate, slot in alternative:
                if slot.type_name != type_name:
                    return f"filter of {type_name} holds a predicate on {slot}"
                for value in (predicate.left, predicate.right):
                    problem = _value(value, types)
                    if problem:
                        return f"filter of {type_name}: {problem}"
    return None


def _value(value: Value, types: Mapping[str, EventType]) -> str | None:
    if isinstance(value, AttrOf):
        declared = types.get(value.slot.type_name)
        if declared is None:
            return f"undeclared type {value.slot.type_name}"
        attrs = declared.attributes
        if not (0 <= value.position < len(attrs)) or attrs[value.position].name != value.attribute:
            return f"{value.slot.type_name} has no attribute {value.attribute} at position {value.position}"
        if attrs[value.position].kind != value.kind:
            kind = attrs[value.position].kind.value
            return f"{value.slot.type_name}.{value.attribute} is {kind}, not {value.kind.value}"
        return None
    if isinstance(value, Negate):
        return _value(value.operand, types)
    if isinstance(value, ArithOp):
        return _value(value.left, types) or _value(value.right, types)
    return None


__all__ = ["inconsistency"]
