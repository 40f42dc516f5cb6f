"""The checker's rules for dates: EXTRACT, DATE_PART and its shorthands, DATE_TRUNC and STRPTIME.

A date part or a truncation unit is a literal from a fixed list; STRPTIME's format is a literal that
DuckDB accepts (asked of a scratch DuckDB that holds no data), read by ``try_strptime`` when rendered.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from privdb.sql.front.expr.check_core import CheckerCore, duckdb_accepts
from privdb.sql.front.expr.types import Expr, Type

__all__ = ["DATE_FUNCTIONS", "DateRules"]

_DATE_PARTS = {
    "year", "month", "day", "hour", "minute", "second", "quarter", "week", "dow", "dayofweek", "doy",
    "dayofyear", "decade", "century", "isodow", "isoyear", "epoch",
}  # fmt: skip
_TRUNC_PARTS = {"year", "quarter", "month", "week", "day", "hour", "minute", "second", "decade", "century"}
DATE_FUNCTIONS: dict[type[Any], str] = {
    exp.Year: "year", exp.Month: "month", exp.Day: "day", exp.Hour: "hour", exp.Minute: "minute",
    exp.Second: "second", exp.Quarter: "quarter", exp.Week: "week", exp.DayOfWeek: "dow",
    exp.DayOfYear: "doy",
}  # fmt: skip


class DateRules(CheckerCore):
    """Parts of dates, their truncation, and text read as a date."""

    def part(self, node: Any, part: str, allowed: set[str]) -> str:
        part = part.lower().strip("'\"")
        part = {"dayofweek": "dow", "dayofyear": "doy"}.get(part, part)
        if part not in allowed:
            raise self.refuse(node, f"uses the part {part!r}; parts: {', '.join(sorted(allowed))}")
        return part

    def date_part(self, node: Any, part: str, x: exp.Expression) -> Expr:
        part = self.part(node, part, _DATE_PARTS)
        return self.make("date_part", Type.NUM, (self.typed(x, Type.DATE),), node, value=part, double=False)

    def date_function(self, node: Any) -> Expr:
        return self.date_part(node, DATE_FUNCTIONS[type(node)], node.this)

    def extract(self, node: exp.Extract) -> Expr:
        return self.date_part(node, node.this.name, node.expression)

    def date_trunc(self, node: exp.TimestampTrunc | exp.DateTrunc) -> Expr:
        unit = node.args.get("unit")
        part = self.part(node, unit.name if unit is not None else "", _TRUNC_PARTS)
        return self.make("date_trunc", Type.DATE, (self.typed(node.this, Type.DATE),), node, value=part)

    def strptime(self, node: exp.StrToTime) -> Expr:
        fmt = self.literal_text(node.args.get("format"), "the date format")
        duckdb_accepts("SELECT try_strptime('', ?)", fmt, self.where, "date format")
        x = self.typed(node.this, Type.TEXT)
        return self.make("strptime", Type.DATE, (x, Expr("literal", Type.TEXT, value=fmt)), node)

    def named_date(self, node: exp.Anonymous, name: str, args: list[exp.Expression]) -> Expr | None:
        """DATE_PART(part, x) and DATE_TRUNC(part, x) in their function spelling; else None."""
        if name == "DATE_PART" and len(args) == 2:
            return self.date_part(node, self.literal_text(args[0], "the date part"), args[1])
        if name == "DATE_TRUNC" and len(args) == 2:
            part = self.part(node, self.literal_text(args[0], "the date part"), _TRUNC_PARTS)
            return self.make("date_trunc", Type.DATE, (self.typed(args[1], Type.DATE),), node, value=part)
        return None
