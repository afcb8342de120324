"""Issue 20, "Huge programs": the time to build an engine, and to run ``faidecs check``, against the
number of subscriptions, measured as a user would see it: each figure from a fresh process that
imports the tree under test and calls the public API (``faidecs.compile_program``, then
``faidecs.Engine(program, matcher="reference")``), or runs ``python -m faidecs check``.

    .venv/bin/python benchmarks/build.py [--sizes 1000,4000,10000] [--shapes esper,mixed]
        [--baseline-rev REV] [--check-size 10000]

Shapes: ``esper`` (one subscription per symbol, equality on the symbol: every conjunction in the
filter index's hash tables) and ``mixed`` (seeded random conjunctions of 1-3 instances over three
types: equalities, ranges, ``!=``, arithmetic, second conjunctions, all option combinations; some
conjunctions land in the index's residual lists). ``--baseline-rev`` measures the tree at that git
revision too (extracted with ``git archive`` to a temporary directory), in the same run. The
figures of the issue (at its filing: 1,000 subscriptions 0.85 s, 4,000 37.6 s, 10,000 more than
300 s, program not stated) are printed above the table. Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
ISSUE_FIGURES = {1000: "0.85", 4000: "37.6", 10000: "> 300"}

TYPES = (
    "type Quote(symbol: str, price: float)\n"
    "type Trade(symbol: str, price: float, size: int)\n"
    "type News(symbol: str, score: int, hot: bool)\n"
)

# Run in the fresh process: the tree under test is first on sys.path.
WORKER = """
import json, sys, time
t0 = time.perf_counter()
from faidecs import Engine, compile_program
t1 = time.perf_counter()
text = open(sys.argv[1], encoding="utf-8").read()
program = compile_program(text, sys.argv[1])
t2 = time.perf_counter()
engine = Engine(program, matcher="reference")
t3 = time.perf_counter()
assert len(engine.subscriptions) == len(program.subscriptions)
print(json.dumps({"import": t1 - t0, "compile": t2 - t1, "engine": t3 - t2}))
"""


def esper_program(n: int) -> str:
    subs = (
        f'subscription S{k}: Quote.symbol = "S{k}" and Trade.symbol = "S{k}" and Trade.price > Quote.price'
        for k in range(n)
    )
    return TYPES + "\n".join(subs) + "\n"


def _conjunction(rng: random.Random) -> str:
    k = rng.randrange(1000)
    return rng.choice(
        [
            f'Quote.symbol = "S{k}" and Trade.symbol = Quote.symbol and Trade.size > {k}',
            f"Trade.size >= {k} and Trade.price < {k}.5",
            f"Trade.size != {k} and News",
            f"News.score = {k} and News.hot = true and Quote[1].price > Quote[0].price * 1.01",
            f'Trade.price - Quote.price > {k % 7}.25 and Quote.symbol = "S{k}"',
            f"News.score < Trade.size + {k} and Trade[1].size = {k}",
        ]
    )


def mixed_program(n: int, seed: int = 20) -> str:
    rng = random.Random(seed)
    lines = []
    for k in range(n):
        body = " or ".join(f"({_conjunction(rng)})" for _ in range(2 if rng.random() < 0.2 else 1))
        options = ""
        if rng.random() < 0.7:
            options = (
                f" (matching {rng.choice(['FR', 'MR', 'FRC', 'MRC'])}, disposal {rng.choice(['I', 'PI', 'IP', 'FP'])})"
            )
        lines.append(f"subscription S{k}{options}: {body}")
    return TYPES + "\n".join(lines) + "\n"


SHAPES = {"esper": esper_program, "mixed": mixed_program}


def build(tree: Path, program: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", WORKER, str(program)],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout))


def check(tree: Path, program: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "faidecs", "check", str(program)],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def extract(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(TREE), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,4000,10000")
    parser.add_argument("--shapes", default="esper,mixed")
    parser.add_argument("--baseline-rev", default=None, help="also measure the tree at this git revision")
    parser.add_argument("--check-size", type=int, default=10000)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    shapes = args.shapes.split(",")
    work = Path(tempfile.mkdtemp(prefix="faidecs-build-"))
    trees = {"this tree": TREE}
    if args.baseline_rev:
        trees[f"baseline {args.baseline_rev}"] = extract(
            args.baseline_rev, Path(tempfile.mkdtemp(prefix="faidecs-base-"))
        )
    files = {}
    for shape in shapes:
        for n in sorted({*sizes, args.check_size}):
            path = files[shape, n] = work / f"{shape}-{n}.fdc"
            path.write_text(SHAPES[shape](n), encoding="utf-8")

    print(f"Machine: {cpu()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}; matcher reference\n")
    print(
        "The issue's figures, program shape not stated: " + ", ".join(f"{n:,}: {s} s" for n, s in ISSUE_FIGURES.items())
    )
    print()
    print("| tree | shape | subscriptions | compile s | engine s | build s | ms per subscription |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, tree in trees.items():
        for shape in shapes:
            for n in sizes:
                r = build(tree, files[shape, n])
                total = r["compile"] + r["engine"]
                print(
                    f"| {name} | {shape} | {n:,} | {r['compile']:.2f} | {r['engine']:.2f} | {total:.2f} | "
                    f"{1000 * total / n:.3f} |",
                    flush=True,
                )
    print(f"\n`faidecs check` of {args.check_size:,} subscriptions (wall time of the process, start-up included):\n")
    print("| tree | shape | seconds |")
    print("|---|---|---:|")
    for name, tree in trees.items():
        for shape in shapes:
            print(f"| {name} | {shape} | {check(tree, files[shape, args.check_size]):.2f} |", flush=True)


if __name__ == "__main__":
    main()
