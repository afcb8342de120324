"""Agreement: Conjunction Agreement and Covering Agreement."""

from __future__ import annotations

from faidecs.properties.view import RunView, Violation, slot_positions


def conjunction_agreement(view: RunView) -> list[Violation]:
    """Processes with the same conjunction (and options) deliver the same relations."""
    for a, b in view.stream_pairs():
        if a.options != b.options or a.conjunction.text != b.conjunction.text:
            continue
        rel_a = {ids: t for t, ids in a.deliveries}
        rel_b = {ids: t for t, ids in b.deliveries}
        for (x, rx), (y, ry) in (((a, rel_a), (b, rel_b)), ((b, rel_b), (a, rel_a))):
            missing = [ids for ids in rx if ids not in ry]
            if missing:
                return [
                    Violation(
                        f"{x.process} delivered [{', '.join(missing[0])}] for {x.conjunction.condition_text()}; "
                        f"{y.process}, with the same conjunction, did not",
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
            if narrow is wide or narrow.options != wide.options:
                continue
            types = frozenset(narrow.conjunction.types)
            if types == frozenset(wide.conjunction.types) or not types < frozenset(wide.conjunction.types):
                continue
            if not all(c <= types or not (c & types) for c in comps):
                continue  # Φ' would share a predicate with Φ: not a type-disjoint extension
            if wide.conjunction.project(types).text != narrow.conjunction.text:
                continue
            positions = slot_positions(wide.conjunction, types)
            delivered = {ids for _, ids in narrow.deliveries}
            for time, ids in wide.deliveries:
                part = tuple(ids[k] for k in positions)
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
