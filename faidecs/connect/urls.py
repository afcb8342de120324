"""Broker URLs: ``nats://host:port/subject`` and ``mqtt://host:port/topic``, with query options.

A URL names one broker and one subject (NATS) or topic (MQTT). Options go in the query string
(``nats://127.0.0.1:4222/quotes?durable=desk&stream=QUOTES``); an option a scheme does not know,
a port that is not a number, a missing subject: each is a :class:`ConnectError` naming the URL
and what is wrong with it, before anything connects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

from faidecs.errors import FaidecsError


class ConnectError(FaidecsError):
    """A broker URL is wrong, a broker cannot be reached, or a connector's extra is missing."""


#: The options each scheme takes, with what each means (for the error that lists them).
NATS_OPTIONS = {
    "durable": "the JetStream durable consumer's name (source)",
    "stream": "the JetStream stream holding the subject (created if missing)",
    "dead": "the dead-letter subject (source; default SUBJECT.dead)",
    "ack_wait": "seconds before JetStream redelivers a message not acknowledged (source; default 30)",
    "max_bytes": "the largest message taken as an event, in bytes (source; default 1048576)",
    "window": "event ids remembered to drop redeliveries (source; default 65536)",
}
MQTT_OPTIONS = {
    "qos": "the quality of service, 1 (the default) or 2",
    "client_id": "the MQTT client id: its persistent session (default faidecs-source-TOPIC or faidecs-sink-TOPIC)",
    "dead": "the dead-letter topic (source; default TOPIC/dead)",
    "max_bytes": "the largest message taken as an event, in bytes (source; default 1048576)",
    "window": "event ids remembered to drop redeliveries (source; default 65536)",
}

_DEFAULT_PORTS = {"nats": 4222, "mqtt": 1883}
_NATS_TOKEN = re.compile(r"^[^\s.*>]+$")


@dataclass(frozen=True)
class BrokerUrl:
    """One parsed broker URL. ``name`` is the subject (NATS) or the topic (MQTT)."""

    text: str
    scheme: str  # "nats" or "mqtt"
    host: str
    port: int
    name: str
    options: dict[str, str]

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def option(self, key: str, default: str) -> str:
        return self.options.get(key, default)

    def number(self, key: str, default: float, *, low: float, high: float, whole: bool = True) -> float:
        """A numeric option between ``low`` and ``high``; a :class:`ConnectError` otherwise."""
        text = self.options.get(key)
        if text is None:
            return default
        try:
            value = int(text) if whole else float(text)
        except ValueError:
            kind = "an integer" if whole else "a number"
            raise ConnectError(f"{self.text}: option {key}={text!r} is not {kind}") from None
        if not low <= value <= high:
            raise ConnectError(f"{self.text}: option {key}={text} is outside {low:g}..{high:g}")
        return value


def parse_url(text: str) -> BrokerUrl:
    """``text`` as a :class:`BrokerUrl`; raises :class:`ConnectError` naming the URL and the problem."""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ConnectError(f"{text}: not a broker URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ConnectError(
            f"{text}: the scheme must be nats:// or mqtt://, not {parts.scheme + '://' if scheme else 'missing'}"
        )
    if not parts.hostname:
        raise ConnectError(f"{text}: no host (write {scheme}://HOST:PORT/...)")
    if parts.username or parts.password:
        raise ConnectError(f"{text}: credentials in the URL are not supported")
    if parts.fragment or text.endswith("#"):
        if scheme == "mqtt":
            raise ConnectError(f"{text}: write # in a topic as %23 (in a URL, # starts a fragment)")
        raise ConnectError(f"{text}: a broker URL has no #fragment")
    name = unquote(parts.path[1:]) if parts.path.startswith("/") else ""
    what = "subject" if scheme == "nats" else "topic"
    if not name:
        raise ConnectError(f"{text}: no {what} (write {scheme}://HOST:PORT/{what.upper()})")
    if scheme == "nats":
        tokens = name.split(".")
        if any(not t or (t not in ("*", ">") and not _NATS_TOKEN.match(t)) for t in tokens) or ">" in tokens[:-1]:
            raise ConnectError(f"{text}: {name!r} is not a NATS subject (dot-separated tokens, * and > as wildcards)")
    elif "#" in name[:-1] or any(("+" in level and level != "+") for level in name.split("/")):
        raise ConnectError(f"{text}: {name!r} is not an MQTT topic filter (+ a whole level, # the last)")
    known = NATS_OPTIONS if scheme == "nats" else MQTT_OPTIONS
    options: dict[str, str] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in known:
            listed = ", ".join(sorted(known))
            raise ConnectError(f"{text}: unknown option {key!r} for {scheme}:// (known: {listed})")
        if key in options:
            raise ConnectError(f"{text}: option {key!r} given twice")
        if not value:
            raise ConnectError(f"{text}: option {key!r} has no value")
        options[key] = value
    url = BrokerUrl(text, scheme, parts.hostname, port or _DEFAULT_PORTS[scheme], name, options)
    if scheme == "mqtt":
        url.number("qos", 1, low=1, high=2)
    return url


def wildcard(url: BrokerUrl) -> bool:
    """Whether the subject or topic matches many (a sink cannot publish to it)."""
    if url.scheme == "nats":
        return any(t in ("*", ">") for t in url.name.split("."))
    return any(level in ("+", "#") for level in url.name.split("/"))


__all__ = ["MQTT_OPTIONS", "NATS_OPTIONS", "BrokerUrl", "ConnectError", "parse_url", "wildcard"]
