"""Bind parameters (``$1``, ``$2`` …) of the extended protocol: each one a value, and only a value.

privdb parses the statement text itself (a DP-SELECT is not PostgreSQL), so a prepared statement's values are
written into it before it is parsed. That is done by structure, not by text:

* the ``$n`` are found with the tokenizer privdb parses with (sqlglot's DuckDB dialect,
  privdb.sql.front.limits.DIALECT): a ``$1`` inside a string, a quoted name or a comment stays as it is;
* each becomes exactly one literal of its parameter's type (privdb.server.pgwire.literals: a negative number
  parenthesised, text quoted with its quotes doubled), set apart by a space where it would touch the text
  beside it (``1$1``, ``$1.5``);
* then the statement is tokenized again, and must be the original tokens with each ``$n`` replaced by its
  literal's tokens, and the same comments; otherwise it is refused. No value can change what the statement
  is: its operators, its comments, where its strings end.

privdb then checks the whole statement as if the analyst had typed it, values included.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import sqlglot
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import Token, TokenType

from privdb.errors import InvalidParameter, ParseError
from privdb.server.pgwire.errors import ProtocolViolation
from privdb.server.pgwire.literals import literal
from privdb.sql.front.limits import DIALECT

__all__ = ["MAX_PARAMETERS", "count_parameters", "substitute"]

MAX_PARAMETERS = 65535  # a Bind message counts its values in 16 bits
_APART = frozenset("(),;:")  # beside these a literal needs no space


def _tokens(text: str) -> list[Token]:
    try:
        return sqlglot.Dialect.get_or_raise(DIALECT).tokenize(text)
    except TokenError as err:
        raise ParseError(f"the statement cannot be read: {err}") from None


def _places(tokens: list[Token]) -> list[tuple[int, int]]:
    """(index of the ``$`` token, n) of each ``$n``: a ``$`` with the digits right after it."""
    found = []
    for i, (this, following) in enumerate(itertools.pairwise(tokens)):
        digits = following.text.isascii() and following.text.isdigit()
        if this.token_type == TokenType.PARAMETER and following.token_type == TokenType.NUMBER and digits:
            if following.start != this.end + 1:  # `$ 1`: not a parameter
                continue
            n = int(following.text)
            if not 1 <= n <= MAX_PARAMETERS:
                raise ParseError(f"there is no parameter ${n}: parameters are $1 to ${MAX_PARAMETERS}")
            found.append((i, n))
    return found


def count_parameters(text: str) -> int:
    """The highest ``$n`` of the statement (0: none)."""
    return max((n for _, n in _places(_tokens(text))), default=0) if "$" in text else 0


def substitute(text: str, values: Sequence[bytes | None], oids: Sequence[int], formats: Sequence[int]) -> str:
    """The statement with each ``$n`` replaced by the literal of the n-th value (of type ``oids[n-1]``,
    0 or missing: unknown, read as text; ``formats`` as in Bind: none, one for all, or one each). As in
    PostgreSQL the statement takes as many values as it declared types or uses ``$n``, whichever is more."""
    tokens = _tokens(text) if "$" in text else []
    places = _places(tokens)
    wanted = max([len(oids), *(n for _, n in places)])  # PostgreSQL's count: declared or used, the most
    if len(values) != wanted:
        raise ProtocolViolation(
            f"bind message supplies {len(values)} parameters, but the statement requires {wanted}"
        )
    if len(formats) not in (0, 1, len(values)):
        raise ProtocolViolation(
            f"bind message has {len(formats)} parameter formats but {len(values)} parameters"
        )
    literals = [
        literal(value, oids[i] if i < len(oids) else 0, _format(formats, i) == 1, i + 1)
        for i, value in enumerate(values)
    ]
    if not places:
        return text
    out, last = [], 0
    for i, n in places:
        start, end = tokens[i].start, tokens[i + 1].end + 1
        before = " " if start > 0 and not _apart(text[start - 1]) else ""
        after = " " if end < len(text) and not _apart(text[end]) else ""
        out += [text[last:start], before, literals[n - 1], after]
        last = end
    bound = "".join([*out, text[last:]])
    _check(tokens, places, literals, bound)
    return bound


def _format(formats: Sequence[int], i: int) -> int:
    if not formats:
        return 0
    return formats[0] if len(formats) == 1 else formats[i]


def _apart(char: str) -> bool:
    return char.isspace() or char in _APART


def _check(tokens: list[Token], places: list[tuple[int, int]], literals: list[str], bound: str) -> None:
    """The bound statement's tokens are the original ones with each ``$n`` replaced by its literal's, and
    its comments are the original's: else no value may go there."""
    expected: list[tuple[TokenType, str]] = []
    at = dict(places)
    i = 0
    while i < len(tokens):
        if i in at:
            expected += [(t.token_type, t.text) for t in _tokens(literals[at[i] - 1])]
            i += 2
            continue
        expected.append((tokens[i].token_type, tokens[i].text))
        i += 1
    got = _tokens(bound)
    comments = [c for t in tokens for c in t.comments]
    if [(t.token_type, t.text) for t in got] != expected or [c for t in got for c in t.comments] != comments:
        raise InvalidParameter(
            "a parameter's value would change the statement's structure where it stands; put each $n "
            "where a value goes (e.g. WHERE age > $1)"
        )
