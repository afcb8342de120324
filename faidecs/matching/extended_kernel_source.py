"""Generate the compiled search of an extended conjunction: windows, ALL/NONE, negations, absences.

The kernel is the extended reference matcher's search (:mod:`faidecs.matching.extended_matcher`)
as nested loops: slots in signature order, each trying its candidates in the matching option's
order, predicates checked at the slot that binds the last of their instances, the window's span
(``max(ATTR) - min(ATTR) <= D``, with Python's ``min``/``max`` and comparisons) checked at every
slot, and each negation checked at the slot that binds the last of its anchors and instances, as
a loop over the negation's log (an array of the logged events): ``no N(...) between X and Y``
over the events strictly between the two, ``no N(...) after X`` (an absence) once the watermark
passed X's deadline ``X.ATTR + D``, over the events after X up to the deadline. Deadlines follow
Python's arithmetic: an int when times and duration are ints (an overflow of 64 bits returns
``UNDECIDED`` and the state searches with the reference matcher instead), else a float.

Unlike the plain kernels (:mod:`faidecs.matching.kernel_source`) it does no bookkeeping: the
Python state around it (:mod:`faidecs.matching.compiled_extended_state`) keeps the queues, the
logs, the watermark, late events, purging and disposal exactly as the reference state does, and
hands the kernel its queues and logs as encoded rows. The kernel returns the queue positions of
the first valid relation in search order, or under ALL of every one, in FR order; under NONE
only relations new at this arrival count (with the arriving event ``new``, or an absence whose
deadline is at least the watermark before the arrival). ``fixed`` binds one slot to the newest
event of its queue (only relations with the arriving event can be new, see ``kernel_source``):
under NONE, or when the queues held no match before, and never with absences (they become
valid as time passes).

What it does not compile (the conjunction stays on the extended reference matcher): groups
(``T+``, with ``prev`` and aggregates), ordering comparisons of strings, a negated type that is
also queued, and a window whose attribute is an int in some types and a float in others.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from faidecs.grammar.model import (
    ArithOp,
    AttrOf,
    Conjunction,
    Const,
    EventType,
    Kind,
    Negate,
    Predicate,
    Slot,
    Value,
    Window,
)
from faidecs.matching.kernel_source import (
    _FLOAT_VIEW,
    KERNEL_VERSION,
    KernelSource,
    NotCompilable,
    _constants_of,
    _ordered,
    _predicate_shape,
    _PredicateWriter,
    _type_indices,
    shape_text,
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
    if conjunction.groups:
        raise NotCompilable("groups (T+) run on the extended reference matcher")
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


def _negation_predicates(conjunction: Conjunction) -> list[list[Predicate]]:
    """Per negation, the predicates the search checks (those naming more than the negated
    event: the others filter what the log keeps), in shape order."""
    types = {**_type_indices(conjunction), **{n.type_name: -1 for n in conjunction.negations}}
    out = []
    for neg in conjunction.negations:
        checks = [p for p in neg.predicates if p.slots != {neg.slot}]
        out.append(sorted(checks, key=lambda p: _predicate_shape(p, types)))
    return out


def _negation_shape(conjunction: Conjunction) -> list[str]:
    types = {**_type_indices(conjunction), **{n.type_name: -1 for n in conjunction.negations}}
    sig = {s: k for k, s in enumerate(conjunction.signature)}
    out = []
    for neg, preds in zip(conjunction.negations, _negation_predicates(conjunction)):
        # A negated event's attributes read as T-1[0]: its type's name is not part of the shape.
        texts = " and ".join(_predicate_shape(p, types) for p in preds)
        out.append(f"no({sig[neg.first]},{sig[neg.second] if neg.second else ''}: {texts})")
    return out


def _extended_shape(conjunction: Conjunction) -> str:
    return shape_text(conjunction) + " | " + " | ".join(_negation_shape(conjunction))


def _all_constants(conjunction: Conjunction) -> tuple[Const, ...]:
    """The constants in the order the generator numbers them: the conjunction's predicates',
    then each negation's."""
    out = list(_constants_of(conjunction))

    def visit(value: Value) -> None:  # in the order the predicate writer numbers them
        if isinstance(value, Const):
            if value.kind is not Kind.BOOL:
                out.append(value)
        elif isinstance(value, Negate):
            visit(value.operand)
        elif isinstance(value, ArithOp):
            visit(value.left)
            visit(value.right)

    for preds in _negation_predicates(conjunction):
        for p in preds:
            visit(p.left)
            visit(p.right)
    return tuple(out)


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
        self.writer = _PredicateWriter(self.constants)
        self.count = 0

    def _ref(self, attr: AttrOf, negated: Slot | None = None, log: int = -1) -> str:
        if negated is not None and attr.slot == negated:
            array = f"lf{log}" if attr.kind is Kind.FLOAT else f"l{log}"
            return f"{array}[x{log}, {2 + attr.position}]"
        k = self.slot_index[attr.slot]
        t = self.slot_type[k]
        array = f"f{t}" if attr.kind is Kind.FLOAT else f"q{t}"
        return f"{array}[p{k}, {2 + attr.position}]"

    def _call(self, pred: Predicate, negated: Slot | None = None, log: int = -1) -> str:
        name = f"_p{self.count}"
        self.count += 1
        text, template, params = self.writer.function(name, pred)
        if text is not None:
            self.functions.append(text)
        return template.format(**{f"v{i}": self._ref(a, negated, log) for i, a in enumerate(params)})

    def _time(self, k: int) -> str:
        t = self.slot_type[k]
        array = "q" if self.span.times == "int" else "f"
        return f"{array}{t}[p{k}, {2 + self.span.positions[t]}]"

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

    def build(self) -> KernelSource:
        checks: dict[int, list[str]] = {}
        for pred in _ordered(self.conj):
            last = max(self.slot_index[s] for s in pred.slots)
            checks.setdefault(last, []).append(self._call(pred))
        negations: dict[int, list[tuple[int, int, int | None, list[str]]]] = {}
        absences = []
        for j, (neg, preds) in enumerate(zip(self.conj.negations, _negation_predicates(self.conj))):
            first = self.slot_index[neg.first]
            second = None if neg.second is None else self.slot_index[neg.second]
            anchors = [first] + ([] if second is None else [second])
            at = max(anchors + [self.slot_index[s] for p in preds for s in p.slots - {neg.slot}])
            calls = [self._call(p, neg.slot, j) for p in preds]
            negations.setdefault(at, []).append((j, first, second, calls))
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
        for j in absences:
            emit(1, f"dl{j} = {'0' if self.span.times == 'int' and self.span.int_duration else '0.0'}")

        def slot(k: int, ind: int) -> None:
            if k == self.n:
                # Under NONE only relations new at this arrival count: with the arriving event,
                # or an absence whose deadline the watermark passed just now.
                fresh = [f"q{self.slot_type[j]}[p{j}, 0] == new" for j in range(self.n)]
                for j in absences:
                    if self.span.times == "int" and self.span.int_duration:
                        fresh.append(f"cmp_int_float(dl{j}, before) in (0, 1)")
                    else:
                        fresh.append(f"dl{j} >= before")
                emit(ind, f"if fresh and not ({' or '.join(fresh)}):")
                emit(ind, "    continue")
                for j in range(self.n):
                    emit(ind, f"out[nout, {j}] = p{j}")
                emit(ind, "nout += 1")
                emit(ind, "if not collect:")
                emit(ind, "    return nout")
                emit(ind, "if nout == cap:")
                emit(ind, f"    return {OUT_FULL}")
                return
            t = self.slot_type[k]
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
            conditions = []
            if self.span.times:
                emit(ind, f"tm{k} = {self._time(k)}")
                if k == 0:
                    emit(ind, f"lo{k} = tm{k}")
                    emit(ind, f"hi{k} = tm{k}")
                else:  # Python's min(new, old) and max(new, old): NaN stays where Python keeps it
                    emit(ind, f"lo{k} = lo{k - 1} if lo{k - 1} < tm{k} else tm{k}")
                    emit(ind, f"hi{k} = hi{k - 1} if hi{k - 1} > tm{k} else tm{k}")
                conditions.append(self._span_ok(k))
            conditions += checks.get(k, [])
            if conditions:
                emit(ind, f"if {' and '.join(conditions)}:")
                ind += 1
            for j, first, second, calls in negations.get(k, []):
                if second is None:
                    clear = self._absence(j, first, calls, functools.partial(emit, ind))
                    emit(ind, f"if {clear}:")
                    ind += 1
                    continue
                # No logged event strictly between the anchors (either order) passes the checks.
                a, b = f"q{self.slot_type[first]}[p{first}, 0]", f"q{self.slot_type[second]}[p{second}, 0]"
                emit(ind, f"lowest{j} = min({a}, {b})")
                emit(ind, f"highest{j} = max({a}, {b})")
                emit(ind, f"clear{j} = True")
                emit(ind, f"for x{j} in range(l{j}.shape[0]):")
                test = " and ".join([f"lowest{j} < l{j}[x{j}, 0] < highest{j}"] + calls)
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
