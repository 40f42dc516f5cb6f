"""``<DP query> UNION ALL <DP query> …``: the branches' released rows one after the other, each value with
its own interval, as a DP answer has them (privdb.sql.public.wrapped answers a set operation that does more
— UNION, INTERSECT, or plain SQL among the branches — in the plain language's sandbox, where values lose
their intervals)."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from privdb.errors import UnsupportedQuery
from privdb.result import Result
from privdb.sql.front.dpselect.parse import parse_dp_select

__all__ = ["check_widths", "concatenated", "is_concatenation"]


def is_concatenation(outer: exp.Query, names: list[str]) -> bool:
    """Whether the plain query around the DP queries is only ``SELECT * FROM <k-th released rows>`` for
    each, in order, joined by UNION ALL."""
    return len(names) > 1 and outer.sql(dialect="duckdb") == " UNION ALL ".join(
        f"SELECT * FROM {name}" for name in names
    )


def check_widths(texts: list[str]) -> None:
    """Refuse, from the text alone (before any branch reads data), branches of unequal width."""
    widths = [len(parse_dp_select(text).select.expressions) for text in texts]
    for k, width in enumerate(widths[1:], 2):
        if width != widths[0]:
            raise UnsupportedQuery(
                f"each query of a UNION ALL returns as many columns: the first {widths[0]}, query {k} {width}"
            )


def concatenated(answers: list[Result]) -> tuple[list[str], list[list[Any]], list[dict[str, Any]]]:
    """The columns (the first branch's names, as SQL names a UNION's), rows and accuracy of the branches'
    answers in order (:func:`check_widths` has made sure each branch has as many columns as the first)."""
    columns = list(answers[0].columns)
    rows = [list(row) for answer in answers for row in answer.rows]
    accuracy = []
    for i, name in enumerate(columns):
        parts = [_entry(answer, answer.columns[i]) for answer in answers]
        known = [p for p in parts if p is not None]
        if not known:
            continue
        intervals: list[Any] = []
        for answer, part in zip(answers, parts, strict=True):
            if part is None:
                intervals += [None] * len(answer.rows)
            else:
                intervals += part.get("ci95_rows") or [part.get("ci95")] * len(answer.rows)
        entry = dict(known[0]) | {"column": name, "ci95_rows": intervals}
        entry["ci95"] = intervals[0] if len(intervals) == 1 else None
        entry["epsilon"] = sum(float(p.get("epsilon") or 0.0) for p in known)
        accuracy.append(entry)
    return columns, rows, accuracy


def _entry(answer: Result, column: str) -> dict[str, Any] | None:
    return next((e for e in answer.accuracy if e.get("column") == column), None)
