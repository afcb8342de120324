"""A topic manager TM_T: one stage of the multistage sequencer (Baldoni et al., Figs. 15, 16(b),
18(b), 19).

A chain starts at the TM of the lowest-ranked topic it concerns and climbs towards the highest-ranked
entry of its timestamp. Under the literal profile it hops only between topics of the timestamp
(``next(ts, T)``), which lets two chains reach the same TM by different routes and counters overtake
the events that made them (errata E6, E7). Under the fixed profile it visits every TM ranked in
between (line routing): with FIFO links all messages between two TMs then follow one path, and a TM
that is not in the timestamp only passes it on and refreshes its LLC.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from faidecs.ordering.multistage.config import MultistageConfig
from faidecs.ordering.multistage.messages import CompletedSubVc, CreatePubTs, EventTs, FillIn, UpdateSub
from faidecs.ordering.multistage.timestamps import Partial, complete, higher_ranked, sequencing_group
from faidecs.ordering.network import Network


def tm_address(topic: str) -> str:
    return f"tm:{topic}"


@dataclass(slots=True)
class TopicManager:
    topic: str
    network: Network
    config: MultistageConfig
    #: the topic ranked just above this one in the universe (line routing); None for the highest
    above: Callable[[str], str | None]
    lc: int = 0
    llc: dict[str, int] = field(default_factory=dict)
    #: externalSubs: subscriber -> its whole subscription, for subscriptions that contain the topic
    ext: dict[str, frozenset[str]] = field(default_factory=dict)
    handled: int = 0  # messages handled, for load figures

    @property
    def address(self) -> str:
        return tm_address(self.topic)

    def sequencing_group(self) -> frozenset[str]:
        return sequencing_group(self.topic, self.ext.values(), self.config.threshold)

    def on_message(self, sender: str, message: object) -> None:
        self.handled += 1
        if isinstance(message, CreatePubTs):
            self._create(message)
        elif isinstance(message, FillIn):
            self._fill_in(message)
        elif isinstance(message, UpdateSub):
            self._update_sub(message)
        else:
            raise TypeError(f"{self.address} got {message!r} from {sender}")

    def _create(self, message: CreatePubTs) -> None:
        # Fig. 16(b) l.01-07: lower-ranked entries come from LLC, higher-ranked ones from the chain.
        t = self.topic
        ts: Partial = {x: (self.llc.get(x, 0) if x > t else None) for x in self.sequencing_group()}
        self.lc += 1
        ts[t] = self.lc
        self._forward(FillIn("pub", ts, message.publisher, message.event_id))

    def _fill_in(self, message: FillIn) -> None:
        t, ts = self.topic, dict(message.ts)
        member = t in ts
        if message.kind == "sub" and member:
            self.ext[message.origin] = message.subscription  # Fig. 18(b) l.02-03
        group = self.sequencing_group()
        for x, v in ts.items():
            # Fig. 16(b) l.15-17 takes every lower-ranked entry of a publication; Fig. 18(b) l.04 and
            # a pass-through TM only those of its own sequencing group. Max, not union (E9).
            if x > t and v is not None and ((message.kind == "pub" and member) or x in group):
                self.llc[x] = max(self.llc.get(x, 0), v)
        if member:
            if message.kind == "sub":
                self.lc += 1  # Fig. 18(b) l.07: a subscription increments every member TM
            ts[t] = self.lc  # Fig. 16(b) l.18: a publication copies the counter
        self._forward(FillIn(message.kind, ts, message.origin, message.ident, message.subscription))

    def _forward(self, message: FillIn) -> None:
        ts, t = message.ts, self.topic
        if self.config.line_routing:
            nxt = self.above(t) if min(ts) < t else None
        else:
            nxt = higher_ranked(ts, t)
        if nxt is not None:
            self.network.send(self.address, tm_address(nxt), message, entries=len(ts))
            return
        done = complete(ts)
        reply: EventTs | CompletedSubVc
        reply = EventTs(message.ident, done) if message.kind == "pub" else CompletedSubVc(message.ident, done)
        self.network.send(self.address, message.origin, reply, entries=len(done))

    def _update_sub(self, message: UpdateSub) -> None:
        # Fig. 19: no clock changes; the group may shrink, and LLC forgets what left it.
        if message.subscription:
            self.ext[message.subscriber] = message.subscription
        else:
            self.ext.pop(message.subscriber, None)
        group = self.sequencing_group()
        self.llc = {x: v for x, v in self.llc.items() if x in group}
