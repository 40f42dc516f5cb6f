"""The runtime of formulas over noisy aggregates (privdb.sql.front.formulas.compiler, made of
privdb.sql.front.formulas.nodes): per-group values vectorised with NumPy, each number with an interval for its
true value, and the total, interval-carrying operations the compiled formulas are made of (arithmetic,
monotone functions, comparisons with NULL, three-valued logic, CASE/COALESCE branch unions, LEAST/GREATEST).
Nothing here raises on any value: NULL is NaN or None, and a missing interval is NaN."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privdb.sql.front.expr.rounding import round_half_away

F = NDArray[np.float64]
B = NDArray[np.bool_]
NAN = math.nan


@dataclass(frozen=True)
class Values:
    """Per-group values of a leaf or a formula's result, vectorised over n groups."""

    values: NDArray[np.float64] | list[Any]  # float64 (NaN = NULL) for numbers; else Python values (None)
    lo: NDArray[np.float64] | None = None  # interval ends (NaN = not available); None = no interval
    hi: NDArray[np.float64] | None = None
    exact: bool = False  # exact values (keys, literals): their interval is the point itself


@dataclass(frozen=True)
class Result:
    """A runtime result. ``number``: ``x`` floats, interval ``lo``/``hi`` and ``null`` (rows whose truth may
    be NULL though an interval is given); ``boolean``: ``x`` 1.0/0.0/NaN; ``list``: Python values."""

    kind: str
    x: Any
    exact: bool
    lo: Any = None
    hi: Any = None
    null: Any = None


Run = Callable[[Sequence[Values], int], Result]


def number_result(x: F, lo: Any, hi: Any, exact: bool, null: Any = None) -> Result:
    """A numeric result with its interval made consistent: points if exact, NaN where not available."""
    x = np.asarray(x, dtype=np.float64)
    if exact:
        return Result("number", x, True, x, x, np.zeros(x.shape, dtype=bool))
    lo, hi = np.broadcast_to(lo, x.shape), np.broadcast_to(hi, x.shape)
    bad = np.isnan(x) | np.isnan(lo) | np.isnan(hi) | (lo > hi)
    null = np.zeros(x.shape, dtype=bool) if null is None else np.broadcast_to(null, x.shape)
    return Result("number", x, False, np.where(bad, NAN, lo), np.where(bad, NAN, hi), null)


def as_float(v: Any) -> float:
    """A Python or NumPy number as a float (NaN for anything else: text, booleans, None)."""
    if isinstance(v, bool | np.bool_) or not isinstance(v, int | float | np.number):
        return NAN
    try:
        return float(v)
    except (OverflowError, ValueError, TypeError):
        return (math.inf if v > 0 else -math.inf) if isinstance(v, int) else NAN


def as_number(r: Result, n: int) -> Result:
    """A result as numbers (NaN where a value is not one), without an interval unless it had one."""
    if r.kind == "number":
        return r
    x = np.array([as_float(v) for v in r.x], dtype=np.float64) if r.kind == "list" else np.full(n, NAN)
    return number_result(x, NAN, NAN, r.exact)


def as_boolean(r: Result, n: int) -> F:
    """A result as a condition: 1.0, 0.0 or NaN (NULL, or a value that is not a boolean)."""
    if r.kind == "boolean":
        return np.asarray(r.x, dtype=np.float64)
    if r.kind == "list":
        return np.array([float(v) if isinstance(v, bool | np.bool_) else NAN for v in r.x], dtype=np.float64)
    return np.full(n, NAN)


def _null(v: Any) -> bool:
    return v is None or (isinstance(v, float | np.floating) and bool(np.isnan(v)))


def python_values(r: Result) -> list[Any]:
    """The values as Python objects (None = NULL)."""
    if r.kind == "number":
        return [None if v != v else v for v in np.asarray(r.x, dtype=np.float64).tolist()]
    if r.kind == "boolean":
        return [None if v != v else v == 1.0 for v in np.asarray(r.x, dtype=np.float64).tolist()]
    return [None if _null(v) else v.item() if isinstance(v, np.generic) else v for v in r.x]


def leaf_run(i: int) -> Run:
    """How to read leaf ``i``'s values: numbers with their interval, booleans, or Python values."""

    def run(leaves: Sequence[Values], n: int) -> Result:
        v = leaves[i]
        vals = v.values
        if isinstance(vals, np.ndarray) and vals.dtype.kind == "b":
            return Result("boolean", vals.astype(np.float64), v.exact)
        if isinstance(vals, np.ndarray) and vals.dtype.kind in "iuf":
            x = vals.astype(np.float64)
            lo = NAN if v.lo is None else np.asarray(v.lo, dtype=np.float64)
            hi = NAN if v.hi is None else np.asarray(v.hi, dtype=np.float64)
            return number_result(x, lo, hi, v.exact)
        return Result("list", list(vals), v.exact)

    return run


def constant_run(kind: str, value: Any) -> Run:
    """How to run a literal: the same value in every group (exact)."""

    def run(leaves: Sequence[Values], n: int) -> Result:
        if kind in ("number", "null"):  # NULL: a number that fits anything (NaN)
            return number_result(
                np.full(n, NAN if value is None else value, dtype=np.float64), NAN, NAN, True
            )
        if kind == "boolean":
            return Result("boolean", np.full(n, float(value)), True)
        return Result("list", [value] * n, True)

    return run


def round_digits(x: F, d: float) -> F:
    """ROUND(x, d) as DuckDB (2.0.1 on): the exact binary value of x rounded half away from zero at 10^-d
    (x itself where x·10^d overflows). x·10^d in floating point is rounded, so where it lands exactly on a
    half the true product may lie on either side: those (rare) values are decided exactly with Decimal."""
    m = np.power(10.0, abs(d))
    y = x * m if d >= 0 else x / m
    t = np.trunc(y)
    with np.errstate(invalid="ignore"):  # ±inf − ±inf: NaN, which no comparison below selects
        frac = np.abs(y - t)
    half = frac == 0.5
    y = t + np.where(frac >= 0.5, np.sign(y), 0.0)
    if d >= 0:
        out = np.where(np.isfinite(y / m), y / m, x)
    else:
        out = np.where(np.isnan(y * m) & ~np.isnan(x), np.where(np.isfinite(x), 0.0, x), y * m)
    if np.any(half):
        out = np.array(out, dtype=np.float64, copy=True)
        flat, source = out.reshape(-1), np.broadcast_to(x, out.shape).reshape(-1)
        for i in np.flatnonzero(half.reshape(-1) if np.ndim(half) else np.array([bool(half)])):
            flat[i] = round_half_away(float(source[i]), int(d))
    return out


def cast_to_int(bits: int) -> Callable[[F], F]:
    """CAST(x AS INTEGER/BIGINT) as DuckDB: to nearest (ties to even); non-finite or out of range: NULL."""
    top = 2.0 ** (bits - 1)
    return lambda x: np.where((np.rint(x) >= -top) & (np.rint(x) < top), np.rint(x), NAN)


def monotone(f: Callable[[F], F], domain: float = -math.inf) -> Callable[[Result], Result]:
    """A function monotone on [domain, ∞): its interval from the ends, not available if it leaves that."""

    def apply(a: Result) -> Result:
        ok = a.lo >= domain
        fl, fh = f(a.lo), f(a.hi)
        lo, hi = np.where(ok, np.minimum(fl, fh), NAN), np.where(ok, np.maximum(fl, fh), NAN)
        return number_result(f(a.x), lo, hi, a.exact, a.null)

    return apply


def absolute(a: Result) -> Result:
    """ABS, with its interval (0 at the low end where the interval spans 0)."""
    lo = np.where(a.lo >= 0, a.lo, np.where(a.hi <= 0, -a.hi, 0.0))
    return number_result(np.abs(a.x), lo, np.maximum(np.abs(a.lo), np.abs(a.hi)), a.exact, a.null)


def corners(op: Callable[[F, F], F], a: Result, b: Result) -> tuple[F, F]:
    """The interval of ``op`` over the box of ``a``'s and ``b``'s intervals, from its four corners."""
    c = [op(a.lo, b.lo), op(a.lo, b.hi), op(a.hi, b.lo), op(a.hi, b.hi)]
    return np.minimum.reduce(c), np.maximum.reduce(c)


def divide(a: Result, b: Result) -> tuple[F, F, F]:
    """a / b (NULL where b is 0), its interval not available where b's spans 0."""
    lo, hi = corners(np.divide, a, b)
    spans_zero = ~((b.lo > 0) | (b.hi < 0))
    return np.where(b.x == 0, NAN, a.x / b.x), np.where(spans_zero, NAN, lo), np.where(spans_zero, NAN, hi)


def power(a: Result, b: Result, p: float | None) -> tuple[F, F, F]:
    """POWER(a, b); an interval only for a literal exponent ``p``."""
    x = np.where(np.isnan(a.x) | np.isnan(b.x), NAN, np.power(a.x, b.x))
    if p is None:
        return x, np.full(x.shape, NAN), np.full(x.shape, NAN)
    fl, fh = np.power(a.lo, p), np.power(a.hi, p)
    lo, hi = np.minimum(fl, fh), np.maximum(fl, fh)
    if p == 0:
        lo = hi = np.where(np.isnan(a.lo), NAN, 1.0)
    elif p.is_integer() and p > 0 and p % 2 == 0:
        lo = np.where((a.lo < 0) & (a.hi > 0), 0.0, lo)
    elif p.is_integer() and p < 0:
        lo = np.where((a.lo <= 0) & (a.hi >= 0), NAN, lo)
    elif not p.is_integer():
        lo = np.where(a.lo >= 0 if p > 0 else a.lo > 0, lo, NAN)
    return x, lo, hi


def _compare1(op: Callable[[Any, Any], Any], a: Any, b: Any) -> bool | None:
    """One SQL comparison of Python values: NULL if either is NULL or they are not comparable."""
    if a is None or b is None:
        return None
    fa, fb = as_float(a), as_float(b)
    if not (math.isnan(fa) or math.isnan(fb)):
        return bool(op(fa, fb))
    if type(a) is not type(b):
        return None
    try:
        return bool(op(a, b))
    except Exception:
        return None


def compare(op: Callable[[Any, Any], Any], a: Result, b: Result, n: int) -> Result:
    """An SQL comparison per group: NULL where either side is NULL or they are not comparable."""
    exact = a.exact and b.exact
    if a.kind == b.kind and a.kind in ("number", "boolean"):
        x, y = np.asarray(a.x, dtype=np.float64), np.asarray(b.x, dtype=np.float64)
        return Result("boolean", np.where(np.isnan(x) | np.isnan(y), NAN, op(x, y).astype(np.float64)), exact)
    out = [_compare1(op, u, v) for u, v in zip(python_values(a), python_values(b), strict=True)]
    return Result("boolean", np.array([NAN if v is None else float(v) for v in out], dtype=np.float64), exact)


def sql_and(a: F, b: F) -> F:
    """Three-valued AND of conditions (1.0, 0.0, NaN): false wins over NULL."""
    return np.where((a == 0) | (b == 0), 0.0, np.where(np.isnan(a) | np.isnan(b), NAN, 1.0))


def sql_or(a: F, b: F) -> F:
    """Three-valued OR of conditions (1.0, 0.0, NaN): true wins over NULL."""
    return np.where((a == 1) | (b == 1), 1.0, np.where(np.isnan(a) | np.isnan(b), NAN, 0.0))


def present(r: Result) -> B:
    """Where the values are not NULL."""
    if r.kind == "list":
        return np.array([not _null(v) for v in r.x], dtype=bool)
    return ~np.isnan(np.asarray(r.x, dtype=np.float64))


def choose_branch(kind: str, parts: list[Result], picks: list[B], exact: bool, n: int) -> Result:
    """Row j takes ``parts[i]`` for the first i with ``picks[i][j]``; NULL where none does."""
    if kind in ("any", "null"):
        kinds = {p.kind for p in parts}
        kind = "number" if kinds == {"number"} else "boolean" if kinds == {"boolean"} else "list"
    if kind == "number":
        nums = [as_number(p, n) for p in parts]
        x, lo, hi = (np.select(picks, [getattr(p, a) for p in nums], NAN) for a in ("x", "lo", "hi"))
        return number_result(x, lo, hi, exact, np.select(picks, [p.null for p in nums], True))
    if kind == "boolean":
        return Result("boolean", np.select(picks, [as_boolean(p, n) for p in parts], NAN), exact)
    columns = [python_values(p) for p in parts]
    out = [next((c[j] for c, m in zip(columns, picks, strict=True) if m[j]), None) for j in range(n)]
    return Result("list", out, exact)


def widen(r: Result, parts: list[tuple[Result, B]], stop: bool = False, null: bool = False) -> Result:
    """r's interval replaced by the union of the parts' intervals over the rows where each is included (the
    truth may take any of them); with ``stop``, parts after one that is certainly not NULL are left out."""
    if r.kind != "number" or r.exact:
        return r
    n = r.x.shape[0]
    lo, hi = np.full(n, math.inf), np.full(n, -math.inf)
    bad, done, maybe = np.zeros(n, bool), np.zeros(n, bool), np.full(n, null)
    for p, mask in parts:
        take = mask & ~done
        bad |= take & np.isnan(p.lo)
        maybe |= take & p.null
        lo, hi = np.where(take, np.fmin(lo, p.lo), lo), np.where(take, np.fmax(hi, p.hi), hi)
        done |= take & stop & ~np.isnan(p.lo) & ~p.null
    if stop:
        maybe |= ~done  # no part certainly decided: the truth may be NULL
    return number_result(r.x, np.where(bad, NAN, lo), np.where(bad, NAN, hi), False, maybe)


def least_or_greatest(least: bool, parts: list[Result]) -> Result:
    """LEAST/GREATEST (NULLs ignored); the far end is bounded by the arguments certainly not NULL."""
    near, far = (np.fmin, np.fmax) if least else (np.fmax, np.fmin)
    skip = [p.exact & np.isnan(p.x) for p in parts]
    bad = np.logical_or.reduce([~s & np.isnan(p.lo) for p, s in zip(parts, skip, strict=True)])
    ends = [(np.where(s, NAN, p.lo), np.where(s, NAN, p.hi)) for p, s in zip(parts, skip, strict=True)]
    a = near.reduce([e[0] if least else e[1] for e in ends])
    sure = near.reduce(
        [np.where(p.null, NAN, e[1] if least else e[0]) for p, e in zip(parts, ends, strict=True)]
    )
    b = np.where(np.isnan(sure), far.reduce([e[1] if least else e[0] for e in ends]), sure)
    null = np.logical_and.reduce([s | p.null for p, s in zip(parts, skip, strict=True)])
    lo, hi = (a, b) if least else (b, a)
    x = near.reduce([p.x for p in parts])
    return number_result(x, np.where(bad, NAN, lo), np.where(bad, NAN, hi), all(p.exact for p in parts), null)
