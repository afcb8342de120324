"""Several processes, each an embedded engine with one subscription, sharing one total order.

This is the single-machine model of the FAIDECS guarantees: every process sees every event in the
same order (the order of publication), and a process may publish in reaction to what it delivers.
Its runs are recorded as run logs for the property checker and the semantic-options lab.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from faidecs.grammar import compile_program
from faidecs.matching.delivery import Delivery
from faidecs.matching.engine import Engine
from faidecs.matching.records import Matcher
from faidecs.runs.runlog import RunLog, RunRecorder

#: ``react(process, delivery)`` returns the events (input JSON shape, without publisher/seq) that
#: the process publishes in reaction to one of its deliveries.
Reaction = Callable[[str, Delivery], Iterable[Mapping[str, Any]]]


def run_processes(
    types_source: str,
    processes: Mapping[str, str],
    events: Iterable[Mapping[str, Any]],
    *,
    react: Reaction | None = None,
    max_reactions: int = 1000,
    matcher: Matcher = "compiled",
) -> RunLog:
    """Run ``events`` through every process (in name order within one publication) and record it.

    Reactions are published right after the publication that caused them, in the order they were
    made, before the next event of ``events``; at most ``max_reactions`` in all (reactive loops end).
    """
    types = compile_program(types_source, "<types>").types
    engines = {
        name: Engine(compile_program(source, f"<subscription of {name}>", known_types=types), matcher=matcher)
        for name, source in processes.items()
    }
    recorder = RunRecorder(types_source, processes)
    reactions: deque[tuple[str, Mapping[str, Any]]] = deque()
    made = 0

    def publish(event: Mapping[str, Any], publisher: str) -> None:
        nonlocal made
        stamped = recorder.publish(event, default_publisher=publisher)
        for name in sorted(engines):
            for delivery in engines[name].publish(stamped):
                recorder.deliver(name, delivery.conjunction, delivery.ids)
                if react is not None:
                    for reaction in react(name, delivery):
                        if made < max_reactions:
                            made += 1
                            reactions.append((name, reaction))

    for event in events:
        publish(event, "publisher")
        while reactions:
            name, reaction = reactions.popleft()
            publish({**reaction, "publisher": name}, name)
    return recorder.finish({name: next(iter(e.state_json().values())) for name, e in engines.items()})


def single_engine_log(engine: Engine) -> RunRecorder:
    """A recorder for ``faidecs run --log``: each subscription of ``engine`` is one process."""
    types_source = "\n".join(t.source or t.declaration() for t in engine.types.values()) + "\n"
    return RunRecorder(types_source, {s.name: s.source for s in engine.subscriptions})


__all__ = ["Reaction", "RunLog", "run_processes", "single_engine_log"]
