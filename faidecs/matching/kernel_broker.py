"""Kernels compiled out of the way of the events.

Compiling a kernel with numba takes seconds; an engine must answer from its first event. The
broker takes requests for kernels, has a worker process (:mod:`faidecs.matching.kernel_worker`)
compile them into the on-disk cache, on another core, and the engine's own thread loads each one
from that cache (milliseconds) when it next asks for it. A conjunction waiting for its kernel runs
on the reference matcher meanwhile and swaps the kernel in between two events
(:class:`~faidecs.matching.tiered_state.TieredState`). The loads are not left to the broker's
background thread: the engine's matching loop starves that thread of the GIL, and a kernel in
the cache then came seconds late.

Requests are kept weakly: a kernel whose conjunctions were all unsubscribed (or whose engine was
dropped) before its turn is never compiled. One broker serves the whole process; the worker
starts on the first request that the disk cache cannot answer and exits when the process does.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import subprocess
import sys
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from faidecs.matching import kernel_cache
from faidecs.matching.kernel_cache import CompiledKernel
from faidecs.matching.kernel_source import KernelSource

_log = logging.getLogger("faidecs.kernels")


class KernelHandle:
    """A requested kernel: ``kernel`` is None until it is loaded; ``error`` says why it never
    will be (the conjunction then stays on the reference matcher)."""

    __slots__ = ("__weakref__", "_kernel", "_on_disk", "done", "error", "source")

    def __init__(self, source: KernelSource, kernel: CompiledKernel | None = None):
        self.source = source
        self._kernel = kernel
        self._on_disk = False  # the worker put it in the disk cache: the first reader loads it
        self.error: str | None = None
        self.done = threading.Event()
        if kernel is not None:
            self.done.set()

    @property
    def kernel(self) -> CompiledKernel | None:
        """The kernel, loaded from the disk cache by the first caller that asks once it is there
        (the engine's thread, between two events)."""
        if self._kernel is None and self._on_disk:
            self._on_disk = False
            try:
                self._kernel = kernel_cache.load(self.source)
            except Exception as exc:  # noqa: BLE001 - recorded on the handle, the engine goes on
                self.error = _failed(self.source, exc)
        return self._kernel

    def _finish(self, kernel: CompiledKernel | None, error: str | None = None) -> None:
        self._kernel, self.error = kernel, error
        self.done.set()

    def _in_cache(self) -> None:
        self._on_disk = True  # before done: whoever sees done finds the kernel to load
        self.done.set()


class KernelBroker:
    def __init__(self) -> None:
        self._pid = os.getpid()
        self._requests: queue.SimpleQueue[weakref.ref[KernelHandle]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._worker: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def request(self, source: KernelSource) -> KernelHandle:
        """A handle for ``source``'s kernel, ready at once if this process holds it already or the
        disk cache has it (loaded here, then)."""
        kernel = kernel_cache.loaded(source.key)
        if kernel is not None:
            return KernelHandle(source, kernel)
        if kernel_cache.on_disk(source):
            # In the disk cache: loading it here takes milliseconds (and numba's import, once per
            # process). Loaded on the background thread instead, it competes for the GIL with
            # the events' matching, which starves it: a fast input then ran a million-event file
            # through the reference matcher for seconds (docs/performance.md, faidecs compare).
            try:
                return KernelHandle(source, kernel_cache.load(source))
            except Exception:  # noqa: BLE001 - the background path below retries, and logs why
                pass
        handle = KernelHandle(source)
        self._requests.put(weakref.ref(handle))
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="faidecs-kernels", daemon=True)
                self._thread.start()
        return handle

    # --- the background thread ---------------------------------------------------------------

    def _serve(self) -> None:
        while True:
            handle = self._requests.get()()
            if handle is None:
                continue  # nobody waits for it any more
            source = handle.source
            try:
                held = kernel_cache.loaded(source.key)
                if held is not None:
                    handle._finish(held)
                    continue
                if not kernel_cache.on_disk(source):
                    self._compile_in_worker(source)
                if kernel_cache.on_disk(source):
                    handle._in_cache()
                else:  # the worker failed: compile here, slower for the events but never wrong
                    handle._finish(kernel_cache.load(source))
            except Exception as exc:  # noqa: BLE001 - recorded on the handle, the engine goes on
                # Logged before the handle finishes: whoever waits on it then finds the log written.
                handle._finish(None, _failed(source, exc))
            finally:
                del handle

    def _compile_in_worker(self, source: KernelSource) -> None:
        """Have the worker fill the disk cache; on any failure of the worker, the caller's load
        compiles in this process instead (slower for the events, but never wrong)."""
        worker = self._worker
        if worker is None or worker.poll() is not None:
            worker = self._worker = _start_worker()
        assert worker.stdin is not None and worker.stdout is not None
        request = {
            "key": source.key,
            "source": source.source,
            "types": list(source.types),
            "widths": list(source.widths),
            "memo": source.memo,
            "signature": source.signature,
            # The folder as this process sees it now: the worker may have been started with another.
            "cache": str(kernel_cache.cache_root()),
        }
        try:
            worker.stdin.write(json.dumps(request) + "\n")
            worker.stdin.flush()
            answer = _read_answer(worker.stdout)
        except OSError:
            answer = None
        if answer is None:
            self._worker = None


def _failed(source: KernelSource, exc: Exception) -> str:
    """Log why ``source``'s kernel cannot run, and return it (for the handle)."""
    error = f"{type(exc).__name__}: {exc}"
    _log.warning(
        "kernel %s (%s) could not be compiled: %s; its conjunctions stay on the reference matcher",
        source.key,
        source.source.splitlines()[1].lstrip("# "),
        error,
    )
    return error


def _read_answer(stream: IO[str]) -> dict[str, object] | None:
    line = stream.readline()
    return json.loads(line) if line else None


def _start_worker() -> subprocess.Popen[str]:
    env = dict(os.environ)
    # The worker must import this very faidecs, wherever it was imported from.
    home = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (home, env.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "faidecs.matching.kernel_worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )


_broker: KernelBroker | None = None
_broker_lock = threading.Lock()


def broker() -> KernelBroker:
    """This process's broker (a fresh one in a forked child: threads do not survive a fork)."""
    global _broker
    with _broker_lock:
        if _broker is None or _broker._pid != os.getpid():
            _broker = KernelBroker()
        return _broker


def wait(handles: Iterable[KernelHandle], timeout: float | None = None) -> bool:
    """Wait until every handle is done; True if all are, within ``timeout`` seconds overall."""
    import time

    deadline = None if timeout is None else time.monotonic() + timeout
    for handle in handles:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not handle.done.wait(left):
            return False
    return True
