"""The live view in a real browser: a small overlay of OS processes runs, `faidecs dashboard`
serves its run folder, and headless Chromium (Debian's `chromium`, installed by scripts/services)
loads the page twice while events flow. Each load's DOM must draw every merger role with every
replica, one leader per role and each subscriber's deliveries, and must have redrawn itself
(polled the state) more than once; the second load, after a subscriber was killed, must show
larger counts of committed events and publications than the first and that subscriber dead; the screenshot
must be a rendering of the page's size with the graph's colours in it. Once the run is stopped,
the view tells every process that stopped from the one killed."""

from __future__ import annotations

import json
import shutil
import signal
import struct
import subprocess
import sys
import time
import urllib.request
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from overlay_harness import SUBSCRIBERS, write_deployment

from faidecs.merging.roles import role_name
from faidecs.overlay.runtime.launcher import LocalDeployment
from faidecs.overlay.runtime.liveview import LiveView

pytestmark = [pytest.mark.slow, pytest.mark.processes]

WIDTH, HEIGHT = 1320, 700  # the graph of this deployment fits
#: Fills the page gives a leader's row, a subscriber, a root merger's box and a dead process (liveview.html).
LEADER, SUBSCRIBER, ROOT, DEAD = (0xD9, 0xF2, 0xDC), (0xE8, 0xF0, 0xFF), (0xEE, 0xF1, 0xF6), (0xF7, 0xC6, 0xC6)


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("chromium is missing: scripts/services installs it (apt-get install chromium)")
    return found


class Drawn(HTMLParser):
    """The graph's elements as the page drew them: each element's class and data- attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.body: dict[str, str] = {}
        self.items: dict[str, list[dict[str, str]]] = {"role": [], "replica": [], "subscriber": [], "publisher": []}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "body":
            self.body = a
        if tag == "g" and a.get("class") in self.items:
            self.items[a["class"]].append(a)


def load(chromium: str, url: str, screenshot: Path) -> Drawn:
    """Chromium loads the page, runs its script for 4 s of virtual time (polls included), dumps the DOM."""
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={screenshot.parent / 'profile'}",
            f"--window-size={WIDTH},{HEIGHT}",
            "--virtual-time-budget=4000",
            f"--screenshot={screenshot}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    drawn = Drawn()
    drawn.feed(done.stdout)
    return drawn


def png_pixels(path: Path) -> tuple[int, int, set[tuple[int, int, int]]]:
    """Width, height and the set of colours of an 8-bit RGB or RGBA PNG (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, chunks, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(chunks), width * bpp
    previous, colours = bytearray(stride), set()
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        colours.update(zip(line[0::bpp], line[1::bpp], line[2::bpp]))
        previous = line
    return width, height, colours


def state(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url + "state", timeout=10) as answer:
        result: dict[str, Any] = json.loads(answer.read())
        return result


def wait_state(url: str, ready: Any, what: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = state(url)
        if ready(s):
            return s
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}: {json.dumps(s)[:2000]}")


def committed(drawn: Drawn) -> int:
    """The committed events every replica shows."""
    return sum(int(r["data-events"]) for r in drawn.items["replica"])


LIVE = ("up", "stale")


def check_graph(drawn: Drawn, run: LocalDeployment, dead: str | None = None) -> None:
    d = run.deployment
    placement = {role_name(r): [*d.placement(r)] for r in d.roles}
    assert sorted(r["data-role"] for r in drawn.items["role"]) == sorted(placement)
    for role, replicas in placement.items():
        rows = [r for r in drawn.items["replica"] if r["data-role"] == role]
        assert [r["data-process"] for r in rows] == replicas, role
        # Stale would be a process starved for 3 s on a loaded machine: drawn, but not what is tested here.
        assert all(
            r["data-state"] in LIVE and r["data-commit"].isdigit() and r["data-events"].isdigit() for r in rows
        ), rows
        leaders = [r["data-process"] for r in rows if r["data-leader"] == "true"]
        box = next(r for r in drawn.items["role"] if r["data-role"] == role)
        assert leaders == [box["data-leader"]], (role, leaders, box)
    subscribers = {s["data-name"]: s for s in drawn.items["subscriber"]}
    assert sorted(subscribers) == sorted(SUBSCRIBERS)
    assert all(s["data-delivered"].isdigit() for s in subscribers.values())
    for name, s in subscribers.items():
        assert s["data-state"] == "dead" if name == dead else s["data-state"] in LIVE, s
    assert int(drawn.body["data-updates"]) >= 2, "the page did not redraw itself from a later state"


def test_the_live_view_draws_the_running_overlay(tmp_path: Path, zookeeper: str, chromium: str) -> None:
    # Enough events to flow through both loads; the run is stopped once they are done.
    path = write_deployment(tmp_path, 4000, rate=200, servers=2, replicas=2)
    run = LocalDeployment(path, tmp_path / "run", zookeeper=zookeeper)
    dashboard = None
    try:
        run.start()
        dashboard = subprocess.Popen(
            [sys.executable, "-m", "faidecs.cli.main", "dashboard", str(tmp_path / "run"), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert dashboard.stdout is not None
        line = dashboard.stdout.readline()
        assert " at http://127.0.0.1:" in line, line
        url = line.rsplit(" at ", 1)[1].strip()
        wait_state(
            url,
            lambda s: (
                all(r["leader"] for r in s["roles"])
                and all(x["state"] == "up" for r in s["roles"] for x in r["replicas"])
                and all(c["state"] == "up" for c in s["subscribers"])
                and (s["publishers"][0]["published"] or 0) > 0
            ),
            "every role to have a leader and every process to be up",
        )
        first = load(chromium, url, tmp_path / "first.png")
        check_graph(first, run)
        published = int(first.items["publisher"][0]["data-published"])
        run.signal("s3", signal.SIGKILL)  # the page must tell it dead
        wait_state(
            url,
            lambda s: (
                s["publishers"][0]["published"] > published
                and sum(x["events"] or 0 for r in s["roles"] for x in r["replicas"]) > committed(first)
                and next(c for c in s["subscribers"] if c["name"] == "s3")["state"] == "dead"
            ),
            "more publications and committed events than the first load showed, and s3 dead",
        )
        second = load(chromium, url, tmp_path / "second.png")
        check_graph(second, run, dead="s3")
        assert int(second.items["publisher"][0]["data-published"]) > published
        assert committed(second) > committed(first)
        width, height, colours = png_pixels(tmp_path / "second.png")
        assert (width, height) == (WIDTH, HEIGHT)
        assert {LEADER, SUBSCRIBER, ROOT, DEAD} <= colours, "the graph's fills are not in the screenshot"
        assert len(colours) > 20, f"{len(colours)} colours: not a rendering of the graph"
        run.stop()
        # Each process that stopped wrote a final status saying so; the one killed did not.
        after = LiveView(tmp_path / "run").sample()
        states = {x["process"]: x["state"] for r in after["roles"] for x in r["replicas"]}
        states |= {c["name"]: c["state"] for c in after["subscribers"] + after["publishers"]}
        assert states == {n: "dead" if n == "s3" else "stopped" for n in run.deployment.processes()}
    finally:
        if dashboard is not None:
            dashboard.terminate()
            dashboard.wait(timeout=10)
        run.stop()
