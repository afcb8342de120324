"""Generate the compiled search of an extended conjunction: the whole extended language.

The kernel is the extended reference matcher's search (:mod:`faidecs.matching.extended_matcher`)
as nested loops: slots in signature order, each trying its candidates in the matching option's
order, predicates checked where the reference checks them, the window's span (``max(ATTR) -
min(ATTR) <= D``, with Python's ``min``/``max`` and comparisons) checked at every slot, and each
negation checked at the slot that binds the last of its anchors and instances, as a loop over the
negation's log (an array of the logged events): ``no N(...) between X and Y`` over the events
strictly between the two, ``no N(...) after X`` (an absence) once the watermark passed X's
deadline ``X.ATTR + D``, over the events after X up to the deadline. Deadlines follow Python's
arithmetic: an int when times and duration are ints (an overflow of 64 bits returns ``UNDECIDED``
and the state searches with the reference matcher instead), else a float.

A group slot (``T+``) binds runs of its queue: per queue position the predicates on a member
alone and on a member and the one before it (``prev``) are evaluated once, which gives each
start the furthest end its run may reach (each end the earliest start, under MR and MRC), and
the runs are tried in the reference's order (FR, FRC, ALL: start oldest first, the longest run
first; MR, MRC: end newest first, the longest first). The run's aggregates (``count``, ``sum``,
``avg``, ``min``, ``max``, in Python's order of operations; a sum beyond 64 bits fails the
predicates that read it) are computed once it is bound, and the other predicates on its members
are checked for every member.

Unlike the plain kernels (:mod:`faidecs.matching.kernel_source`) it does no bookkeeping: the
Python state around it (:mod:`faidecs.matching.compiled_extended_state`) keeps the queues, the
logs, the watermark, late events, purging and disposal exactly as the reference state does, and
hands the kernel its queues and logs as encoded rows. The kernel returns per slot the queue
positions (start and end: a run, or one position twice) of the first valid relation in search
order, or under ALL of every one, in FR order; under NONE only relations new at this arrival
count (with the arriving event ``new``, or an absence whose deadline is at least the watermark
before the arrival). ``fixed`` binds one slot to the newest event of its queue (only relations
with the arriving event can be new, see ``kernel_source``): under NONE, or when the queues held
no match before, and never with absences (they become valid as time passes).

What it does not compile (the conjunction stays on the extended reference matcher): a predicate
over the members of two groups, a negation's predicate over a group's members, ordering
comparisons of strings, a negated type that is also queued, and a window whose attribute is an
int in some types and a float in others.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from faidecs.grammar.model import (
    Aggregate,
    ArithOp,
    AttrOf,
    Conjunction,
    Const,
    EventType,
    Kind,
    Negate,
    Predicate,
    PrevOf,
    Slot,
    Value,
    Window,
    value_parts,
    value_text,
)
from faidecs.matching.kernel_source import (
    _FLOAT_VIEW,
    KERNEL_VERSION,
    KernelSource,
    NotCompilable,
    _PredicateWriter,
    constants_in,
)

#: meta[...] of an extended kernel call (int64).
FIXED, MATCHING, ALL, SPAN, FRESH, NEW = 0, 1, 2, 3, 4, 5
META_SIZE = 6
#: mf[...] (float64): the window's duration as a float, the watermark now and before the arrival.
DURATION, WATERMARK, BEFORE = 0, 1, 2
MF_SIZE = 3
#: What a kernel returns besides a count: ``out`` is full (grow it and search again), and an
#: int64 overflow that only the reference matcher can decide exactly (search with it instead).
OUT_FULL, UNDECIDED = -1, -2
#: Matching codes: ALL searches in FR order (and collects every relation).
CODES = {"FR": 0, "MR": 1, "FRC": 2, "MRC": 3, "ALL": 0}

_INT_DURATION_MAX = 2**62


@dataclass(frozen=True)
class SpanMode:
    """How a kernel reads event time: ``times`` is "int", "float" or "" (no window);
    ``int_duration`` whether the window's duration is an int; ``positions`` the window
    attribute's position per queued type, ``log_positions`` per negation's type."""

    times: str
    int_duration: bool
    positions: tuple[int, ...]
    log_positions: tuple[int, ...]

    def duration(self, window: Window | None) -> tuple[int, float]:
        """``(meta[SPAN], mf[DURATION])``: the duration as an int (for int times, its floor:
        ``max - min`` is an integer, so ``> D`` holds exactly when ``> floor(D)`` does) and as a float."""
        if window is None:
            return 0, 0.0
        return int(math.floor(window.duration)), float(window.duration)


def span_mode(conjunction: Conjunction, types: Mapping[str, EventType], window: Window | None) -> SpanMode:
    if window is None:
        return SpanMode("", False, (), ())
    positions = tuple(types[t].position(window.attribute) for t in conjunction.types)
    logs = tuple(types[n.type_name].position(window.attribute) for n in conjunction.negations)
    names = [*conjunction.types, *(n.type_name for n in conjunction.negations)]
    kinds = {types[t].attributes[p].kind for t, p in zip(names, positions + logs)}
    d = window.duration
    if not (isinstance(d, (int, float)) and math.isfinite(d) and 0 <= d <= _INT_DURATION_MAX):
        raise NotCompilable(f"a window of {d!r}")
    if len(kinds) != 1:
        raise NotCompilable(f"a window on {window.attribute}, an int in some types and a float in others")
    return SpanMode("int" if kinds == {Kind.INT} else "float", isinstance(d, int), positions, logs)


def signature(m: int, logs: int) -> str:
    """The numba signature of an extended kernel over ``m`` queues and ``logs`` negation logs."""
    tables = ", ".join(["int64[:, ::1]"] * (m + logs + 1))
    return f"int64(int64[::1], int64[::1], float64[::1], {tables})"


_shapes: dict[tuple[str, ...], KernelSource | NotCompilable] = {}
_SHAPES_KEPT = 4096


def generate_extended(
    conjunction: Conjunction, types: Mapping[str, EventType], window: Window | None
) -> tuple[KernelSource, SpanMode]:
    """The extended kernel's source for ``conjunction`` under ``window``, with its constants;
    raises :class:`NotCompilable`."""
    if set(conjunction.negated_types) & set(conjunction.types):
        raise NotCompilable("a negated type that is also queued")
    span = span_mode(conjunction, types, window)
    widths = tuple(len(types[t].attributes) for t in conjunction.types)
    log_widths = tuple(len(types[n.type_name].attributes) for n in conjunction.negations)
    key = (_extended_shape(conjunction), str(widths), str(log_widths), str(span))
    template = _shapes.get(key)
    if template is None:
        if len(_shapes) >= _SHAPES_KEPT:
            _shapes.clear()
        try:
            template = _ExtendedGenerator(conjunction, types, span).build()
        except NotCompilable as exc:
            template = exc
        _shapes[key] = template
    if isinstance(template, NotCompilable):
        raise template
    constants = _all_constants(conjunction)
    assert len(constants) == len(template.constants)
    return replace(template, types=conjunction.types, constants=constants), span


def _value_shape(value: Value, types: Mapping[str, int]) -> str:
    """A value's text with constants replaced by their kinds and attributes by the index of
    their type (-1: a negated event), instance, position and kind: names are not code."""
    if isinstance(value, Const):
        return value_text(value) if value.kind is Kind.BOOL else f"<{value.kind.value}>"
    if isinstance(value, AttrOf):
        return f"T{types[value.slot.type_name]}[{value.slot.index}].{value.position}:{value.kind.value}"
    if isinstance(value, PrevOf):
        return f"prev(T{types[value.slot.type_name]}).{value.position}:{value.kind.value}"
    if isinstance(value, Aggregate):
        return f"{value.function}(T{types[value.slot.type_name]}.{value.position}):{value.kind.value}"
    if isinstance(value, Negate):
        return f"-({_value_shape(value.operand, types)})"
    assert isinstance(value, ArithOp)
    return f"({_value_shape(value.left, types)} {value.op} {_value_shape(value.right, types)})"


def _shape_types(conjunction: Conjunction) -> dict[str, int]:
    return {**{n.type_name: -1 for n in conjunction.negations}, **{t: i for i, t in enumerate(conjunction.types)}}


def _predicate_shape(p: Predicate, types: Mapping[str, int]) -> str:
    return f"{_value_shape(p.left, types)} {p.op} {_value_shape(p.right, types)}"


def _ordered(conjunction: Conjunction) -> list[Predicate]:
    """The predicates in the order the kernel checks them: by shape (see ``kernel_source``)."""
    types = _shape_types(conjunction)
    return sorted(conjunction.predicates, key=lambda p: _predicate_shape(p, types))


def _negation_predicates(conjunction: Conjunction) -> list[list[Predicate]]:
    """Per negation, the predicates the search checks (those naming more than the negated
    event: the others filter what the log keeps), in shape order."""
    types = _shape_types(conjunction)
    out = []
    for neg in conjunction.negations:
        checks = [p for p in neg.predicates if p.slots != {neg.slot}]
        out.append(sorted(checks, key=lambda p: _predicate_shape(p, types)))
    return out


def _extended_shape(conjunction: Conjunction) -> str:
    """The conjunction with its constants and names left out: equal shapes share a kernel."""
    types = _shape_types(conjunction)
    sig = {s: k for k, s in enumerate(conjunction.signature)}
    groups = ", ".join(
        f"T{types[s.type_name]}" + ("+" if s.type_name in conjunction.groups else f"[{s.index}]")
        for s in conjunction.signature
    )
    parts = [f"[{groups}] " + " and ".join(_predicate_shape(p, types) for p in _ordered(conjunction))]
    for neg, preds in zip(conjunction.negations, _negation_predicates(conjunction)):
        texts = " and ".join(_predicate_shape(p, types) for p in preds)
        parts.append(f"no({sig[neg.first]},{'' if neg.second is None else sig[neg.second]}: {texts})")
    return " | ".join(parts)


def _all_constants(conjunction: Conjunction) -> tuple[Const, ...]:
    """The constants in the order the generator numbers them: the conjunction's predicates',
    then each negation's."""
    out = constants_in(_ordered(conjunction))
    for preds in _negation_predicates(conjunction):
        out += constants_in(preds)
    return tuple(out)


class _GroupWriter(_PredicateWriter):
    """The predicate writer, with ``prev(T).a`` and aggregates read as parameters too."""

    def _value(self, value: Value) -> tuple[str, Kind]:
        if isinstance(value, (PrevOf, Aggregate)):
            params: list[Value] = self.params  # type: ignore[assignment]
            if value not in params:
                params.append(value)
            return f"v{params.index(value)}", value.kind
        return super()._value(value)


@dataclass(frozen=True)
class _Check:
    """A predicate as the search checks it: at slot ``position``; for every member of group
    ``member`` (its run, from its second member when ``paired``), or once (``member`` -1)."""

    pred: Predicate
    position: int
    member: int
    paired: bool
    aggregates: tuple[Aggregate, ...]


class _ExtendedGenerator:
    def __init__(self, conjunction: Conjunction, types: Mapping[str, EventType], span: SpanMode):
        self.conj = conjunction
        self.sig = conjunction.signature
        self.n = len(self.sig)
        self.types = conjunction.types
        self.m = len(self.types)
        tindex = {t: i for i, t in enumerate(self.types)}
        self.widths = tuple(len(types[t].attributes) for t in self.types)
        self.slot_type = [tindex[s.type_name] for s in self.sig]
        self.slot_index = {s: k for k, s in enumerate(self.sig)}
        self.span = span
        self.constants: list[Const] = []
        self.functions: list[str] = []
        self.writer = _GroupWriter(self.constants)
        self.group = [s.type_name in conjunction.groups for s in self.sig]
        self.count = 0
        # Per group slot, its aggregates: the variable each is computed into when a run is bound.
        self.aggregates: dict[Aggregate, str] = {}
        self.attr_kinds = {t: [a.kind for a in types[t].attributes] for t in self.types}

    # --- values ------------------------------------------------------------------------------

    def _ref(self, value: Value, negated: Slot | None = None, log: int = -1) -> str:
        """Where the kernel reads a parameter: the negated event's row, an instance's row, the
        member ``i{k}`` of a group (or the one before it), or an aggregate's variable."""
        if isinstance(value, Aggregate):
            return self.aggregates[value]
        assert isinstance(value, (AttrOf, PrevOf))
        float_kind = value.kind is Kind.FLOAT
        if negated is not None and value.slot == negated:
            return f"{'lf' if float_kind else 'l'}{log}[x{log}, {2 + value.position}]"
        k = self.slot_index[value.slot]
        array = f"{'f' if float_kind else 'q'}{self.slot_type[k]}"
        if isinstance(value, PrevOf):
            return f"{array}[i{k} - 1, {2 + value.position}]"
        row = f"i{k}" if self.group[k] else f"p{k}"
        return f"{array}[{row}, {2 + value.position}]"

    def _call(self, pred: Predicate, negated: Slot | None = None, log: int = -1) -> str:
        name = f"_p{self.count}"
        self.count += 1
        text, template, written = self.writer.function(name, pred)
        params: list[Value] = [*written]  # with prev() and aggregates too (_GroupWriter)
        if text is not None:
            self.functions.append(text)
        call = template.format(**{f"v{i}": self._ref(a, negated, log) for i, a in enumerate(params)})
        # A sum over 64 bits fails its predicates, as the reference's ArithmeticError does.
        guards = sorted({f"{self.aggregates[a]}ok" for a in params if isinstance(a, Aggregate)})
        return "(" + " and ".join([*guards, call]) + ")" if guards else call

    def _time(self, k: int, row: str | None = None) -> str:
        t = self.slot_type[k]
        array = "q" if self.span.times == "int" else "f"
        return f"{array}{t}[{row or f'p{k}'}, {2 + self.span.positions[t]}]"

    def _span_ok(self, k: int) -> str:
        if self.span.times == "int":
            return f"span_int(lo{k}, hi{k}, dn)"
        if not self.span.int_duration:
            return f"not (hi{k} - lo{k} > df)"
        return f"cmp_int_float(dn, hi{k} - lo{k}) != -1"  # not D < max - min (NaN: holds)

    def _absence(self, j: int, first: int, calls: list[str], emit: Callable[[str], None]) -> str:
        """Emit the deadline ``dl{j}`` of absence ``j`` and the loop over its log; return the
        condition under which the relation is valid. Python's arithmetic and comparisons: an int
        deadline when times and duration are ints (an overflow leaves it to the reference)."""
        anchor = self._time(first)
        at = f"q{self.slot_type[first]}[p{first}, 0]"
        lt = f"{'l' if self.span.times == 'int' else 'lf'}{j}[x{j}, {2 + self.span.log_positions[j]}]"
        if self.span.times == "int" and self.span.int_duration:
            emit(f"dl{j}, ok{j} = add_int({anchor}, dn)")
            emit(f"if not ok{j}:")
            emit(f"    return {UNDECIDED}")
            passed = f"cmp_int_float(dl{j}, wm) == -1"
            inside = f"{lt} <= dl{j}"
        else:
            duration = "df" if not self.span.int_duration else "float(dn)"
            emit(f"dl{j} = float({anchor}) + {duration}")
            passed = f"wm > dl{j}"
            inside = f"{lt} <= dl{j}" if self.span.times == "float" else f"cmp_int_float({lt}, dl{j}) in (-1, 0)"
        emit(f"clear{j} = {passed}")
        emit(f"if clear{j}:")
        emit(f"    for x{j} in range(l{j}.shape[0]):")
        test = " and ".join([f"l{j}[x{j}, 0] > {at}", inside, *calls])
        emit(f"        if {test}:")
        emit(f"            clear{j} = False")
        emit("            break")
        return f"clear{j}"

    # --- the predicates, placed as the reference matcher places them --------------------------

    def _classify(
        self,
    ) -> tuple[list[_Check], dict[int, list[_Check]], dict[int, list[_Check]], dict[int, list[_Check]]]:
        """``(member, pair, checks)`` by slot, as ``ExtendedMatcher`` sorts them: a predicate on
        one group's members alone (bound instances aside, no aggregate) is evaluated per queue
        position (``member``) or consecutive pair (``pair``) before the runs are formed; every
        other one at the slot that binds the last of its instances, for every member of the
        one group it names (a predicate naming the members of two groups is not compiled)."""
        member: dict[int, list[_Check]] = {}
        pair: dict[int, list[_Check]] = {}
        checks: dict[int, list[_Check]] = {}
        ordered = []
        for pred in _ordered(self.conj):
            parts = [*value_parts(pred.left), *value_parts(pred.right)]
            members = sorted(
                {
                    self.slot_index[v.slot]
                    for v in parts
                    if isinstance(v, (AttrOf, PrevOf)) and self.group[self.slot_index[v.slot]]
                }
            )
            if len(members) > 1:
                raise NotCompilable("a predicate over the members of two groups")
            paired = any(isinstance(v, PrevOf) for v in parts)
            aggregates = tuple(v for v in parts if isinstance(v, Aggregate))
            position = max(self.slot_index[s] for s in pred.slots)
            check = _Check(pred, position, members[0] if members else -1, paired, aggregates)
            ordered.append(check)
            if self.group[position] and members == [position] and not aggregates:
                (pair if paired else member).setdefault(position, []).append(check)
            else:
                checks.setdefault(position, []).append(check)
        return ordered, member, pair, checks

    # --- the search --------------------------------------------------------------------------

    def build(self) -> KernelSource:
        for k in range(self.n):
            if self.group[k]:
                for a in sorted(
                    {
                        v
                        for p in self.conj.predicates
                        for v in (*value_parts(p.left), *value_parts(p.right))
                        if isinstance(v, Aggregate) and self.slot_index[v.slot] == k
                    },
                    key=lambda a: (a.function, a.position),
                ):
                    self.aggregates[a] = f"ag{k}_{len(self.aggregates)}"
        ordered, member, pair, checks = self._classify()
        # Written in shape order: the constants are numbered in that order (_all_constants).
        calls = {id(c): self._call(c.pred) for c in ordered}
        names = {id(c): f"every{j}" for j, c in enumerate(ordered)}
        negations: dict[int, list[tuple[int, int, int | None, list[str]]]] = {}
        absences = []
        for j, (neg, preds) in enumerate(zip(self.conj.negations, _negation_predicates(self.conj))):
            for p in preds:
                for v in (*value_parts(p.left), *value_parts(p.right)):
                    if isinstance(v, (Aggregate, PrevOf)) or (
                        isinstance(v, AttrOf) and v.slot != neg.slot and self.group[self.slot_index[v.slot]]
                    ):
                        raise NotCompilable("a negation's predicate over a group's members")
            first = self.slot_index[neg.first]
            second = None if neg.second is None else self.slot_index[neg.second]
            anchors = [first] + ([] if second is None else [second])
            at = max(anchors + [self.slot_index[s] for p in preds for s in p.slots - {neg.slot}])
            negations.setdefault(at, []).append((j, first, second, [self._call(p, neg.slot, j) for p in preds]))
            if second is None:
                absences.append(j)
        logs = len(self.conj.negations)
        qargs = ", ".join(f"q{t}" for t in range(self.m))
        largs = "".join(f", l{j}" for j in range(logs))
        lines = [f"@njit(cache=True)\ndef kernel(meta, sc, mf, {qargs}{largs}, out):", f"    {_FLOAT_VIEW}"]

        def emit(ind: int, text: str) -> None:
            lines.append("    " * ind + text)

        for t in range(self.m):
            emit(1, f"f{t} = q{t}.view(np.float64)")
            emit(1, f"n{t} = q{t}.shape[0]")
        for j in range(logs):
            emit(1, f"lf{j} = l{j}.view(np.float64)")
        emit(1, f"fixed = meta[{FIXED}]")
        emit(1, f"mr = meta[{MATCHING}] == 1 or meta[{MATCHING}] == 3")
        emit(1, f"contig = meta[{MATCHING}] == 2 or meta[{MATCHING}] == 3")
        emit(1, f"collect = meta[{ALL}] != 0")
        emit(1, f"dn = meta[{SPAN}]")
        emit(1, f"df = mf[{DURATION}]")
        emit(1, f"fresh = meta[{FRESH}] != 0")
        emit(1, f"new = meta[{NEW}]")
        emit(1, f"wm = mf[{WATERMARK}]")
        emit(1, f"before = mf[{BEFORE}]")
        emit(1, "cap = out.shape[0]")
        emit(1, "nout = 0")
        emit(1, "step = -1 if mr else 1")
        for k in range(self.n):
            emit(1, f"p{k} = 0")
            if self.group[k]:
                t = self.slot_type[k]
                emit(1, f"e{k} = 0")
                emit(1, f"i{k} = 0")
                emit(1, f"mo{k} = np.empty(n{t}, np.bool_)")
                emit(1, f"po{k} = np.empty(n{t}, np.bool_)")
                emit(1, f"rc{k} = np.empty(n{t}, np.int64)")
        for j in absences:
            emit(1, f"dl{j} = {'0' if self.span.times == 'int' and self.span.int_duration else '0.0'}")

        def every(ind: int, c: _Check, name: str) -> None:
            """``name`` = the check holds for every member of its group's bound run."""
            g = c.member
            emit(ind, f"{name} = True")
            emit(ind, f"for i{g} in range(p{g}{' + 1' if c.paired else ''}, e{g} + 1):")
            emit(ind, f"    if not {calls[id(c)]}:")
            emit(ind, f"        {name} = False")
            emit(ind, "        break")

        def runs(k: int, ind: int) -> int:
            """Emit the loops over the runs of group slot ``k`` in search order (FR, FRC, ALL: by
            start, oldest first, the longest first; MR, MRC: by end, newest first, the longest
            first), binding ``p{k}`` (start) and ``e{k}`` (end); return the indentation inside."""
            t = self.slot_type[k]
            ms = [calls[id(c)] for c in member.get(k, [])]
            ps = [calls[id(c)] for c in pair.get(k, [])]
            emit(ind, f"for i{k} in range(n{t}):")
            emit(ind, f"    mo{k}[i{k}] = {' and '.join(ms) if ms else 'True'}")
            emit(ind, f"    po{k}[i{k}] = {('i' + str(k) + ' == 0 or (' + ' and '.join(ps) + ')') if ps else 'True'}")
            emit(ind, "if mr:")
            emit(ind, f"    for u{k} in range(n{t}):")
            emit(ind, f"        if not mo{k}[u{k}]:")
            emit(ind, f"            rc{k}[u{k}] = u{k} + 1")
            emit(ind, f"        elif u{k} > 0 and po{k}[u{k}] and mo{k}[u{k} - 1]:")
            emit(ind, f"            rc{k}[u{k}] = rc{k}[u{k} - 1]")
            emit(ind, "        else:")
            emit(ind, f"            rc{k}[u{k}] = u{k}")
            emit(ind, "else:")
            emit(ind, f"    for u{k} in range(n{t} - 1, -1, -1):")
            emit(ind, f"        if not mo{k}[u{k}]:")
            emit(ind, f"            rc{k}[u{k}] = u{k} - 1")
            emit(ind, f"        elif u{k} + 1 < n{t} and po{k}[u{k} + 1] and mo{k}[u{k} + 1]:")
            emit(ind, f"            rc{k}[u{k}] = rc{k}[u{k} + 1]")
            emit(ind, "        else:")
            emit(ind, f"            rc{k}[u{k}] = u{k}")
            emit(ind, f"for u{k} in range(n{t}):")
            emit(ind, "    if mr:")
            emit(ind, f"        g{k} = n{t} - 1 - u{k}")
            emit(ind, f"        cnt{k} = g{k} - rc{k}[g{k}] + 1")
            emit(ind, "    else:")
            emit(ind, f"        g{k} = u{k}")
            emit(ind, f"        cnt{k} = rc{k}[g{k}] - g{k} + 1")
            emit(ind, f"    for w{k} in range(cnt{k}):")
            emit(ind, "        if mr:")
            emit(ind, f"            p{k} = rc{k}[g{k}] + w{k}")
            emit(ind, f"            e{k} = g{k}")
            emit(ind, "        else:")
            emit(ind, f"            p{k} = g{k}")
            emit(ind, f"            e{k} = rc{k}[g{k}] - w{k}")
            # Only runs with the arriving event (the newest of the queue: a run's end) when fixed.
            emit(ind, f"        if fixed == {k} and e{k} != n{t} - 1:")
            emit(ind, "            continue")
            return ind + 2

        def aggregate(k: int, ind: int) -> None:
            """Compute the aggregates over the bound run of group slot ``k``, as
            ``extended_values.aggregate`` does (a sum over 64 bits: its flag is False)."""
            t = self.slot_type[k]
            for a, var in self.aggregates.items():
                if self.slot_index[a.slot] != k:
                    continue
                emit(ind, f"{var}ok = True")
                if a.function == "count":
                    emit(ind, f"{var} = e{k} - p{k} + 1")
                    continue
                kind = self.attr_kinds[self.types[t]][a.position]
                array = f"{'f' if kind is Kind.FLOAT else 'q'}{t}"
                first, at = f"{array}[p{k}, {2 + a.position}]", f"{array}[i{k}, {2 + a.position}]"
                value = var if a.function in ("min", "max") else f"{var}s"  # avg: the sum, then a float
                emit(ind, f"{value} = {first}")
                emit(ind, f"for i{k} in range(p{k} + 1, e{k} + 1):")
                if a.function == "min":
                    emit(ind, f"    if {at} < {value}:")
                    emit(ind, f"        {value} = {at}")
                elif a.function == "max":
                    emit(ind, f"    if {at} > {value}:")
                    emit(ind, f"        {value} = {at}")
                elif kind is Kind.INT:
                    emit(ind, f"    {value}, okk = add_int({value}, {at})")
                    emit(ind, "    if not okk:")
                    emit(ind, f"        {var}ok = False")
                    emit(ind, "        break")
                else:
                    emit(ind, f"    {value} = {value} + {at}")
                if a.function == "avg":
                    emit(ind, f"{var} = float({value}) / (e{k} - p{k} + 1)")
                elif a.function == "sum":
                    emit(ind, f"{var} = {value}")

        def slot(k: int, ind: int) -> None:
            if k == self.n:
                # Under NONE only relations new at this arrival count: with the arriving event
                # (a group's run has it at its end), or an absence whose deadline the
                # watermark passed just now.
                fresh = [f"q{self.slot_type[j]}[{'e' if self.group[j] else 'p'}{j}, 0] == new" for j in range(self.n)]
                for j in absences:
                    if self.span.times == "int" and self.span.int_duration:
                        fresh.append(f"cmp_int_float(dl{j}, before) in (0, 1)")
                    else:
                        fresh.append(f"dl{j} >= before")
                emit(ind, f"if fresh and not ({' or '.join(fresh)}):")
                emit(ind, "    continue")
                for j in range(self.n):
                    emit(ind, f"out[nout, {2 * j}] = p{j}")
                    emit(ind, f"out[nout, {2 * j + 1}] = {'e' if self.group[j] else 'p'}{j}")
                emit(ind, "nout += 1")
                emit(ind, "if not collect:")
                emit(ind, "    return nout")
                emit(ind, "if nout == cap:")
                emit(ind, f"    return {OUT_FULL}")
                return
            t = self.slot_type[k]
            if self.group[k]:
                ind = runs(k, ind)
                if self.span.times:
                    # Python's min() and max() of the run's times, then with the slots before.
                    emit(ind, f"tl{k} = {self._time(k)}")
                    emit(ind, f"th{k} = tl{k}")
                    emit(ind, f"for i{k} in range(p{k} + 1, e{k} + 1):")
                    emit(ind, f"    if {self._time(k, f'i{k}')} < tl{k}:")
                    emit(ind, f"        tl{k} = {self._time(k, f'i{k}')}")
                    emit(ind, f"    if {self._time(k, f'i{k}')} > th{k}:")
                    emit(ind, f"        th{k} = {self._time(k, f'i{k}')}")
                aggregate(k, ind)
            else:
                if self.sig[k].index == 0:
                    emit(ind, f"st{k} = n{t} - 1 if mr else 0")
                    emit(ind, f"cnt{k} = n{t}")
                else:
                    emit(ind, f"st{k} = p{k - 1} + step")
                    emit(ind, "if contig:")
                    emit(ind, f"    cnt{k} = 1 if 0 <= st{k} < n{t} else 0")
                    emit(ind, "else:")
                    emit(ind, f"    cnt{k} = n{t} - st{k} if not mr else st{k} + 1")
                emit(ind, f"if fixed == {k}:")
                emit(
                    ind,
                    f"    if cnt{k} > 0 and ((not mr and st{k} <= n{t} - 1 < st{k} + cnt{k}) "
                    f"or (mr and st{k} - cnt{k} < n{t} - 1 <= st{k})):",
                )
                emit(ind, f"        st{k} = n{t} - 1")
                emit(ind, f"        cnt{k} = 1")
                emit(ind, "    else:")
                emit(ind, f"        cnt{k} = 0")
                emit(ind, f"for c{k} in range(cnt{k}):")
                ind += 1
                emit(ind, f"p{k} = st{k} + c{k} * step")
                if self.span.times:
                    emit(ind, f"tl{k} = {self._time(k)}")
                    emit(ind, f"th{k} = tl{k}")
            conditions = []
            if self.span.times:
                if k == 0:
                    emit(ind, f"lo{k} = tl{k}")
                    emit(ind, f"hi{k} = th{k}")
                else:  # Python's min(new, old) and max(new, old): NaN stays where Python keeps it
                    emit(ind, f"lo{k} = lo{k - 1} if lo{k - 1} < tl{k} else tl{k}")
                    emit(ind, f"hi{k} = hi{k - 1} if hi{k - 1} > th{k} else th{k}")
                conditions.append(self._span_ok(k))
            if conditions:
                emit(ind, f"if {' and '.join(conditions)}:")
                ind += 1
            once = [calls[id(c)] for c in checks.get(k, []) if c.member < 0]
            for c in checks.get(k, []):
                if c.member >= 0:
                    every(ind, c, names[id(c)])
                    once.append(names[id(c)])
            if once:
                emit(ind, f"if {' and '.join(once)}:")
                ind += 1
            for j, first, second, negation_calls in negations.get(k, []):
                if second is None:
                    clear = self._absence(j, first, negation_calls, functools.partial(emit, ind))
                    emit(ind, f"if {clear}:")
                    ind += 1
                    continue
                # No logged event strictly between the anchors (either order; a group's anchor
                # is its run's first member) passes the checks.
                a, b = f"q{self.slot_type[first]}[p{first}, 0]", f"q{self.slot_type[second]}[p{second}, 0]"
                emit(ind, f"lowest{j} = min({a}, {b})")
                emit(ind, f"highest{j} = max({a}, {b})")
                emit(ind, f"clear{j} = True")
                emit(ind, f"for x{j} in range(l{j}.shape[0]):")
                test = " and ".join([f"lowest{j} < l{j}[x{j}, 0] < highest{j}"] + negation_calls)
                emit(ind, f"    if {test}:")
                emit(ind, f"        clear{j} = False")
                emit(ind, "        break")
                emit(ind, f"if clear{j}:")
                ind += 1
            slot(k + 1, ind)

        slot(0, 1)
        emit(1, "return nout")
        header = (
            f"# faidecs extended kernel, generator version {KERNEL_VERSION}. Generated: do not edit.\n"
            f"# shape {_extended_shape(self.conj)!r}\n# attributes per type {self.widths}; span {self.span}\n\n"
            "import numpy as np\nfrom numba import njit\n\n"
            "from faidecs.matching.kernel_ops import add_int, cmp_int_float, mul_int, neg_int, span_int, sub_int\n\n\n"
        )
        source = header + "\n\n".join([*self.functions, "\n".join(lines) + "\n"])
        key = "x" + hashlib.sha256(source.encode()).hexdigest()[:23]
        return KernelSource(
            source,
            key,
            self.types,
            self.widths,
            tuple(self.constants),
            False,
            signature(self.m, logs),
        )
