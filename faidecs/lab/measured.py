"""The tables the lab measured (``faidecs lab --runs 3000 --seed 0 [--staged]``; docs/properties.md).

The slow tests check on other seeded runs that each option keeps every property not listed here.
"""

from __future__ import annotations

#: combination -> properties the lab found violated (sorted), plain covering.
MEASURED_VIOLATIONS: dict[str, tuple[str, ...]] = {
    "FR+I": (
        "Conjunction Total Order",
        "Covering Agreement",
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "FRC+I": (
        "Conjunction Total Order",
        "Conjunction Validity",
        "Covering Agreement",
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "MR+I": (
        "Conjunction Total Order",
        "Covering Agreement",
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "MRC+I": (
        "Conjunction Total Order",
        "Conjunction Validity",
        "Covering Agreement",
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "FR+PI": (
        "Covering Agreement",
        "Event Validity",
    ),
    "FRC+PI": (
        "Conjunction Validity",
        "Covering Agreement",
        "Event Validity",
    ),
    "MR+PI": (
        "Covering Agreement",
        "Event Validity",
    ),
    "MRC+PI": (
        "Conjunction Validity",
        "Covering Agreement",
        "Event Validity",
    ),
    "FR+IP": (
        "Covering Agreement",
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "FRC+IP": (
        "Conjunction Validity",
        "Covering Agreement",
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "MR+IP": (
        "Conjunction Total Order",
        "Covering Agreement",
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "MRC+IP": (
        "Conjunction Total Order",
        "Conjunction Validity",
        "Covering Agreement",
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "FR+FP": (
        "Covering Agreement",
        "Event Validity",
        "No Duplication",
        "No Duplication'",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "FRC+FP": (
        "Conjunction Validity",
        "Covering Agreement",
        "Event Validity",
        "No Duplication",
    ),
    "MR+FP": (
        "Covering Agreement",
        "Event Validity",
        "No Duplication",
        "No Duplication'",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "MRC+FP": (
        "Conjunction Validity",
        "Covering Agreement",
        "Event Validity",
        "No Duplication",
    ),
}

#: the same with every subscription ``covering staged`` (``faidecs lab --staged``).
STAGED_VIOLATIONS: dict[str, tuple[str, ...]] = {
    "FR+I+covering staged": (
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "FRC+I+covering staged": (
        "Conjunction Validity",
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "MR+I+covering staged": (
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "MRC+I+covering staged": (
        "Conjunction Validity",
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "FR+PI+covering staged": ("Event Validity",),
    "FRC+PI+covering staged": (
        "Conjunction Validity",
        "Event Validity",
    ),
    "MR+PI+covering staged": ("Event Validity",),
    "MRC+PI+covering staged": (
        "Conjunction Validity",
        "Event Validity",
    ),
    "FR+IP+covering staged": (
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "FRC+IP+covering staged": (
        "Conjunction Validity",
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "MR+IP+covering staged": (
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "MRC+IP+covering staged": (
        "Conjunction Validity",
        "Event Validity",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "FR+FP+covering staged": (
        "Event Validity",
        "No Duplication",
        "No Duplication'",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "FRC+FP+covering staged": (
        "Conjunction Validity",
        "Event Validity",
        "No Duplication",
    ),
    "MR+FP+covering staged": (
        "Event Validity",
        "No Duplication",
        "No Duplication'",
        "Type Causal Order",
        "Type FIFO Order",
        "Type Total Order",
    ),
    "MRC+FP+covering staged": (
        "Conjunction Validity",
        "Event Validity",
        "No Duplication",
    ),
}
