"""Released arrays read by the plain query around a DP query: ZetaSQL's arrays of quantiles (a list column of
the released rows, privdb.sql.front.bigquery.quantiles) and arrays of their reports.

The plain query is read in DuckDB's dialect, where an array's element is ``q[k]`` from 1; BigQuery's
``q[OFFSET(k)]`` (from 0), ``q[ORDINAL(k)]`` (from 1) and their ``SAFE_`` forms are written as DuckDB's
(:func:`bigquery_arrays`), each index a whole-number literal; an index outside the array is NULL, as
``SAFE_OFFSET`` has it (the released rows are public: no error needs to tell). BigQuery's ``DOUBLE(json)``
of a report's field is ``CAST(… AS DOUBLE)``. The language (privdb.sql.public.language) then allows an
element ``q[k]``, a struct's field ``r.value`` and ``ARRAY_LENGTH(q)``: each costs a bounded amount per row.
"""

from __future__ import annotations

from sqlglot import exp

from privdb.errors import UnsupportedQuery

__all__ = ["bigquery_arrays"]

_FIRST = {"OFFSET": 0, "SAFE_OFFSET": 0, "ORDINAL": 1, "SAFE_ORDINAL": 1}  # the first element's index


def bigquery_arrays(tree: exp.Expr) -> exp.Expr:
    """``tree`` with BigQuery's array indexes and ``DOUBLE(…)`` written as DuckDB's (in place)."""
    for bracket in list(tree.find_all(exp.Bracket)):
        if len(bracket.expressions) != 1:
            continue
        index = bracket.expressions[0]
        first = _FIRST.get(index.name.upper()) if isinstance(index, exp.Anonymous) else None
        if first is None:
            continue
        args = index.expressions
        value = args[0] if len(args) == 1 else None
        digits = value.this if isinstance(value, exp.Literal) and not value.is_string else ""
        if not str(digits).isdigit() or int(digits) < first:
            raise UnsupportedQuery(
                f"{bracket.sql(dialect='duckdb')[:80]}: an array's index is a whole-number literal, "
                "from 0 in OFFSET and from 1 in ORDINAL, e.g. q[OFFSET(0)] or q[ORDINAL(1)]"
            )
        # sqlglot keeps indexes from 0 and writes DuckDB's from 1
        bracket.set("expressions", [exp.Literal.number(int(digits) - first)])
    for call in list(tree.find_all(exp.Anonymous)):
        if call.name.upper() == "DOUBLE" and len(call.expressions) == 1:
            call.replace(exp.Cast(this=call.expressions[0].copy(), to=exp.DataType.build("DOUBLE")))
    return tree
