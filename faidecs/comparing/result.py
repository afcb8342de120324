"""What ``faidecs compare`` finds: typed, immutable, and serialisable to ``compare.json``.

A :class:`Comparison` holds one :class:`VariantResult` per option combination that ran (the
subscriptions' own options replaced by it, or kept "as written"), each with its figures per
subscription and the property verdicts of its run, and the :class:`Difference` of each pair of
variants the user asked about, per subscription.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

#: The run's verdict on a property: as ``faidecs verify --all`` judges the recorded run.
RunVerdict = Literal["holds", "violated", "unproven", "undecided"]
#: The lab's general verdict for the options (its measured table); None where the lab's table has
#: no row for the property (the ordering layers' notification properties).
LabVerdict = Literal["kept", "lost"] | None


def slug(name: str) -> str:
    """A variant's folder name: its name without spaces ("FR+PI staged" -> "FR+PI-staged")."""
    return name.replace(" ", "-")


@dataclass(frozen=True, slots=True)
class Latency:
    """Per-event ``publish()`` latency percentiles, in microseconds."""

    p50: float
    p90: float
    p99: float
    p999: float
    max: float


@dataclass(frozen=True, slots=True)
class Verdict:
    """One property, on one run: the run's verdict, the lab's, and what the two together say."""

    property: str
    run: RunVerdict
    lab: LabVerdict
    #: "predicted" (violated here, as the lab says it can be), "confirmed" (the lab's "kept" holds
    #: here), "not shown" (the lab says it can break; this run keeps it), "CONTRADICTS THE LAB"
    #: (violated here although the lab finds it kept: report it), or "" (no lab verdict, or not judged)
    mark: str
    #: the first violations' explanations (at most three), or why the property was not judged
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class QueueSeries:
    """Queued events per subscription (all its conjunctions and types), sampled over the stream."""

    every: int  # a sample after every ``every``-th event, and after the last
    arrivals: tuple[int, ...]  # events published when each sample was taken
    queued: dict[str, tuple[int, ...]]  # subscription -> queued events at each sample
    #: the process's resident memory above its level before the first event, in bytes, at each
    #: sample (empty where the platform does not tell it)
    memory: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class SubscriptionFigures:
    """One subscription under one variant."""

    name: str
    options: str  # the combination it ran with, e.g. "FR+PI" (", covering staged" when staged)
    relations: int  # relations delivered
    timeouts: int  # of them, absences delivered by their deadline
    events_of_types: int  # published events of the types it names
    never_used: int  # of them, in no delivered relation
    peak_queue: int  # the largest sampled number of queued events
    final_queue: int  # queued events after the last event
    drops: int  # events dropped by bounds
    verdicts: tuple[Verdict, ...]  # the run's verdicts on the violations that name it


@dataclass(frozen=True, slots=True)
class VariantResult:
    """One option combination run over the whole stream."""

    name: str  # "FR+PI", "FR+PI staged", "as written"
    program: str  # the program text it ran (the subscriptions' options replaced)
    #: why it did not run (the options do not apply to a subscription); every figure is empty then
    skipped: str | None = None
    #: why it stopped before the last event (a bounded queue with overflow "error")
    stopped: str | None = None
    events: int = 0  # events published
    engine_seconds: float = 0.0  # time spent in publish()
    wall_seconds: float = 0.0  # the whole variant: engine, measurements, verification, files
    verify_seconds: float = 0.0
    throughput: float = 0.0  # events per second of publish() time
    latency: Latency | None = None
    memory_peak: int | None = None  # bytes above the level before the first event (sampled)
    memory_final: int | None = None
    matchers: dict[str, str] = field(default_factory=dict)  # subscription -> matcher that ran it
    subscriptions: tuple[SubscriptionFigures, ...] = ()
    verdicts: tuple[Verdict, ...] = ()  # the whole run's, as ``faidecs verify --all``
    queues: QueueSeries | None = None

    @property
    def slug(self) -> str:
        """The variant's folder under ``--out``."""
        return slug(self.name)

    def subscription(self, name: str) -> SubscriptionFigures:
        for s in self.subscriptions:
            if s.name == name:
                return s
        raise KeyError(name)

    def verdict(self, prop: str) -> Verdict:
        for v in self.verdicts:
            if v.property == prop:
                return v
        raise KeyError(prop)


@dataclass(frozen=True, slots=True)
class ShownEvent:
    """An event as a difference shows it: its number in the stream (1: the first event
    published; blank lines and rejected lines are not counted), id, type, attributes."""

    position: int
    id: str
    type: str
    attrs: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ShownRelation:
    conjunction: int
    events: tuple[ShownEvent, ...]
    timeout: bool = False
    #: per event of the relation that the other variant had already put in a relation of its own
    #: before this one: "id: in its relation delivered at event #N" (N as :attr:`ShownEvent.position`)
    used_by_other: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Difference:
    """Where two variants part ways for one subscription."""

    subscription: str
    a: str  # variant names
    b: str
    identical: bool
    common: int  # relations both deliver
    only_a: int
    only_b: int
    #: the first event (its number, as :attr:`ShownEvent.position`) at which their deliveries
    #: differ, and the event itself
    first_arrival: int | None = None
    trigger: ShownEvent | None = None
    #: what each delivered at that event (the first relations where they part ways)
    a_relations: tuple[ShownRelation, ...] = ()
    b_relations: tuple[ShownRelation, ...] = ()


@dataclass(frozen=True, slots=True)
class Comparison:
    """``faidecs compare``'s whole result (``faidecs.compare`` returns it)."""

    program: str  # where the program came from
    source: str  # where the events came from
    events: int  # events read and validated (once, for every variant)
    rejected: int  # lines skipped with ``on_error="skip"``
    read_seconds: float  # reading and validating the events
    seconds: float  # the whole comparison
    workers: int  # processes the variants ran on
    matcher: str
    variants: tuple[VariantResult, ...]
    differences: tuple[Difference, ...]

    def variant(self, name: str) -> VariantResult:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


__all__ = [
    "Comparison",
    "Difference",
    "LabVerdict",
    "Latency",
    "QueueSeries",
    "RunVerdict",
    "ShownEvent",
    "ShownRelation",
    "SubscriptionFigures",
    "VariantResult",
    "Verdict",
]
