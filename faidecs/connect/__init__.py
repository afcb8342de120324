"""Message-broker connectors: events from NATS JetStream or MQTT into the engine, deliveries out.

One module per broker, each needing its extra: :mod:`faidecs.connect.nats` (``faidecs[nats]``,
nats-py) and :mod:`faidecs.connect.mqtt` (``faidecs[mqtt]``, paho-mqtt). A source is an async
iterable of events that acknowledges an event when asked for the next one, so an event is
acknowledged only once the engine has taken it; :func:`~faidecs.connect.pump.open_source` picks
the source a URL names. docs/connectors.md says what each guarantees.
"""

from faidecs.connect.base import Sink, Source
from faidecs.connect.intake import Counts
from faidecs.connect.pump import PumpSummary, open_sink, open_source, pump
from faidecs.connect.urls import BrokerUrl, ConnectError, parse_url

__all__ = [
    "BrokerUrl",
    "ConnectError",
    "Counts",
    "PumpSummary",
    "Sink",
    "Source",
    "open_sink",
    "open_source",
    "parse_url",
    "pump",
]
