"""Fuzzing the decoders of bytes from the network: whatever a peer sends, the overlay's and the
ordering layers' decoders raise their own error (a counted rejection) or return a message, and
never anything else: no RecursionError, MemoryError, TypeError or hang that would cost a process.

Two kinds of input: Hypothesis's (arbitrary bytes, and arbitrary msgpack values under a valid
head), and a seeded mutation corpus: every example message of both wire formats, encoded, then
bit-flipped, cut, stretched, spliced and re-headed a few thousand times each run. The corpus
reaches deep into valid frames, where random bytes rarely get past the head."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_ordering_wire import CODEC as ORDERING
from test_ordering_wire import MESSAGES as ORDERING_MESSAGES
from test_overlay_wire import EXAMPLES, PROGRAM

from faidecs.merging.roles import merger_roles
from faidecs.ordering.wire import Envelope, OrderingWireError
from faidecs.overlay.core.authority import Authority, Roster
from faidecs.overlay.runtime import wire
from faidecs.overlay.runtime.codec import OverlayCodec
from faidecs.overlay.runtime.wire import WireError

DECLARED = wire.Declared(PROGRAM.types, merger_roles(PROGRAM.types, PROGRAM.subscriptions))
ROSTER = Roster(frozenset({"p"}), {role: ("m1", "m2") for role in DECLARED.roles}, {}, {}, lambda t: (t,))
SCREENED = OverlayCodec(Authority("m1", ROSTER), DECLARED)

Decoder = Callable[[bytes], Any]
DECODERS: dict[str, tuple[Decoder, type[Exception]]] = {
    "overlay": (wire.decode, WireError),
    "declared": (DECLARED.decode, WireError),
    "ordering": (ORDERING.decode, OrderingWireError),
}


def _take(decode: Decoder, error: type[Exception], data: bytes) -> None:
    """``decode(data)``: a message or ``error``, nothing else."""
    try:
        decode(data)
    except error:
        pass


def _screen_and_take(data: bytes) -> None:
    for sender in ("p", "m2", "stranger"):
        if SCREENED.screen(sender, data) is None:
            _take(SCREENED.decode, WireError, data)


# --- Hypothesis ------------------------------------------------------------------------------------

msgpack_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(max_size=20) | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=6)
        | st.dictionaries(st.text(max_size=8) | st.integers(-(2**63), 2**64 - 1), inner, max_size=4)
    ),
    max_leaves=40,
)
heads = st.sampled_from(sorted(wire.CODES.values())).map(lambda code: [wire.VERSION, code])


@given(st.binary(max_size=300))
@pytest.mark.parametrize("name", sorted(DECODERS))
def test_arbitrary_bytes(name: str, data: bytes) -> None:
    _take(*DECODERS[name], data)
    _screen_and_take(data)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(heads, st.lists(msgpack_values, max_size=10))
def test_arbitrary_values_under_a_valid_head(head: list[int], fields: list[Any]) -> None:
    data = msgspec.msgpack.encode(head + fields)
    for decode, error in DECODERS.values():
        _take(decode, error, data)
    _screen_and_take(data)


# --- the mutation corpus ----------------------------------------------------------------------------

CORPUS = [wire.encode(m) for m in EXAMPLES] + [ORDERING.encode(Envelope("tm:A", "p0", m)) for m in ORDERING_MESSAGES]


def _mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        at = rng.randrange(len(b) + 1)
        if op == 0 and b:  # flip a bit
            b[at % len(b)] ^= 1 << rng.randrange(8)
        elif op == 1 and b:  # set a byte to an interesting value (headers, lengths, nil, 0xc1)
            b[at % len(b)] = rng.choice((0x00, 0x7F, 0x80, 0x90, 0x9F, 0xC0, 0xC1, 0xDC, 0xDD, 0xDE, 0xFF))
        elif op == 2:  # cut
            del b[at:]
        elif op == 3:  # insert bytes
            b[at:at] = rng.randbytes(rng.randint(1, 8))
        elif op == 4:  # splice in a piece of another message
            other = rng.choice(CORPUS)
            start = rng.randrange(len(other))
            b[at:at] = other[start : start + rng.randint(1, 32)]
        elif op == 5:  # repeat a piece (long arrays, deep nests)
            piece = bytes(b[at : at + rng.randint(1, 4)]) or b"\x91"
            b[at:at] = piece * rng.randint(2, 300)
        elif op == 6 and b:  # another message kind's code under this body
            b[min(2, len(b) - 1)] = rng.randrange(0, 24)
    return bytes(b)


@pytest.mark.parametrize("seed", range(4))
def test_mutation_corpus(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(2500):
        data = _mutate(rng, rng.choice(CORPUS))
        for decode, error in DECODERS.values():
            _take(decode, error, data)
        _screen_and_take(data)


def test_the_corpus_itself_decodes() -> None:
    """The seeds are valid messages: mutations start from inside real frames."""
    for data in CORPUS[: len(EXAMPLES)]:
        wire.decode(data)
    for data in CORPUS[len(EXAMPLES) :]:
        ORDERING.decode(data)
