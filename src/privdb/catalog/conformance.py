"""How well a table's data fits its declared metadata, for the owner at load or attach time.

A domain that does not match the data (``sex: [M, F]`` on 0/1 values) makes every count of that column noise
around zero; a bound far below the data (incomes clipped at 100,000) biases every sum. Neither is an error —
the metadata is the owner's public statement and privdb honours it — but the owner should hear about it before
analysts do. The checks read the data (one aggregate query), so they are shown to the owner only, never to an
analyst: their figures are exact, not private.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from privdb.catalog.metadata import ColumnMeta, TableMeta

__all__ = ["Finding", "check_conformance", "conformance_sql"]

_EXAMPLES = 5  # values outside a domain shown per column


@dataclass(frozen=True)
class Finding:
    """One column whose data strays from its metadata: ``share`` of its non-NULL values are outside."""

    column: str
    kind: str  # "outside_domain", "below_lower", "above_upper"
    count: int
    share: float
    examples: tuple[Any, ...] = ()

    def message(self) -> str:
        what = {
            "outside_domain": "outside the declared domain (no GROUP BY group counts them)",
            "below_lower": "below the declared lower bound (clipped up to it)",
            "above_upper": "above the declared upper bound (clipped down to it)",
        }[self.kind]
        what = ("value " if self.count == 1 else "values ") + what
        shown = f", e.g. {', '.join(map(repr, self.examples))}" if self.examples else ""
        return f"column {self.column!r}: {self.count:,} {what}: {self.share:.1%}{shown}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "kind": self.kind,
            "count": self.count,
            "share": self.share,
            "examples": list(self.examples),
        }


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _outside(col: ColumnMeta) -> str:
    """The predicate "a non-NULL value outside the declared domain" (text compares as stored text)."""
    c = _quote(col.name)
    if col.type in ("category", "text"):
        domain = ", ".join(_literal(str(v)) for v in col.values or ())
        return f"{c} IS NOT NULL AND CAST({c} AS VARCHAR) NOT IN ({domain})"
    return f"{c} IS NOT NULL AND {c} NOT IN ({', '.join(_literal(v) for v in col.values or ())})"


def conformance_sql(relation: str, meta: TableMeta) -> tuple[str, list[tuple[str, str]]] | None:
    """One aggregate over ``relation`` counting, per checked column, the non-NULL values and those outside
    its domain or bounds; and the (column, kind) each output pair belongs to. None when nothing is
    declared."""
    parts: list[str] = []
    labels: list[tuple[str, str]] = []
    for col in meta.columns.values():
        c = _quote(col.name)
        if col.values is not None:
            parts += [f"COUNT({c})", f"COUNT(*) FILTER (WHERE {_outside(col)})"]
            labels.append((col.name, "outside_domain"))
        if col.bounded and col.type in ("int", "float"):
            parts += [
                f"COUNT({c})",
                f"COUNT(*) FILTER (WHERE {c} < {col.lower!r})",
                f"COUNT({c})",
                f"COUNT(*) FILTER (WHERE {c} > {col.upper!r})",
            ]
            labels += [(col.name, "below_lower"), (col.name, "above_upper")]
    if not parts:
        return None
    # every column named (c0, c1, …): engines name them all `count`, and a frame with repeated names
    # gives a frame, not a column, for each name (PostgreSQL's Decimal conversion failed on it)
    named = ", ".join(f"{part} AS c{i}" for i, part in enumerate(parts))
    return f"SELECT {named} FROM {relation}", labels


def check_conformance(run: Any, relation: str, meta: TableMeta) -> list[Finding]:
    """The findings for ``relation`` (a quoted table name) under ``meta``; ``run(sql)`` returns a DataFrame
    (the owner's engine). Columns whose values all fit are left out."""
    built = conformance_sql(relation, meta)
    if built is None:
        return []
    sql, labels = built
    row = run(sql).iloc[0].tolist()
    findings = []
    for i, (column, kind) in enumerate(labels):
        total, outside = int(row[2 * i]), int(row[2 * i + 1])
        if outside == 0:
            continue
        examples: tuple[Any, ...] = ()
        if kind == "outside_domain":
            frame = run(
                f"SELECT {_quote(column)} AS v, COUNT(*) AS n FROM {relation} WHERE "
                f"{_outside(meta.columns[column])} GROUP BY 1 ORDER BY n DESC, 1 LIMIT {_EXAMPLES}"
            )
            examples = tuple(v.item() if hasattr(v, "item") else v for v in frame["v"])
        findings.append(Finding(column, kind, outside, outside / total if total else 0.0, examples))
    return findings
