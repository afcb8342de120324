"""Generate the source of one conjunction's compiled kernel.

The kernel is specialised on the conjunction's structure: its signature becomes nested loops in
signature order, each predicate is checked at the first loop where all its instances are bound
(inline, or as a small function when it computes). Constants are not in the source: every
string, integer and float constant of the conjunction arrives at run time in the ``sc`` array
(strings as their codes, floats by bit pattern), one entry per occurrence, so conjunctions that
differ only in their constants (one subscription per symbol, per threshold) share one kernel:
the source, and with it the cache key, depends on the conjunction's shape alone. The loop
over a batch (expiry, ENQUEUE, the search, DEQUEUE) is the same for every conjunction and indexes
the queues at run time, so its code does not grow with the number of types.
The matching and disposal options and the bounds are runtime values in ``meta``, so one kernel
serves all 16 option combinations of a conjunction. String codes are interned per engine, so
the source (and the on-disk cache entry) does not depend on the engine that compiled it either.

Incremental search. When the queues held no match before an arrival (the ``dirty`` flag is 0),
only an assignment that uses the new event can match. The new event is the newest of its queue,
so under FR/FRC it can only be the *last* instance of its type (later instances sit strictly
after earlier ones), and under MR/MRC only the *first*. The kernel therefore binds that slot to
the new event before searching, and checks every predicate that involves it as early as its other
instances are bound. Among the assignments that use the new event, the search still visits them
in the prescribed order, so it returns the same relation as the full search (see
``docs/performance.md`` for the cost per arrival).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from faidecs.errors import FaidecsError
from faidecs.grammar.model import (
    ArithOp,
    AttrOf,
    Conjunction,
    Const,
    EventType,
    Kind,
    Negate,
    Predicate,
    Value,
    value_text,
)
from faidecs.matching.kernel_layout import FIELDS

KERNEL_VERSION = "12"  # bump when the generated code changes meaning; part of every cache key

_PY_OP = {"<": "<", ">": ">", "<=": "<=", ">=": ">=", "=": "==", "!=": "!="}
# cmp_int_float(i, f) gives -1/0/1, or 2 for NaN: which results make each operator hold.
_CMP_HOLDS = {
    "<": "c == -1",
    ">": "c == 1",
    "<=": "c == -1 or c == 0",
    ">=": "c == 1 or c == 0",
    "=": "c == 0",
    "!=": "c != 0",
}
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "!=": "!="}


class NotCompilable(FaidecsError):
    """The conjunction uses something the kernels do not implement (ordering of strings)."""


@dataclass(frozen=True)
class KernelSource:
    source: str
    key: str  # hash of the source: the name of the module and of its cache entry
    types: tuple[str, ...]  # the conjunction's distinct types: kernel argument order (not part of the source)
    widths: tuple[int, ...]  # attributes per type
    constants: tuple[Const, ...]  # the values of ``sc``, in order (see :func:`constant_array`)
    memo: bool  # whether the search keeps a failure memo (an (n, capacity) array)
    # The entry point's numba signature; None: the plain kernels' (see kernel_cache). Extended
    # kernels (faidecs.matching.extended_kernel_source) take other arguments.
    signature: str | None = None


# The search and the admission test read float constants through this view of ``sc``, made once
# per call and handed to the predicate functions.
_FLOAT_VIEW = "scf = sc.view(np.float64)"


def constant_array(constants: tuple[Const, ...], code: Callable[[str], int]) -> np.ndarray:
    """The ``sc`` array of one conjunction's kernel: strings as their codes (``code``), integers
    as they are, floats by their IEEE 754 bit pattern (the kernel reads them through a float64
    view, so no value changes)."""
    out = np.empty(len(constants), dtype=np.int64)
    floats = out.view(np.float64)
    for k, const in enumerate(constants):
        if const.kind is Kind.STR:
            out[k] = code(str(const.value))
        elif const.kind is Kind.FLOAT:
            floats[k] = float(const.value)
        else:
            out[k] = int(const.value)
    return out


def _shape(value: Value, types: Mapping[str, int]) -> str:
    """A value's text with every parameterised constant replaced by its kind, and every
    attribute by the index of its type in the conjunction, its instance, and its position and
    kind in the type: names do not change the code, so they are not part of a shape."""
    if isinstance(value, Const):
        return value_text(value) if value.kind is Kind.BOOL else f"<{value.kind.value}>"
    if isinstance(value, AttrOf):
        return f"T{types[value.slot.type_name]}[{value.slot.index}].{value.position}:{value.kind.value}"
    if isinstance(value, Negate):
        return f"-({_shape(value.operand, types)})"
    if not isinstance(value, ArithOp):
        raise NotCompilable(f"{value_text(value)} runs on the extended reference matcher")
    return f"({_shape(value.left, types)} {value.op} {_shape(value.right, types)})"


def _type_indices(conjunction: Conjunction) -> dict[str, int]:
    return {t: i for i, t in enumerate(conjunction.types)}


def shape_text(conjunction: Conjunction) -> str:
    """The conjunction with its constants and names left out: conjunctions with equal shape
    texts (over types with equal numbers of attributes) share one kernel."""
    types = _type_indices(conjunction)
    sig = ", ".join(f"T{types[s.type_name]}[{s.index}]" for s in conjunction.signature)
    preds = sorted(_predicate_shape(p, types) for p in conjunction.predicates)
    return f"[{sig}] " + " and ".join(preds)


class _PredicateWriter:
    """Writes one predicate as a function of the attribute values it reads."""

    def __init__(self, constants: list[Const]):
        self.constants = constants

    def function(self, name: str, pred: Predicate) -> tuple[str | None, str, list[AttrOf]]:
        """``(function source or None, call template, parameters)``. A plain comparison is
        inlined at its call sites: every function is one more unit for numba to compile."""
        self.params: list[AttrOf] = []
        self.lines: list[str] = []
        self.temps = 0
        left, lkind = self._value(pred.left)
        right, rkind = self._value(pred.right)
        result = self._compare(pred.op, left, lkind, right, rkind)
        args = [f"v{i}" for i in range(len(self.params))]
        if not self.lines:
            template = result
            for i in reversed(range(len(args))):  # v10 before v1
                template = template.replace(f"v{i}", f"{{v{i}}}")
            return None, f"({template})", self.params
        self.lines.append(f"return {result}")
        body = "\n".join(f"    {line}" for line in self.lines)
        # The float view of the constants is made once per search by the caller and passed in:
        # made here, it would be a new array view at every candidate the search tries.
        call = f"{name}({', '.join(['{' + a + '}' for a in args] + ['sc', 'scf'])})"
        return f"@njit\ndef {name}({', '.join(args + ['sc', 'scf'])}):\n{body}\n", call, self.params

    def _temp(self) -> str:
        self.temps += 1
        return f"t{self.temps}"

    def _value(self, value: Value) -> tuple[str, Kind]:
        if isinstance(value, AttrOf):
            if value not in self.params:
                self.params.append(value)
            return f"v{self.params.index(value)}", value.kind
        if isinstance(value, Const):
            if value.kind is Kind.BOOL:
                return ("1" if value.value else "0"), Kind.BOOL
            # One entry per occurrence, never shared by equal values: the source must not depend
            # on which constants happen to be equal.
            self.constants.append(value)
            array = "scf" if value.kind is Kind.FLOAT else "sc"
            return f"{array}[{len(self.constants) - 1}]", value.kind
        if isinstance(value, Negate):
            inner, kind = self._value(value.operand)
            out = self._temp()
            if kind is Kind.INT:
                self.lines += [f"{out}, ok = neg_int({inner})", "if not ok:", "    return False"]
            else:
                self.lines.append(f"{out} = -{inner}")
            return out, kind
        assert isinstance(value, ArithOp)
        left, lkind = self._value(value.left)
        right, rkind = self._value(value.right)
        out = self._temp()
        if value.op == "/":
            self.lines += [
                f"d_{out} = float({right})",
                f"if d_{out} == 0.0:",
                "    return False",
                f"{out} = float({left}) / d_{out}",
            ]
            return out, Kind.FLOAT
        if lkind is Kind.INT and rkind is Kind.INT:
            helper = {"+": "add_int", "-": "sub_int", "*": "mul_int"}[value.op]
            self.lines += [f"{out}, ok = {helper}({left}, {right})", "if not ok:", "    return False"]
            return out, Kind.INT
        self.lines.append(f"{out} = float({left}) {value.op} float({right})")
        return out, Kind.FLOAT

    def _compare(self, op: str, left: str, lkind: Kind, right: str, rkind: Kind) -> str:
        if lkind is Kind.STR and op not in ("=", "!="):
            raise NotCompilable("ordering comparisons of strings")
        if lkind is Kind.INT and rkind is Kind.FLOAT:
            self.lines.append(f"c = cmp_int_float({left}, {right})")
            return _CMP_HOLDS[op]
        if lkind is Kind.FLOAT and rkind is Kind.INT:
            self.lines.append(f"c = cmp_int_float({right}, {left})")
            return _CMP_HOLDS[_FLIP[op]]
        return f"{left} {_PY_OP[op]} {right}"


def _predicate_shape(p: Predicate, types: Mapping[str, int]) -> str:
    return f"{_shape(p.left, types)} {p.op} {_shape(p.right, types)}"


def _ordered(conjunction: Conjunction) -> list[Predicate]:
    """The predicates in the order the kernel checks them: by shape, so that conjunctions whose
    constants sort their predicates differently still generate the same source (the order in
    which predicates are checked never changes a result)."""
    types = _type_indices(conjunction)
    return sorted(conjunction.predicates, key=lambda p: _predicate_shape(p, types))


def constants_in(predicates: Iterable[Predicate]) -> list[Const]:
    """The parameterised constants of ``predicates``, in the order the predicate writer numbers
    them (left operand before right, depth first; booleans are written inline)."""
    out: list[Const] = []

    def visit(value: Value) -> None:
        if isinstance(value, Const):
            if value.kind is not Kind.BOOL:
                out.append(value)
        elif isinstance(value, Negate):
            visit(value.operand)
        elif isinstance(value, ArithOp):
            visit(value.left)
            visit(value.right)

    for p in predicates:
        visit(p.left)
        visit(p.right)
    return out


def _constants_of(conjunction: Conjunction) -> tuple[Const, ...]:
    """The conjunction's parameterised constants, in the order the generator numbers them."""
    return tuple(constants_in(_ordered(conjunction)))


# Generated sources by shape (and the declarations of the types they read): a thousand
# subscriptions of one shape generate once. Bounded: an application's shapes are few.
_shapes: dict[tuple[str, tuple[int, ...]], KernelSource | NotCompilable] = {}
_SHAPES_KEPT = 4096


def generate(conjunction: Conjunction, types: Mapping[str, EventType]) -> KernelSource:
    """The kernel module's source for ``conjunction``, with its constants; raises
    :class:`NotCompilable`."""
    if conjunction.extended:
        # Their kernels come from faidecs.matching.extended_kernel_source.
        raise NotCompilable("groups and negations need the extended kernels")
    key = (shape_text(conjunction), tuple(len(types[t].attributes) for t in conjunction.types))
    template = _shapes.get(key)
    if template is None:
        if len(_shapes) >= _SHAPES_KEPT:
            _shapes.clear()
        try:
            template = _Generator(conjunction, types).build()
        except NotCompilable as exc:
            template = exc
        _shapes[key] = template
    if isinstance(template, NotCompilable):
        raise template
    constants = _constants_of(conjunction)
    assert len(constants) == len(template.constants)
    return replace(template, types=conjunction.types, constants=constants)


class _Generator:
    def __init__(self, conjunction: Conjunction, types: Mapping[str, EventType]):
        self.conj = conjunction
        self.sig = conjunction.signature
        self.n = len(self.sig)
        self.types = conjunction.types
        self.m = len(self.types)
        tindex = {t: i for i, t in enumerate(self.types)}
        self.widths = tuple(len(types[t].attributes) for t in self.types)
        self.slot_type = [tindex[s.type_name] for s in self.sig]
        self.slots_of = [[k for k in range(self.n) if self.slot_type[k] == t] for t in range(self.m)]
        self.slot_index = {s: k for k, s in enumerate(self.sig)}
        self.constants: list[Const] = []
        self.predicates = _ordered(conjunction)
        self.preds: list[tuple[str, list[AttrOf], list[int]]] = []  # call template, params, slots

    # --- pieces ------------------------------------------------------------------------------

    def _functions(self) -> list[str]:
        out = []
        writer = _PredicateWriter(self.constants)
        for j, pred in enumerate(self.predicates):
            text, call, params = writer.function(f"_p{j}", pred)
            if text is not None:
                out.append(f"# {_predicate_shape(pred, _type_indices(self.conj))}\n{text}")
            slots = sorted({self.slot_index[s] for s in pred.slots})
            self.preds.append((call, params, slots))
        return out

    def _queue_ref(self, attr: AttrOf) -> str:
        k = self.slot_index[attr.slot]
        t = self.slot_type[k]
        array = f"f{t}" if attr.kind is Kind.FLOAT else f"q{t}"
        return f"{array}[p{k}, {2 + attr.position}]"

    def _input_ref(self, attr: AttrOf) -> str:
        t = self.slot_type[self.slot_index[attr.slot]]
        array = f"g{t}" if attr.kind is Kind.FLOAT else f"i{t}"
        return f"{array}[r, {attr.position}]"

    def _call(self, j: int, ref: Callable[[AttrOf], str]) -> str:
        template, params, _ = self.preds[j]
        values = {f"v{i}": ref(a) for i, a in enumerate(params)}
        return template.format(**values)

    def _queue_params(self) -> str:
        qs = ", ".join(f"q{t}, f{t}" for t in range(self.m))
        bounds = ", ".join(f"s{t}, e{t}" for t in range(self.m))
        return f"{qs}, {bounds}, mr, contig, sc, pos"

    def _fixed_choices(self) -> list[int]:
        """The values ``fixed`` can take: -1, and the first and last slot of each type."""
        return sorted({-1} | {k for t in range(self.m) for k in (self.slots_of[t][0], self.slots_of[t][-1])})

    def _memo_fixed(self, k: int) -> list[int]:
        """For which values of ``fixed`` the search below slot ``k`` depends on no binding but
        slot ``k``'s own: then a subtree that failed for a queue position fails for it again, and
        the search remembers it (a failure memo, valid for one search). Without it, a chain such
        as `A.t < B.t and B.t < C.t and C.t < D.t` would be searched again for every choice of the
        slots before ``k``."""
        valid = []
        for fixed in self._fixed_choices():
            if fixed == k:
                continue
            later = {j for j in range(k + 1, self.n) if j != fixed}
            deps: set[int] = set()
            for _, _, slots in self.preds:
                if later & set(slots):
                    deps |= {j for j in slots if j not in later and j != fixed}
            if k + 1 < self.n and self.sig[k + 1].index > 0:
                deps.add(k)  # the next instance's candidates start next to this one
            if deps <= {k}:
                valid.append(fixed)
        return valid

    def _search(self) -> str:
        """One depth-first search over the slots in signature order. ``fixed`` is the slot bound
        to the newest event of its queue (incremental search), or -1 (full search).

        A predicate is checked at the loop that binds the last of its instances, except that with
        its last instance fixed it is checked one instance earlier (or before any loop)."""
        checks: dict[int, list[str]] = {}
        for j, (_, _, slots) in enumerate(self.preds):
            call = self._call(j, self._queue_ref)
            last = slots[-1]
            earlier = slots[-2] if len(slots) > 1 else -1
            checks.setdefault(last, []).append(f"(fixed == {last} or {call})")
            checks.setdefault(earlier, []).append(f"(fixed != {last} or {call})")
        memo = {k: self._memo_fixed(k) for k in range(self.n - 1)}
        memo = {k: v for k, v in memo.items() if v}
        self.memo = bool(memo)
        lines = [f"@njit\ndef _search({self._queue_params()}, fixed, memo, sid):", f"    {_FLOAT_VIEW}"]

        def emit(ind: int, text: str) -> None:
            lines.append("    " * ind + text)

        for k in range(self.n):
            emit(1, f"p{k} = e{self.slot_type[k]} - 1")  # read only when slot k is fixed
        for k, choices in memo.items():
            emit(1, f"memo{k} = " + " or ".join(f"fixed == {f}" for f in choices))
        emit(1, "step = -1 if mr else 1")
        if -1 in checks:
            emit(1, f"if not ({' and '.join(checks[-1])}):")
            emit(1, "    return False")

        def slot(k: int, ind: int) -> None:
            if k == self.n:
                for j in range(self.n):
                    emit(ind, f"pos[{j}] = p{j}")
                emit(ind, "return True")
                return
            t = self.slot_type[k]
            if self.sig[k].index == 0:
                emit(ind, f"st{k} = e{t} - 1 if mr else s{t}")
                emit(ind, f"cnt{k} = e{t} - s{t}")
            else:
                emit(ind, f"st{k} = p{k - 1} + step")
                emit(ind, "if contig:")
                emit(ind, f"    cnt{k} = 1 if s{t} <= st{k} < e{t} else 0")
                emit(ind, "else:")
                emit(ind, f"    cnt{k} = e{t} - st{k} if not mr else st{k} - s{t} + 1")
            emit(ind, f"if fixed == {k}:")
            emit(
                ind,
                f"    if cnt{k} > 0 and ((not mr and st{k} <= p{k} < st{k} + cnt{k}) "
                f"or (mr and st{k} - cnt{k} < p{k} <= st{k})):",
            )
            emit(ind, f"        st{k} = p{k}")
            emit(ind, f"        cnt{k} = 1")
            emit(ind, "    else:")
            emit(ind, f"        cnt{k} = 0")
            emit(ind, f"for c{k} in range(cnt{k}):")
            ind += 1
            emit(ind, f"p{k} = st{k} + c{k} * step")
            if k in checks:
                emit(ind, f"if {' and '.join(checks[k])}:")
                ind += 1
            if k in memo:
                emit(ind, f"if not (memo{k} and memo[{k}, p{k}] == sid):")
                slot(k + 1, ind + 1)
                emit(ind + 1, f"if memo{k}:")
                emit(ind + 1, f"    memo[{k}, p{k}] = sid")
            else:
                slot(k + 1, ind)

        slot(0, 1)
        lines.append("    return False")
        return "\n".join(lines) + "\n"

    def _admission(self, t: int) -> str:
        alternatives = []
        for k in self.slots_of[t]:
            unary = [j for j, (_, _, slots) in enumerate(self.preds) if slots == [k]]
            if not unary:
                return "True"
            alternatives.append("(" + " and ".join(self._call(j, self._input_ref) for j in unary) + ")")
        return " or ".join(alternatives)

    def _admit(self) -> str:
        """ENQUEUE's test: some position of the event's type has all its unary predicates true."""
        args = ", ".join(f"i{t}, g{t}" for t in range(self.m))
        lines = [f"@njit\ndef _admit(lt, r, {args}, sc):", f"    {_FLOAT_VIEW}"]
        for t in range(self.m):
            lines += [f"    if lt == {t}:", f"        return {self._admission(t)}"]
        lines.append("    return False")
        return "\n".join(lines) + "\n"

    def _kernel(self) -> str:
        """The entry point: one loop over the batch, the same code for every type (queues are
        indexed in a tuple at run time), so its size does not grow with the number of types."""
        m = self.m
        width = max(len(k) for k in self.slots_of)
        slots = [k + [-1] * (width - len(k)) for k in self.slots_of]
        qargs = ", ".join(f"q{t}" for t in range(m))
        iargs = ", ".join(f"i{t}" for t in range(m))
        consts = (
            f"FIRST = np.array({[k[0] for k in self.slots_of]}, dtype=np.int64)\n"
            f"LAST = np.array({[k[-1] for k in self.slots_of]}, dtype=np.int64)\n"
            f"COUNT = np.array({[len(k) for k in self.slots_of]}, dtype=np.int64)\n"
            f"SLOT_TYPE = np.array({self.slot_type}, dtype=np.int64)\n"
            f"SLOTS = np.array({slots}, dtype=np.int64)\n\n\n"
        )
        head = (
            f"@njit(cache=True)\n"
            f"def kernel(meta, sc, {qargs}, ev_type, ev_row, ev_arrival, ev_tick, b0, {iargs}, out, memo):\n"
        )
        return consts + head + "\n".join("    " + line for line in _batch_loop(m)) + "\n"

    def build(self) -> KernelSource:
        functions = self._functions()
        searches = [self._search(), self._admit()]
        header = (
            f"# faidecs kernel, generator version {KERNEL_VERSION}. Generated: do not edit.\n"
            f"# shape {shape_text(self.conj)!r}\n# attributes per type {self.widths}\n\n"
            "import numpy as np\nfrom numba import njit\n\n"
            "from faidecs.matching.kernel_ops import add_int, cmp_int_float, mul_int, neg_int, sub_int\n"
            "from faidecs.matching.kernel_runtime import append, dispose, expire, make_room\n\n\n"
        )
        source = header + "\n\n".join(functions + searches + [self._kernel()])
        key = hashlib.sha256(source.encode()).hexdigest()[:24]
        return KernelSource(source, key, self.types, self.widths, tuple(self.constants), self.memo)


def _batch_loop(m: int) -> list[str]:
    """The kernel's loop over a batch: expiry, ENQUEUE, the search, DEQUEUE."""
    field = {name: 2 * m + i for i, name in enumerate(FIELDS)}
    qargs = ", ".join(f"q{t}" for t in range(m))
    iargs = ", ".join(f"i{t}" for t in range(m))
    bounds = ", ".join(f"meta[{2 * t}], meta[{2 * t + 1}]" for t in range(m))
    call = ", ".join(f"q{t}, f{t}" for t in range(m)) + f", {bounds}, mr, contig, sc, pos"
    search_call = f"{call}, fixed, memo, sid"
    admit = ", ".join(f"i{t}, g{t}" for t in range(m))
    drops = field["drops"]
    body = [f"qs = ({qargs},)", f"ins = ({iargs},)"]
    for t in range(m):
        body += [f"f{t} = q{t}.view(np.float64)", f"g{t} = i{t}.view(np.float64)"]
    for name in ("dirty", "matching", "disposal", "max_queue", "max_age", "policy", "out", "clock", "search"):
        body.append(f"{'nout' if name == 'out' else 'sid' if name == 'search' else name} = meta[{field[name]}]")
    body += [
        "n = SLOT_TYPE.shape[0]",
        "mr = matching == 1 or matching == 3",
        "contig = matching == 2 or matching == 3",
        "pos = np.empty(n, np.int64)",
        "status = 0",
        "grow = -1",
        "b = b0",
        "while b < ev_type.shape[0]:",
        "    lt = ev_type[b]",
        "    if lt < 0:",
        "        b += 1",
        "        continue",
        "    r = ev_row[b]",
        "    clock = ev_tick[b]",
        "    if max_age > 0:",
        f"        for t in range({m}):",
        f"            expire(qs[t], meta, t, clock - max_age, {drops})",
        f"    if not _admit(lt, r, {admit}, sc):",
        "        b += 1",
        "        continue",
        f"    status = make_room(qs[lt], meta, lt, max_queue, policy, {drops})",
        "    if status != 0:",
        "        grow = lt",
        "        break",
        "    append(qs[lt], meta, lt, ev_arrival[b], clock, ins[lt], r)",
        "    enough = True",
        f"    for t in range({m}):",
        "        if meta[2 * t + 1] - meta[2 * t] < COUNT[t]:",
        "            enough = False",
        "    fixed = -1 if dirty else (FIRST[lt] if mr else LAST[lt])",
        "    sid += 1",
        f"    if not (enough and _search({search_call})):",
        "        dirty = 0",
        "        b += 1",
        "        continue",
        "    out[nout, 0] = b",
        "    for k in range(n):",
        "        out[nout, 1 + k] = qs[SLOT_TYPE[k]][pos[k], 0]",
        "    nout += 1",
        f"    for t in range({m}):",
        "        dispose(qs[t], meta, t, pos, SLOTS[t, : COUNT[t]], disposal)",
        "    dirty = 1",
        "    b += 1",
        f"meta[{field['dirty']}] = dirty",
        f"meta[{field['clock']}] = clock",
        f"meta[{field['search']}] = sid",
        f"meta[{field['out']}] = nout",
        f"meta[{field['status']}] = status",
        f"meta[{field['grow']}] = grow",
        "return b",
    ]
    return body
