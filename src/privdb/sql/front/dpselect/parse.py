"""Parse ``DP-SELECT ε [DELTA δ] <select> …`` with sqlglot's tokenizer and parser (no regular expressions).

The prefix ``DP-SELECT ε [DELTA δ]`` (or ``ACCURACY a [CONFIDENCE c] [MAX m]``, ``USING GAUSSIAN``, a leading
``WITH`` and ``TOP n``) is read from sqlglot tokens; the rest, with ``SELECT`` put back, must be exactly one
SELECT statement in DuckDB's dialect. Errors carry line and column and underline the spot. The public limits
on length and nesting (privdb.sql.front.limits) are checked before and after sqlglot parses.
"""

from __future__ import annotations

import math

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import SqlglotError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from privdb.errors import InvalidParameter, ParseError, PrivdbError, RawAccessDenied, UnsupportedQuery
from privdb.sql.front.bigquery.quantiles import expand as expand_quantiles
from privdb.sql.front.bigquery.syntax import is_bigquery, read_header
from privdb.sql.front.dpselect.hints import check_within_group, reserved_word, set_operation
from privdb.sql.front.limits import DIALECT, MAX_DEPTH, check_depth, check_text, nesting, too_deep
from privdb.sql.front.qualified import unqualify
from privdb.sql.front.query import MAX_EPSILON, DPQuery, check_epsilon

__all__ = ["parse_bigquery", "parse_dp_select"]

SYNTAX = (
    "DP-SELECT <epsilon> [DELTA <delta>] <aggregates> FROM <table> [WHERE …] [GROUP BY …] "
    "(or DP-SELECT ACCURACY <± wanted> [CONFIDENCE <c>] [MAX <epsilon>] …)"
)


def _underline(text: str, start: int, end: int) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line_end = len(text) if line_end == -1 else line_end
    line = text[line_start:line_end]
    width = max(1, min(end, line_end) - start + 1)
    return f"\n  {line}\n  {' ' * (start - line_start)}{'^' * width}"


def _error_start(body: str, line: object, col: object, highlight: str) -> int | None:
    """Where sqlglot's error token starts in ``body``: its ``line`` and ``col`` give the token's last
    character (1-based); None when they do not point at ``highlight``."""
    if not (highlight and isinstance(line, int) and isinstance(col, int)):
        return None
    lines = body.split("\n")
    if not 1 <= line <= len(lines):
        return None
    start = sum(len(x) + 1 for x in lines[: line - 1]) + col - len(highlight)
    return start if start >= 0 and body[start : start + len(highlight)] == highlight else None


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
    after = tokens[i + 1] if i + 1 < len(tokens) else None
    if (  # `.01`: the tokenizer gives a dot and the digits; read them as one number, as SQL does
        tok.token_type == TokenType.DOT
        and after is not None
        and after.token_type == TokenType.NUMBER
        and after.start == tok.end + 1
        and after.text.isdigit()
    ):
        return sign * float("." + after.text), i + 2
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


def parse_bigquery(text: object) -> DPQuery | None:
    """``text`` parsed when it is in BigQuery's spelling (its option words tested first, so a DP-SELECT is
    not parsed for this), else None; a text that does not parse is None too (prepare refuses it, with its
    reason)."""
    upper = text.upper() if isinstance(text, str) else ""
    if "DIFFERENTIAL_PRIVACY" not in upper and "ANONYMIZATION" not in upper:
        return None
    try:
        query = parse_dp_select(str(text))
    except PrivdbError:
        return None
    return query if query.bigquery is not None else None


def parse_dp_select(text: str) -> DPQuery:
    """Parse an analyst's query, or raise the error that says what to write instead."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError(f"the query is empty; write {SYNTAX}")
    check_text(text)
    try:
        return _parse(text)
    except RecursionError:  # a nesting no check above foresaw: still a free refusal, never a fault
        raise too_deep() from None


def _parse(text: str) -> DPQuery:
    try:
        tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(text)
    except TokenError as err:
        raise ParseError(f"cannot read the query: {err}") from None
    if nesting(tokens) > MAX_DEPTH:
        raise too_deep()
    if not tokens:
        raise ParseError(f"the query holds only comments; write {SYNTAX}")
    if is_bigquery(tokens):
        header = read_header(text, tokens)
        select = _select(text, "SELECT " + header.body, header.offset)
        check_depth(select)
        select, options = expand_quantiles(select, header.options)  # arrays as their elements
        return DPQuery(header.epsilon, header.delta, select, text, bigquery=options)
    cte_text, tokens = _leading_with(text, tokens)
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
    accuracy = None
    if _keyword(tokens, 3, "ACCURACY"):
        accuracy, i = _accuracy(text, tokens)
        epsilon = 1.0  # provisional: the engine chooses the smallest ε reaching the accuracy
    else:
        epsilon, i = _number(text, tokens, 3, "epsilon")
    check_epsilon(epsilon)
    delta = 0.0
    if i < len(tokens) and tokens[i].token_type == TokenType.VAR and tokens[i].text.upper() == "DELTA":
        delta, i = _number(text, tokens, i + 1, "delta")
        if not (0 <= delta < 1):
            raise InvalidParameter(f"delta must be in [0, 1), got {delta:g}")
    noise, i = _noise(text, tokens, i, delta)
    if noise == "smooth" and accuracy is not None:
        raise UnsupportedQuery(
            "USING SMOOTH takes an ε, not ACCURACY: its noise depends on the data, so no ε can be chosen "
            "for an accuracy in advance; write DP-SELECT ε DELTA δ USING SMOOTH MEDIAN(…) …"
        )
    if i >= len(tokens):
        raise ParseError(f"nothing to select after the privacy parameters; write {SYNTAX}")
    top, body_text = _top(text, tokens, i)
    select = _select(text, cte_text + "SELECT " + body_text, tokens[i].start - len("SELECT ") - len(cte_text))
    if top is not None:  # TOP n is LIMIT n (the smaller, if both are written)
        limit = select.args.get("limit")
        value = limit.expression if limit is not None else None
        if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit():
            top = min(top, int(value.this))
        select = select.limit(top)
    check_depth(select)
    return DPQuery(epsilon=epsilon, delta=delta, select=select, text=text, accuracy=accuracy, noise=noise)


def _select(text: str, body: str, offset: int) -> exp.Select:
    """The one plain SELECT ``body`` holds (``offset``: where it starts in ``text``, for an error's place)."""
    try:
        statements = sqlglot.parse(body, read=DIALECT)
    except SqlglotParseError as err:
        info = err.errors[0] if err.errors else {}
        desc = str(info.get("description", "syntax error"))
        highlight = str(info.get("highlight", ""))
        pos = _error_start(body, info.get("line"), info.get("col"), highlight)
        where, mark = "", ""
        if pos is not None:  # sqlglot's line and column are in the body: given here in the query's text
            pos += offset
            line = text.count("\n", 0, pos) + 1
            where = f" (line {line}, column {pos - text.rfind(chr(10), 0, pos)})"
            mark = _underline(text, pos, pos + len(highlight) - 1)
        raise ParseError(f"{reserved_word(highlight, DIALECT) or desc}{where}{mark}") from None
    except SqlglotError as err:  # TokenError, UnsupportedError, …
        raise ParseError(f"cannot read the query: {err}") from None
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise UnsupportedQuery(
            "only one statement per query: remove everything after the first ';'"
            if len(statements) > 1
            else f"nothing to select; write {SYNTAX}"
        )
    first = statements[0]
    assert first is not None
    select = unqualify(first)  # public.people is people (privdb.sql.front.qualified)
    if isinstance(select, exp.SetOperation):
        raise UnsupportedQuery(set_operation(select))
    if not isinstance(select, exp.Select):
        raise UnsupportedQuery(f"DP-SELECT wraps one plain SELECT. Write {SYNTAX}")
    check_within_group(select)
    return select


NOISES = ("laplace", "gaussian", "smooth")


def _noise(text: str, tokens: list[Token], i: int, delta: float) -> tuple[str, int]:
    """``USING GAUSSIAN | LAPLACE | SMOOTH`` after the privacy parameters (USING is reserved in SQL, so no
    select list can start with it): which noise counts and sums get, or (SMOOTH) noise scaled to the smooth
    sensitivity of MEDIAN and QUANTILE. Gaussian and smooth noise need δ > 0."""
    if i >= len(tokens) or tokens[i].token_type != TokenType.USING:
        return "laplace", i
    word = tokens[i + 1].text.lower() if i + 1 < len(tokens) else ""
    if word not in NOISES:
        raise ParseError(
            f"USING names the noise: USING GAUSSIAN or USING LAPLACE (counts and sums), or USING SMOOTH "
            f"(MEDIAN and QUANTILE)"
            f"{_where(text, tokens[min(i + 1, len(tokens) - 1)])}"
        )
    if word in ("gaussian", "smooth") and delta <= 0:
        raise InvalidParameter(
            f"USING {word.upper()} needs δ > 0: write DP-SELECT ε DELTA δ USING {word.upper()} … "
            "(e.g. DELTA 1e-6)"
        )
    return word, i + 2


def _keyword(tokens: list[Token], i: int, word: str) -> bool:
    return i < len(tokens) and tokens[i].token_type == TokenType.VAR and tokens[i].text.upper() == word


def _accuracy(text: str, tokens: list[Token]) -> tuple[tuple[float, float, float | None], int]:
    """``ACCURACY a [CONFIDENCE c] [MAX m]`` after DP-SELECT: the wanted half-width of each aggregate's
    interval at confidence c (default 0.95), and the most ε the analyst will pay."""
    half, i = _number(text, tokens, 4, "accuracy")
    if not (half > 0 and math.isfinite(half)):
        raise InvalidParameter(f"ACCURACY must be a positive half-width (the ± you want), got {half:g}")
    confidence = 0.95
    if _keyword(tokens, i, "CONFIDENCE"):
        confidence, i = _number(text, tokens, i + 1, "confidence")
        if not 0.5 <= confidence < 1:
            raise InvalidParameter(f"CONFIDENCE must be in [0.5, 1), e.g. 0.95, got {confidence:g}")
    most = None
    if _keyword(tokens, i, "MAX"):
        most, i = _number(text, tokens, i + 1, "MAX epsilon")
        if not (0 < most <= MAX_EPSILON):
            raise InvalidParameter(f"MAX must be an ε in (0, {MAX_EPSILON:g}], got {most:g}")
    return (half, confidence, most), i


def _leading_with(text: str, tokens: list[Token]) -> tuple[str, list[Token]]:
    """``WITH a AS (…) DP-SELECT ε …`` (CTEs written first, as in SQL): the WITH clause's text and the
    tokens from ``DP-SELECT`` on. Without a leading WITH: nothing, and the tokens as they are."""
    if not tokens or tokens[0].token_type != TokenType.WITH:
        return "", tokens
    depth = 0
    for i, token in enumerate(tokens):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif (
            depth == 0
            and token.token_type == TokenType.VAR
            and token.text.upper() == "DP"
            and i + 2 < len(tokens)
            and tokens[i + 1].token_type == TokenType.DASH
            and tokens[i + 2].token_type == TokenType.SELECT
        ):
            return text[: token.start] + " ", tokens[i:]
    return "", tokens


def _top(text: str, tokens: list[Token], i: int) -> tuple[int | None, str]:
    """``[DISTINCT] TOP n`` right after the privacy parameters (SQL Server's spelling of LIMIT): the
    number, and the query text without it."""
    j = i + 1 if tokens[i].token_type == TokenType.DISTINCT else i
    if j + 1 < len(tokens) and tokens[j].token_type == TokenType.VAR and tokens[j].text.upper() == "TOP":
        number = tokens[j + 1]
        if number.token_type != TokenType.NUMBER or not number.text.isdigit():
            raise ParseError(f"TOP takes a whole number, e.g. TOP 10{_where(text, number)}")
        rest = text[tokens[i].start : tokens[j].start] + " " + text[number.end + 1 :]
        return int(number.text), rest
    return None, text[tokens[i].start :]
