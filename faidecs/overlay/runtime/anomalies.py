"""What a server's replicas turned away that an honest peer never sends, in its log: one line
per role when the counters grow, at most once per interval (docs/deploy.md, "Threat model")."""

from __future__ import annotations

import logging

from faidecs.merging.roles import Role, role_name

LOG = logging.getLogger("faidecs.overlay.runtime.anomalies")
#: Seconds between two lines for one role (the transport's interval for its rejections).
LOG_INTERVAL = 10.0


class Anomalies:
    """Logs a replica's counters of what it turned away when they grow, at most once per role
    every :data:`LOG_INTERVAL`: one line for a flood, not one per message."""

    def __init__(self, process: str):
        self.process = process
        self.logged: dict[Role, tuple[int, dict[str, int]]] = {}

    def report(self, role: Role, counts: dict[str, int], now: int) -> None:
        at, before = self.logged.get(role, (-(10**12), {}))
        grown = {k: n - before.get(k, 0) for k, n in counts.items() if n > before.get(k, 0)}
        if not grown or now - at < LOG_INTERVAL * 1000:
            return
        self.logged[role] = (now, dict(counts))
        what = ", ".join(f"{n} {k}" for k, n in sorted(grown.items()))
        LOG.warning("%s: %s turned away %s (docs/deploy.md, Threat model)", self.process, role_name(role), what)


__all__ = ["LOG_INTERVAL", "Anomalies"]
