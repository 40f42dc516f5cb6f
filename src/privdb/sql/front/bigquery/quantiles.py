"""ZetaSQL's arrays of quantiles: ``APPROX_QUANTILES(x, n, contribution_bounds_per_row => (lo, hi))`` and the
older ``ANON_QUANTILES(x, n CLAMPED BETWEEN lo AND hi)``, read as the n + 1 quantiles they are.

The answer is the array of the quantiles at p = 0, 1/n, …, 1 of the rows' values, each clamped to the bounds
(met with the owner's, as PERCENTILE_CONT's are). privdb asks each element as its own PERCENTILE_CONT (the
exponential mechanism over the bounds' grid, with its interval), so the query's ε is split over the n + 1
quantiles with the select list's other aggregates by sequential composition (docs/proofs/sql.md), and folds
the released values into one list afterwards (post-processing). What the select list does with the array:

- ``APPROX_QUANTILES(…)`` as an item: the list, each element with its interval;
- ``ARRAY_LENGTH(APPROX_QUANTILES(…))``: n + 1, from the released list;
- ``APPROX_QUANTILES(…)[OFFSET(k)]`` (``ORDINAL(k)``, ``SAFE_OFFSET``, ``SAFE_ORDINAL``) in an expression:
  that one element, the quantile at k/n, and the expression over it is post-processing as over any
  PERCENTILE_CONT. Only the elements read are released, so only they are charged.

Anything else over the array is refused from the text alone (free), as an index outside it is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from privdb.errors import InvalidParameter, UnsupportedQuery
from privdb.result import Result
from privdb.sql.front.query import ArrayItem, Bounds, Options

__all__ = ["MAX_QUANTILES", "as_arrays", "expand"]

MAX_QUANTILES = 100  # n at most: each of the n + 1 elements is an aggregate with its share of ε
_INDEX = {"OFFSET": 0, "SAFE_OFFSET": 0, "ORDINAL": 1, "SAFE_ORDINAL": 1}  # the first element's index
_FORMS = "APPROX_QUANTILES(x, n, …) as an item, ARRAY_LENGTH(…) of it, or …[OFFSET(k)] / [ORDINAL(k)] of it"


def expand(select: exp.Select, options: Options) -> tuple[exp.Select, Options]:
    """The select list with each array of quantiles written as its elements' PERCENTILE_CONTs, and the
    options with the bounds at the new positions and the arrays to fold (:func:`as_arrays`)."""
    if select.find(exp.ApproxQuantiles) is None:
        return select, options
    out = select.copy()
    items: list[exp.Expr] = []
    bounds: list[tuple[int, Bounds]] = []
    arrays: list[ArrayItem] = []
    for i, node in enumerate(out.expressions):
        given = options.bounds_of(i)
        inner = node.unalias()
        whole = inner.this if isinstance(inner, exp.ArraySize) else inner
        if isinstance(inner, exp.Anonymous) and inner.name.upper() == "JSON_QUERY_ARRAY":
            whole = inner.expressions[0] if len(inner.expressions) == 1 else inner  # a JSON report's array
            inner = whole
        if isinstance(whole, exp.ApproxQuantiles):
            n = _count(whole)
            kind = "length" if whole is not inner else "array"
            name = node.alias or inner.sql(dialect="bigquery")
            arrays.append(ArrayItem(i, len(items), n + 1, kind, name))
            for k in range(n + 1):
                bounds += [(len(items), given)] if given is not None else []
                items.append(exp.alias_(_element(whole, k, n), f"{_hidden(i)}_{k}"))
            continue
        for found in list(inner.find_all(exp.ApproxQuantiles)):
            _element_of(found)
        bounds += [(len(items), given)] if given is not None else []
        items.append(out.expressions[i])  # the item itself, when it was the element read
    out.set("expressions", items)
    _check_reports(options, {a.item for a in arrays if a.kind == "array"})
    return out, replace(options, bounds=tuple(bounds), arrays=tuple(arrays))


def _check_reports(options: Options, arrays: set[int]) -> None:
    """A report's fields fit its item: an array's are ``.values.values`` (PROTO) or ``.result`` (JSON), one
    value's ``.value``."""
    for report in options.reports:
        fields = ".".join(report.path)
        array = fields in ("", "values", "values.values") if report.format == "PROTO" else True
        single = not fields.startswith("values")
        if not (array if report.item in arrays else single):
            raise UnsupportedQuery(
                f"a {report.format} report's field .{fields}: an array of quantiles' report has "
                ".values.values (PROTO) or .result (JSON), one aggregate's .value"
            )


def _hidden(i: int) -> str:
    return f"approx_quantiles_{i + 1}"


def _count(node: exp.ApproxQuantiles) -> int:
    """The array's n (its n + 1 elements): a whole-number literal from 1 to :data:`MAX_QUANTILES`."""
    number = node.expression
    text = number.this if isinstance(number, exp.Literal) and not number.is_string else None
    if text is None or not str(text).isdigit() or not 1 <= int(text) <= MAX_QUANTILES:
        raise InvalidParameter(
            f"{node.sql(dialect='bigquery')}: the number of quantiles is a whole-number literal from 1 to "
            f"{MAX_QUANTILES}, e.g. APPROX_QUANTILES(x, 4, contribution_bounds_per_row => (0, 100))"
        )
    return int(text)


def _element(node: exp.ApproxQuantiles, k: int, n: int) -> exp.Expression:
    """The k-th of the n + 1 quantiles: PERCENTILE_CONT(x, k/n)."""
    level = exp.Literal.number(repr(k / n) if 0 < k < n else str(k // n))
    return exp.PercentileCont(this=node.this.copy(), expression=level)


def _element_of(node: exp.ApproxQuantiles) -> None:
    """``node[OFFSET(k)]`` (or ORDINAL) replaced by the element it reads, or the refusal."""
    n = _count(node)
    bracket = node.parent
    where = (bracket if isinstance(bracket, exp.Bracket) else node).sql(dialect="bigquery")
    if not isinstance(bracket, exp.Bracket) or bracket.this is not node or len(bracket.expressions) != 1:
        raise UnsupportedQuery(f"{where}: an array of quantiles is read here as {_FORMS}")
    index = bracket.expressions[0]
    first = _INDEX.get(index.name.upper()) if isinstance(index, exp.Anonymous) else None
    args = index.expressions if first is not None else []
    literal = args[0] if len(args) == 1 else None
    digits = literal.this if isinstance(literal, exp.Literal) and not literal.is_string else ""
    if first is None or not str(digits).isdigit():
        raise UnsupportedQuery(f"{where}: read an element as …[OFFSET(k)] or …[ORDINAL(k)], k a whole number")
    k = int(digits) - first
    if not 0 <= k <= n:
        raise InvalidParameter(
            f"{where}: the array holds the {n + 1} quantiles at 0, 1/{n}, …, 1; its index is from {first} to "
            f"{n + first}"
        )
    bracket.replace(_element(node, k, n))


def as_arrays(result: Result, arrays: tuple[ArrayItem, ...]) -> Result:
    """``result`` with each array's released elements folded into one column: a list of the values (or its
    length), its accuracy entry holding each element's (post-processing: nothing more is released)."""
    if not arrays:
        return result
    entries = {entry.get("column"): entry for entry in result.accuracy}
    columns: list[str] = []
    picks: list[int | ArrayItem] = []
    accuracy = [e for e in result.accuracy if e.get("column") not in result.columns]
    at = 0
    for array in sorted(arrays, key=lambda a: a.start):
        for j in range(at, array.start):
            picks.append(j)
            columns.append(result.columns[j])
            accuracy += [entries[result.columns[j]]] if result.columns[j] in entries else []
        elements = [entries.get(c, {}) for c in result.columns[array.start : array.start + array.count]]
        picks.append(array)
        columns.append(array.name)
        accuracy.append(_entry(array, elements, len(result.rows)))
        at = array.start + array.count
    for j in range(at, len(result.columns)):
        picks.append(j)
        columns.append(result.columns[j])
        accuracy += [entries[result.columns[j]]] if result.columns[j] in entries else []
    rows = [[_pick(row, p) for p in picks] for row in result.rows]
    return replace(result, columns=columns, rows=rows, accuracy=accuracy)


def _pick(row: list[Any], pick: int | ArrayItem) -> Any:
    if isinstance(pick, int):
        return row[pick]
    values = list(row[pick.start : pick.start + pick.count])
    return len(values) if pick.kind == "length" else values


def _entry(array: ArrayItem, elements: list[dict[str, Any]], n_rows: int) -> dict[str, Any]:
    """The accuracy of an array column: each element's entry (its ε, interval, method) in order."""
    epsilon = sum(float(e.get("epsilon", 0.0)) for e in elements)
    if array.kind == "length":
        return {
            "column": array.name,
            "mechanism": "post-processing",
            "epsilon": 0.0,
            "ci95": None,
            "ci95_rows": [None] * n_rows,
            "method": f"the length of the released array of {array.count} quantiles (a constant)",
        }
    per_row = [[(e.get("ci95_rows") or [e.get("ci95")] * n_rows)[r] for e in elements] for r in range(n_rows)]
    return {
        "column": array.name,
        "mechanism": "exponential",
        "epsilon": epsilon,
        "ci95": None,
        "ci95_rows": None,
        "elements_ci95_rows": per_row,
        "elements": [{k: v for k, v in e.items() if k != "column"} for e in elements],
        "method": f"{array.count} quantiles at p = 0, 1/{array.count - 1}, …, 1, each as PERCENTILE_CONT "
        "(the exponential mechanism over the bounds' grid) with its share of the query's ε (sequential "
        "composition); elements_ci95_rows: each element's 95% interval, by row",
    }
