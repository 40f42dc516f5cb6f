"""Record release: ``DP-SELECT ε col1, col2 FROM t [WHERE …]`` randomises every selected attribute of every
record (the course notes' ``DP-SELECT ε * FROM table``).

Each of the ``k`` selected attributes gets ``ε/(k·m)`` (``m`` = max_contributions with a privacy unit, else
1): k-ary randomised response over the column's public domain for categories, the geometric (integer
bounds) or Laplace mechanism with sensitivity ``U − L`` on the value clamped to its bounds for numbers. One
record is then ``ε/m``-DP in the local sense (any two values of its attributes give output distributions
within ``e^{ε/m}``), and a unit's at most ``m`` records ``ε``-DP by composition.

What is and is not protected (docs/proofs/local.md): the values of every record are; the number of records
is released, as in every local-model survey, so the guarantee is ε-DP under the *substitute* relation
(a person's data changed). The answer says so in ``extra``.

The randomised records are put in a uniformly random order (CSPRNG) before anything else: the engine's
order follows storage and the bounding steps, and would tell about unreleased columns or units' sizes.
``WHERE``, ``ORDER BY`` and ``LIMIT`` then run on the randomised records in a separate in-memory engine that
holds nothing else: filtering on true values would reveal them, filtering released values is
post-processing. They may therefore use released columns only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd
from sqlglot import exp

from privdb.backends.duckdb import quote
from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import UnsupportedQuery
from privdb.mechanisms import Geometric, KaryRandomizedResponse, Laplace, RandomSource
from privdb.mechanisms._samplers import uniform_int
from privdb.mechanisms.randomness import default_source
from privdb.sql.noise import NoisyAnswer
from privdb.sql.parse import DPQuery
from privdb.sql.validate import check_clauses, check_literal_types, check_scalar, table_column

__all__ = [
    "RELEASE_GUARANTEE",
    "ReleasePlan",
    "is_record_release",
    "plan_release",
    "randomize_records",
    "release_sql",
]

_RELEASED = "released"  # the in-memory table of randomised records
RELEASE_GUARANTEE = (
    "each record's values are randomised (ε/m-DP per record, ε per person); the number of records is "
    "released, so this is ε-DP under the substitute relation"
)


def is_record_release(select: exp.Select) -> bool:
    """No aggregate anywhere in the select list and no GROUP BY: the query asks for records."""
    if select.args.get("group") is not None:
        return False
    return not any(isinstance(n, exp.AggFunc) for item in select.expressions for n in item.walk())


@dataclass(frozen=True)
class ReleasedColumn:
    output: str
    column: ColumnMeta
    mechanism: str  # randomized_response | geometric | laplace | constant
    epsilon: float

    @property
    def domain(self) -> tuple[Any, ...]:
        if self.column.values is not None:
            return self.column.values
        return (False, True)  # a bool column's domain is public by its type


@dataclass(frozen=True)
class ReleasePlan:
    query: DPQuery
    table: TableMeta
    columns: tuple[ReleasedColumn, ...]

    @property
    def epsilon(self) -> float:
        return self.query.epsilon

    @property
    def delta(self) -> float:
        return 0.0


def _mechanism_for(column: ColumnMeta) -> str:
    if column.values is not None or column.type == "bool":
        return "randomized_response"
    if column.numeric and column.bounded:
        assert column.lower is not None and column.upper is not None
        if column.lower == column.upper:
            return "constant"
        integral = (
            column.type == "int" and float(column.lower).is_integer() and float(column.upper).is_integer()
        )
        return "geometric" if integral else "laplace"
    raise UnsupportedQuery(
        f"column {column.name!r} has no public domain or bounds, so it cannot be randomised: declare "
        "`values: [...]` (categories) or `lower`/`upper` (numbers) in its metadata, or leave it out"
    )


def _releasable(column: ColumnMeta) -> bool:
    try:
        _mechanism_for(column)
    except UnsupportedQuery:
        return False
    return not (column.identifier or column.private_id)


def plan_release(query: DPQuery, table: TableMeta) -> ReleasePlan:
    """The columns to release, each with its mechanism and ε share; refuses before any data is read."""
    select = query.select
    check_clauses(select)
    if query.delta:
        raise UnsupportedQuery("record release is ε-DP and needs no DELTA; remove it")
    chosen: list[tuple[str, ColumnMeta]] = []
    for item in select.expressions:
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Star):
            columns = [c for c in table.columns.values() if _releasable(c)]
            if not columns:
                raise UnsupportedQuery(
                    f"table {table.name!r} has no column with a public domain or bounds to release"
                )
            chosen += [(c.name, c) for c in columns]
            continue
        if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
            raise UnsupportedQuery(
                f"{node.sql()}: record release lists plain columns (or *); compute expressions on the "
                "released records yourself"
            )
        column = table_column(node, table, "is never released")
        chosen.append((item.alias if isinstance(item, exp.Alias) else column.name, column))
    names = [c.name for _, c in chosen]
    if len(set(names)) != len(names):
        raise UnsupportedQuery("a column is selected twice; select each column once")
    outputs = [o for o, _ in chosen]
    if len({o.lower() for o in outputs}) != len(outputs):
        raise UnsupportedQuery("two output columns have the same name; give them distinct aliases (AS …)")
    share = query.epsilon / (len(chosen) * (table.max_contributions if table.privacy_unit else 1))
    plan = ReleasePlan(query, table, tuple(ReleasedColumn(o, c, _mechanism_for(c), share) for o, c in chosen))
    released = {c.column.name.lower() for c in plan.columns}
    where = select.args.get("where")
    if where is not None:
        check_scalar(where.this, table, "WHERE")
        check_literal_types(where.this, table, "WHERE")
        for col in where.this.find_all(exp.Column):
            if col.name.lower() not in released:
                raise UnsupportedQuery(
                    f"WHERE uses {col.name!r}, which is not released: WHERE filters the randomised records "
                    "(filtering true values would reveal them), so add the column to the select list or drop "
                    "the condition"
                )
    order = select.args.get("order")
    known = released | {c.output.lower() for c in plan.columns}
    for ordered in order.expressions if order is not None else []:
        target = ordered.this
        by_position = isinstance(target, exp.Literal) and not target.is_string and str(target.this).isdigit()
        if by_position and not 1 <= int(target.this) <= len(plan.columns):
            raise UnsupportedQuery(
                f"ORDER BY {target.this}: there are only {len(plan.columns)} output columns"
            )
        by_name = isinstance(target, exp.Column) and not target.table and target.name.lower() in known
        if not (by_position or by_name):
            raise UnsupportedQuery(
                f"ORDER BY {target.sql()}: order by a released column (its name or position)"
            )
    limit = select.args.get("limit")
    if limit is not None and not (
        isinstance(limit.expression, exp.Literal) and str(limit.expression.this).isdigit()
    ):
        raise UnsupportedQuery("LIMIT takes a whole number")
    return plan


def release_sql(plan: ReleasePlan, table: str, unit_rows: str | None = None) -> str:
    """The engine query: the selected columns of every record, at most ``m`` records per unit (chosen at
    random; which rows a unit keeps may depend on anything but other units' data)."""
    cols = ", ".join(quote(c.column.name) for c in plan.columns)
    unit = plan.table.privacy_unit
    if unit is None:
        return f"SELECT {cols} FROM {quote(table)}"
    m = plan.table.max_contributions
    shuffled = f"SELECT {cols}, {quote(unit)} AS u, random() AS rnd FROM {quote(table)}"
    condition = f" WHERE {quote(unit_rows)} > {m}" if unit_rows else ""
    if unit_rows:  # units with at most m rows keep them all (docs/proofs/sql.md, the small-unit shortcut)
        shuffled += condition
    ranked = f"SELECT *, ROW_NUMBER() OVER (PARTITION BY u ORDER BY rnd) AS rn FROM ({shuffled})"
    bounded = f"SELECT {cols} FROM ({ranked}) WHERE rn <= {m}"
    if unit_rows:
        return f"SELECT {cols} FROM {quote(table)} WHERE {quote(unit_rows)} <= {m} UNION ALL {bounded}"
    return bounded


def _randomize(
    col: ReleasedColumn, values: pd.Series, rng: RandomSource
) -> tuple[np.ndarray, dict[str, Any]]:
    column = col.column
    info: dict[str, Any] = {"column": col.output, "mechanism": col.mechanism, "epsilon": col.epsilon}
    n = len(values)
    if col.mechanism == "randomized_response":
        domain = col.domain
        codes = np.asarray(pd.Categorical(values, categories=list(domain)).codes, dtype=np.int64)
        outside = codes < 0  # NULL or a value outside the public domain: a uniform value stands in
        if outside.any():
            codes[outside] = uniform_int(len(domain), int(outside.sum()), rng)
        if len(domain) == 1:
            picked = np.zeros(n, dtype=np.int64)
            info["scale"] = 0.0
        else:
            rr = KaryRandomizedResponse(epsilon=col.epsilon, k=len(domain), rng=rng)
            picked = rr.release(codes) if n else codes
            info.update(p_keep=rr.p, p_other=rr.q)
        info["domain"] = list(domain)
        info["estimator"] = (
            "unbiased counts (C − n·q)/(p − q) with p = p_keep, q = p_other: "
            "result.estimate_frequencies(column), on the records before any WHERE on this column"
        )
        return np.asarray(domain, dtype=object)[picked], info
    assert column.lower is not None and column.upper is not None
    lo, hi = column.lower, column.upper
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    x = np.clip(np.where(np.isnan(x), (lo + hi) / 2, x), lo, hi)  # NULL stands in as the midpoint
    info["bounds"] = [lo, hi]
    info["estimator"] = "noise has mean 0: means of released values are unbiased for means of clamped values"
    if col.mechanism == "constant":
        info["scale"] = 0.0
        return x, info
    if col.mechanism == "geometric":
        geo = Geometric(epsilon=col.epsilon, sensitivity=int(hi - lo), rng=rng)
        out: np.ndarray = geo.release_int(np.rint(x).astype(np.int64)) if n else x.astype(np.int64)
        info.update(scale=geo.scale, half_width95=geo.half_width(0.05))
        return out, info
    lap = Laplace(epsilon=col.epsilon, sensitivity=hi - lo, rng=rng)
    info.update(scale=lap.scale, half_width95=lap.half_width(0.05))
    return (lap.release(x) if n else x), info


def randomize_records(plan: ReleasePlan, frame: pd.DataFrame, rng: RandomSource | None = None) -> NoisyAnswer:
    """Randomise every selected attribute, then apply WHERE / ORDER BY / LIMIT to the randomised records."""
    source = rng or default_source()
    released: dict[str, Any] = {}
    accuracy = []
    for col, name in zip(plan.columns, frame.columns, strict=True):
        values, info = _randomize(col, frame[name], source)
        released[col.column.name] = values
        accuracy.append(info)
    # a uniformly random order (from the CSPRNG): the engine's order follows storage and the bounding
    # steps, and could tell the analyst about unreleased columns or how many rows a unit has
    order = np.argsort(source.words(len(frame)), kind="stable")
    table = pd.DataFrame(
        {name: np.asarray(values)[order] for name, values in released.items()},
        columns=[c.column.name for c in plan.columns],
    )
    select = plan.query.select.copy()
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
    return NoisyAnswer([c.output for c in plan.columns], rows, accuracy)


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
