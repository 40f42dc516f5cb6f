"""The plan of a record release (``DP-SELECT ε col1, col2 FROM t [WHERE …]``, docs/proofs/records.md), made
before anything is read: which columns are released and how each is randomised (k-ary randomised response over
a public domain, or clamped discrete Laplace noise on a public grid between the bounds), how ε is split
between the number of records (``ε_c = ε/COUNT_SHARE``, nothing where the relation fixes it) and the
records (``ε_r``, ``ε' = ε_r/(k·m)`` per attribute), the checks of WHERE / ORDER BY / LIMIT (released
columns only), and the engine SQL that reads at most ``m`` records per unit. privdb.sql.release.records
randomises what that SQL reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sqlglot import exp

from privdb.backends.names import quote
from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import InvalidParameter, UnsupportedQuery
from privdb.mechanisms import Geometric
from privdb.mechanisms._samplers import LAMBDA_MIN
from privdb.sql.front.checks.aggregates import is_aggregate
from privdb.sql.front.checks.clauses import check_clauses, check_predicate, table_column
from privdb.sql.front.query import DPQuery

__all__ = [
    "COUNT_SHARE",
    "FLOAT_GRID_STEPS",
    "RELEASE_GUARANTEE",
    "ReleasePlan",
    "ReleasedColumn",
    "is_record_release",
    "plan_release",
    "release_sql",
]

COUNT_SHARE = 10  # the number of records costs ε/COUNT_SHARE, when the relation does not fix it
FLOAT_GRID_STEPS = 2**20  # grid steps between L and U for a float column
_MAX_INT_STEPS = 2**52  # an int column with a wider range is released on the float grid

RELEASE_GUARANTEE = (
    "ε-DP under the table's neighbouring relation: every released record's values are randomised "
    "(ε_r/m-DP per record, ε_r per unit), and the number of records is a noisy count (ε_c; a uniform sample "
    "of the records, or all of them and dummy records) unless the relation fixes it (substitute with one "
    "record per unit), ε_c + ε_r = ε"
)


def is_record_release(select: exp.Select) -> bool:
    """No aggregate anywhere in the select list, no GROUP BY, DISTINCT, HAVING, JOIN or CTE, and only
    columns or ``*`` selected: the query asks for records."""
    if any(select.args.get(k) for k in ("group", "distinct", "having", "joins", "with", "with_")):
        return False
    source = select.args.get("from_") or select.args.get("from")
    if source is not None and not isinstance(source.this, exp.Table):
        return False
    if any(is_aggregate(n) for item in select.expressions for n in item.walk()):
        return False
    return any(isinstance(n, exp.Column | exp.Star) for item in select.expressions for n in item.walk())


def _share(total: float, parts: int) -> float:
    """The largest float ``s ≤ total/parts`` in exact arithmetic (a privacy share never rounds up)."""
    s = total / parts
    while Fraction(s) * parts > Fraction(total):
        s = math.nextafter(s, 0.0)
    return s


@dataclass(frozen=True)
class ReleasedColumn:
    output: str
    column: ColumnMeta
    mechanism: str  # randomized_response | clamped_geometric | clamped_laplace | constant
    epsilon: float

    @property
    def domain(self) -> tuple[Any, ...]:
        if self.column.values is not None:
            return self.column.values
        return (False, True)  # a bool column's domain is public by its type

    @property
    def steps(self) -> int:
        """Grid steps between the bounds: released numbers are ``L + j·(U − L)/steps``, ``0 ≤ j ≤ steps``."""
        if self.mechanism == "clamped_geometric":
            assert self.column.lower is not None and self.column.upper is not None
            return int(self.column.upper) - int(self.column.lower)
        return FLOAT_GRID_STEPS if self.mechanism == "clamped_laplace" else 0

    @property
    def rate(self) -> float:
        """The discrete Laplace rate per grid step: ``ε'/steps`` rounded down (loss ``rate·steps ≤ ε'``)."""
        return _share(self.epsilon, self.steps)


@dataclass(frozen=True)
class ReleasePlan:
    query: DPQuery
    table: TableMeta
    columns: tuple[ReleasedColumn, ...]
    count_epsilon: float = 0.0  # ε_c: 0 when the relation fixes the number of records
    record_epsilon: float = 0.0  # ε_r, split over the k attributes and m records per unit
    contributions: int = 1  # m: records kept per unit (1 without a privacy unit)

    @property
    def epsilon(self) -> float:
        return self.query.epsilon

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def count_public(self) -> bool:
        """The relation fixes the number of records (substitute, one record per unit): released as is."""
        return self.count_epsilon == 0.0

    @property
    def neighbouring(self) -> str:
        """What ``explain`` shows: the relation and how the number of records is protected."""
        if self.count_public:
            return (
                f"{self.table.neighbouring} (one record per unit: neighbouring tables have the same number "
                "of records, released as is)"
            )
        return (
            f"{self.table.neighbouring} (the number of records is a noisy count, "
            f"ε_c = {self.count_epsilon:g}: a uniform sample of the records, or all of them and dummies)"
        )

    @property
    def guarantee(self) -> str:
        """The guarantee of this release, with its numbers."""
        m = self.contributions
        records = (
            f"each record's values are randomised ({self.record_epsilon / m:g}-DP per record, "
            f"ε_r = {self.record_epsilon:g} for a unit's at most {m} record{'s' if m > 1 else ''})"
        )
        if self.count_public:
            count = "the number of records is the same on neighbouring tables (one record per unit): released"
        else:
            count = (
                f"the number of records is a noisy count (ε_c = {self.count_epsilon:g}): a uniform sample of "
                "the records, or all of them and dummy records"
            )
        return f"{self.epsilon:g}-DP under the {self.table.neighbouring} relation: {records}; {count}"


def _mechanism_for(column: ColumnMeta) -> str:
    if column.values is not None or column.type == "bool":
        return "randomized_response"
    if column.numeric and column.bounded:
        assert column.lower is not None and column.upper is not None
        lo, hi = float(column.lower), float(column.upper)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise UnsupportedQuery(f"column {column.name!r} needs finite bounds to be randomised")
        if lo == hi:
            return "constant"
        integral = column.type == "int" and lo.is_integer() and hi.is_integer() and hi - lo <= _MAX_INT_STEPS
        return "clamped_geometric" if integral else "clamped_laplace"
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


def _split(query: DPQuery, table: TableMeta, k: int) -> tuple[float, float, float, int]:
    """``(ε_c, ε_r, ε', m)``: the count's share, the records' share and each attribute's."""
    m = table.max_contributions if table.privacy_unit else 1
    epsilon = query.epsilon
    # substitute with one record per unit: N is the same on neighbouring tables, nothing to protect
    count = 0.0 if table.neighbouring == "substitute" and m == 1 else _share(epsilon, COUNT_SHARE)
    records = epsilon - count
    while Fraction(records) + Fraction(count) > Fraction(epsilon):
        records = math.nextafter(records, 0.0)
    return count, records, _share(records, k * m), m


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
            if any(node.args.values()):  # * EXCLUDE / REPLACE / RENAME: would be silently ignored
                raise UnsupportedQuery(
                    f"{node.sql()}: record release takes a plain * (every releasable column) or a list of "
                    "columns; list the columns you want instead"
                )
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
    count, records, share, m = _split(query, table, len(chosen))
    plan = ReleasePlan(
        query,
        table,
        tuple(ReleasedColumn(o, c, _mechanism_for(c), share) for o, c in chosen),
        count_epsilon=count,
        record_epsilon=records,
        contributions=m,
    )
    if not plan.count_public:
        Geometric(epsilon=count, sensitivity=m)  # refuses an ε too small for the count, before reading
    for col in plan.columns:
        if col.steps and not col.rate >= LAMBDA_MIN:
            raise InvalidParameter(
                f"epsilon {query.epsilon:g} is too small to randomise {col.output!r}: its share {share:g} "
                f"over {col.steps} grid steps would be noise of more than 2^50 steps; raise epsilon or "
                "select fewer columns"
            )
    released = {c.column.name.lower() for c in plan.columns}
    where = select.args.get("where")
    if where is not None:
        check_predicate(where.this, table, "WHERE")
        for col_ref in where.this.find_all(exp.Column):
            if col_ref.name.lower() not in released:
                raise UnsupportedQuery(
                    f"WHERE uses {col_ref.name!r}, which is not released: WHERE filters the randomised "
                    "records (filtering true values would reveal them), so add the column to the select "
                    "list or drop the condition"
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
