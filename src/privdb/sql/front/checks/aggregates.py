"""Recognise the aggregates of a DP-SELECT, in every spelling analysts write, and check their arguments.

Spellings: COUNT(*), COUNT(1) (any non-null literal: every row), COUNT(x), COUNT(DISTINCT x),
APPROX_COUNT_DISTINCT(x) (computed exactly: the noise dominates), SUM, AVG, VARIANCE = VAR = VAR_SAMP,
VAR_POP, STDDEV = STD = STDDEV_SAMP, STDDEV_POP, MEDIAN, QUANTILE/PERCENTILE_CONT, MIN, MAX, MODE, CORR,
COVAR_POP, REGR_SLOPE, REGR_INTERCEPT.

An argument is a column or an expression of the closed language (privdb.sql.front.expr). An expression is
computed
as a hidden column of the query's relation; the statistics that need bounds (sums, averages, variances,
order statistics) take them from interval arithmetic over the declared column bounds
(privdb.sql.front.expr.bounds): ``AVG(age * 12)`` is bounded by ``12·[L, U]``, ``SUM(CASE WHEN … THEN 1 ELSE 0
END)`` by ``[0, 1]``. Counting needs no bound, so ``COUNT(pid)`` and ``COUNT(DISTINCT pid)`` may read a column
that identifies people: they release how many values there are, never a value.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from privdb.backends.names import HIDDEN_PREFIX
from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import InvalidParameter, UnsupportedQuery
from privdb.sql.front import expr
from privdb.sql.front.expr import Type
from privdb.sql.front.expr.bounds import bound
from privdb.sql.front.expr.render import render_num
from privdb.sql.front.expr.totality import check_summable

__all__ = ["SUPPORTED", "AggregateRef", "Arguments", "aggregate_kind", "is_aggregate"]

SUPPORTED = (
    "supported: DP-SELECT ε [DELTA δ] with COUNT(*), COUNT(x), COUNT(DISTINCT x), SUM(x), AVG(x), "
    "VARIANCE/VAR(x), STDDEV/STD(x), VAR_POP, STDDEV_POP, MEDIAN(x), QUANTILE(x, q), MIN(x), MAX(x), "
    "MODE(x), CORR(x, y), COVAR_POP(x, y), REGR_SLOPE(y, x), REGR_INTERCEPT(y, x) (x a column or an "
    "expression with bounds), arithmetic and functions over them, GROUP BY keys, HAVING, DISTINCT, "
    "ORDER BY, LIMIT/TOP; FROM a table, a subquery, a CTE or a JOIN; or "
    "randomised records: DP-SELECT ε col1, col2 (or *) FROM table [WHERE …]"
)

_QUANTILES: dict[type[exp.Expression], float | None] = {
    exp.Median: 0.5,
    exp.Min: 0.0,
    exp.Max: 1.0,
    exp.Quantile: None,  # QUANTILE(col, q)
    exp.PercentileCont: None,
}
_PAIRS: dict[type[exp.Expression], str] = {
    exp.Corr: "corr",
    exp.CovarPop: "covar",
    exp.RegrSlope: "regr_slope",
    exp.RegrIntercept: "regr_intercept",
}
_ANONYMOUS = {
    "VAR": "variance",
    "VAR_SAMP": "variance",
    "STD": "stddev",
    "STDEV": "stddev",
    "STDDEV_SAMP": "stddev",
}
_COUNTS = ("count", "count_distinct", "count_star")


@dataclass(frozen=True)
class AggregateRef:
    """An aggregate of the query (in the select list, in an expression over aggregates, or in HAVING)."""

    output: str
    kind: str  # count_star | count | count_distinct | sum | avg | variance | stddev | … | quantile | mode
    column: ColumnMeta | None  # the column read (an expression's hidden column), None for COUNT(*)
    node: exp.Expression
    q: float | None = None  # the quantile's level, for kind == "quantile"
    column2: ColumnMeta | None = None  # the second column of CORR, COVAR_POP, REGR_SLOPE, REGR_INTERCEPT
    of_unit: bool = False  # COUNT(DISTINCT <privacy unit>): counts people
    visible: bool = True  # in the answer (False: only in HAVING or inside an expression)


def is_aggregate(node: exp.Expression) -> bool:
    """An aggregate call, whatever its spelling (VAR and STD reach sqlglot as anonymous functions)."""
    return isinstance(node, exp.AggFunc) or (
        isinstance(node, exp.Anonymous) and str(node.this).upper() in _ANONYMOUS
    )


def aggregate_kind(node: exp.Expression) -> str | None:
    """The aggregate's kind, or None if ``node`` is not an aggregate privdb answers (refused by caller)."""
    if type(node) in _QUANTILES:
        return "quantile"
    if type(node) in _PAIRS:
        return _PAIRS[type(node)]
    if isinstance(node, exp.Anonymous):
        return _ANONYMOUS.get(str(node.this).upper())
    simple: list[tuple[type[exp.Expression], str]] = [
        (exp.Mode, "mode"), (exp.ApproxDistinct, "count_distinct"), (exp.Count, "count"),
        (exp.Sum, "sum"), (exp.Avg, "avg"), (exp.VariancePop, "variance_pop"),
        (exp.StddevPop, "stddev_pop"), (exp.Variance, "variance"), (exp.StddevSamp, "stddev"),
        (exp.Stddev, "stddev"),
    ]  # fmt: skip
    return next((k for t, k in simple if isinstance(node, t)), None)


def _quantile_level(node: exp.Expression) -> float:
    level = node.args.get("quantile") or node.args.get("expression")
    if isinstance(level, exp.Neg) and isinstance(level.this, exp.Literal):
        level = exp.Literal.number(-float(level.this.this))
    if not isinstance(level, exp.Literal) or level.is_string:
        raise UnsupportedQuery(f"{node.sql()}: the quantile's level is a number between 0 and 1, e.g. 0.9")
    q = float(level.this)
    if not 0.0 <= q <= 1.0:
        raise InvalidParameter(f"{node.sql()}: the quantile's level must be between 0 and 1, got {q:g}")
    return q


def _magnitude(column: ColumnMeta) -> float | None:
    if column.lower is None or column.upper is None:
        return None  # refused where the bounds are needed, with its own message
    return max(abs(column.lower), abs(column.upper))


def _check_summable(
    node: exp.Expression, kind: str, column: ColumnMeta, column2: ColumnMeta | None = None
) -> None:
    """Refuse, before reading, an aggregate whose engine sums could overflow (privdb.sql.front.expr.totality):
    SUM and AVG add values, the variances squares, the pair statistics squares and products."""
    if kind in _COUNTS or kind in ("quantile", "mode"):
        return
    what = node.sql(dialect="duckdb")[:80]
    first = _magnitude(column)
    second = None if column2 is None else _magnitude(column2)
    if kind in ("sum", "avg"):
        if first is not None:
            check_summable(first, what)
        return
    for magnitude in (first, second):
        if magnitude is not None:
            check_summable(magnitude, what)
            check_summable(magnitude * magnitude, what, squared=True)
    if first is not None and second is not None:
        check_summable(first * second, what, squared=True)


class Arguments:
    """Checks aggregate arguments against one relation; expressions become hidden computed columns."""

    def __init__(self, table: TableMeta, units: frozenset[str]) -> None:
        self.table = table
        self.units = units
        self.computed: dict[str, tuple[str, ColumnMeta]] = {}  # SQL → (hidden name, column)
        self.portable = True  # every computed argument is total on every engine, not only DuckDB

    def _hidden(self, sql: str, make: ColumnMeta) -> ColumnMeta:
        found = self.computed.get(sql)
        if found is None:
            name = f"{HIDDEN_PREFIX}arg{len(self.computed)}"
            found = (name, ColumnMeta(**{**make.__dict__, "name": name}))
            self.computed[sql] = found
        return found[1]

    def column(self, node: exp.Expression, arg: exp.Expression | None, counting: bool) -> ColumnMeta:
        """The column an aggregate reads: a table column, or an expression's hidden column (with bounds
        by interval arithmetic unless ``counting``)."""
        where = f"{node.sql(dialect='duckdb')[:80]}"
        if arg is None:
            raise UnsupportedQuery(f"{where}: the aggregate needs an argument")
        while isinstance(arg, exp.Paren):
            arg = arg.this
        if isinstance(arg, exp.Column) and not arg.is_star:
            column = self.table.qualified(arg.table or None, arg.name)
            if (column.identifier or column.private_id) and not counting:
                raise UnsupportedQuery(f"column {column.name!r} identifies people and cannot be aggregated")
            return column
        e = expr.check(arg, self.table, where)
        identifying = [c.name for c in e.columns if c.identifier or c.private_id]
        if identifying and not counting:
            raise UnsupportedQuery(f"column {identifying[0]!r} identifies people and cannot be aggregated")
        if counting:
            self.portable = self.portable and e.portable
            storage = {Type.NUM: "float", Type.BOOL: "bool", Type.DATE: "date"}.get(e.type, "text")
            kind = {Type.NUM: "float", Type.BOOL: "bool", Type.DATE: "date"}.get(e.type, "text")
            return self._hidden(expr.render(e), ColumnMeta("", kind, storage=storage))
        if e.type not in (Type.NUM, Type.BOOL) and not e.is_column:
            raise UnsupportedQuery(f"{where}: the argument is {e.type.value}, where a number is needed")
        b = bound(e, where)
        self.portable = self.portable and all(n.portable for n in b.expr.walk())
        made = ColumnMeta("", "int" if b.integer else "float", b.lower, b.upper, storage="float")
        return self._hidden(render_num(b.expr), made)

    def is_unit(self, column: ColumnMeta) -> bool:
        return column.name in self.units

    def aggregate(self, node: exp.Expression, output: str, visible: bool = True) -> AggregateRef:
        """The AggregateRef of an aggregate call (``is_aggregate(node)``), or a refusal that says why."""
        kind = aggregate_kind(node)
        if kind is None:
            raise UnsupportedQuery(
                f"aggregate {node.sql(dialect='duckdb')[:80]} is not supported; {SUPPORTED}"
            )
        if kind in _PAIRS.values():
            first = self.column(node, node.this, False)
            second = self.column(node, node.args.get("expression"), False)
            _check_summable(node, kind, first, second)
            return AggregateRef(output, kind, first, node, None, second, visible=visible)
        arg = node.expressions[0] if isinstance(node, exp.Anonymous) and node.expressions else node.this
        if isinstance(node, exp.Anonymous) and len(node.expressions) != 1:
            raise UnsupportedQuery(f"{node.sql(dialect='duckdb')}: takes one argument")
        distinct = isinstance(arg, exp.Distinct)
        if distinct:
            if kind != "count" or len(arg.expressions) != 1:
                raise UnsupportedQuery(
                    f"{node.sql(dialect='duckdb')[:80]}: DISTINCT is supported in COUNT(DISTINCT x) (one "
                    f"expression); {kind.upper()}(DISTINCT …) is not"
                )
            arg = arg.expressions[0]
            kind = "count_distinct"
        if kind == "count" and (isinstance(arg, (exp.Star, exp.Literal | exp.Boolean))):
            return AggregateRef(output, "count_star", None, node, visible=visible)
        q = None
        if kind == "quantile":
            q = _QUANTILES[type(node)]  # MEDIAN, MIN, MAX: their level; QUANTILE(x, q): its argument
            q = _quantile_level(node) if q is None else q
        column = self.column(node, arg, kind in _COUNTS)
        _check_summable(node, kind, column)
        return AggregateRef(
            output, kind, column, node, q, of_unit=kind == "count_distinct" and self.is_unit(column),
            visible=visible,
        )  # fmt: skip
