"""Seeded random deployments for the simulator: the lab's subscription shapes (identical
conjunctions, right-extended covering pairs, disjunctions sharing conjunctions, several instances
of a type), several publishers, late joiners, and a fault schedule (a leader crash in the middle
of the merge, a follower crash, a pause longer or shorter than the session timeout, a partition
that heals). At most one server crashes for good, so every role keeps a majority of replicas.
"""

from __future__ import annotations

import random
import re

from faidecs.grammar.model import Disposal, Matching
from faidecs.lab.generator import VALUES
from faidecs.lab.generator import scenario as lab_scenario
from faidecs.lab.scenario import TYPES_SOURCE
from faidecs.matching.guarantees import COMBINATIONS, Combination
from faidecs.merging.roles import role_of
from faidecs.overlay.core.placement import place
from faidecs.overlay.sim.scenario import Fault, Joiner, Reaction, Scenario

_MATCHING_RANK = {m: k for k, m in enumerate((Matching.FR, Matching.FRC, Matching.MR, Matching.MRC))}
#: The combinations by matching, then by disposal: the simulator's order from the start. A random
#: one is drawn from it, and seeded runs pick ``BY_MATCHING[seed % 16]``, so that a seed still gives
#: the deployment it always gave (a seed's cost is that of its deployment: some are far slower).
BY_MATCHING = tuple(sorted(COMBINATIONS, key=lambda c: (_MATCHING_RANK[c.matching], list(Disposal).index(c.disposal))))


def random_deployment(
    rng: random.Random, combination: Combination | None = None, *, faults: bool = True, staged: bool = False
) -> Scenario:
    """A deployment under one matching+disposal combination (random when not given), every
    subscription ``covering staged`` with ``staged``."""
    lab = lab_scenario(rng)
    chosen = combination if combination is not None else rng.choice(BY_MATCHING)
    extra = ", covering staged" if staged else ""
    subscribers = {name: lab.subscription(name, chosen, extra) for name, _ in lab.processes}
    used = sorted({e[0] for e in lab.events} | {t for _, cs in lab.processes for c in cs for a in c for t in _types(a)})
    publishers = [f"pub{k}" for k in range(1, rng.randint(1, 3) + 1)]
    publications = []
    time = 0
    for k in range(rng.randint(5, 30)):
        time += rng.randint(0, 25)
        event = {"id": f"e{k + 1}", "type": rng.choice(used), "attrs": {"a": rng.randrange(VALUES)}}
        publications.append((time, rng.choice(publishers), event))
    window = max(time, 1)
    joiners: list[Joiner] = []
    if rng.random() < 0.35:
        peer = rng.choice(sorted(subscribers))
        source = subscribers[peer].replace(f"subscription {peer}", "subscription joiner", 1)
        joiners.append(Joiner("joiner", source, rng.randint(0, window), peer if rng.random() < 0.6 else None))
    servers = rng.randint(3, 5)
    types = sorted({t for s in subscribers.values() for t in _types(s.split(":", 1)[1])})
    names = [f"m{k}" for k in range(1, servers + 1)]
    schedule = random_faults(rng, names, types, window) if faults else []
    reactions = {p: Reaction(r.type_name, {"a": r.value}, r.limit) for p, r in lab.reactions}
    leavers = [(rng.choice(sorted(subscribers)), rng.randint(0, window))] if rng.random() < 0.15 else []
    return Scenario(TYPES_SOURCE, subscribers, publications, joiners, schedule, servers, reactions, leavers)


def random_marker_deployment(
    rng: random.Random, combination: Combination | None = None, *, faults: bool = True, staged: bool = False
) -> Scenario:
    """:func:`random_deployment` plus one or two joiners at a marker (LoCaPS), drawn after it from
    the same ``rng``: a copy of a subscriber's subscription (covered wherever that subscriber's
    streams are), the copy with one more unary predicate (covered only if the syntactic check sees
    it), or two slots of two types (often not covered: the join registers and climbs)."""
    scenario = random_deployment(rng, combination, faults=faults, staged=staged)
    window = max((t for t, _, _ in scenario.publications), default=1)
    names = sorted(scenario.subscribers)
    for k in range(rng.randint(1, 2)):
        process = f"mjoiner{k + 1}"
        model = scenario.subscribers[rng.choice(names)]
        head, body = model.split(":", 1)
        head = re.sub(r"^subscription \w+", f"subscription {process}", head)
        shape = rng.random()
        if shape < 0.5:
            source = f"{head}:{body}"
        elif shape < 0.75:
            slot = re.findall(r"T\d\[\d\]", body)[-1]  # the last conjunction's last slot
            source = f"{head}:{body} and {slot}.a > {rng.randrange(VALUES)}"
        else:
            first, second = sorted(rng.sample(("T1", "T2", "T3", "T4"), 2))
            source = f"{head}: {first}[0] and {second}[0]"
        scenario.joiners.append(Joiner(process, source, rng.randint(0, window), mode="marker"))
    return scenario


def _types(atom: str) -> list[str]:
    return [t for t in ("T1", "T2", "T3", "T4") if t in atom]


def random_faults(
    rng: random.Random, servers: list[str], types: list[str], window: int, replicas: int = 3
) -> list[Fault]:
    """A fault schedule within ``window`` ms: perhaps a crash of the first leader of a random
    merger (mid-merge) or of one of its followers, a pause, a partition that heals."""
    out: list[Fault] = []
    replicas = min(replicas, len(servers))
    if rng.random() < 0.5 and replicas >= 3:
        # The first replica in placement order leads first: crash it mid-merge, or a follower.
        role = role_of(rng.sample(types, rng.randint(1, len(types))))
        placed = place(role, servers, replicas)
        victim = placed[0] if rng.random() < 0.6 else rng.choice(placed[1:])
        out.append(Fault("crash", rng.randint(0, window), (victim,)))
    if rng.random() < 0.4:
        out.append(Fault("pause", rng.randint(0, window), (rng.choice(servers),), rng.randint(30, 500)))
    if rng.random() < 0.3:
        side = tuple(rng.sample(servers, rng.randint(1, len(servers) // 2)))
        out.append(Fault("partition", rng.randint(0, window), side, rng.randint(30, 500)))
    return out


def random_disk_faults(
    rng: random.Random, servers: list[str], types: list[str], window: int, *, wipes: bool = True
) -> list[Fault]:
    """Restarts that the replicas' disks must survive (issue 22), within ``window`` ms: every
    replica of a random merger killed at once, or every server, or a leader; perhaps one server
    also loses its disk (at most one, so that every role keeps a majority with its log), and a
    pause. Each comes back 20 to 600 ms later."""
    out: list[Fault] = []
    shape = rng.random()
    if shape < 0.4:
        role = role_of(rng.sample(types, rng.randint(1, len(types))))
        victims = place(role, servers, min(3, len(servers)))
    elif shape < 0.7:
        victims = tuple(servers)
    else:
        victims = (rng.choice(servers),)
    out.append(Fault("restart", rng.randint(0, window), tuple(victims), rng.randint(20, 600)))
    if rng.random() < 0.3:
        out.append(Fault("restart", rng.randint(0, window), tuple(servers), rng.randint(20, 600)))
    if rng.random() < 0.2:
        out.append(Fault("pause", rng.randint(0, window), (rng.choice(servers),), rng.randint(30, 500)))
    if wipes and rng.random() < 0.4:
        # After the others: a replica that lost its disk must find its peers with their logs
        # (docs/deploy.md, "Durability": what a lost disk costs).
        after = max(f.at + f.duration for f in out)
        out.append(Fault("wipe", after + rng.randint(0, window), (rng.choice(servers),), rng.randint(20, 600)))
    return out


def random_restart_deployment(
    rng: random.Random, combination: Combination | None = None, *, wipes: bool = True
) -> Scenario:
    """:func:`random_deployment` without its faults, with :func:`random_disk_faults` instead."""
    scenario = random_deployment(rng, combination, faults=False)
    window = max((t for t, _, _ in scenario.publications), default=1)
    names = [f"m{k}" for k in range(1, scenario.servers + 1)]
    types = sorted({t for s in scenario.subscribers.values() for t in _types(s.split(":", 1)[1])})
    scenario.faults = random_disk_faults(rng, names, types, window, wipes=wipes)
    return scenario


__all__ = [
    "BY_MATCHING",
    "random_deployment",
    "random_disk_faults",
    "random_restart_deployment",
    "random_faults",
    "random_marker_deployment",
]
