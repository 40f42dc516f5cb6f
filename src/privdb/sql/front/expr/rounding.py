"""``ROUND(x, d)`` as DuckDB (2.0.1 on) computes it on DOUBLE: the exact binary value of x rounded half away
from zero at 10^−d, then the nearest double. One definition for privdb's bounds
(privdb.sql.front.expr.bounds) and
its evaluation of expressions over public values (privdb.sql.front.formulas.vectors), so both agree with the
engine."""

from __future__ import annotations

import decimal
import math

__all__ = ["round_half_away"]

_CONTEXT = decimal.Context(prec=800)  # every double's exact decimal expansion fits (≤ 767 significant digits)


def round_half_away(x: float, digits: int) -> float:
    """``x`` rounded half away from zero at ``10^-digits``, exactly (non-finite values as they are)."""
    if not math.isfinite(x):
        return x
    step = decimal.Decimal(1).scaleb(-digits)
    rounded = decimal.Decimal(x).quantize(step, rounding=decimal.ROUND_HALF_UP, context=_CONTEXT)
    return float(rounded) if rounded else math.copysign(0.0, x)
