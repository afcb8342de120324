"""What each ordering layer promises of the notification properties, for ``faidecs verify``.

The run log of ``faidecs ordering simulate`` names its layer in its header (``ordering``); the
checker judges every property, and ``verify`` holds the run only to what the layer promises
(docs/ordering.md, "What each layer guarantees"). The multistage sequencer and sequencing atoms
order each pair of processes' common events (pairwise Total Notification Order) and hand every
event of a subscribed topic, once, to each process present; one publisher's events on two
topics take different paths, so neither keeps publication order across topics (Notification
FIFO Order, Gapless FIFO and Causal Delivery).
"""

from __future__ import annotations

from faidecs.errors import FaidecsError
from faidecs.matching.guarantees import Property

_PAIRWISE = frozenset(
    {Property.TOTAL_NOTIFICATION_ORDER, Property.NOTIFICATION_INTEGRITY, Property.NOTIFICATION_VALIDITY}
)

#: layer name (as ``OrderingLayer.name`` and the run log's header write it) -> what it promises
LAYER_PROMISES: dict[str, frozenset[Property]] = {"multistage": _PAIRWISE, "atoms": _PAIRWISE}


def layer_promises(name: str, where: str) -> frozenset[Property]:
    """The notification properties layer ``name`` promises; a :class:`FaidecsError` naming
    ``where`` (the run log) for a layer this version does not know."""
    try:
        return LAYER_PROMISES[name]
    except KeyError:
        known = ", ".join(sorted(LAYER_PROMISES))
        raise FaidecsError(f"{where}: the header names ordering layer {name!r}; known layers: {known}") from None


__all__ = ["LAYER_PROMISES", "layer_promises"]
