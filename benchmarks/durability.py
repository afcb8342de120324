"""What durability costs (issue 22): throughput of one 3-replica root merger with its replicas'
logs in memory only, on disk with group commit, and on disk with an fsync per pass; and the
time a replica takes to recover a log of a million entries.

    .venv/bin/python benchmarks/durability.py [--events 20000] [--rounds 2] [--entries 1000000]

Throughput: a real deployment on loopback (as benchmarks/deploy.py measures it: one unthrottled
publisher, one subscriber to ``A``, events per second from the first publication until the last
event reached the subscriber's engine), ``[durability] sync`` = ``off``, ``group`` and ``always``
alternating, ``--rounds`` runs each. The run folders are on the machine's temporary folder.

Recovery: ``--entries`` decisions of publications, with their events, written by the runtime's
ReplicaJournal in batches of 128 (as a replica under load writes them), then the time to open the
journal (read, check, decode and fold every record) and hand the state to a new replica: what a
restarted server does before it starts. Writes durability.json and durability.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deploy import PROGRAM, events  # noqa: E402
from deployed import measure, scratch, write_deployment  # noqa: E402
from run import machine  # noqa: E402

from faidecs.grammar import compile_program  # noqa: E402
from faidecs.matching.events import EventValidator  # noqa: E402
from faidecs.net.zkserver import ZooKeeperServer  # noqa: E402
from faidecs.overlay.core.journal import JournalDelta  # noqa: E402
from faidecs.overlay.core.messages import Decision  # noqa: E402
from faidecs.overlay.core.replica import MergerReplica  # noqa: E402
from faidecs.overlay.runtime import wire  # noqa: E402
from faidecs.overlay.runtime.deployment import Durability  # noqa: E402
from faidecs.overlay.runtime.replica_journal import ReplicaJournal  # noqa: E402

MODES: dict[str, dict[str, Any]] = {
    "off": {"sync": "off"},
    "group": {"sync": "group", "group_ms": 5},
    "always": {"sync": "always"},
}


def recovery(entries: int, behind: int | None) -> dict[str, Any]:
    """``behind``: the consumers acknowledged all but the last this many positions, so the
    replica had dropped the payloads before them (a replica under steady load); None: nothing
    acknowledged, every payload still held (the worst case)."""
    types = dict(compile_program("type A(x: int)\n").types)
    role = ("A",)
    decoder = wire.Declared(types, [role])
    validator = EventValidator(types)
    folder = Path(tempfile.mkdtemp(prefix="faidecs-journal-"))
    journal, _, _ = ReplicaJournal.open(folder, role, Durability(sync="group"), decoder)
    started = time.perf_counter()
    for start in range(0, entries, 128):
        batch = range(start, min(entries, start + 128))
        inputs = [
            (
                "p1",
                k,
                validator.validate({"id": f"e{k}", "type": "A", "attrs": {"x": k % 1000}, "publisher": "p1", "seq": k}),
                k - 1,
            )
            for k in batch
        ]
        decisions = [Decision(k, 1, k, "event", "p1", k) for k in batch]
        trimmed = -1 if behind is None else max(-1, batch.stop - 1 - behind)
        journal.write(JournalDelta(1, None, decisions, inputs, {}, trimmed))
        journal.commit()
    journal.commit(force=True)
    journal.close()
    written = time.perf_counter() - started
    size = sum(p.stat().st_size for p in folder.glob("*.seg"))
    started = time.perf_counter()
    journal, state, _ = ReplicaJournal.open(folder, role, Durability(), decoder)
    opened = time.perf_counter() - started
    assert state is not None and len(state.decisions) == entries
    replica = MergerReplica(role, "m1", lambda r: ("m1", "m2", "m3"), durable=True, lossy_inputs=True)
    replica.restore(state)
    recovered = time.perf_counter() - started
    journal.close()
    return {
        "entries": entries,
        "held": entries if behind is None else min(entries, behind),
        "bytes": size,
        "write_s": round(written, 2),
        "open_s": round(opened, 2),
        "recover_s": round(recovered, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--port", type=int, default=19100)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--skip-deployments", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": machine(), "rounds": args.rounds, "events": args.events}
    result["recovery"] = recovery(args.entries, 2000)
    print("recovery", json.dumps(result["recovery"]), flush=True)
    result["recovery_worst"] = recovery(args.entries, None)
    print("recovery, nothing acknowledged", json.dumps(result["recovery_worst"]), flush=True)
    if not args.skip_deployments:
        runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
        with ZooKeeperServer() as zk:
            port = args.port
            for _ in range(args.rounds):
                for mode, durability in MODES.items():
                    port += 200
                    folder = scratch()
                    path = write_deployment(
                        folder, PROGRAM, events(args.events, "A"), {"s1": "OneA"}, port=port, durability=durability
                    )
                    runs[mode].append(measure(zk.address, path, expect_fed=args.events))
                    print(mode, runs[mode][-1]["events_per_s"], flush=True)
        result["throughput"] = runs
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "durability.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "durability.md").write_text(markdown(result))
    print(markdown(result))


def markdown(r: dict[str, Any]) -> str:
    m = r["machine"]
    lines = [f"Durability on {m['cpu']} ({m['cores']} cores)\n"]
    if "throughput" in r:
        t = r["throughput"]
        best = {mode: max(x["events_per_s"] for x in runs) for mode, runs in t.items()}
        lines += ["| sync | events/s through one root merger (each run) | best / off |", "|---|---|---|"]
        for mode, runs in t.items():
            each = " / ".join(f"{x['events_per_s']:,}" for x in runs)
            lines.append(f"| {mode} | {each} | {best[mode] / max(1, best['off']):.2f}× |")
        lines.append("")
    for key in ("recovery", "recovery_worst"):
        rec = r[key]
        lines.append(
            f"Recovery of {rec['entries']:,} entries ({rec['bytes'] / 1e6:.0f} MB on disk), payloads of the last "
            f"{rec['held']:,} held: open and fold {rec['open_s']} s, with the replica restored {rec['recover_s']} s "
            f"(written in {rec['write_s']} s)"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
