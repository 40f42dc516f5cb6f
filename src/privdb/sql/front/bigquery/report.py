"""ZetaSQL's reports of a DP aggregate as JSON: ``SUM(x, …, report_format => "JSON")`` and, in the older
spelling, ``ANON_SUM(x CLAMPED BETWEEN 0 AND 10 WITH REPORT(FORMAT=JSON))``.

The report is a released value with its interval, written as ZetaSQL writes it::

    {"result": {"value": 11.0, "noise_confidence_interval":
                {"lower_bound": 10.97, "upper_bound": 11.03, "confidence_level": 0.95}}}

built after the noise from the answer's own value and its stated 95% interval (post-processing: no more is
released). ZetaSQL's ``bounding_report`` (the bounds it finds from the data when none are given) has no
counterpart: privdb's bounds are the owner's and the query's, never the data's. PROTO reports are refused.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

from sqlglot.tokenizer_core import Token, TokenType

from privdb.errors import ParseError, UnsupportedQuery
from privdb.result import Result

__all__ = ["as_reports", "older_report", "report_format"]

CONFIDENCE = 0.95


def _format(word: str, where: str) -> None:
    if word.upper() == "PROTO":
        raise UnsupportedQuery(
            f"PROTO reports{where} are not privdb's answers; ask the JSON report (report_format => 'JSON', "
            "WITH REPORT(FORMAT=JSON)) or the value alone"
        )
    if word.upper() != "JSON":
        raise ParseError(f"a report's format is JSON (or PROTO, refused), got {word!r}{where}")


def report_format(tokens: list[Token], j: int, where: str) -> int:
    """``report_format => "JSON"`` at ``tokens[j]`` (the name): the index of the aggregate's closing ``)``."""
    value = tokens[j + 2] if j + 2 < len(tokens) else None
    if value is None or value.token_type not in (TokenType.STRING, TokenType.VAR, TokenType.IDENTIFIER):
        raise ParseError(f"write report_format => 'JSON'{where}")
    _format(value.text, where)
    if j + 3 >= len(tokens) or tokens[j + 3].token_type != TokenType.R_PAREN:
        raise UnsupportedQuery(f"report_format goes last in the aggregate's arguments{where}")
    return j + 3


def older_report(tokens: list[Token], j: int, where: str) -> int | None:
    """``WITH REPORT(FORMAT=JSON)`` at ``tokens[j]`` (``WITH``): the index of the aggregate's closing ``)``,
    or None when ``tokens[j]`` does not start one."""
    if not (
        j + 6 < len(tokens)
        and tokens[j].token_type == TokenType.WITH
        and tokens[j + 1].text.upper() == "REPORT"
        and tokens[j + 2].token_type == TokenType.L_PAREN
    ):
        return None
    if tokens[j + 3].text.upper() != "FORMAT" or tokens[j + 4].token_type != TokenType.EQ:
        raise ParseError(f"write WITH REPORT(FORMAT=JSON){where}")
    _format(tokens[j + 5].text.strip("'\""), where)
    if tokens[j + 6].token_type != TokenType.R_PAREN or (
        j + 7 >= len(tokens) or tokens[j + 7].token_type != TokenType.R_PAREN
    ):
        raise UnsupportedQuery(f"WITH REPORT(…) goes last in the aggregate{where}")
    return j + 7


def _number(x: Any) -> Any:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return float(x)


def as_reports(result: Result, items: tuple[int, ...]) -> Result:
    """``result`` with the columns ``items`` written as ZetaSQL's JSON reports."""
    if not items:
        return result
    intervals: dict[int, list[Any]] = {}
    for entry in result.accuracy:
        if entry.get("column") not in result.columns:
            continue
        i = result.columns.index(entry["column"])
        intervals[i] = entry.get("ci95_rows") or [entry.get("ci95")] * len(result.rows)
    rows = [list(row) for row in result.rows]
    for r, row in enumerate(rows):
        for i in items:
            interval = intervals.get(i, [None] * len(rows))[r]
            value = _number(row[i])
            lower, upper = (value, value) if interval is None else (interval[0], interval[1])
            report = {
                "result": {
                    "value": value,
                    "noise_confidence_interval": {
                        "lower_bound": _number(lower),
                        "upper_bound": _number(upper),
                        "confidence_level": CONFIDENCE,
                    },
                }
            }
            row[i] = json.dumps(report)
    return replace(result, rows=rows)
