"""A DP answer: rows, what it cost, what is left, and per column how accurate it is (DESIGN.md's JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table

__all__ = ["Result"]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) >= 1000 else f"{value:.4g}"
    return str(value)


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
        return out

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
        )

    def to_pandas(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=self.columns)

    def to_csv(self) -> str:
        return str(self.to_pandas().to_csv(index=False))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        intervals = {a["column"]: a.get("ci95_rows") or [] for a in self.accuracy}
        table = Table(
            caption=(
                f"ε spent {self.epsilon_spent:g}, δ spent {self.delta_spent:g}"
                + (" (stored answer, no cost)" if self.cached else "")
                + f" · left ε {self.budget.get('epsilon_remaining', 0):g}, "
                f"δ {self.budget.get('delta_remaining', 0):g}"
            )
        )
        for col in self.columns:
            table.add_column(col)
            if col in intervals:
                table.add_column(f"{col} 95% interval", style="dim")
        for r, row in enumerate(self.rows):
            cells = []
            for col, value in zip(self.columns, row, strict=True):
                cells.append(_fmt(value))
                if col in intervals:
                    lo, hi = intervals[col][r] if r < len(intervals[col]) else (None, None)
                    cells.append("" if lo is None else f"[{_fmt(lo)}, {_fmt(hi)}]")
            table.add_row(*cells)
        yield table

    def _repr_html_(self) -> str:
        return str(self.to_pandas().to_html(index=False)) + (
            f"<p>ε spent {self.epsilon_spent:g}; ε left {self.budget.get('epsilon_remaining', 0):g}</p>"
        )

    def __repr__(self) -> str:
        return f"Result(columns={self.columns}, rows={len(self.rows)}, epsilon_spent={self.epsilon_spent:g})"
