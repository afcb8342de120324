"""A publisher's outbox (issue 22): what it sent and no root acknowledged survives its restart,
with its next sequence number, the next line of its events file and its last seq per root."""

from __future__ import annotations

from pathlib import Path

import pytest

from faidecs.errors import FaidecsError
from faidecs.grammar import compile_program
from faidecs.matching.events import EventValidator
from faidecs.merging.roles import Role, role_of
from faidecs.overlay.core.messages import Publish
from faidecs.overlay.runtime import wire
from faidecs.overlay.runtime.deployment import Durability
from faidecs.overlay.runtime.outbox import Outbox

TYPES = dict(compile_program("type A(x: int)\ntype B(x: int)\n").types)
DECODER = wire.Declared(TYPES, [("A",), ("B",)])


def root(type_name: str) -> Role:
    return role_of([type_name])


def publication(seq: int, type_name: str, prev: int = -1) -> Publish:
    event = EventValidator(TYPES).validate(
        {"id": f"e{seq}", "type": type_name, "attrs": {"x": seq}, "publisher": "p1", "seq": seq}
    )
    return Publish("p1", seq, event, prev)


def test_what_was_not_acknowledged_is_there_after_a_restart(tmp_path: Path) -> None:
    box = Outbox.open(tmp_path, Durability(sync="always"), DECODER, root)
    for seq, t in enumerate("ABAB"):
        p = publication(seq, t)
        box.send(p, root(t), line=seq + 1, data=wire.encode(p), now=seq)
    box.ordered((0, 1, 3))
    box.commit()
    box.close()
    again = Outbox.open(tmp_path, Durability(), DECODER, root)
    again.close()
    assert list(again.unacked) == [2]
    assert again.unacked[2].publish == publication(2, "A") and again.unacked[2].sent_at == 0  # resent at once
    assert (again.next_seq, again.next_line) == (4, 4)
    assert again.last_to == {("A",): 2, ("B",): 3}


def test_due_resends_what_waited_long_enough_of_one_role(tmp_path: Path) -> None:
    box = Outbox.open(None, Durability(), DECODER, root)
    for seq, t in enumerate("AB"):
        p = publication(seq, t)
        box.send(p, root(t), line=seq + 1, data=wire.encode(p), now=100)
    assert box.due(150, 100) == []
    assert [u.publish.seq for u in box.due(150, 0, ("B",))] == [1]
    assert [u.publish.seq for u in box.due(300, 100)] == [0, 1]
    assert box.resent == 3


def test_a_damaged_outbox_record_is_refused_naming_the_folder(tmp_path: Path) -> None:
    box = Outbox.open(tmp_path, Durability(sync="always"), DECODER, root)
    box.log.append(b"\x93\x07\x01\x02")  # type: ignore[union-attr]  # msgpack, not an outbox record
    box.commit()
    box.close()
    with pytest.raises(FaidecsError, match=f"{tmp_path}: record 0: not an outbox record"):
        Outbox.open(tmp_path, Durability(), DECODER, root)


def test_a_broker_outbox_remembers_every_line_not_only_the_highest(tmp_path: Path) -> None:
    """JetStream hands a restarted publisher the stream's newest message before the older ones
    its predecessor took and never acknowledged: with a high-water mark those would pass for
    published and be lost (the trading example lost them)."""
    box = Outbox.open(tmp_path, Durability(sync="always"), DECODER, root, every_line=True)
    for seq, line in enumerate([1, 2, 300]):
        p = publication(seq, "A")
        box.send(p, root("A"), line=line, data=wire.encode(p), now=0)
    box.commit()
    box.close()
    again = Outbox.open(tmp_path, Durability(), DECODER, root, every_line=True)
    assert [again.published(line) for line in (1, 2, 3, 299, 300)] == [True, True, False, False, True]
    assert again.next_line == 300
    again.close()
    file_box = Outbox.open(tmp_path, Durability(), DECODER, root)  # a file's lines come in order
    assert [file_box.published(line) for line in (3, 300, 301)] == [True, True, False]
    file_box.close()
