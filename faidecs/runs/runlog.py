"""Run logs: what happened in a run, in a form every layer writes and the property checker reads.

A run log is a JSON-lines file (format ``faidecs.runs.runlog/1``, see ``docs/properties.md``):

- one ``header`` record first: the event types of the run as program text, and ``ordering``:
  the ordering layer that handed the processes their events, for runs of one;
- one ``process`` record per process: its name and its subscription (one declaration);
- ``publish`` records in publication order: the event (with ``publisher`` and ``seq``);
- ``deliver`` records: a process delivered a relation for one of its conjunctions, optionally
  with the delivery's ``id`` (overlay subscribers: the same relation delivered again after a
  restart has the same id; older logs have none, and read as before);
- ``notify`` records (ordering layers only): the layer handed a process one event, before its
  engine saw it; the pairwise Total Notification Order is judged on them;
- optionally one ``final`` record per process: its queues after the last event (``state_json``);
- ``time`` on every publish and deliver record: a logical clock, strictly increasing through the
  file. The file order is the order of the run.

A process that publishes in reaction to its deliveries appears as the ``publisher`` of those events.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from faidecs.grammar import compile_program
from faidecs.grammar.model import EventType, Subscription
from faidecs.runs.runlog_records import FORMAT, Delivered, Notified, Published, RunLogError

if TYPE_CHECKING:
    from faidecs.matching.events import Event


@dataclass(slots=True)
class RunLog:
    types_source: str
    processes: dict[str, str] = field(default_factory=dict)  # name -> subscription source
    published: list[Published] = field(default_factory=list)
    delivered: list[Delivered] = field(default_factory=list)
    final: dict[str, list[dict[str, list[str]]]] = field(default_factory=dict)  # process -> queues
    #: processes that joined while the run went on: process -> (time, peer). From ``time`` on the
    #: process delivers what ``peer`` (same subscription) delivers; with no peer it started with
    #: empty queues and receives every event published after ``time``.
    joined: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    #: processes that left before the end: process -> time. They deliver nothing after it.
    left: dict[str, int] = field(default_factory=dict)
    #: the ordering layer that handed the processes their events (``faidecs ordering simulate``
    #: writes ``"multistage"`` or ``"atoms"``); None: one total order (the engine, the overlay).
    #: ``faidecs verify`` holds a run only to the notification properties its layer promises.
    ordering: str | None = None
    #: events an ordering layer handed to processes (seeds 000 and 004), in notification order
    notified: list[Notified] = field(default_factory=list)
    #: each published event as its type validated it, by id, when the reader did so: the checker
    #: reuses them rather than validate a big log twice (a log built in memory has none).
    validated: dict[str, Event] = field(default_factory=dict, repr=False, compare=False)

    # --- derived ---------------------------------------------------------------------------

    def types(self) -> dict[str, EventType]:
        return dict(compile_program(self.types_source, "<run log types>").types)

    def subscriptions(self) -> dict[str, Subscription]:
        """Each process's compiled subscription."""
        types = self.types()
        out: dict[str, Subscription] = {}
        for name, source in self.processes.items():
            program = compile_program(source, f"<subscription of {name}>", known_types=types)
            if len(program.subscriptions) != 1:
                raise RunLogError(f"process {name}: expected exactly one subscription")
            out[name] = program.subscriptions[0]
        return out

    # --- writing ---------------------------------------------------------------------------

    def records(self) -> Iterator[dict[str, Any]]:
        header: dict[str, Any] = {"record": "header", "format": FORMAT, "types": self.types_source}
        if self.ordering is not None:
            header["ordering"] = self.ordering
        yield header
        for name, source in self.processes.items():
            record: dict[str, Any] = {"record": "process", "process": name, "subscription": source}
            if name in self.joined:
                time, peer = self.joined[name]
                record["joined"] = {"time": time, "peer": peer}
            if name in self.left:
                record["left"] = self.left[name]
            yield record
        merged: list[tuple[int, dict[str, Any]]] = [
            (p.time, {"record": "publish", "time": p.time, "event": p.event}) for p in self.published
        ]
        merged += [(d.time, _deliver_record(d)) for d in self.delivered]
        merged += [
            (n.time, {"record": "notify", "time": n.time, "process": n.process, "event": n.event})
            for n in self.notified
        ]
        for _, record in sorted(merged, key=lambda r: r[0]):
            yield record
        for name, queues in self.final.items():
            yield {"record": "final", "process": name, "queues": queues}

    def write(self, out: IO[str]) -> None:
        for record in self.records():
            out.write(json.dumps(record, ensure_ascii=False) + "\n")

    def dumps(self) -> str:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.records())

    # --- reading ---------------------------------------------------------------------------

    @classmethod
    def read(cls, lines: Iterable[str], name: str = "<run log>") -> RunLog:
        """The run log of ``lines`` (blank ones skipped), checked as a whole against its schema
        (:mod:`faidecs.runs.runlog_reader`); :class:`RunLogError` naming the file, the line and
        what is wrong otherwise."""
        from faidecs.runs.runlog_reader import read_runlog

        read = read_runlog(lines, name)
        return cls(**{f: getattr(read, f) for f in read.__dataclass_fields__})

    def incomplete(self) -> str | None:
        """Why this log cannot be the whole run, or None. A run ends with a ``final`` record of
        every process that did not leave (every writer writes them last: ``RunRecorder.finish``,
        a process's own log when it stops), so a log cut at a line boundary lacks some; a log
        that declares no process (a header alone) records no run to judge."""
        if not self.processes:
            return "it declares no process"
        missing = [p for p in self.processes if p not in self.final and p not in self.left]
        if missing:
            more = f" (and {len(missing) - 1} more)" if missing[1:] else ""
            return f"no final record of process {missing[0]!r}{more}"
        return None


def _deliver_record(d: Delivered) -> dict[str, Any]:
    record: dict[str, Any] = {
        "record": "deliver",
        "time": d.time,
        "process": d.process,
        "conjunction": d.conjunction,
        "relation": list(d.relation),
    }
    if d.id is not None:
        record["id"] = d.id
    return record


class RunRecorder:
    """Builds a :class:`RunLog` while a run happens: one clock for publications and deliveries."""

    def __init__(self, types_source: str, processes: Mapping[str, str], *, ordering: str | None = None):
        self.log = RunLog(types_source, dict(processes), ordering=ordering)
        self._time = 0
        self._seq: dict[str, int] = {}

    def publish(self, event: Mapping[str, Any], *, default_publisher: str = "publisher") -> dict[str, Any]:
        """Record a publication; fills in ``publisher`` and a per-publisher ``seq`` when missing."""
        stamped = self.stamp(event, default_publisher=default_publisher)
        self.publish_stamped(stamped)
        return stamped

    def stamp(self, event: Mapping[str, Any], *, default_publisher: str = "publisher") -> dict[str, Any]:
        """``event`` as :meth:`publish` records it (``publisher`` and ``seq`` filled in), counting it
        in its publisher's sequence, without recording it: several logs of one stream (``faidecs
        compare``'s) share the stamped events and record them with :meth:`publish_stamped`."""
        stamped = dict(event)
        publisher = stamped.setdefault("publisher", default_publisher)
        if "seq" not in stamped:
            stamped["seq"] = self._seq.get(publisher, 0)
        self._seq[publisher] = max(self._seq.get(publisher, 0), stamped["seq"]) + 1
        return stamped

    def publish_stamped(self, stamped: dict[str, Any]) -> None:
        """Record a publication :meth:`stamp` made (it is not copied: it must not change)."""
        self._time += 1
        self.log.published.append(Published(self._time, stamped))

    def deliver(self, process: str, conjunction: int, relation: Iterable[str], id: str | None = None) -> None:
        self._time += 1
        self.log.delivered.append(Delivered(self._time, process, conjunction, tuple(relation), id))

    def notify(self, process: str, event_id: str) -> None:
        """An ordering layer handed ``event_id`` to ``process``."""
        self._time += 1
        self.log.notified.append(Notified(self._time, process, event_id))

    @property
    def clock(self) -> int:
        """The time of the last record."""
        return self._time

    def joined(self, process: str, peer: str | None) -> None:
        """``process`` joins now: from ``peer``'s state, or fresh."""
        self.log.joined[process] = (self._time, peer)

    def left(self, process: str) -> None:
        """``process`` leaves now."""
        self.log.left[process] = self._time

    def finish(self, final: Mapping[str, list[dict[str, list[str]]]]) -> RunLog:
        self.log.final = dict(final)
        return self.log


def _once(records: list[tuple[int, int, int, Any]], names: list[str]) -> list[tuple[int, int, int, Any]]:
    """``records`` (sorted) without those that repeat an earlier one (see :func:`merge_runlogs`)."""
    published: dict[tuple[str, int], tuple[int, Published]] = {}
    delivered: dict[tuple[str, str], tuple[int, Delivered]] = {}
    kept = []
    for r in records:
        record = r[3]
        if isinstance(record, Published):
            key = (record.publisher, record.seq)
            seen = published.setdefault(key, (r[1], record))
            if seen[1] is not record:
                if seen[1].event != record.event:
                    raise RunLogError(
                        f"{names[r[1]]}: publication {key[1]} of {key[0]} is {_excerpt(record.event)}, "
                        f"but {names[seen[0]]} has it as {_excerpt(seen[1].event)}"
                    )
                continue
        elif isinstance(record, Delivered) and record.id is not None:
            dkey = (record.process, record.id)
            first = delivered.setdefault(dkey, (r[1], record))
            if first[1] is not record:
                if (first[1].conjunction, first[1].relation) != (record.conjunction, record.relation):
                    raise RunLogError(
                        f"{names[r[1]]}: delivery {record.id} of {record.process} is relation "
                        f"{list(record.relation)} of conjunction {record.conjunction}, but {names[first[0]]} "
                        f"has it as {list(first[1].relation)} of conjunction {first[1].conjunction}"
                    )
                continue
        kept.append(r)
    return kept


def _excerpt(event: dict[str, Any]) -> str:
    text = json.dumps(event, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 200 else text[:200] + "..."


def merge_runlogs(logs: Iterable[tuple[str, RunLog]]) -> RunLog:
    """One run log from the logs of a run's processes (``(name, log)`` each), as the processes
    of a deployment write them: each with the same types, its own process record (subscribers),
    its publications (publishers) or deliveries, timed by a clock all of them share (the host's
    wall clock, in nanoseconds). Records are interleaved by that time, a process's own order kept,
    and renumbered 1, 2, ...; times of joins and leaves are mapped onto the new numbering.

    The logs of a process's incarnations (it restarted) merge as one process. A record that
    repeats another counts once, at its earliest time: a publication with the same
    ``(publisher, seq)`` and the same event (each root replica of a UDP publisher records what it
    commits; a restarted publisher may record a resent publication again), a delivery with the
    same process and id and the same relation (a restarted subscriber re-produces the relations
    since its checkpoint). The same ``(publisher, seq)`` with another event, or the same delivery
    id with another relation, is a :class:`RunLogError` naming both logs."""
    items = list(logs)
    if not items:
        raise RunLogError("no run logs to merge")
    first_name, first = items[0]
    out = RunLog(first.types_source, ordering=first.ordering)
    records: list[tuple[int, int, int, Any]] = []
    for rank, (name, log) in enumerate(items):
        if log.types_source != first.types_source:
            raise RunLogError(f"{name}: its types differ from those of {first_name}")
        if log.ordering != first.ordering:
            raise RunLogError(f"{name}: ordering layer {log.ordering!r}, but {first_name} has {first.ordering!r}")
        for process, source in log.processes.items():
            if out.processes.setdefault(process, source) != source:
                raise RunLogError(f"{name}: process {process} has another subscription in another log")
        out.final.update(log.final)
        records += [(p.time, rank, k, p) for k, p in enumerate(log.published)]
        records += [(d.time, rank, len(log.published) + k, d) for k, d in enumerate(log.delivered)]
        base = len(log.published) + len(log.delivered)
        records += [(n.time, rank, base + k, n) for k, n in enumerate(log.notified)]
    records.sort(key=lambda r: r[:3])
    records = _once(records, [name for name, _ in items])
    times = [r[0] for r in records]

    def renumbered(time: int) -> int:
        # The new time of the last record at or before ``time`` (0: before every record).
        return bisect_right(times, time)

    for n, (_, _, _, record) in enumerate(records, start=1):
        if isinstance(record, Published):
            out.published.append(Published(n, record.event))
        elif isinstance(record, Notified):
            out.notified.append(Notified(n, record.process, record.event))
        else:
            out.delivered.append(Delivered(n, record.process, record.conjunction, record.relation, record.id))
    for _, log in items:
        out.joined.update({p: (renumbered(t), peer) for p, (t, peer) in log.joined.items()})
        out.left.update({p: renumbered(t) for p, t in log.left.items()})
    return out


__all__ = [
    "FORMAT",
    "Delivered",
    "Notified",
    "Published",
    "RunLog",
    "RunLogError",
    "RunRecorder",
    "merge_runlogs",
]
