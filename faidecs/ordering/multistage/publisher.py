"""The publisher's ordering module (Baldoni et al., Fig. 16(a)).

It asks the publication topic's TM for a timestamp, keeps the event until the timestamp comes back
(only event ids travel through the TMs), then hands ``<e, ts>`` to the notification service.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from faidecs.ordering.multistage.manager import tm_address
from faidecs.ordering.multistage.messages import CreatePubTs, EventTs, Notification
from faidecs.ordering.network import Network

#: ens_publish(sender, notification): the notification service's entry point
EnsPublish = Callable[[str, Notification], None]


@dataclass(slots=True)
class Publisher:
    name: str
    network: Network
    ens_publish: EnsPublish
    outgoing: dict[str, str] = field(default_factory=dict)  # event id -> topic, awaiting a timestamp

    def publish(self, event_id: str, topic: str) -> None:
        if event_id in self.outgoing:
            raise ValueError(f"{self.name} already publishes an event {event_id}")
        self.outgoing[event_id] = topic
        self.network.send(self.name, tm_address(topic), CreatePubTs(event_id, self.name, topic))

    def on_timestamp(self, message: EventTs) -> Notification:
        topic = self.outgoing.pop(message.event_id)
        notification = Notification(message.event_id, topic, message.ts)
        self.ens_publish(self.name, notification)
        return notification
