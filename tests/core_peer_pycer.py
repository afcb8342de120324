"""The CORE side of the differential tests (tests/core_peer.py): runs CEQL queries on CORE through
its Python bindings ``pycer``, in the interpreter that has pycer (its wheels need Python 3.13)::

    /tmp/pycer-venv/bin/python tests/core_peer_pycer.py < jobs.json > results.json

Standard library + pycer only; nothing of faidecs. Input (stdin, one JSON object)::

    {"types": {"A": ["pos", "ts", ...], ...},          # every attribute an int
     "jobs": [{"query": "SELECT * FROM S WHERE ...", "events": [["A", [0, 0, ...]], ...]}, ...]}

Output (stdout, one JSON object): ``{"pycer": VERSION, "results": [[[v, ...], ...], ...]}``: for
each job, its complex events in the order CORE reported them, each as the list of the *first*
attribute of its events, in the order CORE lists them (the harness makes the first attribute a
unique event number). Any failure exits non-zero with a message on stderr: status 3 when pycer
cannot be imported, 1 otherwise.

Each job runs on a fresh ``pycer.PyOfflineServer`` (its ``get_output`` shuts the engine down).
The server binds TCP ports 6000 and up on every interface, three per server in one process, so
two processes that use pycer at once collide: a start that fails with "Address already in use" is
retried, which moves on to the next ports. CORE writes logs to ./logs: the jobs run in a
temporary folder, removed at the end."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from importlib import metadata
from typing import Any, NoReturn

# "[start,end], ((id: 0 attributes: [0 5 1 ]) (id: 1 attributes: [1 5 0 ]) )"
_LINE = re.compile(r"\[(-?\d+),(-?\d+)\], \((.*)\)$")
_EVENT = re.compile(r"\(id: (\d+) attributes: \[([^\]]*)\]\)")
_START_TRIES = 20


NO_PYCER = 3  # the exit status when pycer cannot be imported


def fail(message: str, status: int = 1) -> NoReturn:
    print(f"core_peer_pycer: error: {message}", file=sys.stderr)
    sys.exit(status)


def declaration(types: dict[str, list[str]]) -> str:
    events = ",\n".join(
        f"  EVENT {name} {{ " + ", ".join(f"{a}:int" for a in attrs) + " }" for name, attrs in types.items()
    )
    return "CREATE STREAM S {\n" + events + "\n}"


def parse_output(text: str, query: str) -> list[list[int]]:
    out: list[list[int]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _LINE.match(line.strip())
        if m is None:
            fail(f"unexpected line in CORE's output for {query!r}: {line[:300]!r}")
        events = _EVENT.findall(m.group(3))
        if not events:
            fail(f"a complex event without events in CORE's output for {query!r}: {line[:300]!r}")
        out.append([int(values.split()[0]) for _, values in events])
    return out


def run_job(
    pycer: Any, engine_errors: tuple[type[BaseException], ...], types: dict[str, list[str]], job: dict[str, Any]
) -> list[list[int]]:
    server = None
    for _ in range(_START_TRIES):
        try:
            server = pycer.PyOfflineServer()
            break
        except RuntimeError as exc:
            if "address already in use" not in str(exc).lower():
                raise
    if server is None:
        fail(f"PyOfflineServer could not bind its ports in {_START_TRIES} tries (another pycer process running?)")
    query = job["query"]
    try:
        stream = server.declare_stream(declaration(types))
        type_ids = {info.name: info.id for info in stream.events_info}
        server.add_query(query)
        events = []
        for name, values in job["events"]:
            if name not in type_ids or len(values) != len(types[name]):
                fail(f"event {name} {values} does not fit the declared types {types}")
            events.append(pycer.PyEvent(type_ids[name], [pycer.PyIntValue(int(v)) for v in values]))
        server.send_events(events)
    except engine_errors as exc:
        server.get_output()
        fail(f"CORE refused the job: {type(exc).__name__}: {exc}\nquery: {query}")
    return parse_output(server.get_output(), query)


def main() -> None:
    try:
        request = json.load(sys.stdin)
        types: dict[str, list[str]] = request["types"]
        jobs: list[dict[str, Any]] = request["jobs"]
    except (ValueError, KeyError, TypeError) as exc:
        fail(f"bad request on stdin: {exc}")
    try:
        import pycer  # type: ignore[import-not-found]
    except ImportError as exc:
        fail(f"cannot import pycer ({exc}): run this with the interpreter where pycer is installed", NO_PYCER)
    engine_errors = tuple(
        obj for obj in vars(pycer).values() if isinstance(obj, type) and issubclass(obj, Exception)
    ) + (RuntimeError, ValueError, TypeError)
    workdir = tempfile.mkdtemp(prefix="core-peer-")
    old = os.getcwd()
    os.chdir(workdir)
    try:
        results = [run_job(pycer, engine_errors, types, job) for job in jobs]
    finally:
        os.chdir(old)
        shutil.rmtree(workdir, ignore_errors=True)
    json.dump({"pycer": metadata.version("pycer"), "results": results}, sys.stdout)


if __name__ == "__main__":
    main()
