"""Order: Type Total, Conjunction Total, Disjunction Total, Type FIFO, Type Local, Type Causal.

Times compare only within one process. An event delivered several times (FP) is ordered by its
first delivery in each stream: the papers' formulas, read over every occurrence, would make two
identical sliding-window processes disagree with themselves.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Hashable, Sequence

from faidecs.properties.view import RunView, Stream, Violation, common_parts


def _inversion(
    items: Sequence[tuple[Hashable, int, int]],
) -> tuple[Hashable, Hashable] | None:
    """Two items x, y with a(x) < a(y) but b(y) < b(x), if any. O(n log n)."""
    ordered = sorted(items, key=lambda it: (it[1], it[2]))
    best: tuple[int, Hashable] | None = None  # max b over items with strictly smaller a
    group_a: int | None = None
    group_best: tuple[int, Hashable] | None = None
    for key, a, b in ordered:
        if a != group_a:
            if group_best is not None and (best is None or group_best[0] > best[0]):
                best = group_best
            group_a, group_best = a, None
        if best is not None and b < best[0]:
            return best[1], key
        if group_best is None or b > group_best[0]:
            group_best = (b, key)
    return None


def type_total_order(view: RunView) -> list[Violation]:
    """No two streams deliver two events of one type in opposite orders."""
    for a, b in view.comparable_pairs():
        fa, fb = a.first_times(), b.first_times()
        by_type: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
        for event_id in fa.keys() & fb.keys() & view.events.keys():  # unpublished ids: No Creation's business
            by_type[view.events[event_id].type].append((event_id, fa[event_id], fb[event_id]))
        for type_name in sorted(by_type):
            pair = _inversion(by_type[type_name])
            if pair is not None:
                e1, e2 = pair
                return [
                    Violation(
                        f"{a.process} (conjunction {a.index}) delivered {e1} before {e2}, "
                        f"{b.process} (conjunction {b.index}) {e2} before {e1}",
                        (str(e1), str(e2)),
                        (a.process, b.process),
                        (fa[str(e1)], fa[str(e2)], fb[str(e2)], fb[str(e1)]),
                    )
                ]
    return []


def _projected_times(view: RunView, stream: Stream, types: frozenset[str]) -> dict[tuple[str, ...], int]:
    out: dict[tuple[str, ...], int] = {}
    for time, ids in stream.deliveries:
        out.setdefault(view.project(stream, ids, types), time)
    return out


def conjunction_total_order(view: RunView) -> list[Violation]:
    """Streams whose conjunctions share a part Φ (Φ ∧ Φ' and Φ ∧ Φ'', type-disjoint extensions)
    deliver the relations they have in common on Φ in the same order."""
    for a, b in view.comparable_pairs():
        if a.options != b.options:
            continue
        for types in common_parts(a.conjunction, b.conjunction):
            ta, tb = _projected_times(view, a, types), _projected_times(view, b, types)
            pair = _inversion([(rel, ta[rel], tb[rel]) for rel in ta.keys() & tb.keys()])
            if pair is not None:
                r1, r2 = pair
                return [
                    Violation(
                        f"on {', '.join(sorted(types))}: {a.process} delivered [{', '.join(r1)}] before "  # type: ignore[arg-type]
                        f"[{', '.join(r2)}], {b.process} the other way round",  # type: ignore[arg-type]
                        tuple(r1) + tuple(r2),  # type: ignore[arg-type]
                        (a.process, b.process),
                        (ta[r1], ta[r2], tb[r2], tb[r1]),  # type: ignore[index]
                    )
                ]
    return []


def disjunction_total_order(view: RunView) -> list[Violation]:
    """Two processes that share two conjunctions deliver their relations in the same relative order."""
    processes = sorted({s.process for s in view.streams.values() if not view.fresh_joiner(s.process)})
    for i, p in enumerate(processes):
        for q in processes[i + 1 :]:
            sp = [s for s in view.streams.values() if s.process == p]
            sq = {(s.conjunction.text, s.options, s.value): s for s in view.streams.values() if s.process == q}
            shared = [
                (s, sq[(s.conjunction.text, s.options, s.value)])
                for s in sp
                if (s.conjunction.text, s.options, s.value) in sq
            ]
            for x in range(len(shared)):
                for y in range(x + 1, len(shared)):
                    (a1, b1), (a2, b2) = shared[x], shared[y]
                    if a1.value != a2.value:
                        continue  # partitions are judged one by one
                    ta1 = {ids: t for t, ids in reversed(a1.deliveries)}
                    tb1 = {ids: t for t, ids in reversed(b1.deliveries)}
                    ta2 = {ids: t for t, ids in reversed(a2.deliveries)}
                    tb2 = {ids: t for t, ids in reversed(b2.deliveries)}
                    for r1 in ta1.keys() & tb1.keys():
                        for r2 in ta2.keys() & tb2.keys():
                            if (ta1[r1] < ta2[r2]) != (tb1[r1] < tb2[r2]):
                                return [
                                    Violation(
                                        f"{p} and {q} order [{', '.join(r1)}] (conjunction "
                                        f"{a1.conjunction.condition_text()}) and [{', '.join(r2)}] "
                                        f"({a2.conjunction.condition_text()}) differently",
                                        r1 + r2,
                                        (p, q),
                                        (ta1[r1], ta2[r2], tb1[r1], tb2[r2]),
                                    )
                                ]
    return []


def type_fifo_order(view: RunView) -> list[Violation]:
    """A stream delivers two events of one type and one publisher no later in the order published."""
    for s in view.streams.values():
        first = s.first_times()
        groups: dict[tuple[str, str], list[tuple[str, int, int]]] = defaultdict(list)
        for event_id, time in first.items():
            p = view.published.get(event_id)
            if p is not None:
                groups[(p.publisher, p.type)].append((event_id, p.seq, time))
        for key in sorted(groups):
            pair = _inversion(groups[key])
            if pair is not None:
                e1, e2 = pair
                return [
                    Violation(
                        f"{e1} was published before {e2} by {key[0]}, but {s.process} (conjunction {s.index}) "
                        f"delivered {e2} first",
                        (str(e1), str(e2)),
                        (s.process,),
                        (first[str(e2)], first[str(e1)]),
                    )
                ]
    return []


def type_local_order(view: RunView) -> list[Violation]:
    """If a process delivers e and then publishes e' of the same type, every stream that delivers
    both delivers e no later than e'."""
    first_by_process: dict[str, dict[str, int]] = defaultdict(dict)
    for s in view.streams.values():
        for event_id, time in s.first_times().items():
            known = first_by_process[s.process].get(event_id)
            if known is None or time < known:
                first_by_process[s.process][event_id] = time
    # Only processes that deliver publish in reaction; their publications in publication order.
    reacting = [pubs for process, pubs in view.publications_by().items() if process in first_by_process]
    for publication in heapq.merge(*reacting, key=lambda p: p.time):
        process = publication.publisher
        for e, t in first_by_process[process].items():
            if t >= publication.time or e not in view.events or view.events[e].type != publication.type:
                continue
            e2 = publication.id
            for s in view.streams.values():
                first = s.first_times()
                if e in first and e2 in first and first[e2] < first[e]:
                    return [
                        Violation(
                            f"{process} delivered {e} and then published {e2}; {s.process} (conjunction {s.index}) "
                            f"delivered {e2} before {e}",
                            (e, e2),
                            (process, s.process),
                            (t, first[e2], first[e]),
                        )
                    ]
    return []


def type_causal_order(view: RunView) -> list[Violation]:
    """Type FIFO Order and Type Local Order together (the papers' definition)."""
    return type_fifo_order(view) or type_local_order(view)
