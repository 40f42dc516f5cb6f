"""``UNNEST([v1, v2, …]) AS x`` in FROM: a literal array as a public relation of one column ``x``.

Its values are written in the query, so its rows are about no one: a public relation, as a public table is
(docs/proofs/sql.md, "Relations"). ``t CROSS JOIN UNNEST([1, 2, 3]) AS x`` repeats each row of ``t`` once
per element, and the contribution bounding after the join (privdb.sql.front.relation.joins) keeps each unit to
the owner's ``m`` rows and ``G`` groups whatever the array's length. ``x``'s values are its public domain, so
``GROUP BY x`` releases every element (noise-only where no unit has a row). Only an array of number or
string literals is read; an array column, or an expression, is refused before any data is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlglot import exp

from privdb.backends.names import quote
from privdb.catalog.metadata import ColumnMeta
from privdb.errors import UnsupportedQuery
from privdb.sql.front.relation.model import Relation, RelationMeta

__all__ = ["MAX_ELEMENTS", "literal_relation"]

MAX_ELEMENTS = 10_000
_WRITE = (
    "UNNEST is read over an array of literals written in the query (FROM t CROSS JOIN UNNEST([1, 2, 3]) "
    "AS x); "
    "for an array column or an expression, join a public table of its values instead"
)


def _values(node: exp.Unnest) -> list[Any]:
    arrays = node.expressions
    if len(arrays) != 1 or not isinstance(arrays[0], exp.Array):
        raise UnsupportedQuery(f"UNNEST({', '.join(a.sql(dialect='duckdb')[:40] for a in arrays)}): {_WRITE}")
    values: list[Any] = []
    for element in arrays[0].expressions:
        negative = isinstance(element, exp.Neg)
        literal = element.this if negative else element
        if not isinstance(literal, exp.Literal) or (negative and literal.is_string):
            raise UnsupportedQuery(f"UNNEST: {element.sql(dialect='duckdb')[:40]} is not a literal; {_WRITE}")
        if literal.is_string:
            values.append(literal.this)
            continue
        number = float(literal.this)
        number = -number if negative else number
        values.append(int(number) if number.is_integer() and literal.is_int else number)
    if not values or len(values) > MAX_ELEMENTS:
        raise UnsupportedQuery(f"UNNEST takes 1 to {MAX_ELEMENTS} literals; {_WRITE}")
    if len({type(v) is str for v in values}) > 1:
        raise UnsupportedQuery(f"UNNEST: the array mixes strings and numbers; {_WRITE}")
    return values


def _render(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def literal_relation(node: exp.Unnest) -> Relation:
    """The public relation ``UNNEST([…]) AS x`` is (its column named ``x``, BigQuery's reading of the alias;
    ``AS t(x)`` names it too), or the refusal that says what to write."""
    if node.args.get("offset"):
        raise UnsupportedQuery(f"UNNEST … WITH OFFSET is not read; {_WRITE}")
    values = _values(node)
    alias = node.args.get("alias")
    columns = alias.columns if isinstance(alias, exp.TableAlias) else []
    name = columns[0].name if columns else (alias.name if alias is not None and alias.name else "")
    if not name or len(columns) > 1:
        raise UnsupportedQuery(f"UNNEST([…]) needs one name: UNNEST([…]) AS x; {_WRITE}")
    text = isinstance(values[0], str)
    numbers = [] if text else [float(v) for v in values]
    integer = not text and all(isinstance(v, int) for v in values)
    column = ColumnMeta(
        name=name,
        type="text" if text else ("int" if integer else "float"),
        lower=None if text else min(numbers),
        upper=None if text else max(numbers),
        values=tuple(dict.fromkeys(values)),
        storage="text" if text else "float",
    )
    qualifier = alias.name if alias is not None and alias.name else name
    scope = {None: {name.lower(): name}, qualifier.lower(): {name.lower(): name}}
    meta = RelationMeta(name=qualifier, columns={name: column}, public=True, scope=scope)
    rows = " UNION ALL ".join(f"SELECT {_render(v)} AS {quote(name)}" for v in values)

    def sql(sources: Mapping[str, str]) -> str:
        return rows

    return Relation(meta, (), sql, public=True)
