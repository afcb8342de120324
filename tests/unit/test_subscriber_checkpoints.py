"""Subscriber checkpoints and delivery ids (faidecs/overlay/core/subscriber.py, checkpoint.py),
driven by hand-made merger streams: a client checkpoints, "crashes" (the object is dropped),
a new one resumes from the checkpoint and reads the streams again from its positions; what the
sinks recorded, put together and deduplicated by id, must be exactly what an uninterrupted
client delivers, in the same order, with the same ids. A durable client never acknowledges past
its last saved checkpoint."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import msgspec
import pytest

from faidecs.grammar import compile_program
from faidecs.grammar.model import Program
from faidecs.matching.events import EventValidator
from faidecs.merging.roles import Role
from faidecs.overlay.core.checkpoint import CheckpointPolicy, SubscriberCheckpoint
from faidecs.overlay.core.messages import Ack, Connect, Entry, Forward, ForwardBatch, Send
from faidecs.overlay.core.placement import place
from faidecs.overlay.core.subscriber import SubscriberClient, delivery_id

TYPES = "type A(x: int)\ntype B(x: int)\ntype C(x: int)\n"
VALIDATOR = EventValidator(compile_program(TYPES).types)
AB, AC = ("A", "B"), ("A", "C")
SUBSCRIPTIONS = {
    "disjunction": "subscription S: (A and B) or (A and C)",
    "disjunction, predicates": "subscription S (matching MR, disposal I): "
    "(A and B and A.x = B.x) or (A and C and A.x < C.x)",
    "conjunction": "subscription S: A and B and A.x <= B.x",
}


def placement(role: Role) -> tuple[str, ...]:
    return place(role, ["m1", "m2", "m3"])


@dataclass
class Sink:
    """An observer with ids: what the application (or the run log) is handed."""

    got: list[tuple[str, int, tuple[str, ...]]] = field(default_factory=list)

    def deliver(self, process: str, conjunction: int, relation: tuple[str, ...]) -> None:
        raise AssertionError("an observer with ids is handed ids")

    def deliver_identified(self, process: str, delivery: str, conjunction: int, relation: tuple[str, ...]) -> None:
        self.got.append((delivery, conjunction, relation))

    def snapshot_taken(self, peer: str, joiner: str) -> int:
        return 0

    def joined(self, process: str, peer: str | None, marker: int | None) -> None:
        pass


def program(kind: str) -> Program:
    return compile_program(TYPES + SUBSCRIPTIONS[kind])


def new_client(p: Program, sink: Sink, **kw: object) -> SubscriberClient:
    return SubscriberClient("s1", p.subscriptions[0], dict(p.types), placement, sink, **kw)  # type: ignore[arg-type]


def streams(c: SubscriberClient, rng: random.Random, n: int) -> dict[Role, list[Forward]]:
    """Per stream, its mark for ``c`` then ``n`` entries: events of the stream's types and
    heartbeats, timestamps never decreasing, positions with gaps (what the filter left out)."""
    out: dict[Role, list[Forward]] = {}
    for role, s in c.streams.items():
        position, ts = rng.randrange(0, 5), rng.randrange(0, 5)
        entries = [Forward(role, position, ts, "mark", None, s.key, "s1", s.filter)]
        for k in range(n):
            position += rng.choice([1, 1, 1, 2, 3])
            ts += rng.choice([0, 0, 1, 2, 5])
            if rng.random() < 0.15:
                entries.append(Forward(role, position, ts, "heartbeat", None, s.key))
                continue
            t = rng.choice(role)
            event = VALIDATOR.validate({"id": f"{t}{k}.{position}", "type": t, "attrs": {"x": rng.randrange(4)}})
            entries.append(Forward(role, position, ts, "event", event, s.key))
        out[role] = entries
    return out


def interleaved(per_stream: dict[Role, list[Forward]], rng: random.Random) -> list[Forward]:
    """The streams' entries in a random interleaving, each stream's order kept."""
    queues = {r: list(e) for r, e in per_stream.items()}
    out: list[Forward] = []
    while any(queues.values()):
        role = rng.choice([r for r, q in queues.items() if q])
        out.append(queues[role].pop(0))
    return out


def feed(c: SubscriberClient, entry: Forward, now: int) -> list[Send]:
    s = c.streams[entry.role]
    if rng_batch(entry):
        return c.handle(s.reading or "", ForwardBatch(entry.role, s.key, (entry_of(entry),)), now)
    return c.handle(s.reading or "", entry, now)


def entry_of(f: Forward) -> Entry:
    return Entry(f.position, f.ts, f.kind, f.event, f.request, f.filter)


def rng_batch(entry: Forward) -> bool:
    return entry.position % 2 == 0  # some positions come as a batch of one: the same path


def save(c: SubscriberClient) -> SubscriberCheckpoint:
    """Checkpoint ``c`` as a process would: to JSON and back (what its file holds), then saved."""
    cp = c.checkpoint()
    cp = SubscriberCheckpoint.from_json(msgspec.json.decode(msgspec.json.encode(cp.to_json())))
    c.saved(cp)
    return cp


@pytest.mark.parametrize("kind", sorted(SUBSCRIPTIONS))
@pytest.mark.parametrize("seed", range(12))
def test_resumed_client_delivers_what_an_uninterrupted_one_does(kind: str, seed: int) -> None:
    rng = random.Random(f"{kind}:{seed}")
    p = program(kind)
    whole = Sink()
    uninterrupted = new_client(p, whole)
    uninterrupted.start(0)
    per_stream = streams(uninterrupted, rng, 40)
    for now, entry in enumerate(interleaved(per_stream, rng)):
        feed(uninterrupted, entry, now)
    assert whole.got, "the streams make no relation: the test would prove nothing"
    assert len({d for d, _, _ in whole.got}) == len(whole.got), "ids are unique"

    # The same streams, read by a durable client that crashes and restarts, maybe twice.
    policy = CheckpointPolicy(every=rng.choice([1, 3, 7]), ms=10**9)
    recorded: list[tuple[str, int, tuple[str, ...]]] = []  # what survived in the sinks
    sink = Sink()
    client = new_client(p, sink, checkpoints=policy)
    client.start(0)
    order = interleaved(per_stream, rng)
    cp: SubscriberCheckpoint | None = None
    now = 0
    for _incarnation in range(rng.choice([1, 2])):
        crash = rng.randrange(len(order) // 3, len(order))
        for entry in order[:crash]:
            now += 1
            feed(client, entry, now)
            if client.checkpoint_due(now):
                recorded += sink.got  # a process records (flushes) its deliveries before it checkpoints
                sink.got.clear()
                cp = save(client)
        # The crash: of what was delivered since the checkpoint, the sinks recorded a prefix.
        kept = rng.randrange(len(sink.got) + 1)
        recorded += sink.got[:kept]
        assert cp is not None, "the first checkpoint comes as soon as the streams start"
        since = {d for d, _, _ in recorded} - checkpointed_ids(whole, recorded, cp)
        sink = Sink()
        client = new_client(p, sink, checkpoints=policy, resume=cp, recorded=since)
        sends = client.start(now)
        for role, s in client.streams.items():
            assert (s.reading, Connect(role, s.key, "s1", cp.positions[role])) in sends
        # The mergers resend every position after the checkpoint's, in another interleaving.
        order = interleaved({r: [e for e in es if e.position > cp.positions[r]] for r, es in per_stream.items()}, rng)
    for entry in order:
        now += 1
        feed(client, entry, now)
    recorded += sink.got
    assert recorded == whole.got


def checkpointed_ids(
    whole: Sink, recorded: list[tuple[str, int, tuple[str, ...]]], cp: SubscriberCheckpoint
) -> set[str]:
    """The ids among ``recorded`` of deliveries the checkpoint reflects (its first ``delivered``)."""
    return {d for d, _, _ in recorded[: cp.delivered]}


def test_delivery_ids_name_the_stream_position_and_index() -> None:
    p = program("disjunction")
    sink = Sink()
    c = new_client(p, sink)
    c.start(0)
    ab, ac = c.streams[AB], c.streams[AC]
    c.handle(ab.reading or "", Forward(AB, 3, 1, "mark", None, ab.key, "s1", ab.filter), 0)
    c.handle(ac.reading or "", Forward(AC, 5, 1, "mark", None, ac.key, "s1", ac.filter), 0)
    a = VALIDATOR.validate({"id": "a", "type": "A", "attrs": {"x": 1}})
    b = VALIDATOR.validate({"id": "b", "type": "B", "attrs": {"x": 1}})
    b2 = VALIDATOR.validate({"id": "b2", "type": "B", "attrs": {"x": 1}})
    c.handle(ab.reading or "", ForwardBatch(AB, ab.key, (entry_of(Forward(AB, 4, 2, "event", a, ab.key)),)), 0)
    c.handle(ac.reading or "", Forward(AC, 9, 9, "heartbeat", None, ac.key), 0)
    assert sink.got == []  # nothing yet: A alone
    c.handle(ab.reading or "", Forward(AB, 7, 3, "event", b, ab.key), 0)
    c.handle(ab.reading or "", Forward(AB, 8, 3, "event", b2, ab.key), 0)
    assert sink.got == [(delivery_id("s1", AB, 7, 0), 0, ("a", "b"))]
    assert delivery_id("s1", AB, 7, 0) == "s1/⊔[A,B]/7/0"


def started_durable(policy: CheckpointPolicy | None) -> tuple[SubscriberClient, Sink]:
    p = program("conjunction")
    sink = Sink()
    c = new_client(p, sink, checkpoints=policy, ack_every=1)
    c.start(0)
    s = c.streams[AB]
    c.handle(s.reading or "", Forward(AB, 2, 1, "mark", None, s.key, "s1", s.filter), 0)
    return c, sink


def acks(sends: list[Send]) -> list[int]:
    return sorted({m.position for _, m in sends if isinstance(m, Ack)})


def events(c: SubscriberClient, first: int, last: int) -> None:
    s = c.streams[AB]
    for position in range(first, last + 1):
        t = "A" if position % 2 else "B"
        e = VALIDATOR.validate({"id": f"e{position}", "type": t, "attrs": {"x": position}})
        c.handle(s.reading or "", Forward(AB, position, position, "event", e, s.key), position)


def test_a_durable_client_acknowledges_nothing_past_its_last_saved_checkpoint() -> None:
    c, _ = started_durable(CheckpointPolicy(every=1000, ms=10**9))
    events(c, 3, 10)
    assert acks(c.tick(100)) == []  # no checkpoint saved yet: a restart needs everything
    assert c.checkpoint_due(100)  # the first comes as soon as the streams started
    cp = c.checkpoint()
    assert cp.positions == {AB: 10}
    events(c, 11, 20)
    assert acks(c.tick(200)) == []  # offered, not yet saved
    c.saved(cp)
    assert acks(c.tick(300)) == [10]  # saved: up to it, not to 20
    assert acks(c.tick(400)) == []
    later = c.checkpoint()
    c.saved(later)
    assert acks(c.tick(500)) == [20]


def test_a_client_without_durability_acknowledges_what_it_fed() -> None:
    c, _ = started_durable(None)
    events(c, 3, 10)
    assert not c.checkpoint_due(100)
    assert acks(c.tick(100)) == [10]


def test_checkpoints_come_every_so_many_deliveries_or_ms() -> None:
    c, sink = started_durable(CheckpointPolicy(every=3, ms=50))
    c.saved(c.checkpoint())
    assert not c.checkpoint_due(0)
    events(c, 3, 6)  # A3 B4 A5 B6: deliveries at 4 and 6
    assert len(sink.got) == 2 and not c.checkpoint_due(6)
    assert c.checkpoint_due(4 + 50)  # 50 ms after the first unsaved delivery (made at 4)
    events(c, 7, 8)
    assert len(sink.got) == 3 and c.checkpoint_due(8)  # the third delivery


def test_a_checkpoint_of_another_subscription_is_refused() -> None:
    c, _ = started_durable(CheckpointPolicy())
    cp = c.checkpoint()
    other = program("disjunction")
    with pytest.raises(ValueError, match="another subscription"):
        new_client(other, Sink(), resume=cp)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda j: j.pop("delivered"), "delivered"),
        (lambda j: j.update(extra=1), "extra"),
        (lambda j: j.update(format="faidecs.subscriber-checkpoint/0"), "format"),
        (lambda j: j["streams"][0].update(position="7"), "position"),
        (lambda j: j["streams"][0].update(how="fresh"), "how"),
        (lambda j: j["streams"].append(j["streams"][0]), "twice"),
    ],
)
def test_a_checkpoint_is_decoded_strictly(change: object, why: str) -> None:
    c, _ = started_durable(CheckpointPolicy())
    data = msgspec.json.decode(msgspec.json.encode(c.checkpoint().to_json()))
    assert SubscriberCheckpoint.from_json(data).positions == {AB: 2}
    change(data)  # type: ignore[operator]
    with pytest.raises(ValueError, match=why):
        SubscriberCheckpoint.from_json(data)
