"""Fuzzing the run-log reader: whatever a file holds, ``RunLog.read`` returns a log that the
checker judges without error, or raises :class:`RunLogError` naming the file and the line; never
a traceback (RecursionError, ValueError, TypeError, AttributeError in the checker...).

Two kinds of input, each bounded to a few seconds: Hypothesis's (well-formed records with
arbitrary values in their fields, and lines of arbitrary JSON), and a seeded mutation corpus:
logs written by the engine (plain, staged, partitioned, with joins, leaves and notifications) and
the cases of issue 20, cut, spliced, duplicated and stretched a few hundred times per run."""

from __future__ import annotations

import json
import random
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faidecs.properties import check
from faidecs.runs.processes import run_processes
from faidecs.runs.runlog import FORMAT, RunLog, RunLogError

NAME = "fuzz.jsonl"
#: a reader error: the file and a line (or the whole file when it is empty)
POSITIONED = re.compile(rf"^{re.escape(NAME)}(:\d+: |: empty run log$)")
TYPES = "type A(k: int, v: float)\ntype B(k: int, s: str)\n"
SUBSCRIPTIONS = {
    "plain": "subscription P: A and B and A.k <= B.k",
    "staged": "subscription S (covering staged, matching MR): A and B[1]",
    "parted": "subscription Q (partition by k, disposal FP): A and B",
    "either": "subscription E: A or B",
}


def judged(lines: list[str]) -> None:
    """The property under test: a positioned RunLogError, or a log every check judges."""
    try:
        log = RunLog.read(lines, NAME)
    except RunLogError as err:
        assert POSITIONED.match(str(err)), str(err)
        assert len(str(err)) < 2000, "a bad value is not echoed whole"
        return
    check(log, unfinished=log.incomplete())


def engine_log() -> list[str]:
    events = [
        {"id": f"e{n}", "type": t, "attrs": {"k": n % 2, "v": n / 2} if t == "A" else {"k": n % 3, "s": f"s{n}"}}
        for n, t in enumerate("AABABBAB")
    ]
    return run_processes(TYPES, SUBSCRIPTIONS, events).dumps().splitlines()


BASE = engine_log()
HEADER = BASE[0]


def _corpus() -> list[list[str]]:
    """Valid logs and the issue's cases: the seeds that mutations start from."""
    process = json.dumps({"record": "process", "process": "q", "subscription": SUBSCRIPTIONS["parted"]})
    staged = json.dumps({"record": "process", "process": "s", "subscription": SUBSCRIPTIONS["staged"]})
    joined = [BASE[0], BASE[1].replace('"subscription"', '"joined": {"time": 3, "peer": null}, "subscription"')]
    notify = json.dumps({"record": "notify", "time": 10**6, "process": "plain", "event": "e1"})
    return [
        BASE,
        joined + BASE[2:],
        BASE[:-1] + [notify] + BASE[-1:],
        [HEADER],  # a header alone
        BASE[: len(BASE) // 2],  # cut at a line boundary
        [HEADER, "[" * 50_000],  # deep nesting
        [HEADER, process.replace("}", ', "left": ' + "9" * 5000 + "}")],  # a 5,000-digit integer
        [HEADER, process, json.dumps({"record": "final", "process": "q", "queues": [{"partitions": 5}]})],
        [HEADER, staged, json.dumps({"record": "final", "process": "s", "queues": [{"A": [], "staged": 7}]})],
        [HEADER, staged, json.dumps({"record": "final", "process": "s", "queues": [{"staged": [[[1]]]}]})],
    ]


CORPUS = _corpus()
NOISE = ["[", "]", "{", "}", '"', ",", ":", "9" * 25, "-", "1e999", "null", "true", '"\\ud800"', "\\", " ", "\x00"]


def mutate(rng: random.Random, lines: list[str]) -> list[str]:
    lines = list(lines)
    for _ in range(rng.randint(1, 3)):
        if not lines:
            lines.append(HEADER)
        k = rng.randrange(len(lines))
        text = lines[k]
        what = rng.randrange(8)
        cut = rng.randrange(len(text) + 1)
        if what == 0:  # cut the log short, maybe mid-line
            lines = lines[:k] + [text[:cut]]
        elif what == 1:  # insert noise
            lines[k] = text[:cut] + rng.choice(NOISE) + text[cut:]
        elif what == 2:  # delete a span
            lines[k] = text[:cut] + text[cut + rng.randint(1, 12) :]
        elif what == 3:  # repeat a line somewhere else
            lines.insert(rng.randrange(len(lines) + 1), text)
        elif what == 4:  # drop a line
            del lines[k]
        elif what == 5:  # swap two lines
            j = rng.randrange(len(lines))
            lines[k], lines[j] = lines[j], lines[k]
        elif what == 6:  # a number grows huge, or a value is nested deep
            lines[k] = re.sub(r"\d+", lambda m: m[0] * rng.choice((3, 300)), text, count=1)
        else:  # splice two lines
            other = rng.choice(lines)
            lines[k] = text[:cut] + other[rng.randrange(len(other) + 1) :]
    return lines


def test_mutation_corpus() -> None:
    rng = random.Random(20)
    for seed in CORPUS:
        judged(seed)
    for _ in range(600):
        judged(mutate(rng, rng.choice(CORPUS)))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
KINDS = st.sampled_from(["header", "process", "publish", "deliver", "notify", "final", "other"])
FIELDS = st.sampled_from(["time", "process", "event", "conjunction", "relation", "queues", "types", "left", "joined"])


@st.composite
def records(draw: st.DrawFn) -> str:
    """A line of the engine's log with one field (or the event's) replaced by an arbitrary value,
    or a record of some kind with arbitrary fields."""
    if draw(st.booleans()):
        record = json.loads(draw(st.sampled_from(BASE[1:])))
        target = record["event"] if record["record"] == "publish" and draw(st.booleans()) else record
        key = draw(st.sampled_from(sorted(target) + ["attrs", "k", "seq", "publisher"]))
        target[key] = draw(JSON)
    else:
        record = {"record": draw(KINDS)}
        record.update(draw(st.dictionaries(FIELDS, JSON, max_size=4)))
    return json.dumps(record)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records(), max_size=6), st.booleans())
def test_hypothesis_records(lines: list[str], header: bool) -> None:
    judged(([HEADER] if header else []) + lines)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=4))
def test_hypothesis_text(lines: list[str]) -> None:
    judged([HEADER, *lines])


def test_format_is_the_one_read() -> None:
    assert json.loads(HEADER)["format"] == FORMAT
    assert RunLog.read(BASE, NAME).incomplete() is None
