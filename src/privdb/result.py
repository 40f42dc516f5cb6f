"""A DP answer: rows, what it cost, what is left, and per column how accurate it is (DESIGN.md's JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from privdb.errors import InvalidParameter

__all__ = ["Result"]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) >= 1000 else f"{value:.4g}"
    return str(value)


_SHOW_ROWS = 100  # a terminal table of a record release shows this many rows
_FIELDS = {"columns", "rows", "epsilon_spent", "delta_spent", "budget", "accuracy", "cached"}


@dataclass
class Result:
    """Rows of a DP-SELECT with their cost and accuracy."""

    columns: list[str]
    rows: list[list[Any]]
    epsilon_spent: float
    delta_spent: float
    budget: dict[str, float]
    accuracy: list[dict[str, Any]]
    cached: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "columns": self.columns,
            "rows": self.rows,
            "epsilon_spent": self.epsilon_spent,
            "delta_spent": self.delta_spent,
            "budget": self.budget,
            "accuracy": self.accuracy,
        }
        if self.cached:
            out["cached"] = True
        return out | self.extra

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        return cls(
            columns=list(data["columns"]),
            rows=[list(r) for r in data["rows"]],
            epsilon_spent=float(data["epsilon_spent"]),
            delta_spent=float(data["delta_spent"]),
            budget=dict(data["budget"]),
            accuracy=list(data["accuracy"]),
            cached=bool(data.get("cached", False)),
            extra={k: v for k, v in data.items() if k not in _FIELDS},
        )

    def estimate_frequencies(self, column: str) -> pd.DataFrame:
        """Unbiased estimates of how many of the released records hold each value of a column released by
        randomised response (record release), with standard errors and 95% intervals (post-processing:
        free). The released records are a uniform sample of the records read, or all of them and dummies
        uniform over the domain (the '(records)' accuracy entry), so use the frequencies, or that entry's
        ``records`` as the total. Use it on a release without a WHERE on this column: selecting on
        randomised values biases it."""
        info = next((a for a in self.accuracy if a.get("column") == column), None)
        if info is None or info.get("mechanism") != "randomized_response":
            released = [a["column"] for a in self.accuracy if a.get("mechanism") == "randomized_response"]
            raise InvalidParameter(
                f"column {column!r} was not released by randomised response; columns that were: {released}"
            )
        domain = list(info["domain"])
        at = self.columns.index(column)
        codes = pd.Categorical([row[at] for row in self.rows], categories=domain).codes
        n = len(codes)
        counts = np.bincount(codes[codes >= 0], minlength=len(domain)).astype(np.float64)
        if "p_keep" not in info:  # a one-value domain: nothing was randomised
            p, q = 1.0, 0.0
        else:
            p, q = float(info["p_keep"]), float(info["p_other"])
        estimate = (counts - n * q) / (p - q)
        share = counts / n if n else counts
        se = np.sqrt(n * share * (1 - share)) / (p - q)
        return pd.DataFrame(
            {
                "value": domain,
                "count": estimate,
                "frequency": estimate / n if n else estimate,
                "std_error": se,
                "ci95_low": estimate - 1.96 * se,
                "ci95_high": estimate + 1.96 * se,
            }
        )

    def to_pandas(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=self.columns)

    def to_csv(self) -> str:
        return str(self.to_pandas().to_csv(index=False))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        intervals = {a["column"]: a["ci95_rows"] for a in self.accuracy if a.get("ci95_rows") is not None}
        shown = self.rows[:_SHOW_ROWS]
        more = len(self.rows) - len(shown)
        table = Table()
        caption = (
            f"ε spent {self.epsilon_spent:g}, δ spent {self.delta_spent:g}"
            + (" (stored answer, no cost)" if self.cached else "")
            + f" · left ε {self.budget.get('epsilon_remaining', 0):g}, "
            f"δ {self.budget.get('delta_remaining', 0):g}"
            + (f" · {more:,} more rows not shown (use --format csv or json)" if more > 0 else "")
        )
        for col in self.columns:
            table.add_column(col)
            if col in intervals:
                table.add_column(f"{col} 95% interval", style="dim")
        for r, row in enumerate(shown):
            cells = []
            for col, value in zip(self.columns, row, strict=True):
                cells.append(_fmt(value))
                if col in intervals:
                    lo, hi = intervals[col][r] if r < len(intervals[col]) else (None, None)
                    cells.append("" if lo is None else f"[{_fmt(lo)}, {_fmt(hi)}]")
            table.add_row(*cells)
        yield table
        yield Text(caption, style="dim")

    def _repr_html_(self) -> str:
        return str(self.to_pandas().to_html(index=False)) + (
            f"<p>ε spent {self.epsilon_spent:g}; ε left {self.budget.get('epsilon_remaining', 0):g}</p>"
        )

    def __repr__(self) -> str:
        return f"Result(columns={self.columns}, rows={len(self.rows)}, epsilon_spent={self.epsilon_spent:g})"
