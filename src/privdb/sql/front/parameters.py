"""Named query parameters (BigQuery's ``@name``): each written into the query's text as the literal it is,
before anything else reads the text.

A value is a number, a string, a boolean or NULL, given beside the query (the library's ``parameters=``,
HTTP's ``"parameters"``, the CLI's ``--param name=value``). Binding happens on the text, so the query is
then checked, planned, charged and stored as if the analyst had written the literals: a parameter changes
nothing privdb reads about the data. Every ``@name`` in the query needs a value and every value a
``@name``; either mistake is refused, free, naming it. Inside a string literal or a comment ``@`` is text.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

import sqlglot
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import TokenType

from privdb.errors import InvalidParameter, ParseError

__all__ = ["Value", "bind_parameters", "literal"]

Value = int | float | str | bool | None
_NAMES = (TokenType.VAR, TokenType.IDENTIFIER)


def literal(name: str, value: Value) -> str:
    """The SQL literal of one parameter's value."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidParameter(f"parameter @{name} is {value!r}: a number must be finite")
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise InvalidParameter(
        f"parameter @{name} is a {type(value).__name__}: give a number, a string, true/false or null"
    )


def bind_parameters(text: str, parameters: Mapping[str, Value] | None) -> str:
    """``text`` with each ``@name`` replaced by the literal of ``parameters[name]`` (names case-insensitive,
    as BigQuery's); ``text`` itself without parameters."""
    if not parameters:
        return text
    given = {str(k).lower(): v for k, v in parameters.items()}
    if len(given) != len(parameters):
        raise InvalidParameter("two parameters differ only in case: name each once")
    try:
        tokens = sqlglot.tokenize(text, read="bigquery")
    except SqlglotError as err:
        raise ParseError(f"the query could not be read to bind its parameters: {err}") from None
    out, last, used = [], 0, set()
    for here, after in itertools.pairwise(tokens):
        if (
            here.token_type != TokenType.PARAMETER
            or after.token_type not in _NAMES
            or after.start != here.end + 1
        ):
            continue
        name = after.text.lower()
        if name not in given:
            known = ", ".join(f"@{n}" for n in sorted(given))
            raise InvalidParameter(f"the query's @{after.text} has no value (given: {known}); add it")
        out += [text[last : here.start], literal(name, given[name])]
        last = after.end + 1
        used.add(name)
    if unused := sorted(set(given) - used):
        raise InvalidParameter(
            f"parameter(s) {', '.join('@' + n for n in unused)} are not in the query; remove them or use them"
        )
    return "".join(out) + text[last:]
