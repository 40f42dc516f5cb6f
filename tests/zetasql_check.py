"""Running a case of tests/zetasql_corpus.py on a database and telling how privdb's outcome compares with
ZetaSQL's expected one (tests/test_zetasql_corpus.py)."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pandas as pd

from conftest import seeded
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine
from zetasql_corpus import TABLES, Case, meta

WIDTHS = 4.0  # a value matches within this many half-widths of its stated 95% interval


def frame(name: str) -> pd.DataFrame:
    columns, rows = TABLES[name]
    data = pd.DataFrame(rows, columns=list(columns))
    for column in columns:
        kind = "Float64" if column == "dval" else "Int64"
        data[column] = pd.array(data[column].tolist(), dtype=kind)
    return data


def load_duckdb(db: Database) -> None:
    for name in TABLES:
        db.backend.load_frame(name, frame(name))
        db.set_metadata(name, meta(name))


def load_sqlite(db: Database, path: Path) -> None:
    """The same tables in a SQLite file attached under the same names."""
    con = sqlite3.connect(path)
    for name, (columns, rows) in TABLES.items():
        types = ", ".join(f"{c} {'REAL' if c == 'dval' else 'INTEGER'}" for c in columns)
        con.execute(f"CREATE TABLE {name} ({types})")
        con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(columns))})", rows)
    con.commit()
    con.close()
    for name in TABLES:
        db.attach(name, f"sqlite:///{path}", source=name, metadata=meta(name))


def _report(got: Any, want: dict[str, Any]) -> bool:
    """A JSON report: its value within the report's own interval; ZetaSQL's bounding report (the bounds
    it finds from the data) has no counterpart in privdb, so a report that has one is not matched."""
    if not isinstance(got, str) or "bounding_report" in want:
        return False
    result = json.loads(got)["result"]
    interval = result["noise_confidence_interval"]
    half = (interval["upper_bound"] - interval["lower_bound"]) / 2
    return _close(result["value"], want["result"]["value"], half)


def _close(got: Any, want: Any, half: float) -> bool:
    if isinstance(want, dict):
        return _report(got, want)
    if got is None or want is None or (isinstance(got, float) and got != got):
        return want is None and (got is None or got != got)
    if isinstance(want, bool) or isinstance(got, bool):
        return bool(got) == want
    return abs(float(got) - float(want)) <= WIDTHS * half + 1e-6 * max(1.0, abs(float(want)))


def difference(result: Any, want: tuple[tuple[Any, ...], ...]) -> str | None:
    """Why ``result`` is not ZetaSQL's rows ``want`` (any order; each value within its interval), or None."""
    halves = [[0.0] * len(result.columns) for _ in result.rows]
    for entry in result.accuracy:
        i = result.columns.index(entry["column"])
        intervals = entry.get("ci95_rows") or [entry.get("ci95")] * len(result.rows)
        for r, interval in enumerate(intervals):
            if interval is not None:
                halves[r][i] = (float(interval[1]) - float(interval[0])) / 2
    if len(result.rows) != len(want):
        return f"{len(result.rows)} rows where ZetaSQL has {len(want)}"
    left = list(range(len(result.rows)))
    for row in want:
        k = next(
            (
                k
                for k in left
                if len(result.rows[k]) == len(row)
                and all(_close(result.rows[k][c], row[c], halves[k][c]) for c in range(len(row)))
            ),
            None,
        )
        if k is None:
            return f"no released row is {row}"
        left.remove(k)
    return None


def outcome(db: Database, case: Case) -> tuple[str, str]:
    """("match" | "differs" | "refused" | "internal", the detail): privdb's answer to the case, its noise
    seeded by the case's name (the same whichever cases run before it)."""
    db.noise_source = seeded(zlib.crc32(case.name.encode()))
    try:
        result = engine.run(db, "a", case.query)
    except PrivdbError as err:
        return "refused", f"{err.code}: {err.message}"
    except Exception as err:  # the corpus counts internal errors, never hides them
        return "internal", f"{type(err).__name__}: {err}"
    if case.rows is None:
        return "differs", "answered where ZetaSQL refuses" if case.error else "answered; no rows to compare"
    why = difference(result, case.rows)
    return ("match", "") if why is None else ("differs", why)
