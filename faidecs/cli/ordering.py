"""``faidecs ordering simulate``: seeded runs of the seed papers' ordering layers (docs/ordering.md)."""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

from faidecs.errors import FaidecsError


def _layer(name: str, profile: str) -> object:
    from faidecs.ordering.atoms import AtomsLayer
    from faidecs.ordering.multistage import MultistageConfig, MultistageLayer

    if name == "multistage":
        return MultistageLayer(MultistageConfig.literal() if profile == "literal" else MultistageConfig.fixed())
    if profile not in ("line", "compact", "skip"):
        raise FaidecsError(f"the atoms layer's constructions are line, compact and skip, not {profile!r}")
    return AtomsLayer(construction=profile)


def cmd_simulate(args: argparse.Namespace) -> int:
    from faidecs.ordering.generate import random_workload
    from faidecs.ordering.harness import run_layer
    from faidecs.properties import Property, check

    profile = args.profile or ("fixed" if args.layer == "multistage" else "line")
    if args.layer == "multistage" and profile not in ("fixed", "literal"):
        raise FaidecsError(f"the multistage layer's profiles are fixed and literal, not {profile!r}")
    if args.log is not None:
        Path(args.log).mkdir(parents=True, exist_ok=True)
    totals: Counter[str] = Counter()
    for seed in range(args.seed, args.seed + args.runs):
        workload = random_workload(random.Random(seed), events=args.events)
        run = run_layer(_layer(args.layer, profile), workload, seed=seed)  # type: ignore[arg-type]
        report = check(run.log)
        totals["runs"] += 1
        totals["stalled runs"] += bool(run.stalled)
        totals["runs missing owed events"] += bool(run.missing)
        totals["notifications"] += run.notifications
        for name in report.violated():
            totals[f"violated: {name}"] += 1
        if args.log is not None:
            with open(Path(args.log) / f"{args.layer}-{seed}.jsonl", "w", encoding="utf-8") as out:
                run.log.write(out)
    print(json.dumps({"layer": args.layer, "profile": profile, **totals}, indent=2))
    return 1 if totals["stalled runs"] or totals[f"violated: {Property.TOTAL_NOTIFICATION_ORDER}"] else 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ordering = sub.add_parser(
        "ordering", help="the seed papers' ordering layers (multistage sequencer, sequencing atoms)"
    )
    verbs = ordering.add_subparsers(dest="verb", required=True)
    simulate = verbs.add_parser(
        "simulate", help="seeded random runs with joins and leaves, checked by the property checker"
    )
    simulate.add_argument("--layer", choices=("multistage", "atoms"), required=True)
    simulate.add_argument(
        "--profile", help="multistage: fixed (default) or literal; atoms: line (default), compact or skip"
    )
    simulate.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    simulate.add_argument("--runs", type=int, default=100, help="number of runs (default 100)")
    simulate.add_argument("--events", type=int, default=120, help="events per run (default 120)")
    simulate.add_argument("--log", help="write each run's log as FOLDER/LAYER-SEED.jsonl for faidecs verify")
    simulate.set_defaults(func=cmd_simulate)
