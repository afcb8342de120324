"""The framing the wire formats share (``faidecs/net/codec.py``), on a made-up message kind: a
msgspec error becomes one that names the message and the field path in the frame's own names."""

from __future__ import annotations

from typing import Annotated, Any, Union

import msgpack
import msgspec
import pytest

from faidecs.errors import FaidecsError
from faidecs.fieldpath import BadField
from faidecs.net.codec import INT64_MAX, Frame, FrameCodec

Nat = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]


class Point(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    x: Nat
    label: str | None


class Leaf(msgspec.Struct, array_like=True, forbid_unknown_fields=True, tag="leaf"):
    n: int


class Pair(msgspec.Struct, array_like=True, forbid_unknown_fields=True, tag="pair"):
    left: Tree
    right: Tree


Tree = Union[Leaf, Pair]  # noqa: UP007 (a runtime alias msgspec reads)


class DrawFrame(Frame):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=8)]
    points: list[Point]
    tree: Tree
    tags: dict[str, int]


class ToyError(FaidecsError):
    pass


CODEC = FrameCodec(3, ToyError, {7: ("Draw", DrawFrame)})
GOOD: list[Any] = [3, 7, "sketch", [[1, "a"], [2, None]], ["pair", ["leaf", 1], ["leaf", -2]], {"k": 1}]


def fails(items: Any) -> str:
    with pytest.raises(ToyError) as info:
        CODEC.decode(msgpack.packb(items))
    return str(info.value)


def with_part(path: tuple[int, ...], value: Any) -> list[Any]:
    items = msgpack.unpackb(msgpack.packb(GOOD), strict_map_key=False)
    node = items
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return items


def test_round_trip() -> None:
    name, frame = CODEC.decode(msgpack.packb(GOOD))
    assert name == "Draw" and isinstance(frame, DrawFrame)
    assert frame.points == [Point(1, "a"), Point(2, None)]
    assert frame.tree == Pair(Leaf(1), Leaf(-2))
    assert msgpack.unpackb(CODEC.encode("Draw", frame)) == GOOD
    assert issubclass(ToyError, FaidecsError)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ((3, 1, 0), -1, "Draw.points[1].x: integer -1 outside [0, 9223372036854775807]"),
        ((3, 1, 0), True, "Draw.points[1].x: expected an integer, got a boolean"),
        ((3, 0, 1), 5, "Draw.points[0].label: expected a string, got an integer"),
        ((3, 0), [1, "a", 2], "Draw.points[0]: 1 extra field(s) after its 2 (x, label)"),
        ((3, 0), [1], "Draw.points[0]: missing field(s) label"),
        ((3,), {"x": 1}, "Draw.points: expected an array, got a map"),
        ((4,), ["pear", 1], "Draw.tree: expected an array tagged one of ['leaf', 'pair'], got tag 'pear'"),
        ((4, 2, 1), "x", "Draw.tree.right.n: expected an integer, got a string"),
        ((2,), "x" * 9, "Draw.name: expected 1 to 8 characters, got 9"),
        ((2,), b"x", "Draw.name: expected a string, got bytes"),
        ((5,), {1: 2}, "Draw.tags: map key 1 is not a string"),
        ((5,), [], "Draw.tags: expected a map, got an array"),
    ],
)
def test_errors_name_the_field(path: tuple[int, ...], value: Any, message: str) -> None:
    assert fails(with_part(path, value)) == message


def test_frame_errors() -> None:
    assert fails(GOOD[:-1]) == "Draw: missing field(s) tags"
    assert fails([*GOOD, 0]) == "Draw: 1 extra field(s) after its 4 (name, points, tree, tags)"
    assert fails([4, *GOOD[1:]]) == "unknown format version 4 (this side reads version 3)"
    assert fails([3, 8, *GOOD[2:]]) == "unknown message kind 8"
    assert fails("Draw") == "expected a message [version, kind, fields...], got a string 'Draw'"
    with pytest.raises(ToyError, match="^1 trailing byte"):
        CODEC.decode(msgpack.packb(GOOD) + b"\x00")
    with pytest.raises(ToyError, match="^not a msgpack message"):
        CODEC.decode(msgpack.packb(GOOD)[:-1])


def test_guard() -> None:
    def bad() -> None:
        raise BadField("too round").at(1).at("points")

    with pytest.raises(ToyError, match=r"^Draw\.points\[1\]: too round$"):
        CODEC.guard("Draw", bad)

    def bug() -> None:
        raise RuntimeError("a bug")

    with pytest.raises(ToyError, match=r"^Draw: internal error while decoding \(RuntimeError: a bug\)$"):
        CODEC.guard("Draw", bug)


def test_a_frame_of_millions_of_items_is_refused_from_its_header(monkeypatch: pytest.MonkeyPatch) -> None:
    """A peer's frame with a wrong number of fields is refused by the count its array header
    states, without decoding its items a second time to explain it (a 10 MB frame of empty arrays
    once froze a server's loop)."""
    from faidecs.net import codec as codec_module
    from faidecs.overlay.core.messages import Disconnect
    from faidecs.overlay.runtime import wire

    def no_second_decoding(self: object, data: bytes) -> object:
        raise AssertionError("the frame was decoded again to explain the error")

    monkeypatch.setattr(codec_module.FrameCodec, "_untyped", no_second_decoding)
    frame = msgpack.packb([wire.VERSION, wire.CODES[Disconnect], *([[]] * 1_000_000)])
    with pytest.raises(wire.WireError) as info:
        wire.decode(frame)
    assert str(info.value) == "Disconnect: 999997 extra field(s) after its 3 (role, consumer, process)"


def test_a_deeply_nested_message_is_a_wire_error_not_a_crash() -> None:
    """[1, <a list nested 1,011 deep>] made the error helper recurse past Python's limit, and the
    RecursionError escaped the decoder and ended the process."""
    from faidecs.overlay.core.messages import Disconnect
    from faidecs.overlay.runtime import wire

    nested: list[object] = []
    for _ in range(1011):
        nested = [nested]
    with pytest.raises(wire.WireError):
        wire.decode(msgpack.packb([1, nested]))
    with pytest.raises(wire.WireError):
        wire.decode(msgpack.packb([wire.VERSION, wire.CODES[Disconnect], nested, "c", "p"]))


def test_a_huge_message_of_another_shape_is_not_decoded_again_to_say_so() -> None:
    """Past the explanation limit, a message that is not a frame at all (here a 2 MiB map) is
    refused by its size, not decoded a second time to show what it is."""
    from faidecs.net.codec import EXPLAIN_LIMIT
    from faidecs.overlay.runtime import wire

    data = msgpack.packb({f"k{i}": i for i in range(EXPLAIN_LIMIT // 8)})
    assert len(data) > EXPLAIN_LIMIT
    with pytest.raises(wire.WireError) as info:
        wire.decode(data)
    assert str(info.value) == f"expected a message [version, kind, fields...], got {len(data)} bytes of something else"
