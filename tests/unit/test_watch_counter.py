"""The `--watch` table's counter counts committed events, not log positions (issue 23: the commit
counter of a conjunction merger passed 1,700 with 8 events published, because a merger that
serves subscribers logs a heartbeat every heartbeat_every ms of quiet, and marks and upmarks)."""

from __future__ import annotations

from faidecs.cli.deploy import status_table
from faidecs.overlay.sim.scenario import Scenario, SimConfig
from faidecs.overlay.sim.simulator import simulate

TYPES = "type A(x: int)\ntype B(x: int)\n"
PROGRAM = "subscription S: A and B and A.x < B.x"


def test_a_replica_counts_the_events_it_committed() -> None:
    events = [(10 * k, "pub1", {"id": f"e{k}", "type": "AB"[k % 2], "attrs": {"x": k}}) for k in range(8)]
    result = simulate(Scenario(TYPES, {"P": PROGRAM}, events), SimConfig(seed=1, matcher="reference"))
    for server, replicas in result.replicas.items():
        for role, replica in replicas.items():
            log = replica.log
            committed = log.decisions[: log.commit + 1]
            kinds = {d.kind for d in committed}
            assert log.events_committed == sum(d.kind == "event" for d in committed), (server, role)
            # Each role's stream holds its events: four As, four Bs, and the merger of both all eight
            # (the conjunction merger's stream is its parents' events merged).
            assert log.events_committed == (8 if len(role) == 2 else 4), (server, role, kinds)
            if len(role) == 2:
                # The merger serves S: 3 s of settling are heartbeats, far more positions than events.
                assert "heartbeat" in kinds and log.commit + 1 > 10 * log.events_committed


def status(time: float, events: int, commit: int) -> dict[str, object]:
    merger = {"role": "⊔[A,B]", "leader": "m1", "epoch": 1, "status": "normal"}
    return {"time": time, "mergers": [{**merger, "events_committed": events, "commit": commit, "buffered": 0}]}


def test_the_watch_table_shows_events_and_their_rate_beside_the_position() -> None:
    header, row = status_table({"m1": status(12.0, 8, 1712)}, {"m1": status(10.0, 4, 1672)}).splitlines()
    assert header.split() == [
        "process", "merger", "leader", "epoch", "state", "events", "events/s", "position", "buffered"
    ]  # fmt: skip
    assert row.split() == ["m1", "⊔[A,B]", "m1", "1", "normal", "8", "2", "1712", "0"]
