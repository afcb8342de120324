"""The subscriber's ordering module (Baldoni et al., Figs. 17, 18(a), 19).

It holds the subscription clock ``lc`` (sub_LC), notifies an event when nothing it has not seen
precedes it, and buffers it otherwise. The two profiles differ here:

* ``fixed`` (digest A3.10): an event on T is next when ``ts[T] = lc[T] + 1`` and every other entry of
  a subscribed topic is ``<= lc`` (E2, E8); an event with ``ts[T] <= lc[T]`` predates the
  subscription and is dropped (E5); dummies are deduplicated by subscription id and applied when
  ready for every shared topic, dropped when stale, held otherwise (E4); the subscriber's own
  subscription timestamp waits, like a dummy, until its clock has caught up on the topics it already
  had (E5).
* ``literal``: ``isNext`` as printed (E2's variant selectable), the dummy test of Fig. 17 l.02, and
  ``sub_LC <- ts`` on completion (Fig. 18(a) l.09). Both profiles compare only entries of subscribed
  topics (E2's reading; comparing the others would stall every timestamp wider than a subscription)
  and update the clock with the timestamp's values (E3).

Operations of one subscriber run one at a time (the digest's profile was not checked with
concurrent subscriptions of one subscriber): a subscribe finishes, own dummies published, before the
next subscribe or unsubscribe starts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from faidecs.ordering.multistage.config import MultistageConfig
from faidecs.ordering.multistage.manager import tm_address
from faidecs.ordering.multistage.messages import CompletedSubVc, Dummy, FillIn, Notification, UpdateSub
from faidecs.ordering.multistage.timestamps import Partial, Timestamp
from faidecs.ordering.network import Network

Verdict = Literal["ready", "stale", "wait"]


@dataclass(frozen=True, slots=True)
class EnsHooks:
    """The notification service as one subscriber sees it."""

    subscribe: Callable[[str, str], None]  # (process, topic)
    unsubscribe: Callable[[str, str], None]
    publish_dummy: Callable[[str, Dummy], None]  # (sender, dummy)


@dataclass(slots=True)
class Subscriber:
    name: str
    network: Network
    config: MultistageConfig
    ens: EnsHooks
    notify: Callable[[str, str], None]  # (event id, topic)
    subs: set[str] = field(default_factory=set)
    lc: dict[str, int] = field(default_factory=dict)
    #: topic -> its value in the subscription timestamp: events with a larger value are owed
    joined: dict[str, int] = field(default_factory=dict)
    events: dict[str, Notification] = field(default_factory=dict)  # to_deliver, by event id
    #: fixed profile: (topic, ts[topic]) -> held event id. Only the event with ts[T] = lc[T] + 1 can
    #: be next on T, so a lookup per topic replaces a scan of everything held, which made a backlog
    #: of n events cost O(n^2).
    by_entry: dict[tuple[str, int], str] = field(default_factory=dict)
    dummies: list[Dummy] = field(default_factory=list)
    applied: set[str] = field(default_factory=set)  # dummy ids applied or found stale (fixed)
    #: topics being subscribed -> what the service delivered on them before the timestamp came back
    prebuffer: dict[str, list[Notification | Dummy]] = field(default_factory=dict)
    own: CompletedSubVc | None = None  # own subscription waiting for its barrier (fixed)
    ops: deque[tuple[str, frozenset[str]]] = field(default_factory=deque)
    busy: bool = False
    issued: int = 0

    def install(self, topics: frozenset[str]) -> None:
        """A subscription that exists at system start: every clock is zero."""
        for topic in topics:
            self.subs.add(topic)
            self.lc[topic] = 0
            self.joined[topic] = 0
            self.ens.subscribe(self.name, topic)

    def request(self, op: Literal["sub", "unsub"], topics: frozenset[str]) -> None:
        self.ops.append((op, topics))
        self._next_op()

    def _next_op(self) -> None:
        while not self.busy and self.ops:
            op, topics = self.ops.popleft()
            if op == "unsub":
                self._unsubscribe(topics & self.subs)
                continue
            new = topics - self.subs
            if new:
                self._subscribe(new)

    def _subscribe(self, new: frozenset[str]) -> None:
        # Fig. 18(a): ENSsubscribe first (E10), buffer the new topics, chain from the lowest-ranked topic.
        self.busy = True
        self.issued += 1
        sub_id = f"{self.name}#{self.issued}"
        for topic in sorted(new):
            self.prebuffer[topic] = []
            self.ens.subscribe(self.name, topic)
        subscription = frozenset(self.subs | new)
        ts: Partial = {t: None for t in subscription}
        message = FillIn("sub", ts, self.name, sub_id, subscription)
        self.network.send(self.name, tm_address(max(subscription)), message, entries=len(ts))

    def _unsubscribe(self, gone: frozenset[str]) -> None:
        # Fig. 19: forget the topics at once, then tell the TMs; no clock changes anywhere.
        if not gone:
            return
        self.subs -= gone
        for topic in gone:
            self.lc.pop(topic, None)
            self.joined.pop(topic, None)
        for event in [e for e in self.events.values() if e.topic in gone]:
            self._drop(event)
        remaining = frozenset(self.subs)
        for topic in sorted(remaining):
            self.network.send(self.name, tm_address(topic), UpdateSub(self.name, remaining))
        for topic in sorted(gone):
            self.network.send(self.name, tm_address(topic), UpdateSub(self.name, frozenset()))
            self.ens.unsubscribe(self.name, topic)
        self._settle()  # dropping a topic can only relax the tests of what is held

    # -- the notification service -------------------------------------------------------------

    def on_completed(self, message: CompletedSubVc) -> None:
        if self.config.profile == "literal":
            self.lc = dict(message.ts)  # Fig. 18(a) l.09, which strands in-flight events (E5)
            self._install(message)
        else:
            self.own = message
        self._settle()

    def on_ens(self, message: Notification | Dummy) -> None:
        held = self.prebuffer.get(message.topic)
        if held is not None:
            held.append(message)
            return
        if message.topic not in self.subs:
            return  # Fig. 19: a topic left is ignored
        self._hold(message)
        self._settle()

    def _hold(self, message: Notification | Dummy) -> None:
        if isinstance(message, Notification):
            if (
                self.config.profile == "fixed"
                and message.topic in self.lc
                and message.ts[message.topic] <= self.lc[message.topic]
            ):
                return  # predates the subscription point (E5): what _settle would drop
            self.events[message.event_id] = message
            if self.config.profile == "fixed":
                self.by_entry[(message.topic, message.ts[message.topic])] = message.event_id
        elif self.config.profile == "literal" or message.sub_id not in self.applied:
            self.dummies.append(message)  # the literal rules have no dedupe (E4)

    # -- rules ------------------------------------------------------------------------------------

    def _settle(self) -> None:
        """Apply whatever the clock allows until nothing more is (Fig. 17 l.20-25)."""
        progress = True
        while progress:
            progress = False
            if self.own is not None and self._barrier_passed(self.own.ts):
                own, self.own = self.own, None
                self._install(own)
                progress = True
            if self.config.profile == "fixed":
                progress |= self._settle_indexed()
            else:
                for event in list(self.events.values()):
                    verdict = self._event_verdict(event)
                    if verdict != "wait":
                        self._drop(event)
                    if verdict == "ready":
                        self._deliver(event)
                        progress = True
            for dummy in list(self.dummies):
                verdict = self._dummy_verdict(dummy)
                if verdict != "wait":
                    self.dummies.remove(dummy)
                if verdict == "ready":
                    self._advance(dummy.ts)
                    self.applied.add(dummy.sub_id)
                    progress = True
                elif verdict == "stale":
                    self.applied.add(dummy.sub_id)

    def _settle_indexed(self) -> bool:
        """Fixed profile: deliver, topic by topic, the one held event that can be next on it."""
        progress = False
        while True:
            again = False
            for topic in sorted(self.subs):
                event_id = self.by_entry.get((topic, self.lc[topic] + 1))
                if event_id is None:
                    continue
                event = self.events[event_id]
                if self._event_verdict(event) == "ready":
                    self._drop(event)
                    self._deliver(event)
                    progress = again = True
            if not again:
                return progress

    def _drop(self, event: Notification) -> None:
        del self.events[event.event_id]
        key = (event.topic, event.ts[event.topic])
        if self.by_entry.get(key) == event.event_id:
            del self.by_entry[key]

    def _set_clock(self, topic: str, value: int) -> None:
        old = self.lc.get(topic, value)
        self.lc[topic] = value
        # Held events of this topic at or below the new clock are now stale (E5): drop them.
        for stale in range(old + 1, value + 1):
            event_id = self.by_entry.get((topic, stale))
            if event_id is not None:
                self._drop(self.events[event_id])

    def _event_verdict(self, event: Notification) -> Verdict:
        ts, topic, lc = event.ts, event.topic, self.lc
        if topic not in self.subs:
            return "stale"
        if self.config.profile == "literal":
            return "ready" if self._literal_is_next(ts, topic) else "wait"
        if ts[topic] <= lc[topic]:
            return "stale"  # timestamped before this subscriber's subscription point (E5)
        others_seen = all(v <= lc[t] for t, v in ts.items() if t != topic and t in self.subs)
        return "ready" if ts[topic] == lc[topic] + 1 and others_seen else "wait"

    def _literal_is_next(self, ts: Timestamp, topic: str) -> bool:
        shared = sorted(t for t in ts if t in self.subs)
        # E2: the prose steps the publication topic's entry, the appendix the last (lowest-ranked) pair.
        step = shared[-1] if self.config.is_next == "last_pair" else topic
        return all(ts[t] == self.lc[t] + (1 if t == step else 0) for t in shared)

    def _dummy_verdict(self, dummy: Dummy) -> Verdict:
        if self.config.profile == "literal":
            # Fig. 17 l.02: every other local entry must appear in the dummy, one higher.
            ok = all(t in dummy.ts and dummy.ts[t] == v + 1 for t, v in self.lc.items() if t != dummy.topic)
            return "ready" if ok else "wait"
        if dummy.sub_id in self.applied:
            return "stale"
        shared = [t for t in dummy.ts if t in self.subs]
        if not shared or all(self.lc[t] >= dummy.ts[t] for t in shared):
            return "stale"
        return "ready" if all(self.lc[t] == dummy.ts[t] - 1 for t in shared) else "wait"

    def _barrier_passed(self, ts: Timestamp) -> bool:
        return all(self.lc[t] == ts[t] - 1 for t in ts if t in self.subs)

    def _deliver(self, event: Notification) -> None:
        self.notify(event.event_id, event.topic)
        self._advance(event.ts)

    def _advance(self, ts: Timestamp) -> None:
        for t, v in ts.items():
            if t in self.subs and v > self.lc[t]:
                self._set_clock(t, v)

    def _install(self, completed: CompletedSubVc) -> None:
        """The subscription takes effect: clocks, new topics, dummies, then what was pre-buffered."""
        ts = completed.ts
        for t, v in ts.items():
            self._set_clock(t, v)
        self.applied.add(completed.sub_id)
        held = {t: self.prebuffer.pop(t) for t in list(self.prebuffer)}
        for topic in held:
            self.subs.add(topic)
            self.joined[topic] = ts[topic]
        for topic in sorted(ts):
            self.ens.publish_dummy(self.name, Dummy(completed.sub_id, topic, ts))
        # Fig. 18(a) prose: discard what the subscription timestamp does not cover, keep the rest.
        for topic, messages in held.items():
            for message in messages:
                if message.ts[topic] > ts[topic]:
                    self._hold(message)
        self.busy = False
        self.network.at(self.network.now, self._next_op)
