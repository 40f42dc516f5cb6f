"""ZetaSQL's reports of a DP aggregate: ``SUM(x, …, report_format => "JSON")`` and, in the older spelling,
``ANON_SUM(x CLAMPED BETWEEN 0 AND 10 WITH REPORT(FORMAT=JSON))``; ``"PROTO"`` too.

The report is a released value with its interval, written as ZetaSQL writes it::

    {"result": {"value": 11.0, "noise_confidence_interval":
                {"lower_bound": 10.97, "upper_bound": 11.03, "confidence_level": 0.95}}}

built after the noise from the answer's own value and its stated 95% interval (post-processing: no more is
released). An aggregate whose bounds were found from the data (privdb.sql.implicit) adds ZetaSQL's
``bounding_report``: the bounds found and the histogram's noisy counts, released by that step.

A PROTO report is ZetaSQL's ``AnonOutputWithReport`` message written as JSON text with the message's field
names, ``{"value": {"int_value": 8, "noise_confidence_interval": {…}}}`` (``float_value`` unless the answer
is a whole-number count): privdb's answers travel as JSON, Arrow and PostgreSQL rows, none of which carries
a protocol buffer. Fields read in the query (``ANON_SUM(… WITH REPORT(FORMAT=PROTO)).value
.noise_confidence_interval``) make the column that field (JSON text for a message, the number for a leaf).
An array of quantiles' report is one per element (``….values.values`` in PROTO, ``….result`` in JSON):
a list of the elements' fields, which the plain query around it reads as ``r[OFFSET(0)].float_value``.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

from sqlglot.tokenizer_core import Token, TokenType

from privdb.errors import ParseError, UnsupportedQuery
from privdb.result import Result
from privdb.sql.front.query import Report

__all__ = ["as_reports", "fields", "older_report", "report_format"]

CONFIDENCE = 0.95
FORMATS = ("JSON", "PROTO")
_INTERVAL = {"lower_bound": None, "upper_bound": None, "confidence_level": None}
# each format's fields (ZetaSQL's JSON report, and its AnonOutputWithReport message's fields as JSON)
_VALUE = {"int_value": None, "float_value": None}
_LAYOUT: dict[str, dict[str, Any]] = {
    "JSON": {
        "result": {"value": None, "noise_confidence_interval": _INTERVAL},
        "bounding_report": {
            "lower_bound": None,
            "upper_bound": None,
            "num_inputs": None,
            "num_outside": None,
        },
    },
    "PROTO": {
        "value": {**_VALUE, "noise_confidence_interval": _INTERVAL},
        "values": {"values": None},  # an array of quantiles' elements (privdb.sql.front.bigquery.quantiles)
        "bounding_report": {
            "lower_bound": _VALUE,
            "upper_bound": _VALUE,
            "num_inputs": None,
            "num_outside": None,
        },
    },
}


def _format(word: str, where: str) -> str:
    if word.upper() not in FORMATS:
        raise ParseError(f"a report's format is JSON or PROTO, got {word!r}{where}")
    return word.upper()


def report_format(tokens: list[Token], j: int, where: str) -> tuple[int, str]:
    """``report_format => "JSON"`` at ``tokens[j]`` (the name): the index of the aggregate's closing ``)``
    and the format."""
    value = tokens[j + 2] if j + 2 < len(tokens) else None
    if value is None or value.token_type not in (TokenType.STRING, TokenType.VAR, TokenType.IDENTIFIER):
        raise ParseError(f"write report_format => 'JSON'{where}")
    form = _format(value.text, where)
    if j + 3 >= len(tokens) or tokens[j + 3].token_type != TokenType.R_PAREN:
        raise UnsupportedQuery(f"report_format goes last in the aggregate's arguments{where}")
    return j + 3, form


def older_report(tokens: list[Token], j: int, where: str) -> tuple[int, str] | None:
    """``WITH REPORT(FORMAT=JSON)`` at ``tokens[j]`` (``WITH``): the index of the aggregate's closing ``)``
    and the format, or None when ``tokens[j]`` does not start one."""
    if not (
        j + 6 < len(tokens)
        and tokens[j].token_type == TokenType.WITH
        and tokens[j + 1].text.upper() == "REPORT"
        and tokens[j + 2].token_type == TokenType.L_PAREN
    ):
        return None
    if tokens[j + 3].text.upper() != "FORMAT" or tokens[j + 4].token_type != TokenType.EQ:
        raise ParseError(f"write WITH REPORT(FORMAT=JSON){where}")
    form = _format(tokens[j + 5].text.strip("'\""), where)
    if tokens[j + 6].token_type != TokenType.R_PAREN or (
        j + 7 >= len(tokens) or tokens[j + 7].token_type != TokenType.R_PAREN
    ):
        raise UnsupportedQuery(f"WITH REPORT(…) goes last in the aggregate{where}")
    return j + 7, form


def fields(tokens: list[Token], end: int, form: str, where: str) -> tuple[tuple[str, ...], int]:
    """The fields read from a report after its aggregate's closing ``)`` at ``tokens[end]``
    (``).value.noise_confidence_interval``), and the index of the token after them. Only the report's own
    fields are read: a name it does not have is refused from the text."""
    path: list[str] = []
    node: dict[str, Any] | None = _LAYOUT[form]
    j = end + 1
    while j + 1 < len(tokens) and tokens[j].token_type == TokenType.DOT:
        name = tokens[j + 1].text.lower()
        if not isinstance(node, dict) or name not in node:
            known = ", ".join(node) if isinstance(node, dict) else "none (a value)"
            raise UnsupportedQuery(
                f"{form} report field {tokens[j + 1].text!r}{where}: its fields here are {known}"
            )
        path.append(name)
        node = node[name]
        j += 2
    return tuple(path), j


def _number(x: Any) -> Any:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return float(x)


def _bounding(found: dict[str, Any], form: str, whole: bool) -> dict[str, Any]:
    """ZetaSQL's bounding report of bounds found from the data (PROTO: each bound a typed value)."""
    lower, upper = found["lower_bound"], found["upper_bound"]
    if form == "PROTO":
        kind = "int_value" if whole else "float_value"
        lower, upper = ({kind: int(b) if whole else float(b)} for b in (lower, upper))
    elif whole:
        lower, upper = int(lower), int(upper)
    return {"lower_bound": lower, "upper_bound": upper, "num_inputs": _number(found["num_inputs"]),
            "num_outside": _number(found["num_outside"])}  # fmt: skip


def _report(value: Any, interval: Any, form: str) -> dict[str, Any]:
    lower, upper = (value, value) if interval is None else (interval[0], interval[1])
    noise = {
        "lower_bound": _number(lower),
        "upper_bound": _number(upper),
        "confidence_level": CONFIDENCE,
    }
    if form == "JSON":
        return {"result": {"value": _number(value), "noise_confidence_interval": noise}}
    kind = "int_value" if isinstance(value, int) and not isinstance(value, bool) else "float_value"
    held = {} if value is None else {kind: value if kind == "int_value" else _number(value)}
    return {"value": {**held, "noise_confidence_interval": noise}}


def _array_report(values: list[Any], intervals: list[Any] | None, form: str) -> dict[str, Any]:
    """The report of an array of quantiles: each element's value and interval, in ZetaSQL's layout
    (JSON ``{"result": [{"value": …, …}, …]}``, PROTO ``{"values": {"values": [{"float_value": …}]}}``)."""
    key = "result" if form == "JSON" else "value"
    given = intervals if intervals is not None else [None] * len(values)
    elements = [_report(v, i, form)[key] for v, i in zip(values, given, strict=True)]
    return {"result": elements} if form == "JSON" else {"values": {"values": elements}}


def _read(report: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = report
    for name in path:
        node = node.get(name) if isinstance(node, dict) else None
    return node


def as_reports(
    result: Result, reports: tuple[Report, ...], bounding: dict[int, dict[str, Any]] | None = None
) -> Result:
    """``result`` with each report's column written as ZetaSQL's report (JSON text, the PROTO message's
    fields too), or as the fields the query reads from it; ``bounding``: by item, the bounds found from the
    data for it (privdb.sql.implicit), its report's ``bounding_report``."""
    if not reports:
        return result
    intervals: dict[int, list[Any]] = {}
    for entry in result.accuracy:
        if entry.get("column") not in result.columns:
            continue
        i = result.columns.index(entry["column"])
        per_row = entry.get("elements_ci95_rows") or entry.get("ci95_rows")  # an array's: by element
        intervals[i] = per_row or [entry.get("ci95")] * len(result.rows)
    rows = [list(row) for row in result.rows]
    for r, row in enumerate(rows):
        for report in reports:
            i = report.item
            interval = intervals.get(i, [None] * len(rows))[r]
            value = row[i]
            whole = isinstance(value, int) and not isinstance(value, bool)
            made = (
                _array_report(value, interval, report.format)
                if isinstance(value, list)
                else _report(value, interval, report.format)
            )
            if bounding and i in bounding:
                made["bounding_report"] = _bounding(bounding[i], report.format, whole)
            read = _read(made, report.path)
            row[i] = json.dumps(read) if isinstance(read, dict) else read
    return replace(result, rows=rows)
