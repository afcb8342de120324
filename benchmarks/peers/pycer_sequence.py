"""Peer benchmark: a CORE-style sequence query on CORE itself, through its Python bindings ``pycer``.

Runs under the interpreter that has pycer (cp313 wheels only), e.g.::

    /tmp/pycer-venv/bin/python benchmarks/peers/pycer_sequence.py \
        --events seq.jsonl --k 3 --window 100 [--noise-types 4] [--semantics all|first|each]

Standard library + pycer only. Input: JSON lines ``{"type": "T1".."Tk" | "N1".."Nn", "value": int,
"time": int}``, ``time`` being the 0-based position in the stream. Output: one JSON line on stdout
``{"engine", "version", "events", "seconds", "events_per_s", "matches", "notes", ...}``; any failure
exits non-zero with a message on stderr. A watchdog process kills the run (exit status 137, with
a message) past ``--timeout`` seconds (default 300) or past ``--max-rss-gb`` of resident memory
(default 60% of physical memory).

How the engine is driven
------------------------
``pycer.PyOfflineServer`` is CORE's in-process ("offline") mode. Declarations and the query travel
over a ZeroMQ control socket on localhost (the wrapper starts an internal server and client on a
few localhost TCP ports, 6000 and up in the source read), but events are handed to the engine by
direct calls (``send_events``), and the complex events are written by the engine's offline result
handler to C++ ``std::cout``, which the wrapper captures into a string returned by
``get_output()``. ``get_output()`` also shuts the engine down (it joins the worker threads), so the
timed section ("seconds") is ``send_events`` + ``get_output`` ("send_seconds" + "drain_seconds"):
it includes formatting every complex event as text, which is how this mode reports results, and a
fixed shutdown cost of roughly 0.05-0.15 s. Building the ``PyEvent`` objects from the file is
setup and is not timed. Matches are counted in that text, one line per complex event, after the
timer stops. Under ``all`` the text is ~120 bytes per match and is held in memory (13.4 M matches,
k = 5 and W = 100 on 200,000 events: 94 s and 7.5 GB peak RSS on a 2-core machine): prefer
``first``/``each`` or a smaller window when matches explode.

Query (k = 3, W = 100; noise types are declared but not mentioned in the query)::

    SELECT * FROM S WHERE T1 ; T2 ; T3 WITHIN 100 EVENTS

``;`` is CORE's non-contiguous sequencing (skip-till-any-match: other events may occur in between).

Window: ``WITHIN W EVENTS`` is a count-based window over the whole stream (noise events count),
and keeps a complex event iff position(Tk) - position(T1) <= W. Since ``time`` is the stream
position, that is exactly ``Tk.time - T1.time <= W``. (CORE also accepts a window on an
attribute, ``WITHIN W [time]``; in pycer 0.1.6 it was checked to be strict, ``< W``, so the event
window is used.)

Selection strategy: CORE's grammar has ``SELECT ALL|ANY|LAST|MAX|NEXT|STRICT``, default ALL. In
pycer 0.1.6 they all returned the same complex events for this plain sequence of distinct types
(checked on a small stream), so none is written and the default, ALL, applies: every combination
t1 < t2 < ... < tk of events of types T1..Tk within the window is a complex event. What changes
the output is the consumption policy and the enumeration limit, chosen by ``--semantics``:

- ``all`` (default; CORE's own semantics): no ``CONSUME BY`` (= ``CONSUME BY NONE``): every
  match is reported, and nothing is consumed. The count grows like C(W, k-1) / types^(k-1) per
  Tk event (2.9 M for k = 3, W = 100, 7 uniform types, 200,000 events).
- ``first``: ``... CONSUME BY ANY LIMIT 1``: when an event completes at least one match, one
  complex event is reported (``LIMIT 1``, the first one CORE enumerates, which is not necessarily
  the one with the oldest T1), and then all partial matches are discarded (``CONSUME BY ANY``), so
  the next match is built only from events after it. This is the closest CORE has to a
  "first match, then dispose" policy (e.g. faidecs FR + PI, which however keeps the events that
  arrived between the matched ones, so the counts need not be equal).
- ``each``: ``... LIMIT 1``: one complex event per event that completes a match, nothing
  consumed; the engine state is that of ``all``, only the enumeration is cut short.

Match counts were checked against a brute-force count on generated streams (k = 3 and 5, W from
10 to 1000, with and without Tk) for all three modes. CORE's own informational lines ("Logging to
file", "Quill INFO: Allocated a new SPSC queue") go to stderr; stdout carries only the JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from typing import NoReturn

# The watchdog runs in a child process: the engine holds the GIL while it works, so no Python
# thread of ours could act. It kills the benchmark, with a message, when it runs past --timeout or
# its resident memory passes --max-rss-gb, and it removes the work directory whenever the
# benchmark ends without doing so itself (killed, crashed).
_WATCHDOG = """
import os, shutil, signal, sys, time
pid, limit_kb, timeout, workdir = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
deadline = time.monotonic() + timeout
def rss_kb():
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
    except OSError:
        return 0
def kill(message):
    sys.stderr.write("pycer_sequence: error: " + message + "\\n")
    sys.stderr.flush()
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
while os.getppid() == pid:
    rss = rss_kb() if limit_kb > 0 else 0
    if rss > limit_kb > 0:
        kill(
            f"memory use {rss / 2**20:.1f} GiB is above --max-rss-gb {limit_kb / 2**20:.1f}: killed. "
            "CORE keeps every complex event as text until the end of the run; "
            "use --semantics first or each, or a smaller window."
        )
        break
    if time.monotonic() > deadline:
        kill(f"no result after --timeout {timeout:g} s: killed.")
        break
    time.sleep(0.2)
shutil.rmtree(workdir, ignore_errors=True)
"""


def start_watchdog(limit_gb: float, timeout: float, workdir: str) -> subprocess.Popen[bytes]:
    limit_kb = int(limit_gb * 2**20) if limit_gb > 0 and os.path.exists("/proc/self/status") else 0
    args = [sys.executable, "-c", _WATCHDOG, str(os.getpid()), str(limit_kb), str(timeout), workdir]
    return subprocess.Popen(args)


def default_max_rss_gb() -> float:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30 * 0.6, 1)
    except (ValueError, OSError):
        return 0.0


def fail(message: str, code: int = 1) -> NoReturn:
    print(f"pycer_sequence: error: {message}", file=sys.stderr)
    sys.exit(code)


def build_query(k: int, window: int, semantics: str) -> str:
    seq = " ; ".join(f"T{i}" for i in range(1, k + 1))
    query = f"SELECT * FROM S WHERE {seq} WITHIN {window} EVENTS"
    if semantics == "first":
        query += " CONSUME BY ANY LIMIT 1"
    elif semantics == "each":
        query += " LIMIT 1"
    return query


def build_declaration(k: int, noise_types: int) -> str:
    names = [f"T{i}" for i in range(1, k + 1)] + [f"N{i}" for i in range(1, noise_types + 1)]
    events = ",\n".join(f"  EVENT {name} {{ value:int, time:int }}" for name in names)
    # pycer 0.1.6 parses CREATE STREAM (older CORE docs and examples say DECLARE STREAM).
    return "CREATE STREAM S {\n" + events + "\n}"


def read_events(path: str, k: int, noise_types: int) -> list[tuple[str, int, int]]:
    allowed = {f"T{i}" for i in range(1, k + 1)} | {f"N{i}" for i in range(1, noise_types + 1)}
    rows: list[tuple[str, int, int]] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                row = (obj["type"], int(obj["value"]), int(obj["time"]))
            except (ValueError, KeyError, TypeError) as exc:
                fail(f"{path}:{lineno}: bad event line ({exc}): {line.strip()[:200]}")
            if row[0] not in allowed:
                fail(
                    f"{path}:{lineno}: event type {row[0]!r} is not one of T1..T{k}, N1..N{noise_types} "
                    f"(raise --noise-types?)"
                )
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", required=True, help="JSON lines file of events")
    parser.add_argument("--k", type=int, required=True, help="sequence length: T1 ; ... ; Tk")
    parser.add_argument("--window", type=int, required=True, help="W: Tk.time - T1.time <= W (events)")
    parser.add_argument(
        "--noise-types",
        type=int,
        default=None,
        help="number of noise types N1..Nn to declare (default: the highest Ni seen in the file)",
    )
    parser.add_argument(
        "--semantics",
        choices=("all", "first", "each"),
        default="all",
        help="all: every match, no consumption (CORE's default); first: CONSUME BY ANY LIMIT 1 (one "
        "match, then discard all partial matches); each: LIMIT 1 (one match per completing event, "
        "nothing consumed)",
    )
    parser.add_argument(
        "--max-rss-gb",
        type=float,
        default=default_max_rss_gb(),
        help="kill the run, with a message, when its resident memory exceeds this many GiB "
        "(default: 60%% of physical memory; 0: no limit)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="kill the run, with a message, after this many seconds (default: 300)",
    )
    args = parser.parse_args()

    if args.k < 1:
        fail("--k must be >= 1")
    if args.window < 1:
        fail("--window must be >= 1 (CORE rejects an event window below 1)")

    # CORE writes its log files to ./logs; they go to a directory of our own, removed at the end.
    workdir = tempfile.mkdtemp(prefix="pycer-bench-")
    watchdog = start_watchdog(args.max_rss_gb, args.timeout, workdir)

    try:
        import pycer
    except ImportError as exc:
        fail(f"cannot import pycer ({exc}); run this with the interpreter where pycer is installed")
    # pycer's own exception classes (parsing, catalog, client), plus what nanobind raises for C++
    # exceptions it does not map (RuntimeError and friends).
    engine_errors = tuple(
        obj for obj in vars(pycer).values() if isinstance(obj, type) and issubclass(obj, Exception)
    ) + (RuntimeError, ValueError, TypeError, MemoryError)
    try:
        version = metadata.version("pycer")
    except metadata.PackageNotFoundError:
        version = "unknown"

    path = os.path.abspath(args.events)
    if not os.path.isfile(path):
        fail(f"{args.events}: no such file")
    noise_types = args.noise_types
    if noise_types is None:
        # Find the number of noise types from the file itself.
        seen = 0
        with open(path, encoding="utf-8") as f:
            for m in re.finditer(r'"type"\s*:\s*"N(\d+)"', f.read()):
                seen = max(seen, int(m.group(1)))
        noise_types = seen
    rows = read_events(path, args.k, noise_types)
    if not rows:
        fail(f"{path}: no events")
    for i, (_, _, t) in enumerate(rows):
        if t != i:
            # Not fatal for the engine (the event window counts arrivals), but the query's meaning
            # as "Tk.time - T1.time <= W" then no longer holds.
            print(f"pycer_sequence: warning: event {i} has time {t}, not its position", file=sys.stderr)
            break

    declaration = build_declaration(args.k, noise_types)
    query = build_query(args.k, args.window, args.semantics)

    old_cwd = os.getcwd()
    os.chdir(workdir)
    server = None
    stopped = False

    def abort(message: str) -> NoReturn:
        # Shut the engine down first (joins its threads and stops its logger), so that nothing is
        # left writing to the log directory that is removed on the way out.
        nonlocal stopped
        if server is not None and not stopped:
            try:
                server.get_output()
                stopped = True
            except engine_errors:
                pass
        fail(message)

    try:
        try:
            server = pycer.PyOfflineServer()
            stream = server.declare_stream(declaration)
        except engine_errors as exc:
            hint = ""
            if "address already in use" in str(exc).lower():
                hint = (
                    " (PyOfflineServer binds localhost TCP ports, 6000 and up: is another CORE/pycer "
                    "process running? Do not run two of these benchmarks at once.)"
                )
            abort(f"starting the engine or declaring the stream failed: {type(exc).__name__}: {exc}{hint}")
        if stream.id != 0:
            # PyOfflineServer.send_events always sends to stream id 0.
            abort(f"unexpected stream id {stream.id} (PyOfflineServer sends to stream 0)")
        type_ids = {info.name: info.id for info in stream.events_info}
        try:
            server.add_query(query)
        except engine_errors as exc:
            abort(f"adding the query failed: {type(exc).__name__}: {exc}\nquery: {query}")

        IntValue, Event = pycer.PyIntValue, pycer.PyEvent
        events = [Event(type_ids[name], [IntValue(value), IntValue(t)]) for name, value, t in rows]
        del rows

        start = time.perf_counter()
        try:
            server.send_events(events)
            sent = time.perf_counter()
            output = server.get_output()  # shuts the engine down: waits for all pending work
            stopped = True
        except engine_errors as exc:
            abort(f"processing failed: {type(exc).__name__}: {exc}")
        end = time.perf_counter()
        seconds = end - start
    finally:
        os.chdir(old_cwd)
        if stopped or server is None:
            shutil.rmtree(workdir, ignore_errors=True)
        # else the engine may still be writing there: the watchdog removes it once we have exited.

    # One complex event per line: "[start,end], ((id: ... attributes: [...]) ...)". Counted with
    # str.count, not by splitting: under "all" the text can reach gigabytes.
    matches = output.count("], ((")
    lines = output.count("\n") + (1 if output and not output.endswith("\n") else 0)
    blank = output.count("\n\n") + (1 if output.startswith("\n") else 0)
    if lines - blank != matches:
        fail(
            f"unexpected engine output: {lines - blank} non-empty lines but {matches} complex events; "
            f"starts with: {output[:300]!r}"
        )
    watchdog.kill()
    watchdog.wait()

    n = len(events)
    notes = (
        f"in-process PyOfflineServer (control messages over a localhost ZeroMQ socket; events by direct "
        f"call; results captured from std::cout as text, formatting included in seconds); "
        f"query: {query}; selection strategy: default ALL (ALL/ANY/LAST/MAX/NEXT/STRICT give the same "
        f"result on this query in 0.1.6); "
        f"semantics={args.semantics}; window = {args.window} EVENTS (count-based, Tk.pos - T1.pos <= W); "
        f"noise types declared: {noise_types}; output {len(output)} bytes"
    )
    print(
        json.dumps(
            {
                "engine": "pycer",
                "version": version,
                "events": n,
                "seconds": round(seconds, 6),
                "events_per_s": round(n / seconds, 1) if seconds > 0 else None,
                "matches": matches,
                "notes": notes,
                "send_seconds": round(sent - start, 6),
                "drain_seconds": round(end - sent, 6),
                "query": query,
                "semantics": args.semantics,
                "window": args.window,
                "k": args.k,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
