"""The worker process that compiles kernels out of the engine's way.

It reads one JSON request per line on stdin (``{"key", "source", "types", "widths", "memo",
"signature", "cache"}``), compiles the kernel with numba into the on-disk cache under the ``cache`` folder
(:mod:`faidecs.matching.kernel_cache`) and answers one JSON line on stdout (``{"key", "ok",
"seconds"}`` or ``{"key", "ok": false, "error"}``). It exits when stdin closes, after the kernel
it is compiling: a CLI run that ends early leaves that kernel in the cache for the next run instead
of throwing the work away.

Run as ``python -m faidecs.matching.kernel_worker``; the engine's broker starts it.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    from faidecs.matching.kernel_cache import load
    from faidecs.matching.kernel_source import KernelSource

    for line in sys.stdin:
        request = json.loads(line)
        try:
            os.environ["FAIDECS_CACHE_DIR"] = request["cache"]
            source = KernelSource(
                request["source"],
                request["key"],
                tuple(request["types"]),
                tuple(request["widths"]),
                (),
                bool(request["memo"]),
                request.get("signature"),
            )
            kernel = load(source)
            answer = {"key": source.key, "ok": True, "seconds": kernel.seconds}
        except Exception as exc:  # noqa: BLE001 - the engine keeps running on the reference matcher: say why
            answer = {"key": request.get("key"), "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
