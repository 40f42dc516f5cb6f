"""The closed language of catalog queries: what a client may ask of ``pg_catalog`` and
``information_schema``, or of no table at all (``SELECT version()``), over the PostgreSQL endpoint.

    check(tree) → None, or ``unsupported_query`` naming the form, before anything runs

Such a query is free and answered from privdb's catalog (privdb.server.pgwire.catalog), so, as a plain
SELECT over HTTP (privdb.sql.public.language), nothing in it may cost more than a public constant per row:
every node of its tree must be of a kind in ``_NODES`` (the plain SELECT's structure and operators, plus
what catalog queries are written with: ``ARRAY(…)``, ``= ANY(…)``, subscripts, casts to ``regclass`` and
its kin, ``~`` and ``COLLATE``, ``string_agg``/``array_agg``/``bool_and``, ``unnest`` of a catalog array,
``generate_series`` up to an array's bounds, ranking windows), every function call a named one in
``FUNCTIONS`` (PostgreSQL's catalog functions, all of them defined over the catalog's own small
relations), every table a catalog relation or a CTE. So there are no generators (``range``, an unbounded
``generate_series``, ``repeat``, ``lpad``), no other table functions, no recursion and no files: the rows
are the catalog's (a few per granted table and column), and text that a function can make longer than its
input (``||``, ``concat``, ``replace``) is cut to ``MAX_RESULT_LENGTH`` characters (:func:`cut`) as on
the plain path. What is left, the rows a join of catalog relations makes, runs under the shadow's memory
cap and time limit, a few at once (privdb.sql.public.slots).
"""

from __future__ import annotations

from sqlglot import exp

from privdb.errors import UnsupportedQuery
from privdb.sql.front.expr.types import MAX_RESULT_LENGTH
from privdb.sql.public.cutting import cut_growing

__all__ = ["CATALOG_SCHEMAS", "FUNCTIONS", "check", "cut"]

CATALOG_SCHEMAS = {"pg_catalog", "information_schema"}

# PostgreSQL functions a catalog query may call by name (each defined in the shadow, or DuckDB's own)
FUNCTIONS = frozenset({
    "array_length", "array_lower", "array_to_string", "array_upper", "cardinality", "col_description",
    "current_database", "current_schema", "current_schemas", "current_setting", "current_user",
    "format_type", "generate_subscripts", "has_column_privilege", "has_database_privilege",
    "has_function_privilege", "has_schema_privilege", "has_sequence_privilege", "has_table_privilege",
    "inet_client_addr", "inet_client_port", "inet_server_addr", "inet_server_port", "json_build_object",
    "obj_description", "parse_ident", "pg_backend_pid", "pg_collation_is_visible", "pg_conf_load_time",
    "pg_encoding_to_char", "pg_function_is_visible", "pg_get_constraintdef", "pg_get_expr",
    "pg_get_function_arguments", "pg_get_function_identity_arguments", "pg_get_function_result",
    "pg_get_indexdef", "pg_get_partkeydef", "pg_get_serial_sequence",
    "pg_get_statisticsobjdef_columns", "pg_get_triggerdef", "pg_get_userbyid", "pg_get_viewdef",
    "pg_has_role", "pg_is_in_recovery", "pg_is_other_temp_schema", "pg_my_temp_schema",
    "pg_opclass_is_visible", "pg_operator_is_visible", "pg_postmaster_start_time",
    "pg_relation_is_publishable", "pg_relation_size", "pg_size_pretty", "pg_table_is_visible",
    "pg_table_size", "pg_total_relation_size", "pg_type_is_visible", "pg_typeof", "quote_ident",
    "quote_literal", "session_user", "shobj_description", "to_regclass", "to_regnamespace", "to_regproc",
    "to_regtype", "txid_current", "version",
})  # fmt: skip

_NODES: tuple[type[exp.Expr], ...] = (
    # structure
    exp.Select, exp.From, exp.Join, exp.Where, exp.Group, exp.Having, exp.Order, exp.Ordered, exp.Limit,
    exp.Offset, exp.Fetch, exp.Union, exp.Intersect, exp.Except, exp.With, exp.CTE, exp.Subquery,
    exp.TableAlias, exp.Alias, exp.Identifier, exp.Column, exp.Star, exp.Dot, exp.Distinct, exp.Paren,
    exp.Tuple, exp.Values, exp.Window, exp.WindowSpec, exp.Var,
    # values, casts and operators
    exp.Literal, exp.ByteString, exp.Boolean, exp.Null, exp.Array, exp.Bracket, exp.Slice, exp.ArraySize,
    exp.Cast, exp.TryCast, exp.DataType,
    exp.DataTypeParam, exp.ObjectIdentifier, exp.Collate, exp.Operator, exp.And, exp.Or, exp.Not, exp.Neg,
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.In, exp.Between, exp.Like, exp.ILike,
    exp.RegexpLike, exp.RegexpILike, exp.SimilarTo, exp.Any, exp.All, exp.Exists, exp.Case, exp.If,
    exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod,
    exp.NullSafeEQ, exp.NullSafeNEQ,
    # text, with the growing ones cut (cut())
    exp.DPipe, exp.Concat, exp.ConcatWs, exp.Replace, exp.Lower, exp.Upper, exp.Length, exp.Substring,
    exp.Trim, exp.Left, exp.Right, exp.StrPosition, exp.SplitPart, exp.StringToArray, exp.ArrayToString,
    # aggregates and ranking windows
    exp.Count, exp.Min, exp.Max, exp.Sum, exp.Avg, exp.ArrayAgg, exp.GroupConcat, exp.LogicalAnd,
    exp.LogicalOr, exp.RowNumber, exp.Rank, exp.DenseRank,
    # the session's own values
    exp.CurrentSchema, exp.CurrentSchemas, exp.CurrentUser, exp.SessionUser, exp.CurrentDatabase,
    exp.CurrentCatalog, exp.CurrentVersion, exp.CurrentTimestamp, exp.CurrentDate,
    # unnest of a catalog array (its rows are the array's elements: a few per catalog row)
    exp.Explode, exp.Unnest, exp.ExplodingGenerateSeries, exp.GenerateSeries,
)  # fmt: skip
_SERIES_LIMIT = 10_000
_ARRAY_BOUNDS = {"array_upper", "array_lower", "array_length", "cardinality"}
_WINDOWED = (exp.RowNumber, exp.Rank, exp.DenseRank, exp.Count, exp.Min, exp.Max, exp.Sum, exp.Avg)
_GROWING = (exp.DPipe, exp.Concat, exp.ConcatWs, exp.Replace)
_BIT_TYPES = {exp.DataType.Type.BIT} if hasattr(exp.DataType.Type, "BIT") else set()


def _refuse(node: exp.Expr, why: str) -> UnsupportedQuery:
    text = node.sql(dialect="postgres")
    text = text if len(text) <= 80 else text[:77] + "..."
    return UnsupportedQuery(
        f"{text} {why}; privdb's catalog answers SELECTs on pg_catalog and information_schema (or on no "
        "table) written with PostgreSQL's catalog functions, without generators, table functions other "
        "than unnest, or recursion"
    )


def check(tree: exp.Expr) -> None:
    """Refuse ``tree`` unless every node is in the catalog language (module doc)."""
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for node in tree.walk():
        if isinstance(node, exp.With) and node.args.get("recursive"):
            raise _refuse(node, "is RECURSIVE: a recursive CTE has no bound on its rows")
        if isinstance(node, exp.Table):
            _table(node, ctes)
        elif isinstance(node, exp.ExplodingGenerateSeries | exp.GenerateSeries):
            _series(node)
        elif isinstance(node, exp.Anonymous):
            if node.name.lower() not in FUNCTIONS:
                raise _refuse(node, f"calls {node.name}, which is not one of the catalog's functions")
        elif isinstance(node, exp.Window) and not isinstance(node.this, _WINDOWED):
            raise _refuse(node, "is a window of a function whose value can grow with its rows")
        elif isinstance(node, exp.DataType) and node.this in _BIT_TYPES:
            raise _refuse(node, "casts to a bit string")
        elif not isinstance(node, _NODES):
            raise _refuse(node, f"uses {type(node).__name__}, which is not in the catalog's language")


def _series(node: exp.Expr) -> None:
    """``generate_series`` whose ends are small literals or an array's bounds (psql's ``\\d+`` counts an
    index's or a publication's columns so): as many rows as an array of the catalog has elements."""
    for end in (node.args.get("start"), node.args.get("end")):
        if end is None or not _bounded(end):
            raise _refuse(
                node, f"is a series whose ends are not literals within ±{_SERIES_LIMIT} or an array's bounds"
            )
    step = node.args.get("step")
    if step is not None and not (isinstance(step, exp.Literal) and not step.is_string):
        raise _refuse(node, "has a step that is not a number")


def _bounded(end: exp.Expr) -> bool:
    if isinstance(end, exp.Paren | exp.Neg):
        return _bounded(end.this)
    if isinstance(end, exp.Literal) and not end.is_string:
        try:
            return abs(float(end.this)) <= _SERIES_LIMIT
        except ValueError:
            return False
    if isinstance(end, exp.Add | exp.Sub):
        return _bounded(end.this) and _bounded(end.expression)
    if isinstance(end, exp.Cast):
        return _bounded(end.this)
    if isinstance(end, exp.ArraySize):
        return True
    return isinstance(end, exp.Anonymous) and end.name.lower() in _ARRAY_BOUNDS


def _table(node: exp.Table, ctes: set[str]) -> None:
    """A catalog relation, a CTE by name, or ``unnest(…)`` of an expression (checked as any other)."""
    if isinstance(node.this, exp.Explode | exp.Unnest | exp.ExplodingGenerateSeries | exp.GenerateSeries):
        return  # its argument is checked as any other node
    if not isinstance(node.this, exp.Identifier) or node.args.get("catalog"):
        raise _refuse(node, "is a table function or a relation outside the catalog")
    schema, name = node.db.lower(), node.name.lower()
    if schema in CATALOG_SCHEMAS or (not schema and (name.startswith("pg_") or name in ctes)):
        return
    raise _refuse(node, "is not a catalog relation (pg_catalog, information_schema)")


def cut(tree: exp.Expr) -> exp.Expr:
    """``tree`` with every ``||``, ``concat``, ``concat_ws`` and ``replace`` result, and ``replace``'s
    input, cut to ``MAX_RESULT_LENGTH`` characters or elements (in place; returns the tree). An unaliased
    select item so cut keeps the name PostgreSQL would give it."""
    return cut_growing(tree, _GROWING, _pg_name, _slice)


def _pg_name(item: exp.Expr) -> str:
    """PostgreSQL's name for an unaliased expression column: a function's name, else ``?column?``."""
    if isinstance(item, exp.Func) and not isinstance(item, exp.DPipe):
        return item.sql_name().lower() if not isinstance(item, exp.Anonymous) else item.name.lower()
    return "?column?"


def _slice(node: exp.Expr) -> exp.Expr:
    """``node[1:MAX_RESULT_LENGTH]``: the first characters of a text, the first elements of an array
    (``||`` joins both, and the catalog language has no types to tell them apart)."""
    bounds = exp.Slice(this=exp.Literal.number(1), expression=exp.Literal.number(MAX_RESULT_LENGTH))
    return exp.Bracket(this=exp.Paren(this=node), expressions=[bounds])
