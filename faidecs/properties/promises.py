"""A property report judged against what each process's options promise (``faidecs verify``).

A violation counts against a promise when every process it names promises the property (a
violation that names no process counts when every process of the run does). The rest is shown as
"not promised", with whether it held, so a run whose options never promised Type FIFO Order does
not fail on it. Which options promise what is the lab's table (``faidecs.lab.promised``), passed
in by the caller: this layer does not know the lab.

>>> from faidecs.properties import Property, Report, Violation
>>> v = Violation("b before a", processes=("Jump",))
>>> judged = Judged(Report({Property.TYPE_FIFO_ORDER: [v]}), {"Jump": frozenset(), "Rising": frozenset()})
>>> judged.failed(), judged.verdict(Property.TYPE_FIFO_ORDER)
([], 'not promised (violated)')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from faidecs.matching.guarantees import PROPERTIES, Property
from faidecs.properties.view import UNPROVEN_VERDICT, Violation

if TYPE_CHECKING:
    from faidecs.properties import Report

#: Type Local Order is half of Type Causal Order (the other half is Type FIFO Order): promised
#: wherever Type Causal Order is.
_PART_OF = {Property.TYPE_LOCAL_ORDER: Property.TYPE_CAUSAL_ORDER}


def promises_of(prop: Property, promised: frozenset[Property], layer: frozenset[Property] | None = None) -> bool:
    """Whether a process whose options promise ``promised`` (properties of the papers' table)
    promises ``prop``. The properties outside that table (the ordering layers' notification and
    gapless properties) are not about the matching options but about the ordering layer that
    handed the process its events: those in ``layer`` are promised (every one when ``layer`` is
    None: one total order, as the engine and the overlay give)."""
    prop = _PART_OF.get(prop, prop)
    if prop in PROPERTIES:
        return prop in promised
    return layer is None or prop in layer


@dataclass(frozen=True, slots=True)
class Judged:
    report: Report
    #: process -> the properties of the papers' table its options promise
    promises: Mapping[str, frozenset[Property]]
    #: the run's ordering layer (the run log's ``ordering``) and the notification properties it
    #: promises; None: one total order, which gives them all
    layer: tuple[str, frozenset[Property]] | None = None

    def _layer_promises(self) -> frozenset[Property] | None:
        return None if self.layer is None else self.layer[1]

    def promised_by(self, prop: Property) -> list[str]:
        layer = self._layer_promises()
        return [p for p, kept in self.promises.items() if promises_of(prop, kept, layer)]

    def _binding(self, prop: Property, v: Violation) -> bool:
        named = v.processes or tuple(self.promises)
        layer = self._layer_promises()
        return all(promises_of(prop, self.promises.get(p, frozenset()), layer) for p in named)

    def breaches(self, prop: Property) -> list[Violation]:
        """The violations of ``prop`` by processes that promise it."""
        return [v for v in self.report.results[prop] if self._binding(prop, v)]

    def failed(self) -> list[Property]:
        """Properties some process promises and violates."""
        return [p for p in self.report.results if self.breaches(p)]

    def undecided(self) -> list[Property]:
        """Properties not judged (a truncated log) that some process promises."""
        return [p for p in self.report.undecided if self.promised_by(p)]

    def verdict(self, prop: Property) -> str:
        found = self.report.results[prop]
        if not self.promised_by(prop):
            state = "cannot judge" if prop in self.report.undecided else "violated" if found else "holds"
            state = "unproven" if prop in self.report.unproven else state
            return f"not promised ({state})"
        if prop in self.report.undecided:
            return "cannot judge"
        if self.breaches(prop):
            return "VIOLATED"
        if prop in self.report.unproven:
            return UNPROVEN_VERDICT
        if found:
            others = sorted({p for v in found for p in v.processes})
            return f"holds where promised (violated by {', '.join(others)}, whose options do not promise it)"
        return "holds"

    def table(self) -> str:
        results = self.report.results
        width = max(len(n) for n in results)
        lines = [f"{'property':<{width}}  result"]
        for name, found in results.items():
            lines.append(f"{name:<{width}}  {self.verdict(name)}")
            for v in found:
                note = "" if self._binding(name, v) else " (not promised)"
                lines.append(f"{'':<{width}}    {v.explanation}{note}")
            for v in self.report.unproven.get(name, []):
                lines.append(f"{'':<{width}}    {v.explanation}")
        for process, kept in self.promises.items():
            missing = [p for p in PROPERTIES if p not in kept]
            if missing:
                lines.append(f"{process}'s options do not promise: {', '.join(missing)}")
        if self.layer is not None:
            layer_name, given = self.layer
            lacking = [p for p in results if p not in PROPERTIES and p not in _PART_OF and p not in given]
            if lacking:
                lines.append(f"the {layer_name} ordering layer does not promise: {', '.join(lacking)}")
        reasons = sorted(set(self.report.undecided.values()))
        lines += [f"cannot judge: {reason}; the others are judged on what the log records" for reason in reasons]
        lines.append("judged: what each process's options promise (docs/properties.md); --all judges every property")
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = self.report.to_json()
        for name, entry in out.items():
            prop = Property(name)
            entry["promised_by"] = self.promised_by(prop)
            entry["failed"] = bool(self.breaches(prop)) or prop in self.undecided()
        return out


__all__ = ["Judged", "promises_of"]
