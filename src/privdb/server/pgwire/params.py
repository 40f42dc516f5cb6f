"""Bind parameters (``$1``, ``$2`` …) of the extended protocol, written into the statement as literals.

privdb parses the query text itself (a DP-SELECT is not PostgreSQL), so a prepared statement's parameters
are substituted before it is parsed: each ``$n`` token (found with sqlglot's PostgreSQL tokenizer, so a
``$1`` inside a string or comment stays as it is) becomes a SQL literal: a number for the numeric types, TRUE
or FALSE for bool, NULL for NULL, and otherwise a quoted string with its quotes doubled. The literal is the
value and only the value; privdb then checks the whole text as if the analyst had typed it.
"""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Sequence

from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import TokenType

from privdb.errors import InvalidParameter, ParseError, UnsupportedQuery

__all__ = ["count_parameters", "substitute"]

_INTS = {20: "!q", 21: "!h", 23: "!i", 26: "!I"}
_FLOATS = {700: "!f", 701: "!d"}
_NUMERIC = {*_INTS, *_FLOATS, 1700}
_TEXTS = {0, 25, 1042, 1043, 19, 705}


def _positions(text: str) -> list[tuple[int, int, int]]:
    """(start, end, n) of each ``$n`` in the text."""
    try:
        tokens = Postgres().tokenizer().tokenize(text)
    except TokenError as err:
        raise ParseError(f"the statement cannot be read: {err}") from None
    found = []
    for this, following in itertools.pairwise(tokens):
        dollar = this.token_type == TokenType.PARAMETER and following.token_type == TokenType.NUMBER
        if dollar and following.start == this.end + 1 and following.text.isdigit():
            found.append((this.start, following.end + 1, int(following.text)))
    return found


def count_parameters(text: str) -> int:
    """How many parameters the statement takes (its highest ``$n``)."""
    return max((n for _, _, n in _positions(text)), default=0)


def _literal(value: bytes | None, oid: int, binary: bool) -> str:
    if value is None:
        return "NULL"
    if binary:
        if oid in _INTS:
            return str(struct.unpack(_INTS[oid], value)[0])
        if oid in _FLOATS:
            return _number(repr(struct.unpack(_FLOATS[oid], value)[0]))
        if oid == 16:
            return "TRUE" if value == b"\x01" else "FALSE"
        if oid not in _TEXTS:
            raise UnsupportedQuery(
                f"a binary parameter of type OID {oid} is not supported; send parameters as text"
            )
    text = value.decode("utf-8")
    if oid in _NUMERIC:
        return _number(text)
    if oid == 16:
        return "TRUE" if text.strip().lower() in ("t", "true", "1", "on", "yes", "y") else "FALSE"
    return "'" + text.replace("'", "''") + "'"


def _number(text: str) -> str:
    try:
        number = float(text)
    except ValueError:
        raise InvalidParameter(f"parameter {text!r} is not a number") from None
    if math.isnan(number) or math.isinf(number):
        raise InvalidParameter(f"parameter {text!r} is not a finite number")
    return text.strip()


def substitute(text: str, values: Sequence[bytes | None], oids: Sequence[int], formats: Sequence[int]) -> str:
    """The statement with each ``$n`` replaced by the literal of the n-th value."""
    places = _positions(text)
    wanted = max((n for _, _, n in places), default=0)
    if len(values) != wanted:
        raise InvalidParameter(f"the statement takes {wanted} parameter(s) but {len(values)} were bound")
    out, last = [], 0
    for start, end, n in places:
        oid = oids[n - 1] if n - 1 < len(oids) else 0
        fmt = formats[0] if len(formats) == 1 else (formats[n - 1] if formats else 0)
        out += [text[last:start], _literal(values[n - 1], oid, fmt == 1)]
        last = end
    return "".join([*out, text[last:]])
