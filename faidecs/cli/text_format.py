"""``faidecs run --format text``: each delivery with what it answers and how its relation is ordered.

A newcomer reading ``Jump (conjunction 0)`` and two quotes, the newer first, could not tell why
(issue 23): each delivery now names its conjunction's condition, and for a type with several
instances which of them is the newest under the subscription's matching option.
"""

from __future__ import annotations

from collections import Counter

from faidecs.grammar.model import Conjunction, Subscription
from faidecs.matching.delivery import Delivery


class TextFormat:
    """Formats deliveries of the subscriptions it is given (``engine.subscriptions``)."""

    def __init__(self, subscriptions: tuple[Subscription, ...]):
        self._subs = {s.name: s for s in subscriptions}

    def _conjunction(self, d: Delivery) -> tuple[Subscription, Conjunction] | None:
        sub = self._subs.get(d.subscription)
        if sub is None:  # subscribed after the formatter was made
            return None
        for conj in sub.conjunctions:
            if conj.written_index == d.conjunction:
                return sub, conj
        return None

    def format(self, d: Delivery) -> str:
        found = self._conjunction(d)
        if found is None:
            parts = [f"{d.subscription} (conjunction {d.conjunction}):"]
        else:
            sub, conj = found
            parts = [f"{d.subscription} (conjunction {d.conjunction}): {conj.condition_text()}"]
            parts += _order_notes(sub, conj, d)
        if d.timeout:
            parts.append("  timeout: the deadline passed with no negated event")
        if d.aggregates:
            parts.append("  " + ", ".join(f"{k} = {v!r}" for k, v in d.aggregates.items()))
        for slot, event in zip(d.signature, d.relation):
            attrs = ", ".join(f"{k}={v!r}" for k, v in event.attrs.items())
            parts.append(f"    {str(slot):<20} {event.id}  {attrs}")
        return "\n".join(parts)


def _order_notes(sub: Subscription, conj: Conjunction, d: Delivery) -> list[str]:
    """One line per type with several instances: which instance is the newest."""
    counts = Counter(slot.type_name for slot in d.signature)
    newest_first = sub.matching.most_recent
    notes = []
    for type_name, n in counts.items():
        if type_name in conj.groups:
            notes.append(f"  group {type_name}+: {n} members in queue order, {type_name}[0] the oldest")
            continue
        if n < 2:
            continue
        first, second = ("newest", "older") if newest_first else ("oldest", "newer")
        notes.append(
            f"  matching {sub.matching.value}: {type_name}[0] is the {first} {type_name} of the relation, "
            f"{type_name}[1] {'the next ' + second if n > 2 else 'the ' + second + ' one'}"
        )
    return notes


__all__ = ["TextFormat"]
