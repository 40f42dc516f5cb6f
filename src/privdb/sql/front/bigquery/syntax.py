"""Read BigQuery's (and ZetaSQL's) spelling of a differentially private query:

    SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-6, max_groups_contributed=1,
                                             privacy_unit_column=id)
      item, AVG(quantity, contribution_bounds_per_group => (0, 100)) AS average_quantity
    FROM professors GROUP BY item

from sqlglot's tokens, as privdb.sql.front.dpselect.parse reads ``DP-SELECT ε``: the options, and the select
body with each aggregate's named ``contribution_bounds_per_group`` / ``contribution_bounds_per_row`` argument
taken out (sqlglot parses neither) and kept by the position of its select item. What the options mean for a
table is decided once the table's metadata is known (privdb.sql.front.bigquery.plan). Everything refused here
is refused from the text alone, before any table is looked at (free). ZetaSQL's older spelling, ``SELECT
WITH ANONYMIZATION`` with the ``ANON_`` aggregates, is read here too, as the newer one
(privdb.sql.front.bigquery.anon), and a ``report_format`` / ``WITH REPORT`` item is noted for the JSON report
(privdb.sql.front.bigquery.report).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlglot.tokenizer_core import Token, TokenType

from privdb.errors import InvalidParameter, ParseError, UnsupportedQuery
from privdb.sql.front.bigquery.anon import anon_name, check_older_options, is_clamped
from privdb.sql.front.bigquery.report import fields, older_report, report_format
from privdb.sql.front.query import Bounds, Options, Report, Selection, check_epsilon

__all__ = ["Header", "is_bigquery", "read_header"]

SYNTAX = (
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=<ε>, delta=<δ>[, max_groups_contributed=<k>]"
    "[, privacy_unit_column=<column>]) <aggregates> FROM <table> [WHERE …] [GROUP BY …]"
)
_KNOWN = (
    "epsilon",
    "delta",
    "max_groups_contributed",
    "max_rows_contributed",
    "privacy_unit_column",
    "group_selection_strategy",
    "k_threshold",
    "min_privacy_units_per_group",
)
_STRATEGIES = ("laplace_threshold", "public_groups")
_NAMED = {"contribution_bounds_per_group": "group", "contribution_bounds_per_row": "row"}


@dataclass(frozen=True)
class Header:
    """The privacy parameters and options read from the header, and the select body to parse (``body``,
    starting after ``SELECT``, the named bounds cut out; ``offset`` where it starts in the query's text)."""

    epsilon: float
    delta: float
    options: Options
    body: str
    offset: int


def is_bigquery(tokens: list[Token]) -> bool:
    """``SELECT WITH DIFFERENTIAL_PRIVACY`` (or ZetaSQL's older ``WITH ANONYMIZATION``)."""
    return (
        len(tokens) >= 3
        and tokens[0].token_type == TokenType.SELECT
        and tokens[1].token_type == TokenType.WITH
        and tokens[2].text.upper() in ("DIFFERENTIAL_PRIVACY", "ANONYMIZATION")
    )


def _at(text: str, token: Token) -> str:
    line_start = text.rfind("\n", 0, token.start) + 1
    return f" (line {token.line}, column {token.start - line_start + 1})"


def _number(text: str, tokens: list[Token], i: int, what: str) -> tuple[float, int]:
    """A signed number (``.01`` too) at ``tokens[i]``, and the index after it."""
    sign = 1.0
    if i < len(tokens) and tokens[i].token_type in (TokenType.DASH, TokenType.PLUS):
        sign, i = (-1.0 if tokens[i].token_type == TokenType.DASH else 1.0), i + 1
    if i + 1 < len(tokens) and tokens[i].token_type == TokenType.DOT and tokens[i + 1].text.isdigit():
        return sign * float("." + tokens[i + 1].text), i + 2
    if (
        i < len(tokens) and tokens[i].text == "@"
    ):  # a query parameter given no value (bound ones are literals)
        raise InvalidParameter(
            f"{what} is a query parameter{_at(text, tokens[i])} with no value: give it beside the query "
            '(parameters= in Python, "parameters" over HTTP, --param name=value on the CLI), or write the '
            "number"
        )
    if i >= len(tokens) or tokens[i].token_type != TokenType.NUMBER:
        got = repr(tokens[i].text) + _at(text, tokens[i]) if i < len(tokens) else "nothing"
        raise InvalidParameter(f"{what} must be a number, got {got}")
    try:
        return sign * float(tokens[i].text), i + 1
    except ValueError:
        raise ParseError(f"{tokens[i].text!r} is not a number{_at(text, tokens[i])}") from None


def read_header(text: str, tokens: list[Token]) -> Header:
    """The header ``SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(…)`` and the body after it, or the error that
    says what to write instead."""
    older = tokens[2].text.upper() == "ANONYMIZATION"  # ZetaSQL's older spelling (bigquery.anon)
    spelling = f"WITH {tokens[2].text.upper()}"
    if len(tokens) < 5 or tokens[3].text.upper() != "OPTIONS" or tokens[4].token_type != TokenType.L_PAREN:
        raise ParseError(f"{spelling} takes OPTIONS(epsilon=…, delta=…); write {SYNTAX}")
    values, i = _options(text, tokens, 5)
    if values.get("epsilon") is None:
        raise InvalidParameter(
            f"OPTIONS needs epsilon (set, not NULL), the privacy cost of the answer; write {SYNTAX}"
        )
    epsilon = float(values["epsilon"] or 0.0)
    check_epsilon(epsilon)
    check_older_options(values, older, "")
    delta = float(values.get("delta") or 0.0)
    if not 0 <= delta <= 1:
        raise InvalidParameter(f"delta must be in [0, 1], got {delta:g}")
    threshold = values.get("k_threshold")
    if threshold is not None and not (float(threshold).is_integer() and float(threshold) >= 0):
        raise InvalidParameter(f"k_threshold must be a whole number ≥ 0, got {float(threshold):g}")
    groups, rows = values.get("max_groups_contributed"), values.get("max_rows_contributed")
    for name, bound in (("max_groups_contributed", groups), ("max_rows_contributed", rows)):
        if bound is not None and not (float(bound).is_integer() and float(bound) >= 1):
            raise InvalidParameter(f"{name} must be a whole number ≥ 1, got {float(bound):g}")
    if groups is not None and rows is not None:
        raise InvalidParameter(
            "max_groups_contributed and max_rows_contributed are exclusive (as in ZetaSQL): bound the "
            "groups a unit reaches, or its rows in the whole query; write one of them"
        )
    strategy = values.get("group_selection_strategy")
    if strategy is not None and str(strategy).lower() not in _STRATEGIES:
        raise InvalidParameter(
            f"group_selection_strategy is LAPLACE_THRESHOLD or PUBLIC_GROUPS, got {strategy}; privdb "
            "releases the keys the metadata declares, and others only past a noisy threshold "
            "(docs/answers.md)"
        )
    units = values.get("min_privacy_units_per_group")
    if units is not None and not (float(units).is_integer() and float(units) >= 1):
        raise InvalidParameter(
            f"min_privacy_units_per_group must be a whole number ≥ 1, got {float(units):g}"
        )
    if units is not None and str(strategy).lower() == "public_groups":
        raise ParseError(
            "min_privacy_units_per_group goes with group_selection_strategy=LAPLACE_THRESHOLD, not "
            "PUBLIC_GROUPS (ZetaSQL's rule): public groups are all released; remove one of the two"
        )
    if units is not None and threshold is not None:
        raise ParseError(
            "min_privacy_units_per_group and k_threshold cannot go together (ZetaSQL's rule); keep one: "
            "both raise the release threshold"
        )
    unit = values.get("privacy_unit_column")
    qualifier, _, name = str(unit).rpartition(".") if unit is not None else ("", "", "")
    if i >= len(tokens):
        raise ParseError(f"nothing to select after OPTIONS(…); write {SYNTAX}")
    body, bounds, reports = _cut_bounds(text, tokens, i, older)
    options = Options(
        unit=name or None,
        unit_qualifier=qualifier or None,
        max_groups=None if groups is None else int(float(groups)),
        max_rows=None if rows is None else int(float(rows)),
        bounds=tuple(bounds),
        reports=tuple(reports),
        selection=Selection(
            None if threshold is None else int(float(threshold)), None if units is None else int(float(units))
        ),
    )
    return Header(epsilon, delta, options, body, tokens[i].start - len("SELECT "))


def _options(text: str, tokens: list[Token], i: int) -> tuple[dict[str, float | str | None], int]:
    """``name = value, …)`` from ``tokens[i]``: the values by lower-case name (None for NULL: not set),
    and the index after ``)``."""
    values: dict[str, float | str | None] = {}
    while i < len(tokens) and tokens[i].token_type != TokenType.R_PAREN:
        token = tokens[i]
        name = token.text.lower()
        name = "max_groups_contributed" if name == "kappa" else name  # ZetaSQL's deprecated name for it
        if name not in _KNOWN:
            raise ParseError(
                f"unknown option {token.text!r}{_at(text, token)}; OPTIONS takes {', '.join(_KNOWN)}"
            )
        if name in values:
            raise ParseError(f"option {name} is given twice{_at(text, token)}")
        if i + 1 >= len(tokens) or tokens[i + 1].token_type != TokenType.EQ:
            raise ParseError(f"write {name}=<value> in OPTIONS{_at(text, token)}")
        i += 2
        if i < len(tokens) and tokens[i].token_type == TokenType.NULL:  # NULL: the option is not set
            values[name] = None
            i += 1
        elif name in ("privacy_unit_column", "group_selection_strategy"):
            parts = []
            while i < len(tokens) and tokens[i].token_type not in (TokenType.COMMA, TokenType.R_PAREN):
                parts.append(tokens[i].text)
                i += 1
            word = "".join(parts).strip("`\"'")
            if not word or not all(p.isidentifier() for p in word.split(".")):
                raise ParseError(f"{name} names a column, e.g. {name}=id{_at(text, token)}")
            values[name] = word
        else:
            number, i = _cast(text, tokens, i, name)
            if number is not None and not math.isfinite(number):
                raise InvalidParameter(f"{name} must be finite, got {number:g}")
            values[name] = number
        if i < len(tokens) and tokens[i].token_type == TokenType.COMMA:
            i += 1
    if i >= len(tokens):
        raise ParseError(f"OPTIONS( is not closed; write {SYNTAX}")
    return values, i + 1


def _cast(text: str, tokens: list[Token], i: int, name: str) -> tuple[float | None, int]:
    """An option's number at ``tokens[i]``, or ZetaSQL's ``CAST(<number | 'inf' | NULL> AS <type>)`` of one
    (None for NULL: not set), and the index after it."""
    if not (
        tokens[i].text.upper() == "CAST"
        and i + 1 < len(tokens)
        and tokens[i + 1].token_type == TokenType.L_PAREN
    ):
        return _number(text, tokens, i, name)
    j = i + 2
    inner = tokens[j] if j < len(tokens) else tokens[-1]
    value: float | None
    if inner.token_type == TokenType.NULL:
        value, j = None, j + 1
    elif inner.token_type == TokenType.STRING:
        try:
            value, j = float(inner.text), j + 1
        except ValueError:
            raise ParseError(f"{name} must be a number, got {inner.text!r}{_at(text, inner)}") from None
    else:
        value, j = _number(text, tokens, j, name)
    if not (
        j + 2 < len(tokens)
        and tokens[j].token_type == TokenType.ALIAS
        and tokens[j + 2].token_type == TokenType.R_PAREN
    ):
        raise ParseError(f"write {name}=<number> or CAST(<number> AS FLOAT64){_at(text, tokens[i])}")
    return value, j + 3


def _cut_bounds(
    text: str, tokens: list[Token], i: int, older: bool
) -> tuple[str, list[tuple[int, Bounds]], list[Report]]:
    """The body from ``tokens[i]`` with each ``, contribution_bounds_per_… => (lo, hi)`` cut out, and the
    bounds by select item (0-based). Bounds go on a select item's outermost aggregate only. In the older
    spelling (``older``) each ``ANON_F(`` is written ``F(`` and its ``CLAMPED BETWEEN lo AND hi`` cut out
    as the bounds it is (privdb.sql.front.bigquery.anon). The select items asking a JSON report
    (privdb.sql.front.bigquery.report) come third."""
    depth, item, start, in_select = 0, 0, tokens[i].start, True
    per_anon, anon_depth = "", 0  # the bounds the open ANON_ aggregate's CLAMPED BETWEEN is, its depth
    pieces: list[str] = []
    found: list[tuple[int, Bounds]] = []
    reports: list[Report] = []
    j = i
    while j < len(tokens):
        token = tokens[j]
        kind = token.token_type
        if (
            token.text.upper().startswith("ANON_")
            and j + 1 < len(tokens)
            and tokens[j + 1].token_type == TokenType.L_PAREN
        ):
            newer, per = anon_name(token, _at(text, token), older)
            pieces.append(text[start : token.start] + newer)
            start = tokens[j + 1].start
            per_anon, anon_depth = (per, depth + 1) if in_select else ("", 0)
            j += 1
            continue
        if (
            older
            and per_anon
            and depth == anon_depth
            and (found_report := older_report(tokens, j, _at(text, token)))
        ):
            end, form = found_report
            path, after = fields(tokens, end, form, _at(text, token))
            reports.append(Report(item, form, path))
            pieces.append(text[start : token.start] + ")")
            start = tokens[after].start if after < len(tokens) else len(text)
            j = after
            depth -= 1
            per_anon = ""
            continue
        if older and is_clamped(tokens, j):
            if not per_anon or depth != anon_depth:
                raise UnsupportedQuery(
                    f"CLAMPED BETWEEN{_at(text, token)} goes last in an ANON_ aggregate of the select "
                    "list, e.g. ANON_SUM(x CLAMPED BETWEEN 0 AND 10)"
                )
            lower, upper, end = _clamped(text, tokens, j)
            if any(n == item for n, _ in found):
                raise UnsupportedQuery(f"CLAMPED BETWEEN{_at(text, token)}: one pair of bounds per aggregate")
            found.append((item, Bounds(per_anon, lower, upper)))
            pieces.append(text[start : token.start])
            start = tokens[end].start
            j = end
            continue
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
            per_anon = per_anon if depth >= anon_depth else ""
        elif depth == 0 and kind == TokenType.COMMA and in_select:
            item += 1
        elif depth == 0 and kind == TokenType.FROM:
            in_select = False
        elif (
            j + 1 < len(tokens)
            and tokens[j + 1].token_type == TokenType.FARROW
            and token.text.lower() == "report_format"
            and in_select
            and depth >= 1
            and tokens[j - 1].token_type == TokenType.COMMA
        ):
            end, form = report_format(tokens, j, _at(text, token))
            path, after = fields(tokens, end, form, _at(text, token))
            reports.append(Report(item, form, path))
            pieces.append(text[start : tokens[j - 1].start] + ")")
            start = tokens[after].start if after < len(tokens) else len(text)
            j = after
            depth -= 1
            continue
        elif j + 1 < len(tokens) and tokens[j + 1].token_type == TokenType.FARROW:
            named = _NAMED.get(token.text.lower())
            if named is None:
                raise UnsupportedQuery(
                    f"named argument {token.text!r}{_at(text, token)}: the aggregates take "
                    "contribution_bounds_per_group or contribution_bounds_per_row"
                )
            if not in_select or depth < 1 or tokens[j - 1].token_type != TokenType.COMMA:
                raise UnsupportedQuery(
                    f"{token.text}{_at(text, token)}: contribution bounds go last in an aggregate of the "
                    "select list, e.g. AVG(x, contribution_bounds_per_group => (0, 100))"
                )
            lower, upper, end = _pair(text, tokens, j + 2, token.text)
            if any(n == item for n, _ in found):
                raise UnsupportedQuery(f"{token.text}{_at(text, token)}: one pair of bounds per aggregate")
            found.append((item, Bounds(named, lower, upper)))
            pieces.append(text[start : tokens[j - 1].start])
            start = tokens[end].start
            j = end
            continue
        j += 1
    pieces.append(text[start:])
    return "".join(pieces), found, reports


def _pair(text: str, tokens: list[Token], i: int, name: str) -> tuple[float, float, int]:
    """``(lower, upper)`` at ``tokens[i]``: the bounds, and the index of the aggregate's closing ``)``."""
    example = f"write {name} => (lower, upper), e.g. (0, 100)"
    if i >= len(tokens) or tokens[i].token_type != TokenType.L_PAREN:
        raise ParseError(f"{example}{_at(text, tokens[min(i, len(tokens) - 1)])}")
    lower, i = _number(text, tokens, i + 1, f"{name}'s lower bound")
    if i >= len(tokens) or tokens[i].token_type != TokenType.COMMA:
        raise ParseError(f"{example}{_at(text, tokens[min(i, len(tokens) - 1)])}")
    upper, i = _number(text, tokens, i + 1, f"{name}'s upper bound")
    if i + 1 >= len(tokens) or tokens[i].token_type != TokenType.R_PAREN:
        raise ParseError(f"{example}{_at(text, tokens[min(i, len(tokens) - 1)])}")
    reported = (
        tokens[i + 1].token_type == TokenType.COMMA
        and i + 2 < len(tokens)
        and tokens[i + 2].text.lower() == "report_format"
    )
    if tokens[i + 1].token_type != TokenType.R_PAREN and not reported:
        raise UnsupportedQuery(f"{name} goes last in the aggregate's arguments{_at(text, tokens[i + 1])}")
    if not (math.isfinite(lower) and math.isfinite(upper) and lower <= upper):
        raise InvalidParameter(
            f"{name} => ({lower:g}, {upper:g}): the lower bound must be ≤ the upper, both finite"
        )
    return lower, upper, i + 1


def _clamped(text: str, tokens: list[Token], j: int) -> tuple[float, float, int]:
    """``CLAMPED BETWEEN lower AND upper`` at ``tokens[j]``: the bounds, and the index of the aggregate's
    closing ``)``."""
    example = "write x CLAMPED BETWEEN lower AND upper, e.g. CLAMPED BETWEEN 0 AND 10"
    lower, i = _number(text, tokens, j + 2, "CLAMPED BETWEEN's lower bound")
    if i >= len(tokens) or tokens[i].token_type != TokenType.AND:
        raise ParseError(f"{example}{_at(text, tokens[min(i, len(tokens) - 1)])}")
    upper, i = _number(text, tokens, i + 1, "CLAMPED BETWEEN's upper bound")
    if i >= len(tokens) or tokens[i].token_type not in (TokenType.R_PAREN, TokenType.WITH):
        raise UnsupportedQuery(
            f"CLAMPED BETWEEN goes last in the aggregate{_at(text, tokens[min(i, len(tokens) - 1)])}"
        )
    if not (math.isfinite(lower) and math.isfinite(upper) and lower <= upper):
        raise InvalidParameter(
            f"CLAMPED BETWEEN {lower:g} AND {upper:g}: the lower bound must be ≤ the upper, both finite"
        )
    return lower, upper, i
