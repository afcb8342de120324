"""The property checker: judges a run log against every property of the FAIDECS model.

>>> from faidecs.runs.processes import run_processes
>>> log = run_processes("type T(a: int)", {"p": "subscription S: T"}, [{"id": "e", "type": "T", "attrs": {"a": 1}}])
>>> check(log).violated()
[]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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

#: Every property, in the order tools print them (the semantics file's names, plus Type Local
#: Order, which with Type FIFO Order makes Type Causal Order, plus the notification properties
#: of the ordering layers, LoCaPS's gapless deliveries (seed 003) and the latch layer's
#: Notification FIFO Order (seed 002; it reports every out-of-order notification, not the
#: first), which hold vacuously in logs without ``notify`` records).
CHECKS: dict[str, Check] = {
    "No Duplication": no_duplication,
    "No Duplication'": no_duplication_prime,
    "No Creation": no_creation,
    "Admission": admission,
    "Conjunction Validity": conjunction_validity,
    "Event Validity": event_validity,
    "Conjunction Agreement": conjunction_agreement,
    "Covering Agreement": covering_agreement,
    "Type Total Order": type_total_order,
    "Conjunction Total Order": conjunction_total_order,
    "Disjunction Total Order": disjunction_total_order,
    "Type FIFO Order": type_fifo_order,
    "Type Local Order": type_local_order,
    "Type Causal Order": type_causal_order,
    "Total Notification Order": total_notification_order,
    "Notification Integrity": notification_integrity,
    "Notification Validity": notification_validity,
    "Notification FIFO Order": notification_fifo_order,
    "Gapless FIFO Delivery": gapless_fifo_delivery,
    "Gapless Causal Delivery": gapless_causal_delivery,
}


@dataclass(frozen=True, slots=True)
class Report:
    results: dict[str, list[Violation]]

    def violated(self) -> list[str]:
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


def check(log: RunLog, properties: list[str] | None = None) -> Report:
    """Check ``properties`` (default: all) on a run log."""
    view = RunView(log)
    names = properties if properties is not None else list(CHECKS)
    return Report({name: CHECKS[name](view) for name in names})


__all__ = ["CHECKS", "Report", "Violation", "check"]
