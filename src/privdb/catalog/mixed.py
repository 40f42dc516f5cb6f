"""Columns of numbers with a few words among them, found for the owner.

DuckDB's sniffer reads a column as text when a line of its sample holds a word ("unknown", "n/a"), so a file
of incomes with one such line loads as a text column, and every AVG over it is refused. A column the metadata
does not type is looked at after reading: when at least half of its values are numbers and some are not, the
owner is told which column, how many values are not numbers and the first line holding one (never the value),
and how to fix it (declare the type, so that such lines are refused or skipped by number, or clean the file).
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb

from privdb.catalog.files import csv_kwargs, format_of
from privdb.catalog.reading import ReadOptions
from privdb.catalog.typed import NUMBER, engine_type

__all__ = ["MixedColumn", "mixed_columns"]

_PROBE_ERRORS, _PROBE_SCANS = "privdb_probe_errors", "privdb_probe_scans"  # temporary, on the reader


@dataclass(frozen=True)
class MixedColumn:
    """A text column of mostly numbers: how many values are numbers (``integers`` of them whole), how many
    are not, and the first line of the file holding one that is not (None: not a CSV)."""

    column: str
    numbers: int
    others: int
    integers: bool
    line: int | None
    low: float | None = None  # the numbers' least and greatest: data, for the skeleton's marked bounds
    high: float | None = None

    @property
    def kind(self) -> str:
        """The type the numbers would have."""
        return "int" if self.integers else "float"

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "numbers": self.numbers, "not_numbers": self.others, "line": self.line}

    def counted(self) -> str:
        """How many values are not numbers, and where the first is (never a value)."""
        where = f", the first on line {self.line}" if self.line is not None else ""
        one = self.others == 1
        return (
            f"{self.others:,} of its {self.numbers + self.others:,} values {'is' if one else 'are'} not "
            f"{'a number' if one else 'numbers'}{where}"
        )

    def message(self) -> str:
        """What the owner is told after a load (counts and a line number, never a value)."""
        return (
            f"column {self.column!r} holds numbers but {self.counted()}, so it is text: declare its type in "
            f"the metadata ({self.column}: {{type: {self.kind}}}) to have such lines refused by line number "
            "or left out with --skip-bad-lines, mark missing values with --null, clean the file, or declare "
            "type: text if it is a code"
        )


def mixed_columns(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    path: Path,
    options: ReadOptions,
    declared: Collection[str] = (),
) -> list[MixedColumn]:
    """The text columns of ``relation`` (a view over the file at ``path``, read with ``options``), but those
    in ``declared`` (lower-cased names the metadata types), whose values are mostly numbers. Reads the data
    once more, and the file once more for the line numbers when a CSV has such a column."""
    described = con.execute(f"DESCRIBE {relation}").fetchall()
    texts = [
        str(r[0]) for r in described if engine_type(str(r[1])) == "text" and str(r[0]).lower() not in declared
    ]
    if not texts:
        return []
    probes = []
    for name in texts:
        q = _quote(name)
        x = f"TRY_CAST({q} AS DOUBLE)"
        probes += [f"COUNT({q})", f"COUNT({x})", f"COUNT({x}) FILTER (WHERE {x} = TRUNC({x}))"]
        probes += [f"MIN({x})", f"MAX({x})"]
    # COUNT of the column itself in the same scan: DuckDB would otherwise push a lone TRY_CAST into the
    # CSV reader, which then sets the line aside as a bad one
    row = con.execute(f"SELECT {', '.join(probes)} FROM {relation}").fetchall()[0]
    found: dict[str, MixedColumn] = {}
    for i, name in enumerate(texts):
        present, numbers, whole = (int(v or 0) for v in row[5 * i : 5 * i + 3])
        if 0 < numbers < present and 2 * numbers >= present:
            low, high = row[5 * i + 3 : 5 * i + 5]
            found[name] = MixedColumn(name, numbers, present - numbers, whole == numbers, None, low, high)
    if not found:
        return []
    lines = _first_lines(con, path, options, list(found)) if format_of(path, options) == "csv" else {}
    return [replace(m, line=lines.get(name)) for name, m in found.items()]


def _first_lines(
    con: duckdb.DuckDBPyConnection, path: Path, options: ReadOptions, columns: list[str]
) -> dict[str, int]:
    """The first line of the CSV where each of ``columns`` holds a value that is not a number: the file read
    again with those columns as numbers, the reader's record of what it set aside kept apart."""
    kwargs = csv_kwargs(options) | {"rejects_table": _PROBE_ERRORS, "rejects_scan": _PROBE_SCANS}
    try:
        probe = con.read_csv(str(path), **kwargs, dtype=dict.fromkeys(columns, NUMBER))
        probe.aggregate(", ".join(f"COUNT({_quote(c)})" for c in columns)).fetchall()  # the whole file
        rows = con.execute(
            f"SELECT column_name, MIN(line) FROM {_PROBE_ERRORS} WHERE error_type = 'CAST' GROUP BY 1"
        ).fetchall()
    except duckdb.Error:
        return {}
    finally:
        for table in (_PROBE_ERRORS, _PROBE_SCANS):
            with contextlib.suppress(duckdb.Error):
                con.execute(f"DROP TABLE IF EXISTS temp.{table}")
    return {str(r[0]): int(r[1]) for r in rows}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
