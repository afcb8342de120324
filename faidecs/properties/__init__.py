"""The property checker: judges a run log against every property of the FAIDECS model.

>>> from faidecs.runs.processes import run_processes
>>> log = run_processes("type T(a: int)", {"p": "subscription S: T"}, [{"id": "e", "type": "T", "attrs": {"a": 1}}])
>>> check(log).violated()
[]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from faidecs.matching.guarantees import Property
from faidecs.properties.agreement import conjunction_agreement, covering_agreement
from faidecs.properties.gapless import gapless_causal_delivery, gapless_fifo_delivery
from faidecs.properties.liveness import conjunction_validity, event_validity, event_validity_unproven
from faidecs.properties.notification import notification_integrity, notification_validity, total_notification_order
from faidecs.properties.notification_fifo import notification_fifo_order
from faidecs.properties.order import (
    conjunction_total_order,
    disjunction_total_order,
    type_causal_order,
    type_fifo_order,
    type_local_order,
    type_total_order,
)
from faidecs.properties.safety import admission, no_creation, no_duplication, no_duplication_prime
from faidecs.properties.view import UNPROVEN_VERDICT, RunView, Violation
from faidecs.runs.runlog import RunLog

Check = Callable[[RunView], list[Violation]]

#: Every property, in the order tools print them (the order of :class:`Property`: the semantics
#: file's names, plus Type Local Order, which with Type FIFO Order makes Type Causal Order, plus the
#: notification properties of the ordering layers, LoCaPS's gapless deliveries (seed 003) and the
#: latch layer's Notification FIFO Order (seed 002; it reports every out-of-order notification,
#: not the first), which hold vacuously in logs without ``notify`` records).
CHECKS: dict[Property, Check] = {
    Property.NO_DUPLICATION: no_duplication,
    Property.NO_DUPLICATION_PRIME: no_duplication_prime,
    Property.NO_CREATION: no_creation,
    Property.ADMISSION: admission,
    Property.CONJUNCTION_VALIDITY: conjunction_validity,
    Property.EVENT_VALIDITY: event_validity,
    Property.CONJUNCTION_AGREEMENT: conjunction_agreement,
    Property.COVERING_AGREEMENT: covering_agreement,
    Property.TYPE_TOTAL_ORDER: type_total_order,
    Property.CONJUNCTION_TOTAL_ORDER: conjunction_total_order,
    Property.DISJUNCTION_TOTAL_ORDER: disjunction_total_order,
    Property.TYPE_FIFO_ORDER: type_fifo_order,
    Property.TYPE_LOCAL_ORDER: type_local_order,
    Property.TYPE_CAUSAL_ORDER: type_causal_order,
    Property.TOTAL_NOTIFICATION_ORDER: total_notification_order,
    Property.NOTIFICATION_INTEGRITY: notification_integrity,
    Property.NOTIFICATION_VALIDITY: notification_validity,
    Property.NOTIFICATION_FIFO_ORDER: notification_fifo_order,
    Property.GAPLESS_FIFO_DELIVERY: gapless_fifo_delivery,
    Property.GAPLESS_CAUSAL_DELIVERY: gapless_causal_delivery,
}


#: Properties whose judgement needs the whole run: on a log cut short, a delivery they miss may
#: lie in the part that is lost, so neither "holds" nor "violated" can be said. Every other
#: property is judged on what the log records: a violation there stays one however the run went
#: on (each is about what was delivered, in which order, never about what was not yet).
WHOLE_RUN: frozenset[Property] = frozenset(
    {
        Property.CONJUNCTION_VALIDITY,
        Property.EVENT_VALIDITY,
        Property.CONJUNCTION_AGREEMENT,
        Property.COVERING_AGREEMENT,
        Property.NOTIFICATION_VALIDITY,
    }
)


#: Findings a finite run cannot turn into a violation: an event Event Validity finds overtaken by a
#: younger one but still queued may yet be delivered by a later relation (docs/properties.md). They
#: are reported apart, as unproven: neither a violation nor a proof that the property holds.
UNPROVEN: dict[Property, Check] = {Property.EVENT_VALIDITY: event_validity_unproven}


@dataclass(frozen=True, slots=True)
class Report:
    results: dict[Property, list[Violation]]
    #: properties not judged, and why (the log is not the whole run); their results are empty
    undecided: dict[Property, str] = field(default_factory=dict)
    #: findings that are not violations, for properties without a violation (see :data:`UNPROVEN`)
    unproven: dict[Property, list[Violation]] = field(default_factory=dict)

    def violated(self) -> list[Property]:
        return [name for name, found in self.results.items() if found]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, found in self.results.items():
            if name in self.undecided:
                out[name] = {"holds": None, "violations": [], "undecided": self.undecided[name]}
            elif name in self.unproven:
                out[name] = {"holds": None, "violations": [], "unproven": [v.to_json() for v in self.unproven[name]]}
            else:
                out[name] = {"holds": not found, "violations": [v.to_json() for v in found]}
        return out

    def table(self) -> str:
        width = max(len(n) for n in self.results)
        lines = [f"{'property':<{width}}  result"]
        for name, found in self.results.items():
            verdict = "cannot judge" if name in self.undecided else "VIOLATED" if found else "holds"
            if name in self.unproven:
                verdict = UNPROVEN_VERDICT
            lines.append(f"{name:<{width}}  {verdict}")
            for v in found + self.unproven.get(name, []):
                lines.append(f"{'':<{width}}    {v.explanation}")
        reasons = sorted(set(self.undecided.values()))
        lines += [f"cannot judge: {reason}; the others are judged on what the log records" for reason in reasons]
        return "\n".join(lines) + "\n"


def check(log: RunLog, properties: Iterable[str] | None = None, *, unfinished: str | None = None) -> Report:
    """Check ``properties`` (default: all; :class:`Property` members, or their names) on a run log.

    ``unfinished``: why the log may not be the whole run (``faidecs verify`` passes
    :meth:`RunLog.incomplete`); the properties of :data:`WHOLE_RUN` are then not judged but
    reported undecided, with this reason, and the others are judged on what the log records."""
    view = RunView(log)
    names = [Property(p) for p in properties] if properties is not None else list(CHECKS)
    undecided = {name: unfinished for name in names if unfinished is not None and name in WHOLE_RUN}
    results = {name: [] if name in undecided else CHECKS[name](view) for name in names}
    unproven = {
        name: found
        for name in names
        if name in UNPROVEN and name not in undecided and not results[name]
        for found in [UNPROVEN[name](view)]
        if found
    }
    return Report(results, undecided, unproven)


__all__ = ["CHECKS", "UNPROVEN", "UNPROVEN_VERDICT", "WHOLE_RUN", "Property", "Report", "Violation", "check"]
