"""Agreement: Conjunction Agreement and Covering Agreement."""

from __future__ import annotations

from faidecs.properties.view import RunView, Stream, Violation


def _owed(x: Stream, y: Stream, view: RunView) -> dict[tuple[str, ...], int] | None:
    """The relations of ``x`` that ``y`` must deliver too; None when the pair is not comparable.

    Processes present from the start owe each other everything. A process that joined from a
    peer's state delivers what the peer delivers after the join, so everything it delivers is owed
    by every process present from the start, and the peer's later deliveries are owed by it. A
    process that joined with empty queues, or two joiners, are not comparable. A process that left
    owes nothing; what it delivered before leaving is owed by the others.
    """
    if y.process in view.log.left:
        return {}
    jx, jy = view.log.joined.get(x.process), view.log.joined.get(y.process)
    rel = {ids: t for t, ids in x.deliveries}
    if jx is None and jy is None:
        return rel
    if (jx is not None and jy is not None) or (jx or jy or (0, None))[1] is None:
        return None
    if jx is not None:
        return rel
    assert jy is not None
    return {ids: t for ids, t in rel.items() if t > jy[0]} if jy[1] == x.process else {}


def conjunction_agreement(view: RunView) -> list[Violation]:
    """Processes with the same conjunction (and options) deliver the same relations."""
    for a, b in view.stream_pairs():
        if a.options != b.options or a.value != b.value or a.conjunction.text != b.conjunction.text:
            continue  # (partitions of one value are compared: each saw the same sub-stream)
        for x, y in ((a, b), (b, a)):
            rx = _owed(x, y, view)
            if rx is None:
                continue
            ry = {ids for _, ids in y.deliveries}
            missing = [ids for ids in rx if ids not in ry]
            if missing:
                return [
                    Violation(
                        f"{x.name} delivered [{', '.join(missing[0])}] for {x.conjunction.condition_text()}; "
                        f"{y.name}, with the same conjunction, did not",
                        missing[0],
                        (x.process, y.process),
                        (rx[missing[0]],),
                    )
                ]
    return []


def covering_agreement(view: RunView) -> list[Violation]:
    """If Φ ∧ Φ' delivers a relation and Φ' shares no type with Φ, every process subscribed to Φ
    delivers its Φ part."""
    for wide in view.streams.values():
        comps = wide.conjunction.components()
        for narrow in view.streams.values():
            if narrow is wide or narrow.options != wide.options or narrow.value != wide.value:
                continue
            if {wide.process, narrow.process} & (set(view.log.joined) | set(view.log.left)):
                continue  # a joiner's queues did not see the run's beginning
            types = frozenset(narrow.conjunction.types)
            if types == frozenset(wide.conjunction.types) or not types < frozenset(wide.conjunction.types):
                continue
            if not all(c <= types or not (c & types) for c in comps):
                continue  # Φ' would share a predicate with Φ: not a type-disjoint extension
            if wide.conjunction.project(types).text != narrow.conjunction.text:
                continue
            delivered = {ids for _, ids in narrow.deliveries}
            for time, ids in wide.deliveries:
                part = view.project(wide, ids, types)
                if part not in delivered:
                    return [
                        Violation(
                            f"{wide.process} delivered [{', '.join(ids)}] for {wide.conjunction.condition_text()}; "
                            f"{narrow.process} ({narrow.conjunction.condition_text()}) never delivered its part "
                            f"[{', '.join(part)}]",
                            tuple(ids),
                            (wide.process, narrow.process),
                            (time,),
                        )
                    ]
    return []
