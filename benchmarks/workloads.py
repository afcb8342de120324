"""Seeded workload generators for the benchmark suite.

Each workload is a program plus a stream, available both as per-event dicts (for ``publish`` and
the reference matcher) and as columns (for ``publish_batch``). Streams are generated with numpy
from a seed, so every run of the suite measures the same events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Workload:
    name: str
    program: str
    order: np.ndarray  # type name per event
    tables: dict[str, dict[str, np.ndarray]]  # per type, per attribute; rows in arrival order
    notes: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.order)

    def events(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The first ``limit`` events as input dicts, ids ``"1"``, ``"2"``, ... like the batch default."""
        n = len(self.order) if limit is None else min(limit, len(self.order))
        cursor = {t: 0 for t in self.tables}
        out = []
        for k in range(n):
            t = str(self.order[k])
            row = cursor[t]
            cursor[t] += 1
            attrs = {a: _plain(col[row]) for a, col in self.tables[t].items()}
            out.append({"id": str(k + 1), "type": t, "attrs": attrs})
        return out

    def head(self, n: int) -> Workload:
        """The first ``n`` events as a workload of their own."""
        order = self.order[:n]
        tables = {t: {a: col[: int((order == t).sum())] for a, col in cols.items()} for t, cols in self.tables.items()}
        return Workload(self.name, self.program, order, tables, self.notes, self.params)


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _columns(order: np.ndarray, columns: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, np.ndarray]]:
    return {t: cols for t, cols in columns.items() if (order == t).any()}


STOCK_PROGRAM = """
type EarningsReport(symbol: str, eps: float, time: int)
type StockQuote(symbol: str, value: float, currency: str, time: int)

subscription RisingAfterEarnings (matching {matching}, disposal {disposal}):
    StockQuote[0].symbol = EarningsReport.symbol
    and StockQuote[1].symbol = EarningsReport.symbol
    and StockQuote[2].symbol = EarningsReport.symbol
    and StockQuote[0].currency = "USDollar"
    and StockQuote[1].currency = "USDollar"
    and StockQuote[2].currency = "USDollar"
    and StockQuote[0].time > EarningsReport.time
    and StockQuote[1].value > StockQuote[0].value
    and StockQuote[2].value > StockQuote[1].value
    and StockQuote[2].time - EarningsReport.time <= 300
"""


def stock(n: int, seed: int = 0, matching: str = "FR", disposal: str = "PI", symbols: int = 4) -> Workload:
    """(a) The papers' stock example: an earnings report followed by three rising quotes of its
    symbol in US dollars within 300 time units. Quotes follow a random walk per symbol; one event
    in 20 is an earnings report; one quote in 10 is in euros (filtered out by ENQUEUE)."""
    rng = np.random.default_rng(seed)
    names = np.array([f"S{k}" for k in range(symbols)], dtype=object)
    is_report = rng.random(n) < 0.05
    order = np.where(is_report, "EarningsReport", "StockQuote").astype(object)
    time = np.arange(n, dtype=np.int64)
    sym = rng.integers(0, symbols, n)
    steps = rng.normal(0.0, 1.0, n)
    price = np.empty(n)
    level = np.full(symbols, 100.0)
    for k in range(n):  # a random walk per symbol (seeded; cheap next to the measurements)
        level[sym[k]] += steps[k]
        price[k] = level[sym[k]]
    reports, quotes = is_report, ~is_report
    tables = {
        "EarningsReport": {
            "symbol": names[sym[reports]],
            "eps": np.round(rng.normal(1.0, 0.3, int(reports.sum())), 2),
            "time": time[reports],
        },
        "StockQuote": {
            "symbol": names[sym[quotes]],
            "value": np.round(price[quotes], 2),
            "currency": np.where(rng.random(int(quotes.sum())) < 0.9, "USDollar", "Euro").astype(object),
            "time": time[quotes],
        },
    }
    program = STOCK_PROGRAM.format(matching=matching, disposal=disposal)
    return Workload("stock", program, order, tables, params={"matching": matching, "disposal": disposal})


def paper(n: int, k: int, subscribers: int, seed: int = 0) -> Workload:
    """(b) The papers' evaluation setup: events of types E0..E7 with three integer attributes
    uniform in [0, 1000]; each subscriber's conjunction joins ``k`` types with one equality-band
    predicate (|a - b| < 50) between consecutive types and a threshold on the first."""
    rng = np.random.default_rng(seed)
    types = [f"E{i}" for i in range(8)]
    order = np.array(types, dtype=object)[rng.integers(0, len(types), n)]
    decls = "\n".join(f"type {t}(a: int, b: int, c: int)" for t in types)
    subs = []
    for s in range(subscribers):
        chosen = sorted(rng.choice(len(types), k, replace=False).tolist())
        names = [types[i] for i in chosen]
        preds = [f"{names[0]}.a < {int(rng.integers(200, 900))}"]
        for x, y in zip(names, names[1:]):
            preds.append(f"{y}.b - {x}.b < 50 and {x}.b - {y}.b < 50")
        subs.append(f"subscription P{s}: " + " and ".join(preds))
    tables = {t: {a: rng.integers(0, 1001, int((order == t).sum())).astype(np.int64) for a in "abc"} for t in types}
    return Workload(
        f"paper-k{k}-s{subscribers}",
        decls + "\n" + "\n".join(subs) + "\n",
        order,
        _columns(order, tables),
        params={"k": k, "subscribers": subscribers},
    )


def sequence(n: int, k: int, window: int, noise_types: int = 4, last_occurs: bool = True, seed: int = 0) -> Workload:
    """(c) A CORE-style sequence: T1 ; T2 ; ... ; Tk within ``window`` time units, among noise
    types, all types uniform. Without ``last_occurs``, Tk never occurs: nothing can match and the
    queues of T1..Tk-1 grow (a time bound keeps them to the window)."""
    rng = np.random.default_rng(seed)
    query = [f"T{i}" for i in range(1, k + 1)]
    noise = [f"N{i}" for i in range(1, noise_types + 1)]
    present = query + noise if last_occurs else query[:-1] + noise
    order = np.array(present, dtype=object)[rng.integers(0, len(present), n)]
    time = np.arange(n, dtype=np.int64)
    decls = "\n".join(f"type {t}(value: int, time: int)" for t in query + noise)
    preds = [f"{x}.time < {y}.time" for x, y in zip(query, query[1:])]
    preds.append(f"{query[-1]}.time - {query[0]}.time <= {window}")
    program = f"{decls}\nsubscription Seq: " + " and ".join(preds) + "\n"
    tables = {
        t: {"value": rng.integers(0, 1001, int((order == t).sum())).astype(np.int64), "time": time[order == t]}
        for t in query + noise
    }
    name = f"sequence-k{k}-w{window}" + ("" if last_occurs else "-nomatch")
    return Workload(
        name,
        program,
        order,
        _columns(order, tables),
        params={"k": k, "window": window, "last_occurs": last_occurs},
    )


def adversarial(n: int, seed: int = 0) -> Workload:
    """(d) No match ever, queues grow: `A.a = B.a` where A's values are even and B's odd, under
    MR+I (nothing is ever disposed). Each arrival is compared with the whole other queue."""
    rng = np.random.default_rng(seed)
    order = np.where(rng.random(n) < 0.5, "A", "B").astype(object)
    na, nb = int((order == "A").sum()), int((order == "B").sum())
    tables = {
        "A": {"a": 2 * rng.integers(0, 1 << 40, na).astype(np.int64)},
        "B": {"a": 2 * rng.integers(0, 1 << 40, nb).astype(np.int64) + 1},
    }
    program = "type A(a: int)\ntype B(a: int)\nsubscription Never (matching MR, disposal I): A.a = B.a\n"
    return Workload("adversarial", program, order, tables)
