"""Machine-level helpers the generated kernels call: exact mixed comparisons and checked
integer arithmetic, with the value semantics of ``docs/dsl.md`` ("Arithmetic").

Each helper reports failure instead of raising, so a kernel turns a failed operation into a
false predicate exactly where the reference matcher catches ``ArithmeticError``.
"""

from __future__ import annotations

import math

from numba import njit

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
TWO63 = 9.223372036854775808e18  # 2**63 as a float64, exactly


@njit(cache=True)
def cmp_int_float(i: int, f: float) -> int:
    """Compare an int64 with a float64 exactly, as Python does: -1, 0 or 1, and 2 when ``f`` is
    NaN (unordered: only ``!=`` holds)."""
    if f != f:
        return 2
    if f >= TWO63:
        return -1
    if f < -TWO63:
        return 1
    whole = math.floor(f)
    k = int(whole)  # exact: |whole| <= 2**63 and the bounds above exclude 2**63 itself
    if i < k:
        return -1
    if i > k:
        return 1
    return -1 if f > whole else 0


@njit(cache=True)
def add_int(a: int, b: int) -> tuple[int, bool]:
    r = a + b
    return r, ((a ^ r) & (b ^ r)) >= 0


@njit(cache=True)
def sub_int(a: int, b: int) -> tuple[int, bool]:
    r = a - b
    return r, ((a ^ b) & (a ^ r)) >= 0


@njit(cache=True)
def _trunc_div(x: int, y: int) -> int:
    """x / y rounded toward zero (numba's ``//`` floors, like Python's)."""
    q = x // y
    if x % y != 0 and (x < 0) != (y < 0):
        q += 1
    return q


@njit(cache=True)
def mul_int(a: int, b: int) -> tuple[int, bool]:
    # Decide overflow before multiplying: numba marks signed products "no signed wrap", so LLVM
    # may fold away any check made on a wrapped product.
    if a == 0 or b == 0:
        return 0, True
    if a > 0:
        ok = a <= INT64_MAX // b if b > 0 else b >= _trunc_div(INT64_MIN, a)
    else:
        ok = a >= _trunc_div(INT64_MIN, b) if b > 0 else b >= _trunc_div(INT64_MAX, a)
    return (a * b if ok else 0), ok


@njit(cache=True)
def neg_int(a: int) -> tuple[int, bool]:
    return -a, a != INT64_MIN


@njit(cache=True)
def span_int(low: int, high: int, duration: int) -> bool:
    """A window's span condition on int times: ``high - low <= duration``, exactly (a difference
    beyond 64 bits exceeds every duration a kernel is given)."""
    r, ok = sub_int(high, low)
    return ok and r <= duration
