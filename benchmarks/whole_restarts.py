"""Whole-deployment kill-and-restart runs (issue 22's goal: zero lost or duplicated deliveries over
at least 20). Each run starts the test harness's deployment (tests/slow/overlay_harness.py: four
servers, three subscribers, one publisher of 400 events at 200 events/s) with its own ZooKeeper,
SIGKILLs every process and ZooKeeper once or twice at random moments, starts it again on the same
run folder each time (what `faidecs overlay up` does), lets it settle and judges the merged run
logs of every incarnation: every property the options keep, each publication once, no relation
delivered twice, the two subscribers of one subscription identical, every publication
acknowledged.

    .venv/bin/python benchmarks/whole_restarts.py [--runs 20] [--seed 0]

Prints one line per run and the count that passed; writes whole_restarts.json."""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "slow"))
from overlay_harness import verified, write_deployment  # noqa: E402
from test_overlay_durability import killed_and_restarted  # noqa: E402

EVENTS = 400


def one_run(seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="faidecs-restarts-"))
    path = write_deployment(folder, EVENTS, rate=200, seed=1000 + seed)
    kills = sorted(rng.sample(range(40, EVENTS - 40), rng.randint(1, 2)))
    started = time.monotonic()
    try:
        run, statuses = killed_and_restarted(path, folder / "run", kills, timeout=120)
        by = verified(run, EVENTS)
        assert by["s1"] == by["s2"] and by["s1"], "s1 and s2 disagree"
        assert statuses["p1"]["unacked"] == 0, "publications never acknowledged"
        delivered = sum(len(v) for v in by.values())
        return {"seed": seed, "kills_at": kills, "ok": True, "deliveries": delivered, "s": time.monotonic() - started}
    except Exception as exc:  # a failed run is a result, with its reason
        return {"seed": seed, "kills_at": kills, "ok": False, "why": f"{type(exc).__name__}: {exc}"[:2000],
                "trace": traceback.format_exc()[-2000:], "folder": str(folder)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    results = []
    for k in range(args.runs):
        r = one_run(args.seed + k)
        results.append(r)
        print(json.dumps({x: v for x, v in r.items() if x != "trace"}), flush=True)
    passed = sum(1 for r in results if r["ok"])
    print(f"{passed} of {args.runs} whole-deployment kill-and-restart runs verified")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "whole_restarts.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
