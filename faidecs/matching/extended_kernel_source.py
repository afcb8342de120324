"""Generate the compiled search of an extended conjunction: windows, ALL/NONE, negations between.

The kernel is the extended reference matcher's search (:mod:`faidecs.matching.extended_matcher`)
as nested loops: slots in signature order, each trying its candidates in the matching option's
order, predicates checked at the slot that binds the last of their instances, the window's span
(``max(ATTR) - min(ATTR) <= D``, with Python's ``min``/``max`` and comparisons) checked at every
slot, and each ``no N(...) between X and Y`` checked at the slot that binds the last of its
anchors and instances, as a loop over the negation's log (an array of the logged events).

Unlike the plain kernels (:mod:`faidecs.matching.kernel_source`) it does no bookkeeping: the
Python state around it (:mod:`faidecs.matching.compiled_extended_state`) keeps the queues, the
logs, the watermark, late events, purging and disposal exactly as the reference state does, and
hands the kernel its queues and logs as encoded rows. The kernel returns the queue positions of
the first valid relation in search order, or under ALL of every one, in FR order. ``fixed``
binds one slot to the newest event of its queue (only relations with the arriving event can be
new, see ``kernel_source``): under NONE always, otherwise when the queues held no match before.

What it does not compile (the conjunction stays on the extended reference matcher): groups
(``T+``, with ``prev`` and aggregates), absences (``no N after X``), ordering comparisons of
strings, and a window whose attribute is an int in some types and a float in others.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from faidecs.grammar.model import (
    ArithOp,
    AttrOf,
    Conjunction,
    Const,
    EventType,
    Kind,
    Negate,
    NegationKind,
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
FIXED, MATCHING, ALL, SPAN = 0, 1, 2, 3
META_SIZE = 4
#: mf[...] (float64): the window's duration as a float.
DURATION = 0
MF_SIZE = 1
#: Matching codes: ALL searches in FR order (and collects every relation).
CODES = {"FR": 0, "MR": 1, "FRC": 2, "MRC": 3, "ALL": 0}

# How the span condition reads: the kinds of the times and of the duration.
_SPAN_NONE, _SPAN_INT, _SPAN_FLOAT, _SPAN_FLOAT_INT = "none", "int", "float", "float-int"
_INT_DURATION_MAX = 2**62


@dataclass(frozen=True)
class SpanMode:
    mode: str
    positions: tuple[int, ...]  # the window attribute's position per type of the conjunction

    def duration(self, window: Window | None) -> tuple[int, float]:
        """``(meta[SPAN], mf[DURATION])`` for this window: the duration as the mode reads it."""
        if window is None or self.mode == _SPAN_NONE:
            return 0, 0.0
        d = window.duration
        if self.mode == _SPAN_INT:
            # max - min is an integer: ``> D`` holds exactly when it is ``> floor(D)``.
            return int(math.floor(d)), 0.0
        if self.mode == _SPAN_FLOAT_INT:
            return int(d), 0.0
        return 0, float(d)


def span_mode(conjunction: Conjunction, types: Mapping[str, EventType], window: Window | None) -> SpanMode:
    if window is None:
        return SpanMode(_SPAN_NONE, ())
    positions = tuple(types[t].position(window.attribute) for t in conjunction.types)
    kinds = {types[t].attributes[p].kind for t, p in zip(conjunction.types, positions)}
    d = window.duration
    if not (isinstance(d, (int, float)) and math.isfinite(d) and 0 <= d <= _INT_DURATION_MAX):
        raise NotCompilable(f"a window of {d!r}")
    if kinds == {Kind.INT}:
        return SpanMode(_SPAN_INT, positions)
    if kinds == {Kind.FLOAT}:
        return SpanMode(_SPAN_FLOAT if isinstance(d, float) else _SPAN_FLOAT_INT, positions)
    raise NotCompilable(f"a window on {window.attribute}, an int in some types and a float in others")


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
    if any(n.kind is NegationKind.AFTER for n in conjunction.negations):
        raise NotCompilable("absences (no N after X) run on the extended reference matcher")
    if set(conjunction.negated_types) & set(conjunction.types):
        raise NotCompilable("a negated type that is also queued")
    span = span_mode(conjunction, types, window)
    widths = tuple(len(types[t].attributes) for t in conjunction.types)
    log_widths = tuple(len(types[n.type_name].attributes) for n in conjunction.negations)
    key = (_extended_shape(conjunction), str(widths), str(log_widths), span.mode, str(span.positions))
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
        array = "q" if self.span.mode == _SPAN_INT else "f"
        return f"{array}{t}[p{k}, {2 + self.span.positions[t]}]"

    def _span_ok(self, k: int) -> str:
        if self.span.mode == _SPAN_INT:
            return f"span_int(lo{k}, hi{k}, dn)"
        if self.span.mode == _SPAN_FLOAT:
            return f"not (hi{k} - lo{k} > df)"
        return f"cmp_int_float(dn, hi{k} - lo{k}) != -1"  # not D < max - min (NaN: holds)

    def build(self) -> KernelSource:
        checks: dict[int, list[str]] = {}
        for pred in _ordered(self.conj):
            last = max(self.slot_index[s] for s in pred.slots)
            checks.setdefault(last, []).append(self._call(pred))
        negations: dict[int, list[tuple[int, str, str, list[str]]]] = {}
        for j, (neg, preds) in enumerate(zip(self.conj.negations, _negation_predicates(self.conj))):
            first, second = self.slot_index[neg.first], self.slot_index[neg.second]  # type: ignore[index]
            at = max([first, second] + [self.slot_index[s] for p in preds for s in p.slots - {neg.slot}])
            calls = [self._call(p, neg.slot, j) for p in preds]
            a, b = f"q{self.slot_type[first]}[p{first}, 0]", f"q{self.slot_type[second]}[p{second}, 0]"
            negations.setdefault(at, []).append((j, a, b, calls))
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
        emit(1, "cap = out.shape[0]")
        emit(1, "nout = 0")
        emit(1, "step = -1 if mr else 1")
        for k in range(self.n):
            emit(1, f"p{k} = 0")

        def slot(k: int, ind: int) -> None:
            if k == self.n:
                for j in range(self.n):
                    emit(ind, f"out[nout, {j}] = p{j}")
                emit(ind, "nout += 1")
                emit(ind, "if not collect:")
                emit(ind, "    return nout")
                emit(ind, "if nout == cap:")
                emit(ind, "    return -1")
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
            if self.span.mode != _SPAN_NONE:
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
            for j, a, b, calls in negations.get(k, []):
                # No logged event strictly between the anchors (either order) passes the checks.
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
