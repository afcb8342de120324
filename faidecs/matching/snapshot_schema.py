"""The shape of a snapshot, checked before any of it is used.

:meth:`Engine.restore <faidecs.Engine.restore>` reads data that may come from a disk or another
process. Each part is converted (strictly: ``true`` is not ``1``) against its msgspec schema
before it is read, so a wrong type or an out-of-range counter is a :class:`SnapshotError` naming
the field path, never a ``TypeError`` at restore or an ``OverflowError`` at the next publish.
What depends on the program (which queues, which events) the conjunction states check after.

Counters (``published``, clocks, arrival numbers, ticks) are at most :data:`MAX_COUNT` = 2^53:
every JSON reader keeps such integers exact, and the compiled matcher's 64-bit arithmetic has
room to count on from there.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from faidecs.errors import SnapshotError

MAX_COUNT = 2**53

Counter = Annotated[int, msgspec.Meta(ge=0, le=MAX_COUNT)]
EventJson = dict[str, Any]  # one event in the input JSON shape; the engine's validator reads it


class Top(msgspec.Struct, forbid_unknown_fields=True):
    format: str
    program: str
    published: Counter
    queues: dict[str, list[dict[str, Any]]]


_AT = {"arrivals": "@arrivals", "ticks": "@ticks", "clock": "@clock"}


class PlainCounters(msgspec.Struct, forbid_unknown_fields=True, rename=_AT):
    arrivals: dict[str, list[Counter]]
    ticks: dict[str, list[Counter]]
    clock: Counter


class Staged(msgspec.Struct, forbid_unknown_fields=True):
    parts: list[dict[str, Any]]
    pending: list[list[list[EventJson]]]
    pending_arrivals: list[list[list[Counter]]]


# A partition's value is an attribute's value: 64-bit when an integer, as every event's is.
PartitionValue = str | Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)] | float | bool


class Partitioned(msgspec.Struct, forbid_unknown_fields=True):
    partitions: list[tuple[PartitionValue, dict[str, Any]]]


def convert(value: Any, schema: Any, where: str = "") -> Any:
    """``value`` as ``schema``, or a :class:`SnapshotError` naming the field (``where`` is the
    path of ``value`` itself, prefixed to msgspec's ``$...``)."""
    try:
        return msgspec.convert(value, schema, strict=True)
    except msgspec.ValidationError as exc:
        message = str(exc)
        reason, _, at = message.partition(" - at `$")
        path = (where + at.rstrip("`")).lstrip(".") if at else where
        raise SnapshotError(f"{path}: {reason}" if path else reason) from None
