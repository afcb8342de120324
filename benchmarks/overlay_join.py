"""Joining the overlay: time from subscribe to first delivery with a LoCaPS marker, from a peer's
state, and with today's fresh join (a logged mark at each merger), as the overlay grows deeper.

    .venv/bin/python benchmarks/overlay_join.py [--quick] [--out benchmarks/results]

A deployment of n = 2..6 types T1..Tn (merger chain ⊔[T1,T2] ← ⊔[T1..T3] ← … ← ⊔[T1..Tn]) with a
steady round-robin stream. An existing subscriber P reads ⊔[T1..Tn-k] (conjunction of the first
n-k types; k = 0: the joiner's own merger; n-k = 1: the root [T1]); the joiner J subscribes to
T1 ∧ … ∧ Tn at time `join`. So the nearest merger that covers J is k hops up the chain. Modes:
`marker` (LoCaPS: one replica places a marker at its commit index when it covers J; otherwise J
registers and the climb runs as today), `register` (today's fresh join), `peer` (from P's state;
only for k = 0, where P's subscription is identical). Times are *virtual* milliseconds of the
deterministic simulator (links 1–20 ms, uniformly, seeded): `start` is subscribe → every stream
started (marker or mark received, or the peer's state), `first` subscribe → first delivery.
Writes overlay_join.json and overlay_join.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import machine  # noqa: E402

from faidecs.overlay.sim.scenario import Joiner, Scenario, SimConfig  # noqa: E402
from faidecs.overlay.sim.simulator import simulate  # noqa: E402

OPTIONS = "(matching FR, disposal PI)"


def conjunction(name: str, types: list[str]) -> str:
    return f"subscription {name} {OPTIONS}: " + " and ".join(f"{t}[0]" for t in types)


def one(n: int, k: int, mode: str, seed: int, events: int, every: int, join: int) -> dict[str, Any] | None:
    types = [f"T{i}" for i in range(1, n + 1)]
    source = "".join(f"type {t}(x: int)\n" for t in types)
    publications = [
        (j * every, f"pub{j % 2 + 1}", {"id": f"e{j}", "type": types[j % n], "attrs": {"x": j % 10}})
        for j in range(events)
    ]
    peer = "P" if mode == "peer" else None
    joiner = Joiner("J", conjunction("SJ", types), join, peer=peer, mode="marker" if mode == "marker" else "register")
    scenario = Scenario(source, {"P": conjunction("SP", types[: n - k])}, publications, joiners=[joiner])
    result = simulate(scenario, SimConfig(seed=seed))
    if result.gaps:
        raise AssertionError(f"n={n} k={k} {mode} seed {seed}: {[g.describe() for g in result.gaps]}")
    client = result.clients["J"]
    asked = result.joined_at["J"]
    if client.ready_at is None or "J" not in result.first_delivery_at:
        return None
    return {
        "start": client.ready_at - asked,
        "first": result.first_delivery_at["J"] - asked,
        "at_marker": all(s.how == "marker" for s in client.streams.values()),
        "messages": sum(result.messages.values()),
    }


def grid(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for n in range(2, 7):
        for k in range(0, n):
            for mode in ("marker", "register", "peer"):
                if mode == "peer" and k > 0:
                    continue
                runs = [one(n, k, mode, seed, args.events, args.every, args.join) for seed in range(args.seeds)]
                done = [r for r in runs if r is not None]
                row = {
                    "types": n,
                    "hops": k,
                    "mode": mode,
                    "runs": len(runs),
                    "delivered": len(done),
                    "start_ms": statistics.mean(r["start"] for r in done) if done else None,
                    "first_ms": statistics.mean(r["first"] for r in done) if done else None,
                    "first_max_ms": max(r["first"] for r in done) if done else None,
                    "at_marker": sum(r["at_marker"] for r in done),
                }
                rows.append(row)
                print(
                    f"  n={n} k={k} {mode:8} start {row['start_ms']:7.1f} ms  first delivery {row['first_ms']:7.1f} ms"
                    f"  ({row['at_marker']}/{len(done)} at a marker)"
                )
    return rows


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Joining the overlay: LoCaPS marker vs peer state vs fresh mark",
        "",
        f"Machine: {result['machine']}. Virtual ms of the simulator (links 1–20 ms), mean over "
        f"{result['seeds']} seeds; one event every {result['every']} ms round-robin over the n types; "
        f"the joiner subscribes to T1 ∧ … ∧ Tn at {result['join']} ms; the existing subscriber reads the "
        "merger k hops up the chain (k = 0: the joiner's own merger, identical subscription).",
        "",
        "| n types | k hops | mode | subscribe → start (ms) | subscribe → first delivery (ms) "
        "| max first (ms) | at a marker |",
        "|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        fmt = lambda v: "–" if v is None else f"{v:.1f}"  # noqa: E731
        lines.append(
            f"| {r['types']} | {r['hops']} | {r['mode']} | {fmt(r['start_ms'])} | {fmt(r['first_ms'])} | "
            f"{fmt(r['first_max_ms'])} | {r['at_marker']}/{r['delivered']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer seeds")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args()
    args.seeds = 3 if args.quick else 10
    args.events, args.every, args.join = 200, 5, 300
    result: dict[str, Any] = {"machine": machine(), "seeds": args.seeds, "every": args.every, "join": args.join}
    result["rows"] = grid(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "overlay_join-quick" if args.quick else "overlay_join"
    (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / f"{name}.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
