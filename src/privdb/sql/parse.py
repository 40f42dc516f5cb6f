"""Parse ``DP-SELECT ε [DELTA δ] <select> …`` with sqlglot's tokenizer and parser (no regular expressions).

The prefix ``DP-SELECT ε [DELTA δ]`` is read from sqlglot tokens; the rest, with ``SELECT`` put back, must be
exactly one SELECT statement in DuckDB's dialect. Errors carry line and column and underline the spot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import Token, TokenType

from privdb.errors import InvalidParameter, ParseError, RawAccessDenied, UnsupportedQuery

__all__ = ["MAX_EPSILON", "DPQuery", "parse_dp_select"]

MAX_EPSILON = 1000.0  # above this a "private" answer is the raw answer in all but name
SYNTAX = "DP-SELECT <epsilon> [DELTA <delta>] <aggregates> FROM <table> [WHERE …] [GROUP BY …]"
_DIALECT = "duckdb"


@dataclass(frozen=True)
class DPQuery:
    """A parsed DP-SELECT: its privacy parameters and the SELECT it wraps."""

    epsilon: float
    delta: float
    select: exp.Select
    text: str

    @property
    def normalized(self) -> str:
        """A canonical form: the same question written differently caches to the same key."""
        body = self.select.sql(dialect=_DIALECT, comments=False)
        return f"DP-SELECT {self.epsilon!r} DELTA {self.delta!r} {body}"


def _underline(text: str, start: int, end: int) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line_end = len(text) if line_end == -1 else line_end
    line = text[line_start:line_end]
    width = max(1, min(end, line_end) - start + 1)
    return f"\n  {line}\n  {' ' * (start - line_start)}{'^' * width}"


def _where(text: str, token: Token) -> str:
    return f" (line {token.line}, column {token.col}){_underline(text, token.start, token.end)}"


def _number(text: str, tokens: list[Token], i: int, what: str) -> tuple[float, int]:
    """Read a (possibly signed) number at ``tokens[i]``; return it and the index after it."""
    sign = 1.0
    if i < len(tokens) and tokens[i].token_type in (TokenType.DASH, TokenType.PLUS):
        sign = -1.0 if tokens[i].token_type == TokenType.DASH else 1.0
        i += 1
    if i >= len(tokens):
        raise ParseError(f"expected {what} after DP-SELECT; write {SYNTAX}")
    tok = tokens[i]
    if tok.token_type != TokenType.NUMBER:
        raise InvalidParameter(
            f"{what} must be a positive number, got {tok.text!r}{_where(text, tok)}"
            if what == "epsilon"
            else f"{what} must be a number in [0, 1), got {tok.text!r}{_where(text, tok)}"
        )
    try:
        value = sign * float(tok.text)
    except ValueError:
        raise ParseError(f"{tok.text!r} is not a number{_where(text, tok)}") from None
    return value, i + 1


def parse_dp_select(text: str) -> DPQuery:
    """Parse an analyst's query, or raise the error that says what to write instead."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError(f"the query is empty; write {SYNTAX}")
    try:
        tokens = sqlglot.Dialect.get_or_raise(_DIALECT).tokenize(text)
    except TokenError as err:
        raise ParseError(f"cannot read the query: {err}") from None
    if not tokens:
        raise ParseError(f"the query holds only comments; write {SYNTAX}")
    first = tokens[0]
    is_dp = (
        len(tokens) >= 3
        and first.token_type == TokenType.VAR
        and first.text.upper() == "DP"
        and tokens[1].token_type == TokenType.DASH
        and tokens[2].token_type == TokenType.SELECT
    )
    if not is_dp:
        if first.token_type in (TokenType.SELECT, TokenType.WITH, TokenType.FROM):
            raise RawAccessDenied(
                "a plain SELECT would return raw rows; analysts ask with DP-SELECT, e.g. "
                "DP-SELECT 0.5 COUNT(*) FROM people"
            )
        raise ParseError(f"a query must start with DP-SELECT{_where(text, first)}\n  write {SYNTAX}")
    epsilon, i = _number(text, tokens, 3, "epsilon")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise InvalidParameter(f"epsilon must be > 0 and finite, got {epsilon:g}")
    if epsilon > MAX_EPSILON:
        raise InvalidParameter(
            f"epsilon {epsilon:g} is above {MAX_EPSILON:g}: such an answer protects no one; "
            "use a smaller epsilon"
        )
    delta = 0.0
    if i < len(tokens) and tokens[i].token_type == TokenType.VAR and tokens[i].text.upper() == "DELTA":
        delta, i = _number(text, tokens, i + 1, "delta")
        if not (0 <= delta < 1):
            raise InvalidParameter(f"delta must be in [0, 1), got {delta:g}")
    if i >= len(tokens):
        raise ParseError(f"nothing to select after the privacy parameters; write {SYNTAX}")
    body = "SELECT " + text[tokens[i].start :]
    offset = tokens[i].start - len("SELECT ")
    try:
        statements = sqlglot.parse(body, read=_DIALECT)
    except SqlglotParseError as err:
        info = err.errors[0] if err.errors else {}
        desc = str(info.get("description", "syntax error"))
        start = int(info.get("start_context", "") and 0)
        line, col = info.get("line"), info.get("col")
        where = f" (line {line}, column {col})" if line is not None else ""
        highlight = str(info.get("highlight", ""))
        pos = body.find(highlight) + offset if highlight and body.find(highlight) >= 0 else start
        mark = _underline(text, max(pos, 0), max(pos, 0) + max(len(highlight), 1) - 1) if highlight else ""
        raise ParseError(f"{desc}{where}{mark}") from None
    except TokenError as err:
        raise ParseError(f"cannot read the query: {err}") from None
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise UnsupportedQuery(
            "only one statement per query: remove everything after the first ';'"
            if len(statements) > 1
            else f"nothing to select; write {SYNTAX}"
        )
    select = statements[0]
    if not isinstance(select, exp.Select):
        raise UnsupportedQuery(
            f"DP-SELECT wraps one plain SELECT; set operations (UNION, …) are not supported. Write {SYNTAX}"
        )
    return DPQuery(epsilon=epsilon, delta=delta, select=select, text=text)
