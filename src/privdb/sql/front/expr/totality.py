"""Sums the engine computes must be finite on every database the metadata allows.

Interval arithmetic (bounds.py) bounds each row's value; the engine then adds the rows up. A per-row bound
of ``1e308`` is finite, but two such rows sum to ``inf`` in DOUBLE, and the query would fail (or its noise
step would) exactly when both rows exist: a failure after reading that depends on the data (issue 25). So a
bound is accepted for a sum only if the sum of the largest number of rows any engine can aggregate stays
finite:

- ``MAX_ROWS = 2**63``: DuckDB, PostgreSQL, SQLite and Spark count rows in 64-bit integers (``COUNT(*)``
  itself has no value past it), so no relation an engine aggregates holds more rows. This is the public
  constant of the argument; it holds whatever the data.
- A DOUBLE sum of ``n`` values of magnitude at most ``B`` is at most ``2·n·B`` in magnitude, in any order
  of additions and any tree of partial sums: rounding to nearest moves ``s + x`` to the float nearest it,
  which is no farther from ``s`` than ``2|x|`` (``s`` itself is a float), and combining partial sums
  rounds each result by a factor of at most ``1 + 2⁻⁵³``. So ``B ≤ MAX_SUMMAND = DBL_MAX / 2⁶⁶`` (one more
  factor 2 of margin) keeps every sum finite: about ``2.4e288``. Sums of squares and of products need the
  square or product within it: a column bounded by about ``1.5e144`` in magnitude for VARIANCE or CORR.

Counts need nothing: they are integers below ``MAX_ROWS``. The check runs while planning, before the data
is read, and its refusal names the bound and the fix.
"""

from __future__ import annotations

import math
import sys

from privdb.errors import UnsupportedQuery

__all__ = ["MAX_ROWS", "MAX_SUMMAND", "check_summable"]

MAX_ROWS = 2**63
MAX_SUMMAND = sys.float_info.max / 2.0**66


def check_summable(magnitude: float, what: str, squared: bool = False) -> None:
    """Refuse (before reading) a sum whose per-row values can reach ``magnitude``, if ``MAX_ROWS`` of them
    could overflow DOUBLE. ``what`` names the summed quantity in the message; ``squared``: it is a square or
    a product of two bounded values (the message then states the bound on each factor)."""
    if math.isfinite(magnitude) and abs(magnitude) <= MAX_SUMMAND:
        return
    limit = f"{math.sqrt(MAX_SUMMAND):.3g}" if squared else f"{MAX_SUMMAND:.3g}"
    value = "its values' squares or products" if squared else "its values"
    raise UnsupportedQuery(
        f"{what}: {value} can reach {magnitude:.3g} in magnitude, and a sum of up to 2^63 rows (the most any "
        f"engine counts) of such values would overflow a DOUBLE; narrow the bounds to at most {limit} in "
        "magnitude (the column's lower and upper in the metadata, or the literals of the expression)"
    )
