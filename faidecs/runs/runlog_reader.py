"""Reading a run log: every line decoded against its record's schema, and the log as a whole
checked before anything uses it, so that a bad log is a :class:`RunLogError` naming the file,
the line and the field, never a traceback in the property checker.

What is checked, besides each record's fields (msgspec structs, a tagged union on ``record``):
the header's types compile; each process's subscription compiles against them; each published
event fits its declared type and its id is new; a delivery names a declared process and one of
its conjunctions; a ``final`` record names a declared process and has the shape of its
subscription's queues (``state_json``). A last line that is not JSON is reported as the log being
cut short. Whether the log is *complete* (every process wrote its ``final`` record) is
:meth:`faidecs.runs.runlog.RunLog.incomplete`'s business: a log cut at a line boundary reads fine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from types import UnionType
from typing import Any, Union, get_args, get_origin

import msgspec

from faidecs.errors import EventError, ProgramError
from faidecs.grammar import compile_program
from faidecs.grammar.model import Conjunction, EventType, Subscription
from faidecs.matching.events import Event, EventValidator
from faidecs.runs.runlog_records import FORMAT, Delivered, Notified, Published, RunLogError

#: Longest excerpt of a bad value quoted in a message: a 20 MB value is not echoed whole.
_EXCERPT = 60


@dataclass(slots=True)
class ReadLog:
    """What a run log holds, as :class:`faidecs.runs.runlog.RunLog` keeps it (the same fields):
    the reader fills one, and ``RunLog.read`` makes the log of it."""

    types_source: str
    processes: dict[str, str] = field(default_factory=dict)
    published: list[Published] = field(default_factory=list)
    delivered: list[Delivered] = field(default_factory=list)
    final: dict[str, list[Any]] = field(default_factory=dict)
    joined: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    left: dict[str, int] = field(default_factory=dict)
    ordering: str | None = None
    notified: list[Notified] = field(default_factory=list)
    validated: dict[str, Event] = field(default_factory=dict)


def read_runlog(lines: Iterable[str], name: str) -> ReadLog:
    """The run log of ``lines`` (blank ones skipped); :class:`RunLogError` naming the file, the
    line and what is wrong otherwise."""
    reader = _Reader(name)
    for number, text, last in _numbered(lines):
        reader.line(number, text, last)
    if reader.log is None:
        raise RunLogError(f"{name}: empty run log")
    return reader.log


def _numbered(lines: Iterable[str]) -> Iterator[tuple[int, str, bool]]:
    """Non-blank lines with their number and whether no non-blank line follows (one line of
    look-ahead: a bad last line is most likely a log cut short)."""
    pending: tuple[int, str] | None = None
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        if pending is not None:
            yield pending[0], pending[1], False
        pending = (number, text)
    if pending is not None:
        yield pending[0], pending[1], True


class _Reader:
    """The state of one read: the log so far, its compiled types and subscriptions."""

    def __init__(self, name: str):
        self.name = name
        self.log: ReadLog | None = None
        self.types: dict[str, EventType] = {}
        self.subscriptions: dict[str, Subscription] = {}
        self.validator: EventValidator | None = None
        self.last_time: int | None = None

    def line(self, number: int, text: str, last: bool) -> None:
        where = f"{self.name}:{number}"
        try:
            record = _RECORD.decode(text)
        except msgspec.ValidationError as exc:
            raise RunLogError(f"{where}: {_explain(exc, text, first=self.log is None)}") from None
        except msgspec.DecodeError as exc:
            if last and "truncated" in str(exc):
                raise RunLogError(f"{where}: the run log is truncated: its last record is cut short") from None
            raise RunLogError(f"{where}: invalid JSON: {exc}") from None
        except RecursionError:
            raise RunLogError(f"{where}: the record is nested too deeply") from None
        try:
            self._record(record)
        except _Bad as bad:
            raise RunLogError(f"{where}: {bad}") from None

    def _record(self, record: _Record) -> None:
        if self.log is None:
            if not isinstance(record, _Header) or record.format != FORMAT:
                raise _Bad(_STARTS)
            self._header(record)
            return
        log = self.log
        if isinstance(record, _Process):
            self._process(log, record)
        elif isinstance(record, _Publish | _Deliver | _Notify):
            if self.last_time is not None and record.time <= self.last_time:
                raise _Bad(f"time {record.time} does not increase (previous {self.last_time})")
            self.last_time = record.time
            if isinstance(record, _Publish):
                self._publish(log, record)
            elif record.process not in log.processes:
                what = "delivery by" if isinstance(record, _Deliver) else "notification of"
                raise _Bad(f"{what} undeclared process {record.process!r}")
            elif isinstance(record, _Notify):
                log.notified.append(Notified(record.time, record.process, record.event))
            else:
                conjunctions = len(self.subscriptions[record.process].conjunctions)
                if not 0 <= record.conjunction < conjunctions:
                    raise _Bad(
                        f"field 'conjunction': process {record.process!r} has no conjunction {record.conjunction} "
                        f"(it has {conjunctions})"
                    )
                log.delivered.append(
                    Delivered(record.time, record.process, record.conjunction, tuple(record.relation), record.id)
                )
        elif isinstance(record, _Final):
            self._final(log, record)
        else:  # a second header
            raise _Bad(f"unknown record kind {record.__struct_config__.tag!r}")

    def _header(self, record: _Header) -> None:
        try:
            self.types = dict(compile_program(record.types, "<types>").types)
        except ProgramError as err:
            raise _Bad(f"field 'types': {err.format()}") from None
        except RecursionError:
            raise _Bad("field 'types': nested too deeply") from None
        self.validator = EventValidator(self.types)
        self.log = ReadLog(record.types, ordering=record.ordering)

    def _process(self, log: ReadLog, record: _Process) -> None:
        if record.process in log.processes:
            raise _Bad(f"process {record.process!r} declared twice")
        try:
            program = compile_program(record.subscription, "<subscription>", known_types=self.types)
        except ProgramError as err:
            raise _Bad(f"field 'subscription': {err.format()}") from None
        except RecursionError:
            raise _Bad("field 'subscription': nested too deeply") from None
        if len(program.subscriptions) != 1:
            raise _Bad("field 'subscription': expected exactly one subscription")
        self.subscriptions[record.process] = program.subscriptions[0]
        log.processes[record.process] = record.subscription
        if record.joined is not None:
            log.joined[record.process] = (record.joined.time, record.joined.peer)
        if record.left is not None:
            log.left[record.process] = record.left

    def _publish(self, log: ReadLog, record: _Publish) -> None:
        try:
            msgspec.convert(record.event, _EventFields)
        except msgspec.ValidationError as exc:
            key, _ = _field_of(exc)
            kind = _TYPE_NAMES.get(_EVENT_FIELDS.get(key or "", object), "?")
            raise _Bad(f"event needs {key!r} ({kind})") from None
        assert self.validator is not None
        try:
            event = self.validator.validate(record.event)
        except EventError as err:
            raise _Bad(f"field 'event': {_short(str(err), 300)}") from None
        published = Published(record.time, record.event)
        if published.id in log.validated:
            raise _Bad(f"event id {_short(published.id)!r} published twice")
        log.published.append(published)
        log.validated[published.id] = event

    def _final(self, log: ReadLog, record: _Final) -> None:
        subscription = self.subscriptions.get(record.process)
        if subscription is None:
            raise _Bad(f"final queues of undeclared process {record.process!r}")
        if len(record.queues) != len(subscription.conjunctions):
            raise _Bad(
                f"field 'queues': {len(record.queues)} conjunctions, but the subscription of "
                f"{record.process!r} has {len(subscription.conjunctions)}"
            )
        for k, (state, conj) in enumerate(zip(record.queues, subscription.conjunctions)):
            _check_state(state, conj, f"queues[{k}]", partitioned=subscription.partition_by is not None)
        log.final[record.process] = record.queues


class _Bad(RunLogError):
    """What is wrong with the current record; the reader adds the file and line (it never leaves
    the reader without them)."""


def _check_state(state: Any, conj: Conjunction, path: str, *, partitioned: bool) -> None:
    """``state`` is a conjunction's queues as ``state_json`` writes them: ``{TYPE: [id, ...]}`` for
    types of ``conj``, ``staged``: per part, relations waiting to be joined, and for a partitioned
    subscription ``{"partitions": {VALUE: such queues}}``."""
    if not isinstance(state, dict):
        raise _Bad(f"field '{path}': a conjunction's queues are a JSON object")
    if partitioned:
        partitions = state.get("partitions")
        if set(state) != {"partitions"} or not isinstance(partitions, dict):
            raise _Bad(f"field '{path}': a partitioned conjunction's queues are {{\"partitions\": {{VALUE: queues}}}}")
        for value, queues in partitions.items():
            _check_state(queues, conj, f"{path}.partitions[{_short(value)!r}]", partitioned=False)
        return
    types = set(conj.types)
    for key, ids in state.items():
        if key == "staged":
            _check_staged(ids, f"{path}.staged")
        elif key not in types:
            raise _Bad(f"field '{path}': {_short(key)!r} is not a type of conjunction {conj.condition_text()}")
        else:
            _check_ids(ids, f"{path}.{key}")


def _check_staged(parts: Any, path: str) -> None:
    if not isinstance(parts, list):
        raise _Bad(f"field '{path}': a list (per part) of lists of relations")
    for p, relations in enumerate(parts):
        if not isinstance(relations, list):
            raise _Bad(f"field '{path}[{p}]': a list of relations")
        for r, relation in enumerate(relations):
            _check_ids(relation, f"{path}[{p}][{r}]")


def _check_ids(ids: Any, path: str) -> None:
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise _Bad(f"field '{path}': a list of event ids")


def _short(text: str, limit: int = _EXCERPT) -> str:
    """``text``, cut to an excerpt when long (a bad value may be megabytes)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


# --- the records as msgspec structs ------------------------------------------------------------


class _Record(msgspec.Struct, tag_field="record"):
    """One line of a run log; unknown fields are ignored (a later writer may add some)."""


class _Header(_Record, tag="header"):
    types: str
    ordering: str | None = None
    format: Any = None  # compared with FORMAT: any other value is the wrong format


class _Joined(msgspec.Struct):
    time: int
    peer: str | None = None


class _Process(_Record, tag="process"):
    process: str
    subscription: str
    joined: _Joined | None = None
    left: int | None = None


class _Publish(_Record, tag="publish"):
    time: int
    event: dict[str, Any]  # kept as it is (the input JSON shape); _EventFields checks it


class _EventFields(msgspec.Struct):
    """What a published event must have, besides what its type declares."""

    id: str
    type: str
    publisher: str
    seq: int


class _Deliver(_Record, tag="deliver"):
    time: int
    process: str
    conjunction: int
    relation: list[str]
    id: str | None = None


class _Notify(_Record, tag="notify"):
    time: int
    process: str
    event: str


class _Final(_Record, tag="final"):
    process: str
    queues: list[Any]


_RECORD = msgspec.json.Decoder(_Header | _Process | _Publish | _Deliver | _Notify | _Final)
_KINDS: dict[str, type[_Record]] = {
    str(c.__struct_config__.tag): c for c in (_Header, _Process, _Publish, _Deliver, _Notify, _Final)
}
_STARTS = f"a run log starts with a header of format {FORMAT!r}"
_TYPE_NAMES: dict[Any, str] = {str: "str", int: "int", list: "list", dict: "dict"}
_EVENT_FIELDS = {f.name: f.type for f in msgspec.structs.fields(_EventFields)}
#: What a field is, when the problem lies inside it.
_INSIDE = {
    "joined": '\'joined\' is {"time": int, "peer": process or null}',
    "relation": "a relation is a list of event ids",
}
_AT_FIELD = re.compile(r"- at `\$\.(\w+)([^`]*)`$")
_MISSING_FIELD = re.compile(r"missing required field `(\w+)`")
_LONG_NUMBER = re.compile(r"-?\d{20,}")


def _field_of(exc: msgspec.ValidationError) -> tuple[str | None, bool]:
    """The top-level field a msgspec error is about, and whether the problem lies inside it."""
    text = str(exc)
    at = _AT_FIELD.search(text)
    if at is not None:
        return at[1], bool(at[2]) or _MISSING_FIELD.search(text) is not None
    missing = _MISSING_FIELD.search(text)
    return (None if missing is None else missing[1]), False


def _explain(exc: msgspec.ValidationError, text: str, *, first: bool) -> str:
    """What is wrong with the record on line ``text``, which msgspec refused with ``exc``."""
    try:
        # The typed decoding stops at the first wrong type: the rest of the line may not be JSON.
        record = msgspec.json.decode(text)
    except msgspec.ValidationError:  # a number no 64-bit value holds, even untyped
        number = _LONG_NUMBER.search(text)
        column = f"column {number.start() + 1}: " if number is not None else ""
        return f"{column}a number out of range (integers are 64-bit)"
    except msgspec.DecodeError as err:  # (a ValidationError is one too: it goes first)
        return f"invalid JSON: {err}"
    except RecursionError:
        return "the record is nested too deeply"
    if not isinstance(record, dict) or not isinstance(record.get("record"), str):
        return "a record is a JSON object with a 'record' field"
    if first and (record["record"] != "header" or record.get("format") != FORMAT):
        return _STARTS
    kind = _KINDS.get(record["record"])
    if kind is None:
        return f"unknown record kind {_short(record['record'])!r}"
    key, inside = _field_of(exc)
    if "out of range" in str(exc):
        return f"field {key or '?'!r}: a number out of range (integers are 64-bit)"
    if key is None:
        return str(exc)
    if inside and key in _INSIDE:
        return _INSIDE[key]
    annotation = next((f.type for f in msgspec.structs.fields(kind) if f.name == key), object)
    origin = get_origin(annotation) or annotation
    if origin in (Union, UnionType):  # an optional field: what it is when present
        origin = next(a for a in get_args(annotation) if a is not type(None))
        origin = get_origin(origin) or origin
    name = _TYPE_NAMES.get(origin, "dict" if isinstance(origin, type) and issubclass(origin, msgspec.Struct) else "?")
    return f"field {key!r} must be {name}"
