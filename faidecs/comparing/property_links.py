"""Where docs/properties.md defines each property: the reports link every property name there.

The anchors are GitHub's for the page's headings (tests/unit/test_compare_render.py checks each
against the real headings, and that the property's row is under it, so a renamed heading fails a
test instead of leaving dead links).
"""

from __future__ import annotations

#: the reports' link to the page, relative: the caller may point it elsewhere (``docs=``)
PROPERTIES_DOC = "docs/properties.md"

JUDGEMENTS = "the-properties-and-their-finite-run-judgements"

#: property -> the anchor of the heading whose table defines it
ANCHOR = {
    "No Duplication": JUDGEMENTS,
    "No Duplication'": JUDGEMENTS,
    "No Creation": JUDGEMENTS,
    "Admission": JUDGEMENTS,
    "Conjunction Validity": JUDGEMENTS,
    "Event Validity": JUDGEMENTS,
    "Conjunction Agreement": JUDGEMENTS,
    "Covering Agreement": JUDGEMENTS,
    "Type Total Order": JUDGEMENTS,
    "Conjunction Total Order": JUDGEMENTS,
    "Disjunction Total Order": JUDGEMENTS,
    "Type FIFO Order": JUDGEMENTS,
    "Type Local Order": JUDGEMENTS,
    "Type Causal Order": JUDGEMENTS,
    "Total Notification Order": JUDGEMENTS,
    "Notification Integrity": JUDGEMENTS,
    "Notification Validity": JUDGEMENTS,
    "Notification FIFO Order": JUDGEMENTS,
    "Gapless FIFO Delivery": JUDGEMENTS,
    "Gapless Causal Delivery": JUDGEMENTS,
}


def property_link(name: str, docs: str = PROPERTIES_DOC) -> str:
    """The link for ``name``: its heading, or the page for a property this map does not know."""
    anchor = ANCHOR.get(name)
    return docs if anchor is None else f"{docs}#{anchor}"


__all__ = ["ANCHOR", "PROPERTIES_DOC", "property_link"]
