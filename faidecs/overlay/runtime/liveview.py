"""The live view's state: what a run folder says about a running deployment, as one JSON object.

`faidecs dashboard` and `overlay up --web` draw this (``liveview_server.py``). It is built from
what the run folder already holds: ``run.json`` (the deployment file, each process's pid) gives
the merger graph, where each role runs and who reads what; ``status/<p>.json`` gives each
replica's leader, epoch, committed events and commit position, each subscriber's deliveries and each publisher's
publications. Rates are not in the files: :class:`LiveView` keeps each process's recent samples
and divides what a counter gained by the time between the status files' own timestamps.

Nothing a run folder holds may stop the view: a missing folder, a file that cannot be read or
is not a status, a dead process each become a problem or a process state the page shows.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faidecs.errors import FaidecsError
from faidecs.merging.roles import Role, is_root, parents, role_name
from faidecs.overlay.runtime.deployment import Deployment, load_deployment

#: A process writes its status twice a second; one not rewritten for this long is shown stale.
STALE_AFTER_S = 3.0
#: Rates are taken over the samples of about this many seconds.
RATE_WINDOW_S = 5.0

_ROLE = re.compile(r"^(?:\[(?P<root>[^\[\],]+)\]|⊔\[(?P<types>[^\[\]]+)\])$")


def role_from_name(name: str) -> Role | None:
    """The role a status file names (``[A]``, ``⊔[A,B]``), or None if the name is not a role's."""
    m = _ROLE.match(name)
    if m is None:
        return None
    role = (m["root"],) if m["root"] else tuple(m["types"].split(","))
    return role if role_name(role) == name else None


@dataclass(slots=True)
class Sample:
    """What one status file said: its time and the counters rates are taken of."""

    time: float
    counters: dict[str, int]


@dataclass(slots=True)
class _Process:
    status: dict[str, Any] | None = None  # the last status that could be read
    error: str | None = None  # why the file could not be read this time, if it could not
    samples: deque[Sample] = field(default_factory=deque)


def _num(value: Any) -> float | None:
    """A finite number (JSON as Python reads it allows NaN and Infinity; the page's JSON does not)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_status(obj: Any) -> str | None:
    """Why ``obj`` is not a status a process writes, or None if it is one."""
    if not isinstance(obj, dict):
        return "not a JSON object"
    if _num(obj.get("time")) is None:
        return "no finite numeric 'time'"
    mergers = obj.get("mergers", [])
    if not isinstance(mergers, list):
        return "'mergers' is not a list"
    for k, m in enumerate(mergers):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            return f"mergers[{k}] has no 'role'"
        if _int(m.get("commit")) is None or _int(m.get("epoch")) is None:
            return f"mergers[{k}] ({m['role']}): 'commit' and 'epoch' must be integers"
        if "events_committed" in m and _int(m["events_committed"]) is None:
            return f"mergers[{k}] ({m['role']}): 'events_committed' must be an integer"
        if m.get("leader") is not None and not isinstance(m["leader"], str):
            return f"mergers[{k}] ({m['role']}): 'leader' must be a process name or null"
    for key in ("delivered", "published"):
        if key in obj and _int(obj[key]) is None:
            return f"'{key}' is not an integer"
    return None


def _counters(status: dict[str, Any]) -> dict[str, int]:
    out = {f"commit {m['role']}": int(m["commit"]) for m in status.get("mergers", [])}
    out |= {
        f"events {m['role']}": int(m["events_committed"]) for m in status.get("mergers", []) if "events_committed" in m
    }
    for key in ("delivered", "published"):
        if key in status:
            out[key] = int(status[key])
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    return True


class LiveView:
    """Reads a run folder each time :meth:`sample` is called and keeps what rates need."""

    def __init__(
        self,
        run_dir: Path,
        *,
        stale_after: float = STALE_AFTER_S,
        window: float = RATE_WINDOW_S,
        clock: Callable[[], float] = time.time,
        alive: Callable[[int], bool] = _alive,
    ):
        self.run_dir = run_dir
        self.stale_after = stale_after
        self.window = window
        self.clock = clock
        self.alive = alive
        self.processes: dict[str, _Process] = {}
        self.samples = 0
        self._record: dict[str, Any] | None = None  # run.json as last read whole
        self._deployment: tuple[str, Deployment | str] | None = None  # (path, loaded or why not)

    # --- reading --------------------------------------------------------------------------------

    def _read_record(self, problems: list[str]) -> dict[str, Any] | None:
        path = self.run_dir / "run.json"
        try:
            record = json.loads(path.read_text())
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
            self._record = record
        except FileNotFoundError:
            problems.append(f"{path}: missing (not a folder of faidecs overlay up?): no pids, no deployment")
        except (OSError, ValueError) as exc:
            if self._record is None:
                problems.append(f"{path}: cannot read it ({exc})")
        return self._record  # while `up` rewrites it, the last whole one

    def _load_deployment(self, record: dict[str, Any] | None, problems: list[str]) -> Deployment | None:
        path = record.get("deployment") if record else None
        if not isinstance(path, str):
            if record is not None:
                problems.append(f"{self.run_dir / 'run.json'}: names no deployment file")
            return None
        if self._deployment is None or self._deployment[0] != path:
            try:
                deployment = load_deployment(Path(path))
                deployment.roles  # noqa: B018 - reads the program now, so that a bad one is reported here
                loaded: Deployment | str = deployment
            except (FaidecsError, OSError, ValueError) as exc:
                loaded = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self._deployment = (path, loaded)
        loaded = self._deployment[1]
        if isinstance(loaded, str):
            problems.append(f"deployment {path}: {loaded}; the graph shows what the status files name")
            return None
        return loaded

    def _read_statuses(self, problems: list[str]) -> None:
        folder = self.run_dir / "status"
        if not folder.is_dir():
            problems.append(f"{folder}: no such folder (no process has written a status)")
            return
        names = set()
        for f in sorted(folder.glob("*.json")):
            names.add(f.stem)
            proc = self.processes.setdefault(f.stem, _Process())
            try:
                obj = json.loads(f.read_text())
                why = check_status(obj)
            except (OSError, ValueError) as exc:
                obj, why = None, f"cannot read it ({type(exc).__name__}: {exc})"
            if why is not None:
                proc.error = f"{f}: {why}"
                continue
            proc.error = None
            self._add_sample(proc, obj)
        for name in set(self.processes) - names:
            # Removed: `up` removes a status file as it (re)starts the process.
            self.processes[name] = _Process()
        if not names:
            problems.append(f"{folder}: no status files yet")

    def _add_sample(self, proc: _Process, status: dict[str, Any]) -> None:
        sample = Sample(float(status["time"]), _counters(status))
        last = proc.samples[-1] if proc.samples else None
        proc.status = status
        if last is not None and sample.time == last.time:
            return  # not rewritten since
        if last is not None and (
            sample.time < last.time or any(v < last.counters.get(k, v) for k, v in sample.counters.items())
        ):
            proc.samples.clear()  # a new incarnation: its counters started again
        proc.samples.append(sample)
        while len(proc.samples) > 2 and sample.time - proc.samples[1].time >= self.window:
            proc.samples.popleft()

    # --- the state ------------------------------------------------------------------------------

    def _rate(self, proc: _Process, key: str) -> float | None:
        have = [s for s in proc.samples if key in s.counters]
        if len(have) < 2 or have[-1].time <= have[0].time:
            return None
        return round((have[-1].counters[key] - have[0].counters[key]) / (have[-1].time - have[0].time), 1)

    def _process_state(self, name: str, pids: dict[str, Any] | None, now: float) -> dict[str, Any]:
        """``up``, ``stale`` (no rewrite for a while: paused, overloaded or dying), ``stopped``
        (it wrote its final status), ``dead`` (its pid is gone without a final status),
        ``unreadable`` (its file never held a status) or ``missing`` (no status file yet)."""
        proc = self.processes.get(name)
        if proc is None or (proc.status is None and proc.error is None):
            return {"state": "missing", "age_s": None, "error": None}
        if proc.status is None:
            return {"state": "unreadable", "age_s": None, "error": proc.error}
        age = max(0.0, now - float(proc.status["time"]))
        pid = _int((pids or {}).get(name))
        if proc.status.get("stopped"):
            state = "stopped"
        elif pids is not None and (pid is None or not self.alive(pid)):
            state = "dead"
        elif age > self.stale_after:
            state = "stale"
        else:
            state = "up"
        return {"state": state, "age_s": round(age, 1), "error": proc.error}

    def sample(self) -> dict[str, Any]:
        """Read the run folder once more; the state the page draws."""
        self.samples += 1
        problems: list[str] = []
        now = self.clock()
        record = self._read_record(problems)
        deployment = self._load_deployment(record, problems)
        self._read_statuses(problems)
        raw_pids = record.get("pids") if record else None
        pids = raw_pids if isinstance(raw_pids, dict) else None
        states = {name: self._process_state(name, pids, now) for name in self.processes}

        def state_of(name: str) -> dict[str, Any]:
            return states.get(name) or self._process_state(name, pids, now)

        statuses = {n: p.status for n, p in self.processes.items() if p.status is not None}
        if deployment is not None:
            roles = list(deployment.roles)
            placement = {r: list(deployment.placement(r)) for r in roles}
            reads = {
                n: [role_name(r) for r, _, _ in deployment.streams(deployment.subscription(n))]
                for n in deployment.subscribers
            }
            publishers = list(deployment.publishers)
            name = deployment.name
        else:
            placement = {}
            for process, status in sorted(statuses.items()):
                for m in status.get("mergers", []):
                    role = role_from_name(m["role"])
                    if role is None:
                        problems.append(f"{process}: merger role {m['role']!r} is not a role's name")
                        continue
                    placement.setdefault(role, []).append(process)
            roles = sorted(placement, key=lambda r: (len(r), r))
            reads = {n: [] for n, s in statuses.items() if "delivered" in s}
            publishers = sorted(n for n, s in statuses.items() if "published" in s)
            name = None
        out_roles = [self._role(role, placement[role], roles, statuses, state_of) for role in roles]
        subscribers = []
        for sub, read in sorted(reads.items()):
            st = statuses.get(sub, {})
            subscribers.append(
                {
                    "name": sub,
                    "reads": read,
                    "delivered": st.get("delivered"),
                    "rate": self._live_rate(sub, "delivered", state_of(sub)),
                    "started": bool(st.get("started")),
                    **state_of(sub),
                }
            )
        pubs = []
        for pub in publishers:
            st = statuses.get(pub, {})
            pubs.append(
                {
                    "name": pub,
                    "published": st.get("published"),
                    "rate": self._live_rate(pub, "published", state_of(pub)),
                    "done": bool(st.get("done")),
                    **state_of(pub),
                }
            )
        known = {p for r in out_roles for p in (x["process"] for x in r["replicas"])}
        known |= {s["name"] for s in subscribers} | {p["name"] for p in pubs}
        for process, proc in sorted(self.processes.items()):
            if proc.error is not None:
                problems.append(proc.error + ("; showing its last status" if proc.status is not None else ""))
            if deployment is not None and process not in known and proc.status is not None:
                problems.append(f"{process}: has a status file but is not in the deployment")
        return {
            "format": "faidecs.liveview/1",
            "run_dir": str(self.run_dir),
            "deployment": name,
            "time": now,
            "sample": self.samples,
            "stale_after_s": self.stale_after,
            "problems": problems,
            "roles": out_roles,
            "subscribers": subscribers,
            "publishers": pubs,
        }

    def _live_rate(self, process: str, key: str, state: dict[str, Any]) -> float | None:
        proc = self.processes.get(process)
        return self._rate(proc, key) if proc is not None and state["state"] == "up" else None

    def _role(
        self,
        role: Role,
        replicas: list[str],
        roles: list[Role],
        statuses: dict[str, dict[str, Any]],
        state_of: Callable[[str], dict[str, Any]],
    ) -> dict[str, Any]:
        name = role_name(role)
        rows = []
        for process in replicas:
            m = next((x for x in statuses.get(process, {}).get("mergers", []) if x["role"] == name), None)
            state = state_of(process)
            rows.append(
                {
                    "process": process,
                    "hosted": m is not None,  # its status names a replica of this role
                    "leader": m["leader"] if m else None,
                    "epoch": m["epoch"] if m else None,
                    "status": m.get("status") if m and isinstance(m.get("status"), str) else None,
                    "events": m.get("events_committed") if m else None,
                    "commit": m["commit"] if m else None,
                    "buffered": _int(m.get("buffered")) if m else None,
                    # Committed events per second; the commit position also counts marks and
                    # heartbeats, so it is the rate only of a status that has no events count.
                    "rate": self._live_rate(
                        process, f"events {name}" if m and "events_committed" in m else f"commit {name}", state
                    ),
                    **state,
                }
            )
        # The leader of the highest epoch a replica that is up reports (any replica's if none is up).
        views = [(r["epoch"], r["leader"]) for r in rows if r["leader"] and r["state"] == "up"]
        views = views or [(r["epoch"], r["leader"]) for r in rows if r["leader"]]
        leader = max(views, default=None)
        for r in rows:
            r["is_leader"] = leader is not None and r["process"] == leader[1]
        inputs = [] if is_root(role) else [role_name(p) for p in parents(role)]
        return {
            "role": name,
            "root": is_root(role),
            "inputs": [i for i in inputs if role_from_name(i) in roles],
            "leader": {"process": leader[1], "epoch": leader[0]} if leader else None,
            "replicas": rows,
        }


__all__ = ["RATE_WINDOW_S", "STALE_AFTER_S", "LiveView", "Sample", "check_status", "role_from_name"]
