"""What ``max_contributions`` leaves out of a table, for its owner.

With a privacy unit, every answer keeps at most ``max_contributions`` rows of each unit (sampled) before
aggregating. A skeleton that keeps one row of people who have four silently drops three rows in four: the
analyst sees a COUNT a quarter of the truth and cannot know why. So a load tells the owner how many rows the
bound leaves out of every answer, and of how many units. Read from the data: the owner's own check, never
shown to analysts (it is in the load's answer, not in the metadata).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from privdb.catalog.metadata import TableMeta

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Contributions", "contributions"]


@dataclass(frozen=True)
class Contributions:
    """The bound and what it leaves out: rows beyond ``max_contributions`` per unit, of all rows."""

    unit: str
    max_contributions: int
    units: int
    rows: int
    units_over: int
    rows_dropped: int

    @property
    def share_dropped(self) -> float:
        return self.rows_dropped / self.rows if self.rows else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "privacy_unit": self.unit,
            "max_contributions": self.max_contributions,
            "units": self.units,
            "units_over": self.units_over,
            "rows_dropped": self.rows_dropped,
            "share_dropped": self.share_dropped,
        }

    def message(self, table: str) -> str | None:
        """The owner's warning when the bound drops rows (None when it drops none)."""
        if not self.rows_dropped:
            return None
        k = self.max_contributions
        return (
            f"max_contributions: {k} keeps at most {k} row{'s' if k > 1 else ''} per {self.unit}, so "
            f"{self.rows_dropped:,} of the {self.rows:,} rows ({self.share_dropped:.1%}) are left out of "
            f"every answer ({self.units_over:,} of the {self.units:,} units have more); if they should "
            f"count, raise max_contributions in the metadata (`privdb tune --db DIR {table}` suggests one "
            "with DP) and load again"
        )


def contributions(
    run: Callable[[str], pd.DataFrame], table_sql: str, meta: TableMeta
) -> Contributions | None:
    """The bound's effect on the table (``table_sql``, quoted for DuckDB's dialect; ``run`` executes DuckDB
    SQL on the engine holding it), or None for a table without a privacy unit."""
    if meta.privacy_unit is None:
        return None
    unit = '"' + meta.privacy_unit.replace('"', '""') + '"'
    k = int(meta.max_contributions)
    frame = run(
        f"SELECT COUNT(*) AS units, SUM(n) AS total, SUM(CASE WHEN n > {k} THEN 1 ELSE 0 END) AS over_k, "
        f"SUM(CASE WHEN n > {k} THEN n - {k} ELSE 0 END) AS dropped "
        f"FROM (SELECT COUNT(*) AS n FROM {table_sql} GROUP BY {unit}) AS per_unit"
    )
    units, total, over, dropped = (_whole(frame[c].iloc[0]) for c in ("units", "total", "over_k", "dropped"))
    return Contributions(meta.privacy_unit, k, units, total, over, dropped)


def _whole(value: Any) -> int:
    import pandas as pd  # the value is a frame's (``run``'s result): pandas is loaded already

    return 0 if value is None or pd.isna(value) else int(value)
