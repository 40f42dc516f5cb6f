"""What bench.quantiles measures: the order statistics M1, M2 and Q90 of the census table, in each form
(raw, DP-SELECT, SmartNoise's spellings), and the targets. Standard library only (the worker reads it)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.harness.data import SETTINGS

__all__ = ["EXTREMES", "SETTINGS", "STATS", "Stat"]

TABLE = "people"
SUBSET_TABLE = "people_subset"
QUICK_ROWS = 200_000
QUICK_REPS = 50
OPENDP_DIRECT_ROWS = 1_000_000  # above this, OpenDP's scores are computed once per statistic
TARGET_TIME = 3.0  # privdb ÷ raw DuckDB


@dataclass(frozen=True)
class Stat:
    key: str
    column: str
    q: float

    @property
    def label(self) -> str:
        return f"MEDIAN({self.column})" if self.q == 0.5 else f"QUANTILE({self.column}, {self.q:g})"

    def raw(self, table: str = TABLE) -> str:
        agg = f"median({self.column})" if self.q == 0.5 else f"quantile_cont({self.column}, {self.q!r})"
        return f"SELECT {agg} FROM {table}"

    def dp(self, epsilon: float, table: str = TABLE) -> str:
        return f"DP-SELECT {epsilon!r} {self.label} FROM {table}"

    def smartnoise_forms(self) -> list[str]:
        """Every spelling of this statistic that SmartNoise SQL's grammar might accept."""
        c, q = self.column, self.q
        forms = [f"MEDIAN({c})"] if q == 0.5 else []
        forms += [
            f"QUANTILE({c}, {q:g})",
            f"PERCENTILE_CONT({q:g}) WITHIN GROUP (ORDER BY {c})",
            f"PERCENTILE_DISC({q:g}) WITHIN GROUP (ORDER BY {c})",
            f"PERCENTILE_CONT({c})",
        ]
        return [f"SELECT {f} FROM main.{TABLE}" for f in forms]


STATS = [Stat("M1", "age", 0.5), Stat("M2", "income", 0.5), Stat("Q90", "income", 0.9)]
EXTREMES = ["SELECT MIN(age) FROM main.people", "SELECT MAX(income) FROM main.people"]
