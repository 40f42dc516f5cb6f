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


def corpus_database(path: Path) -> Database:
    """A database at ``path`` with the corpus's tables on DuckDB and analyst ``a`` (ε 1e9, δ 0.5), its
    noise seeded."""
    database = Database(path)
    load_duckdb(database)
    database.grant("a", epsilon=1e9, delta=0.5)
    database.noise_source = seeded(39)
    return database


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


_NUMBER = ("value", "int_value", "float_value")  # a report's value, by format (JSON; PROTO's two)


def _interval(node: Any) -> dict[str, Any] | None:
    """The noise interval in a report (or the report field that is one)."""
    if not isinstance(node, dict):
        return None
    if "lower_bound" in node and "upper_bound" in node:
        return node
    return next((i for v in node.values() if (i := _interval(v)) is not None), None)


def _same(got: Any, want: Any, half: float) -> bool:
    """``got`` (a report or its field, privdb's) has ``want``'s fields (ZetaSQL's), numbers within
    ``half``-widths. PROTO's ``int_value`` and ``float_value`` are one value. ZetaSQL's SUM and COUNT reports
    at ε = 1e20 state an interval around 0 that does not hold their value; its bounds are then not
    compared (privdb's interval is around its value)."""
    if not isinstance(want, dict):
        return not isinstance(got, dict) and _close(got, want, half)
    if not isinstance(got, dict):
        return False
    number = {k: v for k, v in got.items() if k in _NUMBER and not isinstance(v, dict)}
    interval = want.get("noise_confidence_interval")
    value = next((want[k] for k in _NUMBER if k in want and not isinstance(want[k], dict)), None)
    if isinstance(interval, dict) and isinstance(value, int | float):
        lower, upper = interval.get("lower_bound"), interval.get("upper_bound")
        if lower is not None and upper is not None and not lower <= value <= upper:
            want = {**want, "noise_confidence_interval": {"confidence_level": interval["confidence_level"]}}
    for key, field in want.items():
        if key in _NUMBER and not isinstance(field, dict):
            if len(number) != 1 or not _close(next(iter(number.values())), field, half):
                return False
        elif key not in got or not _same(got[key], field, half):
            return False
    return True


def _report(got: Any, want: dict[str, Any]) -> bool:
    """A report (JSON text) or a field of one: its values within the report's own interval (a bounding
    report's bounds, found from the data, exactly: ZetaSQL's bins' edges)."""
    if not isinstance(got, str):
        return False
    ours = json.loads(got)
    interval = _interval(ours)
    half = 0.0 if interval is None else (interval["upper_bound"] - interval["lower_bound"]) / 2
    return _same(ours, want, half)


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
    seeded by the case's name and asked by an analyst of its own (ε 1e15, δ 0.999), so that no stored answer
    of an earlier case (the two spellings of one query are one DP-SELECT) decides it: the same whichever
    cases run before it."""
    seed = zlib.crc32(case.name.encode())
    db.noise_source = seeded(seed)
    analyst = f"case_{seed:08x}"
    if not db.ledger.has_budget(analyst, db.name):
        db.grant(analyst, epsilon=1e15, delta=0.999)
    try:
        result = engine.run(db, analyst, case.query, parameters=dict(case.parameters) or None)
    except PrivdbError as err:
        return "refused", f"{err.code}: {err.message}"
    except Exception as err:  # the corpus counts internal errors, never hides them
        return "internal", f"{type(err).__name__}: {err}"
    if case.rows is None:
        return "differs", "answered where ZetaSQL refuses" if case.error else "answered; no rows to compare"
    why = difference(result, case.rows)
    return ("match", "") if why is None else ("differs", why)
