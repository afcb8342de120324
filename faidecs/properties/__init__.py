"""The property checker: judges a run log against every property of the FAIDECS model.

>>> from faidecs.runs.processes import run_processes
>>> log = run_processes("type T(a: int)", {"p": "subscription S: T"}, [{"id": "e", "type": "T", "attrs": {"a": 1}}])
>>> check(log).violated()
[]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from faidecs.matching.guarantees import Property
from faidecs.properties.agreement import conjunction_agreement, covering_agreement
from faidecs.properties.gapless import gapless_causal_delivery, gapless_fifo_delivery
from faidecs.properties.liveness import conjunction_validity, event_validity
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
from faidecs.properties.view import RunView, Violation
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


@dataclass(frozen=True, slots=True)
class Report:
    results: dict[Property, list[Violation]]

    def violated(self) -> list[Property]:
        return [name for name, found in self.results.items() if found]

    def to_json(self) -> dict[str, Any]:
        return {
            name: {"holds": not found, "violations": [v.to_json() for v in found]}
            for name, found in self.results.items()
        }

    def table(self) -> str:
        width = max(len(n) for n in self.results)
        lines = [f"{'property':<{width}}  result"]
        for name, found in self.results.items():
            lines.append(f"{name:<{width}}  {'VIOLATED' if found else 'holds'}")
            for v in found:
                lines.append(f"{'':<{width}}    {v.explanation}")
        return "\n".join(lines) + "\n"


def check(log: RunLog, properties: Iterable[str] | None = None) -> Report:
    """Check ``properties`` (default: all; :class:`Property` members, or their names) on a run log."""
    view = RunView(log)
    names = [Property(p) for p in properties] if properties is not None else list(CHECKS)
    return Report({name: CHECKS[name](view) for name in names})


__all__ = ["CHECKS", "Property", "Report", "Violation", "check"]
