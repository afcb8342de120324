"""Safety: No Duplication, No Duplication', No Creation, Admission."""

from __future__ import annotations

from faidecs.properties.view import RunView, Violation, evaluator, partition_value


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
    """An event never appears twice in the same position of a conjunction's relations."""
    for stream in view.streams.values():
        first: dict[tuple[int, str], int] = {}
        for time, ids in stream.deliveries:
            for k, event_id in enumerate(ids):
                if (k, event_id) in first:
                    slot = stream.conjunction.signature[k] if k < len(stream.conjunction.signature) else k
                    return [
                        Violation(
                            f"{stream.process} delivered {event_id} twice in position {slot} of conjunction "
                            f"{stream.index}",
                            (event_id,),
                            (stream.process,),
                            (first[(k, event_id)], time),
                        )
                    ]
                first[(k, event_id)] = time
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
    """Every delivered relation has the conjunction's types, slot by slot, and satisfies it."""
    for stream in view.streams.values():
        conj = stream.conjunction
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
