"""Renewal windows for shared budgets: a table's or a group's budget that refills every period.

**What a refill means for the guarantee.** A budget of ε that refills every period P bounds the privacy loss
of the answers *within one window* by ε; over k windows a person who stays in the table loses up to k·ε
(sequential composition), without limit as time goes on. A renewing budget is therefore a rate (ε per P), not
a lifetime guarantee: use it only where the data changes over time (people leave, new people arrive) or
where the owner has decided that a yearly ε is acceptable. docs/proofs/ledger.md, "Renewal windows", states
it; `privdb budgets --renew` prints it when such a budget is set.

Windows are aligned to when the budget was set: window k is [start + k·P, start + (k+1)·P). A spend belongs to
the window its reservation was made in; a reservation released in a later window returns nothing (its window
is over), and one reserved in the current window returns what it drew.
"""

from __future__ import annotations

import math
import re
from typing import Any

from privdb.errors import InvalidParameter

__all__ = ["RENEWAL_WARNING", "describe_period", "parse_period", "shared_figures", "window_start"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_PERIOD = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)

RENEWAL_WARNING = (
    "a renewing budget bounds each period's answers only: over k periods a person in the table can lose "
    "k times the budget (docs/proofs/ledger.md, 'Renewal windows')"
)


def parse_period(value: str | float | int | None) -> float | None:
    """A renewal period in seconds from ``30d``, ``12h``, ``90m``, ``1w``, ``45s`` or a number of seconds;
    None, '' or 'never' for a budget that never renews."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "never", "none")):
        return None
    if isinstance(value, bool):
        raise InvalidParameter("renew: write a period such as 30d, 12h or 1w (or never)")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        found = _PERIOD.match(value)
        if not found:
            raise InvalidParameter(
                f"renew {value!r} is not a period: write e.g. 30d, 12h, 90m or 1w (or never)"
            )
        seconds = float(found[1]) * _UNITS[found[2].lower()]
    if not (math.isfinite(seconds) and seconds >= 1):
        raise InvalidParameter(f"renew must be a period of at least 1 second, got {value!r}")
    return seconds


def describe_period(seconds: float | None) -> str:
    """``30d`` for 2,592,000 seconds: the largest unit that divides it, for listings."""
    if seconds is None:
        return "never"
    for unit in ("w", "d", "h", "m"):
        size = _UNITS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def window_start(start: float, period: float, now: float) -> float:
    """The start of the window holding ``now`` for windows of ``period`` from ``start``."""
    if now <= start:
        return start
    return start + math.floor((now - start) / period) * period


def shared_figures(figures: dict[str, Any], renewal: tuple[float, float] | None = None) -> dict[str, Any]:
    """A shared budget's figures (``figures``: its ``Budget.to_dict()``; its name is the table's or
    group's, not an analyst's); a renewing one's
    period, the start of its current window (what is drawn counts from then) and its next refill."""
    out = {k: v for k, v in figures.items() if k not in ("analyst", "database")}
    if renewal is None:
        return out | {"renew": None}
    period, start = renewal
    return out | {"renew": describe_period(period), "renew_seconds": period, "window_start": start,
                  "refills_at": start + period, "warning": RENEWAL_WARNING}  # fmt: skip
