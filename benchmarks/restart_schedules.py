"""Seeded simulated schedules whose servers restart (issue 22), judged as the seeded-run tests
judge a run (tests/slow/simulated_runs.py): every subscriber stream fed exactly its merger's
committed stream, the deliveries of the embedded engine on it, every property kept. Prints how
many schedules pass and the first problems of those that do not.

    PYTHONPATH=.:tests/slow .venv/bin/python benchmarks/restart_schedules.py [--runs 1000] [--wipes]

Not a test of the suite: some schedules fail (docs/deploy.md, "Durability", known problems)."""

from __future__ import annotations

import argparse
import os
import random
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "slow"))
from simulated_runs import judged  # noqa: E402

from faidecs.overlay.sim.generate import BY_MATCHING, random_restart_deployment  # noqa: E402


def _chunk(job: tuple[range, bool]) -> list[tuple[int, list[str]]]:
    seeds, wipes = job
    out = []
    for seed in seeds:
        combination = BY_MATCHING[seed % len(BY_MATCHING)]
        scenario = random_restart_deployment(random.Random(f"restart:{seed}"), combination, wipes=wipes)
        out.append((seed, judged(scenario, seed, f"{combination}, restarts")[1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--wipes", action="store_true", help="a server also loses its disk")
    args = parser.parse_args()
    jobs = [(range(k, args.runs, 8), args.wipes) for k in range(8)]
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = sorted(r for found in pool.map(_chunk, jobs) for r in found)
    failed = [(seed, problems) for seed, problems in results if problems]
    print(f"{args.runs - len(failed)} of {args.runs} schedules pass ({'with' if args.wipes else 'without'} lost disks)")
    for _, problems in failed:
        print(" ", problems[0][:400])


if __name__ == "__main__":
    main()
