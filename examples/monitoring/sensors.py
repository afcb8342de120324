"""A building's sensors, simulated: what they publish to MQTT, deterministic for a seed.

Three rooms with two temperature sensors each report every minute for 30 minutes, from 08:00
(``time`` is seconds since midnight). The seed drives the small noise of every reading; the
incidents are scripted, so every seed shows each subscription of ``monitoring.fdc`` at work:

- ``lab-2`` jumps by 6 degrees at minute 8 (a Rise);
- the lab door is opened and closed at minutes 5 and 6 with nothing hot in the lab (no alert);
- the office door is opened at minute 12 and hot air comes in: ``office-1`` passes 30 degrees
  (a HotWithDoorOpen; a Rise too where the noise leaves a step above 4); the door is closed at
  minute 16;
- the server room loses power at minute 18 and warms by 1.5 degrees a minute until power is back
  at minute 26 (a CoolingLost);
- five malformed messages, one of each kind a broker sees, are mixed in (dead letters).

Topics: ``building/ROOM/SENSOR`` for readings, ``building/ROOM/door`` and ``building/ROOM/power``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

ROOMS = {"lab": 21.0, "office": 22.5, "server": 24.0}  # each room's usual temperature
SENSORS = {room: [f"{room}-1", f"{room}-2"] for room in ROOMS}
START = 8 * 3600  # 08:00
MINUTES = 30
PREFIX = "building"


@dataclass(frozen=True, slots=True)
class Message:
    """One MQTT message: ``event`` is the event it carries, None for a malformed one."""

    topic: str
    payload: bytes
    event: dict[str, Any] | None


def _event(topic: str, event: dict[str, Any]) -> Message:
    return Message(topic, json.dumps(event).encode(), event)


def _incident_offset(sensor: str, minute: int) -> float:
    """Degrees the scripted incidents add to a sensor's reading at ``minute``."""
    if sensor == "lab-2" and minute >= 8:
        return 6.0
    if sensor.startswith("office") and 13 <= minute <= 18:
        # hot air through the open door, the sensor near it (office-1) far more
        return (4.5 if sensor == "office-1" else 1.0) * min(minute - 12, 2)
    if sensor.startswith("server") and minute > 18:
        return 1.5 * (min(minute, 26) - 18)
    return 0.0


def _malformed(minute: int) -> list[Message]:
    """The malformed messages sent at ``minute``: each is one way a message can be wrong."""
    reading = {"sensor": "lab-1", "room": "lab", "celsius": 21.0, "time": START + 60 * minute}
    bad = {
        3: Message(f"{PREFIX}/lab/lab-1", b"21.4 degrees", None),  # not JSON
        7: Message(f"{PREFIX}/lab/lab-1", json.dumps({"type": "Reading", "attrs": reading}).encode(), None),  # no id
        11: Message(
            f"{PREFIX}/office/office-2",
            json.dumps(
                {"id": "office-2-bad", "type": "Reading", "attrs": {**reading, "sensor": "office-2", "celsius": "hot"}}
            ).encode(),
            None,
        ),  # a string where a float belongs
        17: Message(
            f"{PREFIX}/server/humidity",
            json.dumps({"id": "hum-1", "type": "Humidity", "attrs": {"room": "server", "percent": 40}}).encode(),
            None,
        ),  # a type the program does not declare
        23: Message(f"{PREFIX}/server/server-1", b"\xff\xfe\x00garbage", None),  # not UTF-8
    }
    return [bad[minute]] if minute in bad else []


def messages(seed: int = 7) -> list[Message]:
    """Everything the building publishes, in publication order."""
    rng = random.Random(seed)
    out: list[Message] = []
    for minute in range(MINUTES):
        time = START + 60 * minute
        for room, usual in ROOMS.items():
            for sensor in SENSORS[room]:
                celsius = round(usual + rng.uniform(-0.6, 0.6) + _incident_offset(sensor, minute), 1)
                event = {
                    "id": f"{sensor}-{minute:02d}",
                    "type": "Reading",
                    "attrs": {"sensor": sensor, "room": room, "celsius": celsius, "time": time},
                }
                out.append(_event(f"{PREFIX}/{room}/{sensor}", event))
        for room, opened, closed in (("lab", 5, 6), ("office", 12, 16)):
            if minute in (opened, closed):
                door = {"room": room, "open": minute == opened, "time": time + 30}
                out.append(
                    _event(f"{PREFIX}/{room}/door", {"id": f"door-{room}-{minute:02d}", "type": "Door", "attrs": door})
                )
        if minute in (18, 26):
            power = {"room": "server", "on": minute == 26, "time": time + 30}
            out.append(
                _event(f"{PREFIX}/server/power", {"id": f"power-server-{minute:02d}", "type": "Power", "attrs": power})
            )
        out.extend(_malformed(minute))
    return out


def events(batch: list[Message]) -> list[dict[str, Any]]:
    """The well-formed events of ``batch``, in order."""
    return [m.event for m in batch if m.event is not None]


def malformed(batch: list[Message]) -> list[Message]:
    return [m for m in batch if m.event is None]
