"""Record release: ``DP-SELECT ε col1, col2 FROM t [WHERE …]`` releases randomised records (the course notes'
``DP-SELECT ε * FROM table``), ε-DP under the table's declared neighbouring relation. The proof is in
docs/proofs/records.md. The plan (which columns, their mechanisms, the split of ε, the engine SQL) is made
before anything is read, in privdb.sql.release.plan; this module randomises the records the engine read.

The engine reads the selected columns of every record, at most ``m`` records per unit (``m`` =
max_contributions with a privacy unit, else 1): ``N`` records. ε is split in two:

* **the number of records**, ``ε_c = ε/10`` (``COUNT_SHARE``): ``T = min(max(0, N + Z), MAX_RECORDS)``
  with ``Z`` the exact discrete Laplace of sensitivity ``m`` (one unit changes ``N`` by at most ``m``). If
  ``T ≤ N`` a uniformly random ``T`` of the ``N`` records are released; if ``T > N`` all of them and
  ``T − N`` *dummy* records, whose values are drawn uniformly from each column's public domain or grid and
  randomised like the others. Where the relation fixes ``N`` (``substitute`` with one record per unit: no
  privacy unit, or ``m = 1``) nothing is spent on it and ``T = N``;
* **the records**, ``ε_r = ε − ε_c``: each of the ``k`` selected attributes of every released record is
  randomised with ``ε' = ε_r/(k·m)``: k-ary randomised response over the column's public domain for
  categories; for numbers, the value clamped to ``[L, U]`` and rounded to a public grid (the integers for
  an int column with integer bounds, else ``2^20`` steps), plus exact discrete Laplace noise of rate
  ``ε'/steps``, the result clamped to ``[L, U]`` again. Released numbers always lie inside the declared
  bounds. One record is ``ε_r/m``-DP in the local sense (any two records give output distributions within
  ``e^{ε_r/m}``), so a unit's at most ``m`` records cost ``ε_r``.

The released records (real and dummy) are put in a uniformly random order (CSPRNG): the engine's order
follows storage and the bounding steps, and would tell about unreleased columns or units' sizes.
``WHERE``, ``ORDER BY`` and ``LIMIT`` then run on the randomised records in a separate in-memory engine that
holds nothing else: filtering on true values would reveal them, filtering released values is
post-processing. They may therefore use released columns only.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
from numpy.typing import NDArray
from sqlglot import exp

from privdb.errors import InvalidParameter
from privdb.mechanisms import Geometric, KaryRandomizedResponse, RandomSource
from privdb.mechanisms._samplers import discrete_laplace, uniform_int
from privdb.mechanisms.randomness import default_source
from privdb.sql.answer.noise import NoisyAnswer
from privdb.sql.release.plan import ReleasedColumn, ReleasePlan

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MAX_RECORDS", "RECORDS_ENTRY", "debias_values", "draw_records", "randomize_records"]

_RELEASED = "released"  # the in-memory table of randomised records
MAX_RECORDS = 10_000_000  # a public cap on the records one answer holds (a uniform sample beyond it)
RECORDS_ENTRY = "(records)"  # the accuracy entry that describes the number of released records


def _permutation(n: int, source: RandomSource) -> NDArray[np.intp]:
    """A uniformly random permutation of ``range(n)``: the order of ``n`` CSPRNG words, drawn again in the
    (data-independent, ~n²/2^65) event of a tie, so that no tie is broken by position."""
    while True:
        keys = source.words(n)
        order = np.argsort(keys, kind="stable")
        ranked = keys[order]
        if n < 2 or not bool(np.any(ranked[1:] == ranked[:-1])):
            return order


def _noisy_count(plan: ReleasePlan, n: int, source: RandomSource) -> tuple[int, dict[str, Any]]:
    """``T``, the number of records to release, and its accuracy entry."""
    info: dict[str, Any] = {"column": RECORDS_ENTRY, "cap": MAX_RECORDS}
    if plan.count_public:
        t = min(n, MAX_RECORDS)
        info.update(
            mechanism="none",
            epsilon=0.0,
            records=t,
            estimator=(
                "the number of records read (one per unit; the relation fixes it, so it is released as is)"
                + (f", capped at {MAX_RECORDS:,} (a uniform sample)" if n > MAX_RECORDS else "")
            ),
        )
        return t, info
    geo = Geometric(epsilon=plan.count_epsilon, sensitivity=plan.contributions, rng=source)
    t = min(max(0, n + int(geo.noise(1)[0])), MAX_RECORDS)
    q = math.exp(-geo.rate)
    info.update(
        mechanism="geometric",
        epsilon=plan.count_epsilon,
        sensitivity=plan.contributions,
        scale=geo.scale,
        half_width95=geo.half_width(0.05),
        records=t,
        dummy_bias=q / (1 - q * q),
        estimator=(
            "records = min(max(0, N + Z), cap), Z discrete Laplace of the stated scale: an unbiased estimate "
            "(before the clip at 0) of the number N of records read, ±half_width95 at 95%. When records < N "
            "they are a uniform sample of the N records; when records > N, records − N of them are dummies "
            "(values uniform over each column's domain or grid, randomised like the others); the expected "
            "number of dummies is at most dummy_bias (E[max(Z, 0)])"
        ),
    )
    return t, info


def _grid_index(col: ReleasedColumn, values: pd.Series) -> NDArray[np.int64]:
    """Each value clamped to ``[L, U]`` (NULL: the midpoint) and rounded to the nearest grid point."""
    import pandas as pd  # the values are a frame's column: pandas is loaded already

    assert col.column.lower is not None and col.column.upper is not None
    lo, hi = float(col.column.lower), float(col.column.upper)
    raw = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    x: NDArray[np.float64] = np.where(np.isnan(raw), lo * 0.5 + hi * 0.5, raw)
    if col.mechanism == "clamped_geometric":
        return (np.rint(np.clip(x, lo, hi)) - lo).astype(np.int64)
    share = (np.clip(x, lo, hi) * 0.5 - lo * 0.5) / (hi * 0.5 - lo * 0.5)  # halves: no overflow
    return np.rint(np.clip(share, 0.0, 1.0) * col.steps).astype(np.int64)


def _grid_value(col: ReleasedColumn, j: NDArray[np.int64]) -> NDArray[Any]:
    """The released number of grid index ``j``: a public, deterministic function of the DP integer."""
    assert col.column.lower is not None and col.column.upper is not None
    lo, hi = float(col.column.lower), float(col.column.upper)
    if col.mechanism == "clamped_geometric":
        out: NDArray[Any] = np.int64(int(lo)) + j
        return out
    w = j.astype(np.float64) / col.steps  # exact: steps is a power of two
    return np.clip(lo * (1.0 - w) + hi * w, lo, hi)


def _numeric_info(col: ReleasedColumn) -> dict[str, Any]:
    assert col.column.lower is not None and col.column.upper is not None
    lo, hi = col.column.lower, col.column.upper
    steps = col.steps
    grid = 1.0 if col.mechanism == "clamped_geometric" else float(hi) / steps - float(lo) / steps
    rate = col.rate
    q = math.exp(-rate)
    overshoot = grid / math.expm1(rate)  # E[how far the unclamped value lies beyond a bound] = g·q/(1 − q)
    # discrete Laplace: P(|Z| > k) = 2 q^(k+1)/(1 + q); clamping only moves a value towards the truth
    k = max(math.ceil((math.log(0.05) + math.log1p(q) - math.log(2.0)) / -rate) - 1, 0)
    return {
        "bounds": [lo, hi],
        "grid": grid,
        "steps": steps,
        "rate": rate,
        "scale": grid / rate,
        "half_width95": min(k, steps) * grid,
        "debiased_lower": float(lo) - overshoot,
        "debiased_upper": float(hi) + overshoot,
        "estimator": (
            "released values lie in [L, U]: the value clamped to the bounds and rounded to the grid, plus "
            "discrete Laplace noise (rate per grid step), clamped to [L, U] again. Their mean is biased "
            "toward the middle of [L, U]. Unbiased per record: read a released L as debiased_lower and a "
            "released U as debiased_upper (the expected overshoot of the clamped noise, the same whatever "
            "the true value), other values as they are; the mean of these is unbiased for the mean of the "
            "clamped values (rounded to the grid), with per-record variance at most 2·q/(1−q)²·grid² "
            "(q = e^−rate), below unclamped Laplace noise. Transition: P(j | i) = (1−q)/(1+q)·q^|j−i| "
            "inside, q^i/(1+q) at L, q^(steps−i)/(1+q) at U (i, j grid indices). "
            "privdb.sql.release.records.debias_values does this"
        ),
    }


def _randomize(
    col: ReleasedColumn, values: pd.Series, dummies: int, rng: RandomSource
) -> tuple[NDArray[Any], dict[str, Any]]:
    """The randomised values of the chosen records, then of ``dummies`` dummy records (uniform inputs)."""
    column = col.column
    info: dict[str, Any] = {"column": col.output, "mechanism": col.mechanism, "epsilon": col.epsilon}
    n = len(values) + dummies
    if col.mechanism == "randomized_response":
        import pandas as pd  # the values are a frame's column: pandas is loaded already

        domain = col.domain
        codes = np.asarray(pd.Categorical(values, categories=list(domain)).codes, dtype=np.int64)
        outside = codes < 0  # NULL or a value outside the public domain: a uniform value stands in
        if outside.any():
            codes[outside] = uniform_int(len(domain), int(outside.sum()), rng)
        codes = np.concatenate([codes, uniform_int(len(domain), dummies, rng)])
        if len(domain) == 1:
            picked = np.zeros(n, dtype=np.int64)
            info["scale"] = 0.0
        else:
            rr = KaryRandomizedResponse(epsilon=col.epsilon, k=len(domain), rng=rng)
            picked = rr.release(codes) if n else codes
            info.update(p_keep=rr.p, p_other=rr.q)
        info["domain"] = list(domain)
        info["estimator"] = (
            "unbiased counts (C − n·q)/(p − q) of the released records holding each value, p = p_keep, "
            "q = p_other: result.estimate_frequencies(column), on the records before any WHERE on this "
            "column. The released records are a uniform sample of the records read, or all of them and "
            f"dummies uniform over the domain (see the {RECORDS_ENTRY!r} entry): dummies add records/d to "
            "each value on average"
        )
        return np.asarray(domain, dtype=object)[picked], info
    assert column.lower is not None and column.upper is not None
    info["bounds"] = [column.lower, column.upper]
    if col.mechanism == "constant":
        info["scale"] = 0.0
        info["estimator"] = "one possible value: released as it is"
        value = column.lower
        if column.type == "int" and float(value).is_integer():
            return np.full(n, int(value), dtype=np.int64), info
        return np.full(n, float(value)), info
    index = np.concatenate([_grid_index(col, values), uniform_int(col.steps + 1, dummies, rng)])
    noisy = np.clip(index + discrete_laplace(col.rate, n, rng), 0, col.steps) if n else index
    info.update(_numeric_info(col))
    return _grid_value(col, noisy), info


def draw_records(
    plan: ReleasePlan, frame: pd.DataFrame, rng: RandomSource
) -> tuple[dict[str, NDArray[Any]], list[dict[str, Any]]]:
    """The released records before WHERE / ORDER BY / LIMIT, by column name, in a uniformly random order;
    and the accuracy entries (one per column, then the number of records)."""
    n = len(frame)
    t, count_info = _noisy_count(plan, n, rng)
    chosen = np.arange(n) if t >= n else _permutation(n, rng)[:t]
    dummies = max(t - n, 0)
    released: dict[str, NDArray[Any]] = {}
    accuracy = []
    for col, name in zip(plan.columns, frame.columns, strict=True):
        values, info = _randomize(col, frame[name].iloc[chosen], dummies, rng)
        released[col.column.name] = values
        accuracy.append(info)
    accuracy.append(count_info)
    # a uniformly random order (from the CSPRNG): the engine's order follows storage and the bounding
    # steps, and could tell the analyst about unreleased columns or how many rows a unit has; dummies
    # come last before it
    order = _permutation(t, rng)
    return {name: values[order] for name, values in released.items()}, accuracy


def randomize_records(plan: ReleasePlan, frame: pd.DataFrame, rng: RandomSource | None = None) -> NoisyAnswer:
    """Release the records (noisy number, every attribute randomised), then apply WHERE / ORDER BY / LIMIT
    to the randomised records."""
    source = rng or default_source()
    released, accuracy = draw_records(plan, frame, source)
    outputs = [c.output for c in plan.columns]
    if not any(plan.query.select.args.get(clause) for clause in ("where", "order", "limit")):
        cols = [_plain_list(released[c.column.name]) for c in plan.columns]
        return NoisyAnswer(outputs, [list(row) for row in zip(*cols, strict=True)], accuracy)
    import pandas as pd  # the released records as a frame, for DuckDB to filter and order

    select = plan.query.select.copy()
    table = pd.DataFrame(released, columns=[c.column.name for c in plan.columns])
    select.set(
        "expressions",
        [exp.alias_(exp.column(c.column.name, quoted=True), c.output, quoted=True) for c in plan.columns],
    )
    select.set("from_" if "from_" in select.args else "from", exp.From(this=exp.to_table(_RELEASED)))
    for column in select.find_all(exp.Column):
        column.set("table", None)
    con = duckdb.connect(":memory:", config={"enable_external_access": False})  # sees the release only
    try:
        con.register(_RELEASED, table)
        out = con.execute(select.sql(dialect="duckdb")).df()
    finally:
        con.close()
    rows = [[_plain(v) for v in row] for row in out.itertuples(index=False, name=None)]
    return NoisyAnswer(outputs, rows, accuracy)


def debias_values(values: Any, info: dict[str, Any]) -> NDArray[np.float64]:
    """Released numbers of one column made unbiased per record (post-processing): a released ``L`` is read
    as ``debiased_lower`` and a released ``U`` as ``debiased_upper``, other values as they are. ``info`` is
    the column's accuracy entry; the mean of the result is unbiased for the mean of the clamped values."""
    if info.get("mechanism") not in ("clamped_geometric", "clamped_laplace"):
        raise InvalidParameter(
            f"column {info.get('column')!r} was not released with clamped noise; nothing to de-bias"
        )
    y = np.asarray(values, dtype=np.float64)
    lo, hi = (float(b) for b in info["bounds"])
    return np.where(y <= lo, info["debiased_lower"], np.where(y >= hi, info["debiased_upper"], y))


def _plain_list(values: NDArray[Any]) -> list[Any]:
    if values.dtype == object:
        return [_plain(v) for v in values]
    return list(values.tolist())


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
