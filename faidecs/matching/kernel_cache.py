"""Compile generated kernels once per process and once per machine.

A kernel's source is written to a module file named by its hash in the cache folder and imported
from there, so numba's own on-disk cache (``cache=True``) applies: a conjunction compiled by an
earlier process loads its machine code instead of compiling again. Within a process, kernels are
kept by hash while some conjunction uses them, so every engine and subscription with the same
conjunction shape shares one, and a shape no subscription uses any more is released.

The folder is ``$FAIDECS_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/faidecs`` (``~/.cache/faidecs``).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faidecs.matching.kernel_source import KERNEL_VERSION, KernelSource


@dataclass(frozen=True)
class CompiledKernel:
    source: KernelSource
    run: Callable[..., int]  # the dispatcher: checks its arguments' types
    entry: Callable[..., int]  # the compiled entry point: for arguments known to have the signature's types
    seconds: float  # time spent loading or compiling it in this process


# Weak: a kernel no conjunction state holds any more is released (with its module, below).
_kernels: weakref.WeakValueDictionary[str, CompiledKernel] = weakref.WeakValueDictionary()
_lock = threading.Lock()


def cache_root() -> Path:
    """``$FAIDECS_CACHE_DIR``, else ``$XDG_CACHE_HOME/faidecs`` (``~/.cache/faidecs``)."""
    root = os.environ.get("FAIDECS_CACHE_DIR")
    return Path(root) if root else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "faidecs"


def cache_dir() -> Path:
    import numba

    version = f"kernels-v{KERNEL_VERSION}-numba{numba.__version__}-py{sys.version_info[0]}{sys.version_info[1]}"
    return cache_root() / version


def _signature(m: int) -> str:
    table = "int64[:, ::1]"
    queues = ", ".join([table] * m)
    events = "int64[::1], int64[::1], int64[::1], int64[::1], int64"  # type, row, arrival, tick, start
    return f"int64(int64[::1], int64[::1], {queues}, {events}, {queues}, {table}, {table})"


def _write_once(path: Path, text: str) -> None:
    """Write the module unless an identical one is there: rewriting would change its time stamp
    and make numba discard the machine code cached for it. Atomic, for concurrent processes."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def loaded(key: str) -> CompiledKernel | None:
    """The kernel of this key if this process holds it already."""
    return _kernels.get(key)


def module_path(source: KernelSource) -> Path:
    return cache_dir() / f"faidecs_kernel_{source.key}.py"


def on_disk(source: KernelSource) -> bool:
    """Whether numba's cache holds machine code for this kernel (loading it takes milliseconds,
    compiling it seconds). Only a hint: an entry for another machine recompiles."""
    path = module_path(source)
    return path.exists() and any((path.parent / "__pycache__").glob(f"{path.stem}.kernel-*.nbi"))


def load(source: KernelSource) -> CompiledKernel:
    """The compiled kernel for ``source``: from this process, from disk, or compiled now."""
    with _lock:
        kernel = _kernels.get(source.key)
        if kernel is not None:
            return kernel
        started = time.perf_counter()
        name = f"faidecs_kernel_{source.key}"
        path = module_path(source)
        _write_once(path, source.source)
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        # numba's cache unpickles references to the module's functions by module name.
        sys.modules[name] = module
        spec.loader.exec_module(module)
        dispatcher: Any = module.kernel
        dispatcher.compile(source.signature or _signature(len(source.types)))
        dispatcher.disable_compile()  # any other argument types would be a bug: fail loudly
        (compiled,) = dispatcher.overloads.values()
        kernel = CompiledKernel(source, dispatcher, compiled.entry_point, time.perf_counter() - started)
        _kernels[source.key] = kernel
        weakref.finalize(kernel, sys.modules.pop, name, None)
        return kernel
