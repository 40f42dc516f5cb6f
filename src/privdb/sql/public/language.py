"""The closed language of plain SELECTs: every expression, in every clause, from the DP-SELECT allow-list.

    plain_sql(query) → the SQL the sandbox runs, with text-growing functions cut; or ``unsupported_query``

A plain SELECT reads public tables free, so nothing in it may cost more than a bounded amount per row:
each expression (select list, WHERE, GROUP BY, HAVING, ORDER BY, JOIN conditions, VALUES, DISTINCT ON, and
the same inside subqueries and CTEs) is checked by the expression language's own checker
(privdb.sql.front.expr.check), extended only with what a plain SELECT adds: subqueries (scalar, IN, EXISTS),
the
constant-state aggregates in ``AGGREGATES``, and columns of any table in scope. Columns, aggregates and
subqueries have no type here (DuckDB types them when it binds; the data is public, so its errors may be
shown); every other rule of the checker applies as written: the functions, the literal arguments, the
cast targets, the node limit. Query structure is closed the same way: each clause has a known set of
arguments; anything else (table functions, RECURSIVE, window functions, LATERAL, PIVOT, QUALIFY, list and
struct literals, …) is refused, naming the form and the allow-list, before anything is read.

Text that a function can make longer than its input (``||``, CONCAT, REPLACE) is cut to
``MAX_RESULT_LENGTH`` characters, REPLACE's input too, as the DP path cuts it (docs/proofs/sql.md,
"Plain SELECT"): no row's value grows past a public constant, however the functions are nested.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from privdb.catalog.metadata import TableMeta
from privdb.errors import UnsupportedQuery
from privdb.sql.front.expr import ALLOWED
from privdb.sql.front.expr.check import Checker
from privdb.sql.front.expr.types import MAX_RESULT_LENGTH, Expr, Type
from privdb.sql.public.cutting import cut_growing

__all__ = ["AGGREGATES", "PLAIN_ALLOWED", "plain_sql"]
_GROWING = (exp.DPipe, exp.Concat, exp.Replace)  # what a cut wraps (privdb.sql.public.cutting)

AGGREGATES = "COUNT(*), COUNT([DISTINCT] x), SUM, AVG, MIN, MAX, STDDEV, STDDEV_POP, VARIANCE, VAR_POP"
PLAIN_ALLOWED = (
    "SELECT [DISTINCT [ON (…)]] … FROM public tables, subqueries, CTEs or VALUES; "
    "[NATURAL] [INNER|LEFT|RIGHT|FULL|CROSS|SEMI|ANTI] JOIN … ON/USING; "
    "WHERE, GROUP BY [ALL], HAVING, ORDER BY [ALL], LIMIT/OFFSET <number>; "
    "UNION/INTERSECT/EXCEPT; WITH (not RECURSIVE); x IN (SELECT …), EXISTS (SELECT …), (SELECT …); "
    f"aggregates: {AGGREGATES}; expressions: {ALLOWED}"
)
_AGGREGATES: tuple[type[exp.Expr], ...] = (
    exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Stddev, exp.StddevSamp, exp.StddevPop,
    exp.Variance, exp.VariancePop,
)  # fmt: skip
# The arguments each structural node may carry (sqlglot's names); any other argument set is refused.
_ARGS: dict[type[exp.Expr], set[str]] = {
    exp.Select: {"with_", "expressions", "distinct", "from_", "joins", "where", "group", "having", "order",
                 "limit", "offset"},
    exp.Subquery: {"this", "alias", "order", "limit", "offset"},
    exp.Union: {"with_", "this", "expression", "distinct", "by_name", "order", "limit", "offset"},
    exp.Intersect: {"with_", "this", "expression", "distinct", "by_name", "order", "limit", "offset"},
    exp.Except: {"with_", "this", "expression", "distinct", "by_name", "order", "limit", "offset"},
    exp.With: {"expressions"},
    exp.CTE: {"this", "alias", "materialized"},
    exp.Table: {"this", "alias"},
    exp.TableAlias: {"this", "columns"},
    exp.Values: {"expressions", "alias"},
    exp.Join: {"this", "on", "side", "kind", "using", "method"},
    exp.Group: {"expressions", "all"},
    exp.Ordered: {"this", "desc", "nulls_first"},
    exp.Limit: {"expression"},
    exp.Offset: {"expression"},
    exp.Distinct: {"expressions", "on"},
    exp.Star: set(),
}  # fmt: skip
_JOIN_KINDS = {"", "INNER", "OUTER", "CROSS", "SEMI", "ANTI"}
_JOIN_SIDES = {"", "LEFT", "RIGHT", "FULL"}
_NAMES: dict[str, str] = {  # sqlglot's argument names as the analyst writes them, for messages
    "with_": "WITH", "kind": "SELECT kind", "into": "INTO", "laterals": "LATERAL", "pivots": "PIVOT",
    "qualify": "QUALIFY", "windows": "WINDOW", "sample": "TABLESAMPLE / USING SAMPLE",
    "match_condition": "ASOF join", "recursive": "WITH RECURSIVE", "grouping_sets": "GROUPING SETS",
    "cube": "CUBE", "rollup": "ROLLUP", "except_": "* EXCLUDE", "replace": "* REPLACE", "rename": "* RENAME",
    "with_fill": "WITH FILL", "ordinality": "WITH ORDINALITY", "db": "a schema", "catalog": "a catalog",
}  # fmt: skip
_MAX_LIMIT = 2**62


def refuse(where: str, node: exp.Expr | None, why: str) -> UnsupportedQuery:
    """``unsupported_query`` naming the form (its SQL, cut to 80 characters) and the allow-list."""
    text = node.sql(dialect="duckdb") if node is not None else ""
    text = text if len(text) <= 80 else text[:77] + "..."
    return UnsupportedQuery(f"{where}: {text} {why}; a plain SELECT allows {PLAIN_ALLOWED}")


def plain_sql(query: exp.Query) -> str:
    """Check ``query`` against the plain-SELECT language and return the SQL to run (DuckDB dialect), with
    text-growing functions cut. Refused forms raise ``unsupported_query`` naming the form."""
    try:
        _Walker().query(query, "the query")
        return _cut(query.copy()).sql(dialect="duckdb", comments=False)
    except RecursionError:
        raise UnsupportedQuery(
            "the query is built too deep (UNION chains, nested subqueries); split it into several queries"
        ) from None


def _given(value: object) -> bool:
    """Whether a node's argument is set (by identity and type: ``==`` on a node compares whole trees)."""
    return not (value is None or value is False or (isinstance(value, list) and not value))


class _Walker:
    """Walks the query's structure; hands each expression to a fresh plain checker."""

    def args(self, node: exp.Expr, where: str) -> None:
        allowed = _ARGS.get(type(node))
        if allowed is None:
            raise refuse(where, node, "is not in a plain SELECT's language")
        extra = sorted(k for k, v in node.args.items() if _given(v) and k not in allowed)
        if extra:
            form = _NAMES.get(extra[0], extra[0].upper())
            raise refuse(where, node, f"uses {form}, which is not in a plain SELECT's language")

    def expression(self, node: exp.Expression, where: str, want: Type | None = None) -> None:
        checker = _PlainChecker(self, where)
        try:
            if want is None:
                checker.check(node)
            else:
                checker.typed(node, want)
        except UnsupportedQuery as err:  # the checker's own argument rules: add the allow-list
            if PLAIN_ALLOWED in err.message:
                raise
            raise UnsupportedQuery(f"{err.message}; a plain SELECT allows {PLAIN_ALLOWED}") from None

    def query(self, node: exp.Expr, where: str) -> None:
        self.args(node, where)
        with_ = node.args.get("with_")
        if with_ is not None:
            if with_.args.get("recursive"):
                raise refuse(where, with_, "is RECURSIVE: a recursive CTE has no bound on its rows")
            self.args(with_, where)
            for cte in with_.expressions:
                self.args(cte, where)
                self.alias(cte.args.get("alias"), where)
                self.query(cte.this, f"the CTE {cte.alias_or_name}")
        if isinstance(node, exp.Subquery):
            self.alias(node.args.get("alias"), where)
            self.query(node.this, where)
        elif isinstance(node, exp.SetOperation):
            self.query(node.this, where)
            self.query(node.expression, where)
        else:
            self.select(node, where)
        self.modifiers(node, where)

    def select(self, node: exp.Expr, where: str) -> None:
        distinct = node.args.get("distinct")
        if distinct is not None:
            self.args(distinct, where)
            on = distinct.args.get("on")
            for key in on.expressions if isinstance(on, exp.Tuple) else [] if on is None else [on]:
                self.expression(key, "DISTINCT ON")
        for item in node.expressions:
            self.select_item(item)
        source = node.args.get("from_")
        if source is not None:
            self.source(source.this, "FROM")
        for join in node.args.get("joins") or []:
            self.args(join, "JOIN")
            kind, side = str(join.args.get("kind") or "").upper(), str(join.args.get("side") or "").upper()
            method = str(join.args.get("method") or "").upper()
            if kind not in _JOIN_KINDS or side not in _JOIN_SIDES or method not in ("", "NATURAL"):
                raise refuse("JOIN", join, "is a join type outside the language")
            self.source(join.this, "JOIN")
            if join.args.get("on") is not None:
                self.expression(join.args["on"], "JOIN … ON", Type.BOOL)
            for column in join.args.get("using") or []:
                if not isinstance(column, exp.Identifier | exp.Column):
                    raise refuse("JOIN … USING", column, "is not a column name")
        for clause, want in (("where", Type.BOOL), ("having", Type.BOOL)):
            if node.args.get(clause) is not None:
                self.expression(node.args[clause].this, clause.upper(), want)
        group = node.args.get("group")
        if group is not None:
            self.args(group, "GROUP BY")
            for key in group.expressions:
                self.expression(key, "GROUP BY")

    def select_item(self, item: Any) -> None:
        if isinstance(item, exp.Alias):
            item = item.this
        star = item.this if isinstance(item, exp.Column) and isinstance(item.this, exp.Star) else item
        if isinstance(star, exp.Star):
            self.args(star, "the select list")
            return
        self.expression(item, "the select list")

    def modifiers(self, node: exp.Expr, where: str) -> None:
        order = node.args.get("order")
        if order is not None:
            for ordered in order.expressions:
                self.args(ordered, "ORDER BY")
                if not (isinstance(ordered.this, exp.Var) and ordered.this.name.upper() == "ALL"):
                    self.expression(ordered.this, "ORDER BY")
        for key in ("limit", "offset"):
            clause = node.args.get(key)
            if clause is None:
                continue
            self.args(clause, key.upper())
            value = clause.expression
            if not (isinstance(value, exp.Literal) and not value.is_string and str(value.this).isdigit()):
                raise refuse(key.upper(), clause, "must be a whole-number literal")
            if int(value.this) > _MAX_LIMIT:
                raise refuse(key.upper(), clause, f"must be at most {_MAX_LIMIT}")

    def source(self, item: exp.Expr, where: str) -> None:
        """A FROM or JOIN item: a table by name, a subquery or VALUES."""
        function = "is a table function (read_csv, glob, range, …); table functions are not allowed"
        if isinstance(item, exp.Table):
            if not isinstance(item.this, exp.Identifier):
                raise refuse(where, item, function)
            if item.args.get("db") or item.args.get("catalog"):
                raise refuse(where, item, "names a schema; name tables without a schema or catalog")
            self.args(item, where)
            self.alias(item.args.get("alias"), where)
        elif isinstance(item, exp.Subquery):
            self.query(item, where)
        elif isinstance(item, exp.Values):
            self.args(item, where)
            self.alias(item.args.get("alias"), where)
            for row in item.expressions:
                for value in row.expressions if isinstance(row, exp.Tuple) else [row]:
                    self.expression(value, "VALUES")
        elif isinstance(item, exp.Lateral) and isinstance(item.this, exp.Subquery):
            raise refuse(where, item, "is LATERAL, which is not in a plain SELECT's language")
        else:
            table_function = isinstance(item, exp.Func | exp.Lateral)
            raise refuse(where, item, function if table_function else "is not a table")

    def alias(self, alias: exp.Expr | None, where: str) -> None:
        if alias is None or isinstance(alias, exp.Identifier):
            return
        self.args(alias, where)


class _PlainChecker(Checker):
    """The expression checker with a plain SELECT's additions; columns, aggregates and subqueries are
    untyped (``Type.NULL`` fits wherever a type is wanted)."""

    def __init__(self, walker: _Walker, where: str) -> None:
        super().__init__(TableMeta(name="", columns={}), where)
        self.walker = walker

    def refuse(self, node: Any, why: str = "") -> UnsupportedQuery:
        return refuse(self.where, node, why or "is not in privdb's expression language")

    def dispatch(self, node: exp.Expression) -> Any:
        if isinstance(node, exp.Window):
            return lambda n: self.fail(n, "is a window function (OVER), which is not in the language")
        if isinstance(node, _AGGREGATES):
            return self.aggregate
        plain: dict[type[exp.Expr], Any] = {
            exp.Column: self.column, exp.Subquery: self.subquery, exp.Exists: self.exists, exp.In: self.in_,
            exp.Bracket: self.element, exp.Dot: self.field, exp.ArraySize: self.array_length,
        }  # fmt: skip
        return plain.get(type(node)) or super().dispatch(node)

    def fail(self, node: exp.Expr, why: str) -> Expr:
        raise self.refuse(node, why)

    def untyped(self, node: exp.Expr) -> Expr:
        return Expr("untyped", Type.NULL, source=node.sql(dialect="duckdb"))

    def column(self, node: exp.Column) -> Expr:
        if isinstance(node.this, exp.Star):
            raise self.refuse(node, "is a star; stars belong in the select list or COUNT(*)")
        if not isinstance(node.this, exp.Identifier) or node.args.get("db") or node.args.get("catalog"):
            raise self.refuse(node, "is not a column name; write column or table.column")
        return self.untyped(node)

    def element(self, node: exp.Bracket) -> Expr:
        """``q[k]``: an element of a released array (privdb.sql.public.arrays), ``k`` a literal."""
        index = node.expressions[0] if len(node.expressions) == 1 else None
        if not (isinstance(index, exp.Literal) and not index.is_string and str(index.this).isdigit()):
            raise self.refuse(node, "reads an array with an index that is not a whole-number literal")
        if {k for k, v in node.args.items() if _given(v)} - {"this", "expressions", "offset", "safe"}:
            raise self.refuse(node, "is not an array's element")
        self.check(node.this)
        return self.untyped(node)

    def field(self, node: exp.Dot) -> Expr:
        """``r.value``: a field of a released report's struct."""
        if not isinstance(node.expression, exp.Identifier):
            raise self.refuse(node, "is not a field name")
        self.check(node.this)
        return self.untyped(node)

    def array_length(self, node: exp.ArraySize) -> Expr:
        """``ARRAY_LENGTH(q)`` of a released array."""
        if node.args.get("expression") is not None:
            raise self.refuse(node, "takes one argument")
        self.check(node.this)
        return Expr("untyped", Type.NULL, source=node.sql(dialect="duckdb"))

    def subquery(self, node: exp.Subquery) -> Expr:
        self.walker.query(node, self.where)
        return self.untyped(node)

    def exists(self, node: exp.Exists) -> Expr:
        if not isinstance(node.this, exp.Query):
            raise self.refuse(node, "does not hold a SELECT")
        self.walker.query(node.this, self.where)
        return Expr("untyped", Type.BOOL, source=node.sql(dialect="duckdb"))

    def in_(self, node: exp.In) -> Expr:
        query = node.args.get("query")
        if query is None:
            return super().in_(node)
        if node.args.get("unnest") or node.args.get("field") or node.expressions:
            raise self.refuse(node, "is not a list of literals or one subquery")
        self.check(node.this)
        self.walker.query(query, self.where)
        return Expr("untyped", Type.BOOL, source=node.sql(dialect="duckdb"))

    def aggregate(self, node: exp.Expr) -> Expr:
        name = node.key.upper()
        extra = [k for k, v in node.args.items() if _given(v) and k not in ("this", "big_int")]
        if extra:
            raise self.refuse(node, f"gives {name} more than one argument; aggregates: {AGGREGATES}")
        arg = node.this
        if isinstance(arg, exp.Star) and isinstance(node, exp.Count):
            self.walker.args(arg, self.where)
        elif isinstance(arg, exp.Distinct):
            if len(arg.expressions) != 1 or arg.args.get("on") is not None:
                raise self.refuse(node, f"takes one DISTINCT argument; aggregates: {AGGREGATES}")
            self.check(arg.expressions[0])
        elif arg is not None:
            self.check(arg)
        elif not isinstance(node, exp.Count):
            raise self.refuse(node, "takes an argument")
        return self.untyped(node)


def _cut(query: exp.Query) -> exp.Query:
    """``query`` with every ``||`` and CONCAT result, and REPLACE's input and result, cut to
    ``MAX_RESULT_LENGTH`` characters (in place; returns it). A select-list item that is cut and has no
    alias is named by its SQL as written: the uncut query is never given to DuckDB, not even to name its
    columns (DuckDB folds constants when it binds, so binding it would do the uncut work)."""
    cut_growing(query, _GROWING, lambda item: item.sql(dialect="duckdb"), _substring)
    return query


def _substring(node: exp.Expr) -> exp.Expr:
    return exp.Substring(this=node, start=exp.Literal.number(1), length=exp.Literal.number(MAX_RESULT_LENGTH))
