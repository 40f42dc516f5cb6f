"""The public limits on a query's text, checked so that no later stage (sqlglot's recursive parser and
generator, privdb's checks, the engine SQL re-read for other dialects) can run out of stack: a query is at
most ``MAX_QUERY_LENGTH`` characters of Unicode text, and nests at most ``MAX_DEPTH`` levels — parentheses,
brackets, braces, ``CASE … END`` and prefix operators in a row (``NOT``, unary ``-``, ``~``, ``INTERVAL``),
counted on the tokens before sqlglot parses them and again on the query as privdb writes it back (``a::INT``
is ``CAST(a AS INT)``); its syntax tree is at most ``MAX_TREE_DEPTH`` nodes deep (a chain of AND/OR or of one
arithmetic or comparison operator, ``a + b + c``, counts once: sqlglot writes those without recursion). Each
is a free ``parse_error`` with one message, whichever check (or a ``RecursionError`` anyway) finds it: the
outcome depends only on the query's text. privdb.sql.front.dpselect.parse applies them to a DP-SELECT, and
privdb.sql.public to a plain SELECT over public tables.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.tokenizer_core import Token, TokenType

from privdb.errors import ParseError
from privdb.text import lone_surrogate

__all__ = [
    "DIALECT",
    "MAX_DEPTH",
    "MAX_QUERY_LENGTH",
    "MAX_TREE_DEPTH",
    "check_depth",
    "check_text",
    "nesting",
    "too_deep",
]

DIALECT = "duckdb"  # queries are read, and written back, in DuckDB's dialect
MAX_QUERY_LENGTH = 100_000  # characters
# sqlglot's parser spends up to ~26 Python frames per level of nesting (a function call, a parenthesis), and
# the engine SQL (re-read by sqlglot for explain and for other engines) nests deeper than the query: 16 levels
# stay far inside Python's limit of 1000 frames in every face (CLI, server thread, library)
MAX_DEPTH = 16
MAX_TREE_DEPTH = 4 * MAX_DEPTH  # nodes; sqlglot's generator spends ~3 frames per node


_OPENERS = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE, TokenType.CASE}
_CLOSERS = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE, TokenType.END}
_PREFIX = {TokenType.NOT, TokenType.TILDE, TokenType.INTERVAL, TokenType.PIPE_SLASH, TokenType.DPIPE_SLASH}
_SIGNS = {TokenType.DASH, TokenType.PLUS}
# after these a sign is binary (a - b); anywhere else it is a prefix operator (-b, a * -b, (-b))
_OPERAND_ENDS = {
    TokenType.VAR,
    TokenType.NUMBER,
    TokenType.STRING,
    TokenType.IDENTIFIER,
    TokenType.NULL,
    TokenType.TRUE,
    TokenType.FALSE,
    *_CLOSERS,
}


def too_deep() -> ParseError:
    """The one refusal of a query nested too deeply, whichever check found it."""
    return ParseError(
        f"the query nests more than {MAX_DEPTH} levels deep (parentheses, function calls, CASE, prefix "
        "operators such as NOT or unary minus, casts); write it with less nesting"
    )


def nesting(tokens: list[Token]) -> int:
    """How deep ``tokens`` nest: each parenthesis, bracket, brace or ``CASE`` is a level, and so is each
    prefix operator in a row before an operand (``NOT NOT x``, ``- -x``, ``NOT (``). Counted without
    recursion, before any parser sees the tokens."""
    stack: list[int] = []
    depth = deepest = run = 0
    previous: TokenType | None = None
    for token in tokens:
        kind = token.token_type
        if kind in _PREFIX or (kind in _SIGNS and previous not in _OPERAND_ENDS):
            run += 1
        elif kind in _OPENERS:
            stack.append(1 + run)
            depth += 1 + run
            run = 0
        elif kind in _CLOSERS:
            depth -= stack.pop() if stack else 0
            run = 0
        else:
            run = 0
        deepest = max(deepest, depth + run)
        previous = kind
    return deepest


# chains of these binary operators are written by sqlglot's generator in a loop, not by recursion (checked
# for sqlglot's DuckDB dialect: a % b % c, a.b.c and others recurse, so they count every level)
_FLAT_CHAINS: tuple[type[exp.Expression], ...] = (
    exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.DPipe, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT,
    exp.LTE, exp.BitwiseAnd, exp.BitwiseOr, exp.Like, exp.ILike,
)  # fmt: skip


def _tree_depth(root: exp.Expression, limit: int) -> int:
    """The depth of ``root``'s tree in nodes, counted without recursion, where a chain of AND/OR or of one
    of the operators above (``a + b + c``) counts as one level; stops counting past ``limit``."""
    stack: list[tuple[exp.Expression, int]] = [(root, 1)]
    deepest = 0
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        for child in node.iter_expressions():
            chained = (isinstance(node, exp.Connector) and isinstance(child, exp.Connector)) or (
                type(child) is type(node) and isinstance(node, _FLAT_CHAINS)
            )
            stack.append((child, depth if chained else depth + 1))
    return deepest


def check_depth(select: exp.Expression) -> None:
    """Refuse a parsed query whose tree, or whose SQL as privdb writes it back, is nested too deeply."""
    if _tree_depth(select, MAX_TREE_DEPTH) > MAX_TREE_DEPTH:
        raise too_deep()
    written = select.sql(dialect=DIALECT, comments=False)
    if nesting(sqlglot.Dialect.get_or_raise(DIALECT).tokenize(written)) > MAX_DEPTH:
        raise too_deep()


def check_text(text: str) -> None:
    """Refuse a query over the length limit, or one that is not Unicode text (a lone surrogate, e.g. from a
    JSON ``"\\ud800"`` escape, which no engine or store can encode): free ``parse_error``s."""
    if len(text) > MAX_QUERY_LENGTH:
        raise ParseError(
            f"the query is {len(text):,} characters long, more than the limit of {MAX_QUERY_LENGTH:,}; "
            "shorten it (e.g. x IN (…) instead of many ORs, or split the question)"
        )
    if (at := lone_surrogate(text)) is not None:
        raise ParseError(
            f"the query is not Unicode text: character {at + 1} is half of a surrogate pair (U+"
            f"{ord(text[at]):04X}), which no engine can read; send the query as valid UTF-8 (a JSON "
            "\\uXXXX escape of U+D800 … U+DFFF must be one of a pair)"
        )
