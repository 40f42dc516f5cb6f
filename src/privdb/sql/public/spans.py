"""Where DP queries stand in a plain statement (privdb.sql.public.wrapped): in parentheses (a subquery or a
CTE body), or as the branches of a top-level set operation (``SELECT WITH … UNION ALL SELECT WITH …``).
Read from sqlglot's tokens alone, before anything is parsed or planned."""

from __future__ import annotations

import functools

import sqlglot
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from privdb.errors import ParseError
from privdb.sql.front.bigquery.syntax import is_bigquery

__all__ = ["branches", "dp_at", "dp_spans", "tokens_of"]


@functools.lru_cache(maxsize=16)
def tokens_of(text: str) -> list[Token]:
    """The text's tokens, kept for the few texts just seen: the engine asks whether a text is plain SQL,
    then whether it holds DP queries, then where they stand (one tokenization for all three; callers
    never change the list)."""
    try:
        return list(sqlglot.Dialect.get_or_raise("duckdb").tokenize(text))
    except SqlglotError:
        return []


def dp_at(tokens: list[Token], i: int) -> bool:
    """A DP query starts at token ``i``: ``DP-SELECT`` or ``SELECT WITH DIFFERENTIAL_PRIVACY``."""
    dp_select = (
        i + 2 < len(tokens)
        and tokens[i].token_type == TokenType.VAR
        and tokens[i].text.upper() == "DP"
        and tokens[i + 1].token_type == TokenType.DASH
        and tokens[i + 2].token_type == TokenType.SELECT
    )
    return dp_select or is_bigquery(tokens[i : i + 3])


_SET_OPERATIONS = (TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT)


def branches(tokens: list[Token]) -> list[tuple[int, int]]:
    """The token ranges [i, j) of the top-level branches of a set operation (``… UNION ALL …``), the
    operators and their ``ALL``/``DISTINCT`` left out; one range when there is none."""
    ranges, depth, start, i = [], 0, 0, 0
    while i < len(tokens):
        kind = tokens[i].token_type
        depth += (kind == TokenType.L_PAREN) - (kind == TokenType.R_PAREN)
        if depth == 0 and kind in _SET_OPERATIONS:
            ranges.append((start, i))
            i += 1
            if i < len(tokens) and tokens[i].token_type in (TokenType.ALL, TokenType.DISTINCT):
                i += 1
            start = i
            continue
        i += 1
    return [*ranges, (start, len(tokens))]


def dp_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) in ``text`` of each DP query standing in parentheses (a subquery or CTE body) or as a
    branch of a top-level set operation (``SELECT WITH … FROM t UNION ALL SELECT WITH … FROM t``)."""
    tokens = tokens_of(text)
    parts = branches(tokens)
    if len(parts) > 1:
        tops = [(i, j) for i, j in parts if j > i and dp_at(tokens, i)]
        inner = [s for s in _parenthesised(text, tokens) if not any(_inside(s, tokens, b) for b in tops)]
        found = [(tokens[i].start, _end(tokens[j - 1])) for i, j in tops]
        return sorted(found + inner)
    return _parenthesised(text, tokens)


def _end(token: Token) -> int:
    return token.end + 1


def _inside(span: tuple[int, int], tokens: list[Token], branch: tuple[int, int]) -> bool:
    i, j = branch
    return tokens[i].start <= span[0] and span[1] <= _end(tokens[j - 1])


def _parenthesised(text: str, tokens: list[Token]) -> list[tuple[int, int]]:
    """The DP queries standing in parentheses."""
    spans, i = [], 0
    while i < len(tokens):
        if tokens[i].token_type == TokenType.L_PAREN and dp_at(tokens, i + 1):
            depth, j = 0, i
            while j < len(tokens):
                kind = tokens[j].token_type
                depth += (kind == TokenType.L_PAREN) - (kind == TokenType.R_PAREN)
                if depth == 0:
                    break
                j += 1
            if j == len(tokens):
                raise ParseError("a parenthesis around a DP query is not closed")
            spans.append((tokens[i + 1].start, _end(tokens[j - 1])))
            i = j
        i += 1
    return spans
