"""A DP answer: rows, what it cost, what is left, and per column how accurate it is (DESIGN.md's JSON)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from privdb import result_arrow, result_html
from privdb.errors import InvalidParameter

if TYPE_CHECKING:  # NumPy, pandas and Arrow where a frame or a table is made: an answer's text needs none
    import pandas as pd
    import pyarrow as pa  # type: ignore[import-untyped]  # no stubs or py.typed marker

__all__ = ["Result"]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) >= 1000 else f"{value:.4g}"
    return str(value)


def _with_interval(value: Any, interval: list[Any] | None) -> str:
    """A value and its 95% interval as text: ``v ± h`` when the interval is symmetric about ``v``."""
    if interval is None or value is None or interval[0] is None or interval[1] is None:
        return _fmt(value)
    low, high = float(interval[0]), float(interval[1])
    half = (high - low) / 2
    if math.isclose(low + half, float(value), rel_tol=1e-9, abs_tol=1e-9 * max(half, 1.0)):
        return f"{_fmt(value)} ± {_fmt(half)}"
    return f"{_fmt(value)} [{_fmt(low)}, {_fmt(high)}]"


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
        import numpy as np
        import pandas as pd

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

    def _intervals(self) -> dict[str, list[Any]]:
        """Per answer column with per-row intervals, its ``[low, high]`` (or None) for every row."""
        return {
            a["column"]: list(a["ci95_rows"])
            for a in self.accuracy
            if a.get("ci95_rows") is not None and a.get("column") in self.columns
        }

    def to_pandas(self, intervals: bool = True) -> pd.DataFrame:
        """The answer as a frame; with ``intervals`` each column that has 95% intervals is followed by
        ``<col>_ci95_low`` and ``<col>_ci95_high`` (NaN where no interval follows), so the accuracy paid
        for travels with the values. ``intervals=False``: the bare answer."""
        import numpy as np
        import pandas as pd

        frame = pd.DataFrame(self.rows, columns=self.columns)
        if not intervals:
            return frame
        for col, rows in self._intervals().items():
            at = frame.columns.get_loc(col)
            assert isinstance(at, int)
            for offset, side in enumerate(("low", "high")):
                # a whole count's ends are whole numbers: kept as integers, as the web page's CSV has them
                ends = [np.nan if r is None or r[offset] is None else r[offset] for r in rows]
                frame.insert(at + 1 + offset, f"{col}_ci95_{side}", ends[: len(frame)])
        return frame

    def accuracy_frame(self) -> pd.DataFrame:
        """The accuracy as a tidy frame: one line per answer row and column with intervals (``row`` its
        index), one line (``row`` missing) per column whose accuracy is not per row (a MODE, a record
        release's randomised column)."""
        import numpy as np
        import pandas as pd

        lines: list[dict[str, Any]] = []
        for entry in self.accuracy:
            base = {
                "column": entry.get("column"),
                "mechanism": entry.get("mechanism"),
                "epsilon": entry.get("epsilon", np.nan),
                "scale": entry.get("scale", np.nan),
            }
            rows = entry.get("ci95_rows")
            if rows is None:
                lines.append({"row": pd.NA, **base, "ci95_low": np.nan, "ci95_high": np.nan})
                continue
            for r, interval in enumerate(rows):
                low, high = (np.nan, np.nan) if interval is None else interval
                lines.append({"row": r, **base, "ci95_low": low, "ci95_high": high})
        columns = ["row", "column", "mechanism", "epsilon", "scale", "ci95_low", "ci95_high"]
        frame = pd.DataFrame(lines, columns=columns)
        return frame.astype({"row": "Int64", "epsilon": "float64", "scale": "float64",
                             "ci95_low": "float64", "ci95_high": "float64"})  # fmt: skip

    def to_arrow(self, intervals: bool = True) -> pa.Table:
        """The answer as an Arrow table (the columns of ``to_pandas``), with the privacy facts in the
        schema metadata: ``privdb.epsilon_spent``, ``privdb.delta_spent``, ``privdb.budget``,
        ``privdb.accuracy`` (JSON) and what :meth:`from_arrow` needs to rebuild the answer whole
        (privdb.result_arrow says each key)."""
        return result_arrow.to_table(self.to_dict(), intervals)

    @classmethod
    def from_arrow(cls, table: pa.Table) -> Result:
        """The answer :meth:`to_arrow` wrote (or the server sent as an Arrow stream), whole: values,
        intervals, cost, budget and the other facts."""
        return cls.from_dict(result_arrow.from_table(table))

    def to_polars(self, intervals: bool = True) -> Any:
        """The answer as a polars DataFrame, the columns of ``to_pandas`` (polars is an optional extra:
        ``pip install 'privdb[polars]'``). The privacy facts stay on the Result (and in ``to_arrow``)."""
        try:  # optional dependency, loaded on first use
            import polars as pl
        except ImportError:
            raise InvalidParameter(
                "to_polars needs polars: pip install 'privdb[polars]' (or use to_pandas or to_arrow)"
            ) from None
        return pl.from_arrow(self.to_arrow(intervals))

    def to_csv(self, intervals: bool = True) -> str:
        """CSV of ``to_pandas(intervals)``: the interval columns included by default."""
        return str(self.to_pandas(intervals).to_csv(index=False))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        intervals = {a["column"]: a["ci95_rows"] for a in self.accuracy if a.get("ci95_rows") is not None}
        shown = self.rows[:_SHOW_ROWS]
        more = len(self.rows) - len(shown)
        table = Table()
        first = self.extra.get("accuracy_first")
        caption = (
            f"ε spent {self.epsilon_spent:g}, δ spent {self.delta_spent:g}"
            + (" (stored answer, no cost)" if self.cached else "")
            + (
                f" (accuracy first: step {first['steps_taken']} of {len(first['schedule'])}, ex post; "
                + ("accuracy met)" if self.extra.get("accuracy_met") else "accuracy NOT met even at MAX)")
                if isinstance(first, dict)
                else ""
            )
            + f" · left ε {self.budget.get('epsilon_remaining', 0):g}, "
            f"δ {self.budget.get('delta_remaining', 0):g}"
            + (f" · {more:,} more rows not shown (use --format csv or json)" if more > 0 else "")
        )
        # names and values as Text: printed as they are on any console, never read as Rich markup
        for col in self.columns:
            table.add_column(Text(col))
            if col in intervals:
                table.add_column(Text(f"{col} 95% interval"), style="dim")
        noise_only = set(self.extra.get("noise_only_rows") or ())
        for r, row in enumerate(shown):
            cells = []
            for c, (col, value) in enumerate(zip(self.columns, row, strict=True)):
                cells.append(Text(_fmt(value) + (" *" if c == 0 and r in noise_only else "")))
                if col in intervals:
                    lo, hi = intervals[col][r] if r < len(intervals[col]) else (None, None)
                    cells.append(Text("" if lo is None else f"[{_fmt(lo)}, {_fmt(hi)}]"))
            table.add_row(*cells)
        yield table
        yield Text(caption, style="dim")
        cut = self.extra.get("truncation")
        if isinstance(cut, dict) and cut.get("note"):  # what contribution bounding dropped (noisy)
            yield Text(f"note: {cut['note']}", style="yellow")
        if noise_only:
            yield Text("*: noise only: the WHERE excludes this key, so no row is in it", style="yellow")
        outside = self.extra.get("outside_domain")
        if isinstance(outside, dict) and outside.get("note"):
            yield Text(f"note: {outside['note']}", style="dim")

    def _repr_html_(self) -> str:
        """The notebook's view: each value with its 95% interval ("1,203 ± 7", or "12 [10, 15]" when the
        interval is not symmetric about it), what the answer cost, and a small chart of the numeric
        statistics' intervals (privdb.result_html); every text escaped."""
        import pandas as pd

        intervals = self._intervals()
        shown = pd.DataFrame(self.rows[:_SHOW_ROWS], columns=self.columns).astype(object)
        for col, rows in intervals.items():
            shown[col] = [
                _with_interval(v, rows[r] if r < len(rows) else None) for r, v in enumerate(shown[col])
            ]
        more = len(self.rows) - len(shown)
        chart = result_html.error_bars_svg(self.columns, self.rows, intervals)
        caption = (
            f"ε spent {self.epsilon_spent:g}, δ spent {self.delta_spent:g}"
            + (" (stored answer, no cost)" if self.cached else "")
            + f"; ε left {self.budget.get('epsilon_remaining', 0):g}"
            + ("; ± is the 95% interval's half-width" if intervals else "")
            + (f"; {more:,} more rows not shown" if more > 0 else "")
            + (
                f"; chart: value (dot) and 95% interval (bar), first {result_html.CHART_ROWS} rows"
                if chart is not None and len(self.rows) > result_html.CHART_ROWS
                else ""
            )
        )
        return result_html.page(str(shown.to_html(index=False, escape=True)), caption, chart)

    def __repr__(self) -> str:
        return f"Result(columns={self.columns}, rows={len(self.rows)}, epsilon_spent={self.epsilon_spent:g})"
