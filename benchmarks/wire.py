"""Encoding and decoding one overlay message through the public ``wire.encode``/``wire.decode``.

Prints microseconds per call (best of several rounds) for a Publish, a Forward and a Decide. With
``--baseline REF`` it also times the wire module as it is at git revision ``REF`` (imported from a
temporary copy of that revision's module), in the same process and run, and prints the ratios.

Then what a deployment's process pays per received message on top of ``decode``: the screen of the
kind and size before decoding, decoding against the deployment's roles and types
(``wire.Declared``), and the check against the sender's role (``OverlayCodec.refuse``), each
message from a sender allowed to send it.

    PYTHONPATH=$PWD python benchmarks/wire.py --baseline main
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from faidecs.grammar import compile_program
from faidecs.matching.events import EventValidator
from faidecs.merging.filters import Filter
from faidecs.merging.roles import merger_roles
from faidecs.overlay.core.authority import Authority, Roster
from faidecs.overlay.core.keys import stream_filter
from faidecs.overlay.core.messages import Decide, Decision, Forward, Message, Publish
from faidecs.overlay.runtime import wire
from faidecs.overlay.runtime.codec import OverlayCodec

PROGRAM = compile_program(
    "type A(x: int, y: float, s: str, b: bool)\ntype B(z: int)\n"
    "subscription S: A.x > 3 and A.y * 2 < -A.x + 1 and B.z = A.x\n"
)
EVENT = EventValidator(PROGRAM.types).validate(
    {"id": "e-000001", "type": "A", "attrs": {"x": 5, "y": 1.5, "s": "hello", "b": True}, "publisher": "p1", "seq": 7}
)
FILTER = Filter.of(PROGRAM.subscriptions[0].conjunctions[0])
MESSAGES: dict[str, Message] = {
    "Publish": Publish("p1", 7, EVENT),
    "Forward": Forward(("A",), 12, 40, "event", EVENT, "c"),
    "Decide": Decide(("A", "B"), 3, (Decision(9, 3, 12, "mark", "", -1, "k", "s1", FILTER),), 8),
}


def per_call_us(fn: Callable[[], Any], number: int = 20_000, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def measure(module: Any) -> dict[tuple[str, str], float]:
    out = {}
    for name, msg in MESSAGES.items():
        data = module.encode(msg)
        assert module.decode(data) == msg
        out[name, "encode"] = per_call_us(lambda: module.encode(msg))  # noqa: B023
        out[name, "decode"] = per_call_us(lambda: module.decode(data))  # noqa: B023
    return out


#: Who receives each message from whom in :func:`measure_gate`: a root replica a publication, a
#: subscriber its stream, a replica its leader's decision.
ROUTES = {"Publish": ("p1", "m1"), "Forward": ("m1", "s1"), "Decide": ("m2", "m1")}


def measure_gate() -> dict[str, tuple[float, float, float]]:
    """Per message: plain ``decode``, ``Declared.decode``, and the whole gate (screen, declared
    decode, refuse), in microseconds."""
    roles = merger_roles(PROGRAM.types, PROGRAM.subscriptions)
    sub = PROGRAM.subscriptions[0]
    roster = Roster(
        publishers=frozenset({"p1"}),
        placement={role: ("m1", "m2", "m3") for role in roles},
        streams={"s1": {("A",): ("c", stream_filter(sub))}},
        joins_from={"s1": None},
        root=lambda t: (t,),
    )
    declared = wire.Declared(PROGRAM.types, roles)
    out = {}
    for name, msg in MESSAGES.items():
        sender, receiver = ROUTES[name]
        codec = OverlayCodec(Authority(receiver, roster), declared)
        data = wire.encode(msg)
        assert codec.screen(sender, data) is None and codec.refuse(sender, codec.decode(data)) is None, name

        def gate(codec: OverlayCodec = codec, data: bytes = data, sender: str = sender) -> Any:
            if codec.screen(sender, data) is None:
                return codec.refuse(sender, codec.decode(data))
            return None

        out[name] = (
            per_call_us(lambda: wire.decode(data)),  # noqa: B023
            per_call_us(lambda: declared.decode(data)),  # noqa: B023
            per_call_us(gate),
        )
    return out


def load_revision(ref: str) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{ref}:faidecs/overlay/runtime/wire.py"], check=True, capture_output=True, text=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "wire_baseline.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("wire_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["wire_baseline"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", metavar="REF", help="also time the wire module of this git revision")
    args = parser.parse_args()
    rows = [("current", wire)]
    if args.baseline:
        rows.insert(0, (args.baseline, load_revision(args.baseline)))
    results = {label: measure(module) for label, module in rows}
    print(
        f"{'message':10} {'op':7} "
        + " ".join(f"{label:>12}" for label, _ in rows)
        + ("   ratio" if args.baseline else "")
    )
    for key in results["current"]:
        figures = [results[label][key] for label, _ in rows]
        line = f"{key[0]:10} {key[1]:7} " + " ".join(f"{f:10.2f}us" for f in figures)
        if args.baseline:
            line += f"   {figures[1] / figures[0]:5.2f}x"
        print(line)
    print(f"\n{'message':10} {'decode':>10} {'declared':>10} {'gate':>10}   gate/decode")
    for name, (plain, declared, gate) in measure_gate().items():
        print(f"{name:10} {plain:8.2f}us {declared:8.2f}us {gate:8.2f}us   {gate / plain:5.2f}x")


if __name__ == "__main__":
    main()
