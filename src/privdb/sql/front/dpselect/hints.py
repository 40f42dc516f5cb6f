"""Plain-words messages for SQL a newcomer writes that DP-SELECT cannot take (issue 27): a reserved word used
as a column's name, a set operation, and the standard ``PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY x)``. They
replace sqlglot's raw parser messages, which name its internals (``Required keyword: 'expression' missing for
<class 'sqlglot.expressions.query.Limit'>``) rather than what to write instead."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.tokenizer_core import TokenType

from privdb.errors import UnsupportedQuery

__all__ = ["check_within_group", "reserved_word", "set_operation"]

_NAMES = {TokenType.VAR, TokenType.IDENTIFIER, TokenType.NUMBER, TokenType.STRING}


def reserved_word(word: str, dialect: str) -> str | None:
    """The message for a parse error at ``word`` when it is a reserved word of SQL (``limit``, ``order``
    where the grammar takes it as its keyword), else None."""
    if not word.isidentifier():
        return None
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(word)
    except sqlglot.errors.SqlglotError:
        return None
    if len(tokens) != 1 or tokens[0].token_type in _NAMES:
        return None
    return f'{word!r} is a reserved word of SQL; if it names a column, quote it with double quotes: "{word}"'


def set_operation(node: exp.SetOperation) -> str:
    """The message for a UNION, INTERSECT or EXCEPT: one DP-SELECT answers one SELECT."""
    word = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}.get(
        type(node), "a set operation"
    )
    return (
        f"{word}: DP-SELECT answers one SELECT (set operations are not supported); run the parts as "
        "separate DP-SELECT queries and combine their answers (each is paid for on its own)"
    )


def check_within_group(select: exp.Expression) -> None:
    """Refuse ``PERCENTILE_CONT/PERCENTILE_DISC(p) WITHIN GROUP (ORDER BY x)``, pointing to ``QUANTILE(x, p)``
    (the form privdb answers); other WITHIN GROUP aggregates are refused as they are."""
    for node in select.find_all(exp.WithinGroup):
        func = node.this
        if not isinstance(func, exp.PercentileCont | exp.PercentileDisc):
            raise UnsupportedQuery(
                f"{node.sql()}: WITHIN GROUP is not supported; use QUANTILE(x, p) or MEDIAN(x)"
            )
        order = node.expression
        keys = order.expressions if isinstance(order, exp.Order) else []
        column = keys[0].this.sql() if len(keys) == 1 else "x"
        p = func.this
        share = p.sql() if isinstance(p, exp.Expression) else "p"
        if len(keys) == 1 and keys[0].args.get("desc") and isinstance(p, exp.Literal) and not p.is_string:
            share = f"{1 - float(p.this):g}"  # a descending order counts from the top
        name = "PERCENTILE_CONT" if isinstance(func, exp.PercentileCont) else "PERCENTILE_DISC"
        raise UnsupportedQuery(
            f"{name}(…) WITHIN GROUP (ORDER BY …) is not supported; write QUANTILE({column}, {share})"
        )
