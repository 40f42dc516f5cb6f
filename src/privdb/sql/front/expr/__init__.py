"""privdb's closed, typed expression language for WHERE, GROUP BY keys and aggregate arguments.

An analyst's expression is checked against an allow-list of operators and functions (check.py, with its
families of rules in check_*.py), each total on its whole domain — it never raises, for any value including
NULL, NaN, ±inf and any text — and with a per-row cost bounded by public constants (text is cut to the
column's ``max_length`` before any function; no function's output size is controlled by the data). The
checked tree (types.py) has four scalar types and nothing else, so keys and arguments are scalars by
construction. Rendering (render.py) produces the engine's SQL in forms proven total in docs/proofs/sql.md
("Outcomes"); only the forms marked ``portable`` are sent to engines other than DuckDB. Anything else is
refused before the data is read, for free.
"""

from privdb.sql.front.expr.bounds import Bounded, bound
from privdb.sql.front.expr.check import check
from privdb.sql.front.expr.check_core import ALLOWED
from privdb.sql.front.expr.render import render
from privdb.sql.front.expr.types import DEFAULT_MAX_LENGTH, MAX_NODES, Expr, Type, column_type

__all__ = [
    "ALLOWED",
    "DEFAULT_MAX_LENGTH",
    "MAX_NODES",
    "Bounded",
    "Expr",
    "Type",
    "bound",
    "check",
    "column_type",
    "render",
]
