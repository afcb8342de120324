"""The receiver rule (the paper leaves it unspecified; this is the digest's B3.2 rule, per epoch).

Within an epoch, receiver r delivers m (to group G) iff m's group-local number is last[G] + 1 and,
for every atom Q that stamped m and whose overlap contains r, m's number from Q is last[Q] + 1;
anything else waits in the buffer. Atoms whose overlap lacks r order messages r never sees both
of, so r ignores them. Every message a relevant atom stamps goes to one of r's groups, so r gets
all of them and a gap is always a message still on its way.

Epochs are consumed one after the other: r finishes epoch e (it has consumed as many messages of
each of its groups as the service's Switch says were published) before it looks at e + 1.
Messages of later epochs wait in the buffer. A message of a topic the process has dropped, or of
an epoch before its current subscription, is consumed (it advances the counters) but not notified.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from faidecs.ordering.atoms.message import EpochView, Sequenced, Switch
from faidecs.ordering.atoms.overlap import AtomId

#: notify(process, event_id, topic)
Notify = Callable[[str, str, str], None]


@dataclass(slots=True)
class Receiver:
    process: str
    notify: Notify
    #: topic -> epoch from which this process is owed the topic's messages (its subscription point)
    since: dict[str, int] = field(default_factory=dict)
    epochs: deque[int] = field(default_factory=deque)  # epochs it takes part in, oldest first
    views: dict[int, EpochView] = field(default_factory=dict)
    closes: dict[int, dict[str, int]] = field(default_factory=dict)
    #: epoch -> (group, group-local number) -> held message. Only a group's next number can be
    #: delivered, so a lookup per group replaces a scan of everything held (a backlog of n messages
    #: cost O(n^2) with the scan).
    buffer: dict[int, dict[tuple[str, int], Sequenced]] = field(default_factory=dict)
    last_group: dict[str, int] = field(default_factory=dict)
    last_atom: dict[AtomId, int] = field(default_factory=dict)
    notified: int = 0
    suppressed: int = 0

    def open(self, epoch: int, view: EpochView) -> None:
        self.epochs.append(epoch)
        self.views[epoch] = view

    def on_message(self, src: str, message: Sequenced | Switch) -> None:
        if isinstance(message, Switch):
            if message.closed is not None:
                self.closes[message.closed] = message.counts
            if message.opened is not None and message.view is not None:
                self.open(message.opened, message.view)
        else:
            self.buffer.setdefault(message.epoch, {})[(message.group, message.local)] = message
        self._advance()

    def _deliverable(self, m: Sequenced, view: EpochView) -> bool:
        if m.local != self.last_group.get(m.group, 0) + 1:
            return False
        return all(n == self.last_atom.get(q, 0) + 1 for q, n in m.stamps.items() if q in view.atoms)

    def _consume(self, m: Sequenced, view: EpochView) -> None:
        self.last_group[m.group] = m.local
        for q, n in m.stamps.items():
            if q in view.atoms:
                self.last_atom[q] = n
        if self.since.get(m.group, m.epoch + 1) <= m.epoch:
            self.notified += 1
            self.notify(self.process, m.event_id, m.group)
        else:
            self.suppressed += 1

    def _advance(self) -> None:
        while self.epochs:
            epoch = self.epochs[0]
            view = self.views[epoch]
            held = self.buffer.get(epoch, {})
            progress = True
            while progress:  # after each delivery: one may unblock another
                progress = False
                for group in sorted({g for g, _ in held}):
                    key = (group, self.last_group.get(group, 0) + 1)
                    m = held.get(key)
                    if m is not None and self._deliverable(m, view):
                        del held[key]
                        self._consume(m, view)
                        progress = True
            counts = self.closes.get(epoch)
            if counts is None or any(self.last_group.get(g, 0) < counts.get(g, 0) for g in view.groups):
                return
            # epoch complete: its numbering spaces are not used again
            self.epochs.popleft()
            self.buffer.pop(epoch, None)
            self.views.pop(epoch)
            self.closes.pop(epoch)
            self.last_group.clear()
            self.last_atom.clear()

    def pending(self) -> list[str]:
        return sorted(m.event_id for held in self.buffer.values() for m in held.values())
