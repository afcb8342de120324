"""A publisher process: the events of a file, or of a NATS JetStream subject, sent to the root
mergers' replicas (or over UDP) at the deployment's rate, each logged as sent.

A broker's message is acknowledged once its publication is committed in the outbox (the end of
the loop pass that sent it). The outbox's "line" of a broker event is its stream sequence: a
restarted publisher acknowledges, without publishing again, every message up to the last one it
committed, and JetStream redelivers the rest."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from faidecs.connect.feed import NatsFeed
from faidecs.errors import EventError, FaidecsError
from faidecs.matching.events import EventValidator
from faidecs.net.processlog import ProcessLog
from faidecs.overlay.core.messages import Message, Ordered, Publish, Send, Up
from faidecs.overlay.runtime import wire
from faidecs.overlay.runtime.codec import too_large
from faidecs.overlay.runtime.deployment import Deployment
from faidecs.overlay.runtime.node import Node
from faidecs.overlay.runtime.outbox import Outbox, Unacked
from faidecs.overlay.runtime.udp import UdpSender
from faidecs.runs.event_lines import LongLine, decode, parse, read_lines, too_long

# The nodes share one logger: an operator filters a process's messages by its name in the text.
LOG = logging.getLogger("faidecs.overlay.runtime.node")


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """The file's events, read as ``faidecs run`` reads them (faidecs/runs/event_lines.py:
    LF-separated UTF-8 lines with limits, no duplicate keys); the first bad line stops the
    publisher with an error naming its file, line and column."""
    with path.open("rb") as f:
        for number, raw in enumerate(read_lines(f), start=1):
            try:
                if isinstance(raw, LongLine):
                    raise too_long(raw.size, number)
                text = decode(raw, number) if isinstance(raw, bytes) else raw
                if not text.strip():
                    continue
                event = parse(text, number)
            except EventError as exc:
                raise FaidecsError(f"{path}: {exc}") from None
            if not isinstance(event, dict):
                raise FaidecsError(f"{path}: line {number}: an event is a JSON object")
            yield {**event, "_line": f"{path}:{number}"}


#: Milliseconds a broker publisher with nothing read waits for the broker (its feed's thread
#: cannot wake the loop's poll).
BROKER_POLL_MS = 5


def broker_events(feed: NatsFeed) -> Iterator[dict[str, Any] | None]:
    """The feed's events as the file's are read (``_line``: where, ending in the stream sequence,
    which the outbox keeps as the event's line), with ``_message`` to acknowledge; None when
    nothing was read yet."""
    while True:
        if feed.error is not None:
            raise FaidecsError(f"{feed.url.text}: {feed.error}")
        taken = feed.poll()
        if taken is None:
            yield None
            continue
        where = f"{feed.url.text}, stream seq:{taken.seq}"
        yield {**taken.event.to_json(), "_line": where, "_message": taken.message}


class PublisherNode(Node):
    """A publisher: the events of its file, in order, at its rate, to the replicas of each event's
    root merger (over the overlay's links, or as UDP datagrams)."""

    def __init__(
        self,
        deployment: Deployment,
        process: str,
        zookeeper: str,
        *,
        log_dir: Path,
        status_dir: Path | None = None,
        state_dir: Path | None = None,
        metrics: tuple[str, int] | None = None,
    ):
        super().__init__(
            deployment,
            process,
            zookeeper,
            log_dir=log_dir,
            status_dir=status_dir,
            state_dir=state_dir,
            metrics=metrics,
        )
        self.acknowledged = 0  # publications a root leader acknowledged (Ordered) in this incarnation
        self.ack_latency: Any = None
        if self.metrics is not None:
            self.ack_latency = self.metrics.histogram(
                "faidecs_overlay_acknowledgement_latency_seconds",
                "From a publication's (last) send to its root leader's acknowledgement that it is committed.",
                [],
            ).labels(process)
        self.publisher = deployment.publishers[process]
        self.feed: NatsFeed | None = None
        self.to_ack: list[Any] = []  # broker messages whose publications this pass commits
        self.events: Iterator[dict[str, Any] | None] | None
        if self.publisher.source is not None:
            self.feed = NatsFeed(self.publisher.source, deployment.types)
            self.events = broker_events(self.feed)
        else:
            assert self.publisher.events is not None
            self.events = read_events(deployment.path(self.publisher.events))
        self.validator = EventValidator(deployment.types)
        self.seq = 0
        # Overlay roots acknowledge what they order (Ordered): what is not acknowledged is sent
        # again after a while, after a root replica comes back, and by a restarted publisher.
        # Not over UDP (lossy by design) nor to Raft's group, which does not acknowledge.
        self.publications: Outbox | None = None
        self.resend_after = max(2000, 10 * deployment.timing.retry_every)
        if process not in deployment.udp_publishers() and deployment.ordering != "raft":
            folder = self.state_dir / "outbox" if self.state_dir is not None else None
            decoder = wire.Declared(deployment.types, deployment.roles)
            every_line = self.publisher.source is not None
            self.publications = Outbox.open(
                folder, deployment.durability, decoder, deployment.root_role, every_line=every_line
            )
            if self.publications.log is not None:
                self._keep_on_disk([self.publications.log])
            self.seq = self.publications.next_seq
            for u in self.publications.unacked.values():  # their records may not have reached the run log
                e = u.publish.event
                self.log.publish(
                    {"id": e.id, "type": e.type, "attrs": e.attrs, "publisher": process, "seq": u.publish.seq}
                )
            if self.publications.next_line:
                LOG.info(
                    "%s: resuming after line %d (seq %d), %d publications to send again",
                    process, self.publications.next_line, self.seq, len(self.publications.unacked),
                )  # fmt: skip
        self.first_seq = self.seq  # the rate counts from here: a restarted publisher goes on at it
        if self.feed is not None:
            self.feed.start()  # after the outbox opened: nothing is read that it could not take
        self.udp_out: UdpSender | None = None
        self.sent_log: ProcessLog | None = None
        if process in deployment.udp_publishers():
            pub = self.publisher
            self.udp_out = UdpSender(
                deployment,
                process,
                self.keys,
                loss=pub.udp_test_loss,
                swap=pub.udp_test_swap,
                state_dir=self.state_dir,  # the counters' mark: never a nonce twice across restarts
            )
            # What it sent: apart from the run log, where root replicas record what they commit.
            self.sent_log = ProcessLog(log_dir / f"{process}.sent", deployment.types_source(), process, None)

    def _due(self, now: int) -> int:
        """Milliseconds until the next publication is due (a tick when there is nothing to publish)."""
        if self.events is None:
            return self.tick_every
        limit = self.publisher.max_events
        if self.feed is not None and self.feed.taken.empty() and (limit is None or self.seq < limit):
            return min(BROKER_POLL_MS, self.tick_every)
        if not self.publisher.rate:
            return 0
        due = self.started_at + int((self.seq - self.first_seq) * 1000 / self.publisher.rate)
        return max(0, due - now)

    def _after_pass(self, now: int) -> None:
        if self.events is not None:
            self._publish(now)
        if self.publications is not None:
            self._disk_failed("cannot fsync its outbox")
            try:
                self.publications.commit()  # before the pass's publications leave
            except OSError as exc:
                self._disk_failed(f"cannot keep its outbox in {self.state_dir}", exc)
            if self.feed is not None and self.to_ack:
                # Committed: the broker may forget them (a crash before this replays them).
                self.feed.ack(self.to_ack)
                self.to_ack = []
            if self.state_dir is not None:
                # Its run log's record of each too: one acknowledged before a kill leaves the
                # outbox, and nothing would log it again (the kill test's No Creation).
                self.log.flush()

    def _core_handle(self, src: str, msg: Message, now: int) -> list[Send]:
        if isinstance(msg, Ordered) and self.publications is not None:
            if self.ack_latency is not None:
                held = self.publications.unacked
                for seq in msg.seqs:
                    u = held.get(seq)
                    if u is not None and u.sent_at > 0:  # 0: recovered from disk, sent before this run
                        self.ack_latency.observe(max(0, now - u.sent_at) / 1000)
            self.acknowledged += len(self.publications.ordered(msg.seqs))
        elif isinstance(msg, Up) and self.publications is not None:
            # A root replica is back: what it may have missed goes again (its peers drop copies).
            roles = [r for r in self.d.roles if msg.process in self.d.placement(r)]
            return [s for r in roles for s in self._resend(self.publications.due(now, 0, r))]
        return []

    def _tick(self, now: int) -> list[Send]:
        return self._resend(self.publications.due(now, self.resend_after)) if self.publications is not None else []

    def _resend(self, unacked: list[Unacked]) -> list[Send]:
        return [(replica, u.publish) for u in unacked for replica in self.d.placement(u.role)]

    def _publish(self, now: int) -> None:
        budget = 256  # publications per pass: the loop must still read and tick
        while budget and self.events is not None and self._due(now) == 0:
            budget -= 1
            limit = self.publisher.max_events
            try:
                if limit is not None and self.seq >= limit:
                    raise StopIteration
                raw = next(self.events)
            except StopIteration:
                self.events = None
                if self.udp_out is not None:
                    self.udp_out.flush()  # a copy held back (udp_test_swap) goes now
                LOG.info("%s published %d events", self.process, self.seq)
                return
            if raw is None:
                return  # nothing from the broker yet
            where = raw.pop("_line")
            broker_msg = raw.pop("_message", None)
            line = int(where.rsplit(":", 1)[1])
            if self.publications is not None and self.publications.published(line):  # lines count from 1
                # Published before a restart (what was not acknowledged is resent), or a broker's
                # redelivery of a message published already.
                if broker_msg is not None:
                    self.to_ack.append(broker_msg)
                continue
            try:
                event = self.validator.validate({**raw, "publisher": self.process, "seq": self.seq})
            except EventError as exc:
                raise FaidecsError(f"{where}: {exc}") from None
            record = {
                "id": event.id,
                "type": event.type,
                "attrs": event.attrs,
                "publisher": self.process,
                "seq": self.seq,
            }
            role = self.d.root_role(event.type)
            # Over the overlay's links, a root orders it after the last one sent to it (Publish.prev).
            prev = self.publications.prev(role) if self.publications is not None else -1
            message = Publish(self.process, self.seq, event, prev)
            data = wire.encode(message)
            if len(data) > self.d.max_event_bytes:
                raise FaidecsError(f"{where}: {too_large(event.id, len(data), self.d.max_event_bytes)}")
            if self.udp_out is not None:
                assert self.sent_log is not None
                self.sent_log.publish(record)
                self.udp_out.publish(message)
            else:
                self.log.publish(record)
                if self.publications is not None:
                    self.publications.send(message, role, line, data, now)
                # The outbox holds the message until the pass's end: its id stays its own till then.
                self.encoded[id(message)] = data  # the same bytes to every replica of its root
                self._send([(replica, message) for replica in self.d.placement(role)])
            self.seq += 1
            if broker_msg is not None:
                self.to_ack.append(broker_msg)

    def _flush_logs(self) -> None:
        super()._flush_logs()
        if self.sent_log is not None:
            self.sent_log.flush()

    def _close(self) -> None:
        if self.feed is not None:
            self.feed.close()
        if self.publications is not None:
            self.publications.close()
        if self.udp_out is not None:
            self.udp_out.flush()
            self.udp_out.close()
        if self.sent_log is not None:
            self.sent_log.close()

    def status(self) -> dict[str, Any]:
        """Its UDP counters, what it published, and whether its file is done."""
        out = super().status()
        if self.udp_out is not None:
            out["udp"] = self.udp_out.status()
        out["published"] = self.seq
        out["done"] = self.events is None
        if self.feed is not None:
            counts = self.feed.counts
            out["source"] = {"taken": counts.taken, "dead_lettered": counts.dead_lettered}
        if self.publications is not None:
            out["unacked"] = len(self.publications.unacked)
            out["resent"] = self.publications.resent
            out["acknowledged"] = self.acknowledged
        return out


__all__ = ["PublisherNode", "read_events"]
