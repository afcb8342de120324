"""Safety: No Duplication, No Duplication', No Creation, Admission."""

from __future__ import annotations

from faidecs.properties.extended import bind
from faidecs.properties.view import RunView, Stream, Violation, evaluator, partition_value


def no_duplication(view: RunView) -> list[Violation]:
    """An event appears in at most one relation per process and conjunction."""
    for stream in view.streams.values():
        first: dict[str, int] = {}
        for time, ids in stream.deliveries:
            for event_id in ids:
                if event_id in first:
                    return [
                        Violation(
                            f"{stream.process} delivered {event_id} twice for conjunction {stream.index}",
                            (event_id,),
                            (stream.process,),
                            (first[event_id], time),
                        )
                    ]
                first[event_id] = time
    return []


def no_duplication_prime(view: RunView) -> list[Violation]:
    """An event never appears twice in the same position of a conjunction's relations. A group's
    position is its one slot (``T+``): its members' indices ``T[0]``, ``T[1]``, ... in a delivery
    say where in the run they stand, not which position of the conjunction they fill."""
    for stream in view.streams.values():
        first: dict[tuple[object, str], int] = {}
        for time, ids in stream.deliveries:
            slots = view.slots(stream, ids)
            for k, event_id in enumerate(ids):
                where: object = k if slots is None else slots[k]
                if (where, event_id) in first:
                    conj = stream.conjunction
                    if slots is not None:
                        slot = conj.slot_text(slots[k])
                    else:
                        slot = str(conj.signature[k]) if k < len(conj.signature) else str(k)
                    return [
                        Violation(
                            f"{stream.process} delivered {event_id} twice in position {slot} of conjunction "
                            f"{stream.index}",
                            (event_id,),
                            (stream.process,),
                            (first[(where, event_id)], time),
                        )
                    ]
                first[(where, event_id)] = time
    return []


def no_creation(view: RunView) -> list[Violation]:
    """Every delivered event was published before it was delivered."""
    for stream in view.streams.values():
        for time, ids in stream.deliveries:
            for event_id in ids:
                published = view.published.get(event_id)
                if published is None or published.time >= time:
                    what = "never published" if published is None else "published only later"
                    return [
                        Violation(
                            f"{stream.process} delivered {event_id}, {what}", (event_id,), (stream.process,), (time,)
                        )
                    ]
    return []


def admission(view: RunView) -> list[Violation]:
    """Every delivered relation has the conjunction's types, slot by slot, and satisfies it; in a
    subscription of the extended language also its groups' conditions, its negations and its
    window, judged at the arrival that made the delivery (:mod:`faidecs.properties.extended`)."""
    for stream in view.streams.values():
        conj = stream.conjunction
        if stream.subscription.extended:
            found = _extended_admission(view, stream)
            if found:
                return found
            continue
        checks = evaluator(conj)
        for time, ids in stream.deliveries:
            events = [view.events.get(i) for i in ids]
            if any(e is None for e in events):
                continue  # an unknown id is No Creation's business
            if len(ids) != len(conj.signature):
                reason = f"has {len(ids)} events for {len(conj.signature)} positions"
            elif any(e.type != s.type_name for e, s in zip(events, conj.signature)):  # type: ignore[union-attr]
                reason = "has an event of the wrong type in some position"
            elif any(not stream.sees(e) for e in events):  # type: ignore[arg-type]
                # A partition delivers relations of its own events only.
                values = sorted({repr(partition_value(stream.subscription, e)) for e in events})  # type: ignore[arg-type]
                reason = f"mixes partitions {stream.subscription.partition_by}={', '.join(values)}"
            else:
                failed = [p.text for p, fn in checks if not fn(events)]
                if not failed:
                    continue
                reason = f"does not satisfy {failed[0]}"
            return [
                Violation(
                    f"{stream.process}'s relation for conjunction {stream.index} {reason}",
                    tuple(ids),
                    (stream.process,),
                    (time,),
                )
            ]
    return []


def _extended_admission(view: RunView, stream: Stream) -> list[Violation]:
    conj = stream.conjunction
    timeline = view.timeline(stream)
    for time, ids in stream.deliveries:
        events = [view.events.get(i) for i in ids]
        if any(e is None for e in events):
            continue  # an unknown id is No Creation's business
        known = [e for e in events if e is not None]
        bound = bind(conj, known)
        at = timeline.trigger(time)
        if bound is None:
            shape = ", ".join(conj.slot_text(s) for s in conj.signature)
            reason = f"does not fit the signature [{shape}] ({len(ids)} events)"
        elif any(not stream.sees(e) for e in known):
            values = sorted({repr(partition_value(stream.subscription, e)) for e in known})
            reason = f"mixes partitions {stream.subscription.partition_by}={', '.join(values)}"
        elif at is None:
            reason = "was delivered before any event of its types arrived"
        else:
            failed = timeline.failure(bound, at)
            if failed is None:
                continue
            reason = failed
        return [
            Violation(
                f"{stream.process}'s relation for conjunction {stream.index} {reason}",
                tuple(ids),
                (stream.process,),
                (time,),
            )
        ]
    return []
