"""The window of recent event ids a source keeps to drop redeliveries.

A broker redelivers a message whose acknowledgement it did not get: the consumer was slow (past
the ack wait), the acknowledgement was lost in a broker restart, or the connection dropped. The
engine took the first copy already, so a copy whose id is among the last ``capacity`` ids taken
is dropped (and counted). The window lives in the process: a restarted process starts with an
empty one, and its fresh engine takes the replays, which is what it must do, since the engine
that took them the first time is gone with its queues.
"""

from __future__ import annotations

from collections import OrderedDict


class RecentIds:
    """The last ``capacity`` ids added, oldest forgotten first."""

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError("the window holds at least one id")
        self.capacity = capacity
        self._ids: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, event_id: str) -> None:
        """Remember ``event_id`` as the newest; forget the oldest past the capacity."""
        ids = self._ids
        if event_id in ids:
            ids.move_to_end(event_id)
            return
        ids[event_id] = None
        if len(ids) > self.capacity:
            ids.popitem(last=False)


__all__ = ["RecentIds"]
