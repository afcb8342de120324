"""Durable replica logs (issue 22): the core's journal deltas, their folding, and their files.

A simulated deployment whose servers restart keeps each replica's deltas as its "disk"; the
tests check that the disk folds into exactly the log the replica holds, that the runtime's
records of those deltas (ReplicaJournal, on a SegmentLog) decode into the same state, that a
damaged file is refused with its name and offset, and the rules a restored replica follows."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from faidecs.matching.events import EventValidator
from faidecs.merging.roles import Role, role_name
from faidecs.net.segmentlog import CorruptLog
from faidecs.overlay.core.journal import JournalDelta, JournalError, Restored
from faidecs.overlay.core.messages import Decision, EpochQuery, LeaderChange, Ordered, Publish, Up
from faidecs.overlay.core.placement import place
from faidecs.overlay.core.replica import MergerReplica, ProtocolError
from faidecs.overlay.runtime import wire
from faidecs.overlay.runtime.deployment import Durability
from faidecs.overlay.runtime.replica_journal import ReplicaJournal
from faidecs.overlay.sim.generate import _types, random_deployment, random_disk_faults
from faidecs.overlay.sim.scenario import Scenario, SimConfig
from faidecs.overlay.sim.simulator import Simulation

SERVERS = ["m1", "m2", "m3"]


def _scenario(seed: int) -> Scenario:
    rng = random.Random(f"journal:{seed}")
    scenario = random_deployment(rng, faults=False)
    window = max((t for t, _, _ in scenario.publications), default=1)
    names = [f"m{k}" for k in range(1, scenario.servers + 1)]
    types = sorted({t for s in scenario.subscribers.values() for t in _types(s.split(":", 1)[1])})
    scenario.faults = random_disk_faults(rng, names, types, window)
    return scenario


class _Recording(Simulation):
    """A simulation that also writes every delta through the runtime's journal, to files;
    ``compact_every``: and compacts each journal after that many records (0: never)."""

    def __init__(self, scenario: Scenario, config: SimConfig, folder: Path, compact_every: int = 0):
        super().__init__(scenario, config)
        self.folder = folder
        self.compact_every = compact_every
        self.journals: dict[tuple[str, Role], ReplicaJournal] = {}
        self.decoder = wire.Declared(self.types, self.roles)

    def _persist(self, server: str) -> None:
        for role, replica in self.replicas[server].items():
            key = (server, role)
            journal = self.journals.get(key)
            if journal is not None and self.compact_every and journal.written % self.compact_every == 0:
                base = replica.journal_base()
                assert base is not None
                self.disks[server].setdefault(role, Restored()).apply(base)
                journal.compact(base)
                continue
            delta = replica.take_journal()
            if delta is None:
                continue
            self.disks[server].setdefault(role, Restored()).apply(delta)
            if journal is None:
                folder = self.folder / server / "".join(role)
                durability = Durability(sync="always", segment_bytes=1 << 16)
                journal = self.journals[key] = ReplicaJournal.open(folder, role, durability, self.decoder)[0]
            journal.write(delta)
            journal.commit()


@pytest.mark.parametrize(("seed", "compact_every"), [(s, 0) for s in range(6)] + [(s, 7) for s in range(6, 10)])
def test_a_replicas_disk_folds_into_the_log_it_holds(seed: int, compact_every: int, tmp_path: Path) -> None:
    """With ``compact_every``, each journal is compacted every so many records: its files then
    hold a base and what followed, and must still fold into the replica's log."""
    config = SimConfig(seed=seed, matcher="reference", batch_ms=seed % 3)
    simulation = _Recording(_scenario(seed), config, tmp_path, compact_every)
    result = simulation.run()
    assert not result.gaps, [g.describe() for g in result.gaps]
    restarted = {p for f in simulation.scenario.faults if f.kind == "restart" for p in f.processes}
    assert restarted, "every schedule restarts a server"
    checked = dropped = 0
    for server, replicas in result.replicas.items():
        for role, replica in replicas.items():
            disk = simulation.disks[server].get(role, Restored())
            assert disk.decisions == replica.log.decisions, f"{server} {role_name(role)}"
            assert disk.log_epoch == replica.log.log_epoch
            assert {s: p for s, p in disk.received.items()} == replica.upstream.received
            # A replica restored from the disk holds what the live one holds.
            fresh = simulation._replica(role, server)
            fresh.restore(disk)
            assert fresh.log.decisions == replica.log.decisions
            assert set(fresh.inputs.items) == set(replica.inputs.items)
            held = {k: v for k, v in replica.inputs.items.items() if v is not None}
            assert {k: v for k, v in fresh.inputs.items.items() if v is not None} == held
            if not compact_every:
                assert {(s, k) for s, k, _, _ in disk.inputs} == set(replica.inputs.items)
            # The runtime's files hold the same, through the wire format and back.
            if (server, role) not in simulation.journals:
                assert not disk.decisions and not disk.inputs
                continue
            for j in simulation.journals.values():
                j.close()
            journal, state, recovered = ReplicaJournal.open(
                tmp_path / server / "".join(role), role, Durability(), simulation.decoder
            )
            journal.close()
            assert state is not None and recovered.torn_bytes == 0
            assert state.decisions == disk.decisions
            # Payloads every consumer had are not read back: known by key, decided at or before
            # the trimmed position; every other one is.
            gone = {(d.source, d.key) for d in disk.decisions[: disk.trimmed + 1] if d.kind == "event"}
            assert [(s, k, p) for s, k, _, p in state.inputs] == [(s, k, p) for s, k, _, p in disk.inputs]
            for (s, k, got, _), (_, _, had, _) in zip(state.inputs, disk.inputs, strict=True):
                assert got == (None if (s, k) in gone else had), (s, k)
            assert (state.received, state.trimmed, state.log_epoch) == (disk.received, disk.trimmed, disk.log_epoch)
            assert state.acks == disk.acks == replica.consumers.acks
            checked += 1
            dropped += len(gone)
    assert checked and dropped, "some payloads were dropped, and not read back"
    if compact_every:  # older segments went: the files start at a base
        assert any(j.compactions for j in simulation.journals.values())
        assert any(j.log.first > 0 for j in simulation.journals.values())


def _journal_with_records(folder: Path, records: int) -> tuple[Role, wire.Declared]:
    role: Role = ("A",)
    types = {"A": _types_of()["A"]}
    decoder = wire.Declared(types, [role])
    journal, state, _ = ReplicaJournal.open(folder, role, Durability(sync="always"), decoder)
    assert state is None
    validator = EventValidator(types)
    for k in range(records):
        event = validator.validate({"id": f"e{k}", "type": "A", "attrs": {"x": k}, "publisher": "p", "seq": k})
        d = Decision(k, 1, k, "event", "p", k)
        journal.write(JournalDelta(1, None, [d], [("p", k, event, k - 1)], {}, -1))
    journal.commit()
    journal.close()
    return role, decoder


def _types_of() -> dict[str, object]:
    from faidecs.grammar import compile_program

    return dict(compile_program("type A(x: int)\n").types)


def test_a_torn_last_record_is_cut_and_the_rest_recovered(tmp_path: Path) -> None:
    role, decoder = _journal_with_records(tmp_path, 5)
    (segment,) = tmp_path.glob("*.seg")
    size = segment.stat().st_size
    with segment.open("r+b") as f:
        f.truncate(size - 3)  # a crash in the middle of the last write
    journal, state, recovered = ReplicaJournal.open(tmp_path, role, Durability(), decoder)
    journal.close()
    assert recovered.torn_bytes > 0
    assert state is not None and [d.position for d in state.decisions] == [0, 1, 2, 3]


def test_a_corrupt_middle_record_is_refused_naming_file_and_offset(tmp_path: Path) -> None:
    role, decoder = _journal_with_records(tmp_path, 5)
    (segment,) = tmp_path.glob("*.seg")
    data = bytearray(segment.read_bytes())
    data[20] ^= 0xFF  # inside the first record's payload
    segment.write_bytes(bytes(data))
    with pytest.raises(CorruptLog, match=rf"{segment.name}.*offset 0"):
        ReplicaJournal.open(tmp_path, role, Durability(), decoder)


def test_deltas_that_do_not_follow_on_are_refused() -> None:
    state = Restored()
    state.apply(JournalDelta(1, None, [Decision(0, 1, 0, "heartbeat")]))
    with pytest.raises(JournalError, match="decisions 2..2 recorded after 1 decisions"):
        state.apply(JournalDelta(1, None, [Decision(2, 1, 0, "heartbeat")]))
    with pytest.raises(JournalError, match="cut back to 3"):
        state.apply(JournalDelta(1, 3))


def _replica(me: str, role: Role = ("A",)) -> MergerReplica:
    return MergerReplica(role, me, lambda r: place(r, SERVERS, 3), durable=True)


def test_a_restored_replica_votes_and_a_lower_epoch_than_its_log_is_refused() -> None:
    state = Restored(log_epoch=4, decisions=[Decision(0, 4, 0, "heartbeat"), Decision(1, 4, 0, "heartbeat")])
    replica = _replica(place(("A",), SERVERS, 3)[1])
    replica.restore(state)
    assert not replica.amnesic and len(replica.log.decisions) == 2
    leader = replica.placement(("A",))[0]
    with pytest.raises(ProtocolError, match="epoch 3.*epoch 4"):
        replica.handle("coordinator", LeaderChange(("A",), leader, 3), 0)
    replica.handle("coordinator", LeaderChange(("A",), leader, 5), 0)
    (reply,) = replica.handle(leader, EpochQuery(("A",), 5, leader), 0)
    assert reply[1].log_epoch == 4 and len(reply[1].decisions) == 2  # its vote: the log it kept


def test_a_recovering_leader_asks_a_peer_again_when_it_is_back() -> None:
    leader = _replica(place(("A",), SERVERS, 3)[0])
    me, peers = leader.me, [p for p in SERVERS if p != leader.me]
    leader.handle("coordinator", LeaderChange(("A",), me, 1), 0)  # its queries are lost: peers down
    assert leader.log.status == "recovering"
    again = leader.handle("coordinator", Up(peers[0]), 10)
    assert again == [(peers[0], EpochQuery(("A",), 1, me))]


def test_take_journal_records_a_cut_when_a_new_log_replaces_the_tail() -> None:
    replica = _replica(place(("A",), SERVERS, 3)[1])
    types = _types_of()
    event = EventValidator(types).validate({"id": "e", "type": "A", "attrs": {"x": 1}, "publisher": "p", "seq": 0})  # type: ignore[arg-type]
    replica.handle("p", Publish("p", 0, event), 0)
    state = Restored(log_epoch=1, decisions=[Decision(0, 1, 0, "heartbeat"), Decision(1, 1, 0, "heartbeat")])
    replica.restore(state)
    assert replica.take_journal() is None  # what it was given back is on disk already
    replica._rebuild([Decision(0, 1, 0, "heartbeat"), Decision(1, 2, 5, "event", "p", 0)])
    delta = replica.take_journal()
    assert delta is not None and delta.keep == 1 and [d.position for d in delta.decisions] == [1]
    state.apply(delta)
    assert state.decisions == replica.log.decisions


def _event(seq: int) -> object:
    types = _types_of()
    return EventValidator(types).validate(  # type: ignore[arg-type]
        {"id": f"e{seq}", "type": "A", "attrs": {"x": seq}, "publisher": "p", "seq": seq}
    )


def _leading(me: str) -> MergerReplica:
    replica = MergerReplica(("A",), me, lambda r: (me,), durable=True)  # a majority of one
    replica.handle("coordinator", LeaderChange(("A",), me, 1), 0)
    assert replica.is_leading()
    return replica


def test_a_root_orders_a_publication_after_the_one_it_names_as_previous() -> None:
    leader = _leading("m1")
    leader.handle("p", Publish("p", 3, _event(3), prev=1), 1)  # 1 was lost on the way, resent later
    leader.handle("p", Publish("p", 5, _event(5), prev=3), 2)
    assert [d.key for d in leader.log.decisions if d.kind == "event"] == []
    leader.handle("p", Publish("p", 1, _event(1), prev=-1), 3)
    assert [d.key for d in leader.log.decisions if d.kind == "event"] == [1, 3, 5]


def test_a_root_leader_acknowledges_what_it_committed_and_a_resent_copy_again() -> None:
    leader = MergerReplica(("A",), "m1", lambda r: ("m1",), ack_publishers=True)
    leader.handle("coordinator", LeaderChange(("A",), "m1", 1), 0)
    out = leader.handle("p", Publish("p", 0, _event(0)), 1)
    assert ("p", Ordered(("A",), "p", (0,))) in out
    again = leader.handle("p", Publish("p", 0, _event(0)), 2)  # its Ordered was lost: sent again
    assert again == [("p", Ordered(("A",), "p", (0,)))]
    assert [d.key for d in leader.log.decisions if d.kind == "event"] == [0]  # ordered once
