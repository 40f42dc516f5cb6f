"""SmartNoise SQL's worker: runs inside the peer venv (``python -m bench.sql.smartnoise``), which has
smartnoise-sql, duckdb and pandas but not privdb: imports beyond the standard library stay inside the
functions. SmartNoise has no DuckDB reader, so its PostgreSQL reader runs on a DuckDB connection through a
small DB-API adapter (bench.quantiles uses it too)."""

from __future__ import annotations

import importlib.metadata
import platform
import re
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from bench.harness.peers import worker_main
from bench.harness.query import Query
from bench.harness.timing import best_of
from bench.sql.spec import TABLE, smartnoise_sql

_VOLATILE_ORDER = re.compile(r"ORDER\s+BY\s+RANDOM\s*\(\s*\)\s*\)(\s*AS\s+\w+\s+FROM\s*\()", re.IGNORECASE)


def _closing_paren(sql: str, start: int) -> int:
    """Index of the ``)`` closing the parenthesis opened just before ``start`` (quotes respected)."""
    depth, i, quote = 1, start, ""
    while i < len(sql):
        ch = sql[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError(f"unbalanced parentheses in {sql!r}")


def duckdb_sql(sql: str) -> str:
    """SmartNoise's PostgreSQL SQL, made acceptable to DuckDB ≥ 2.0.

    For a privacy unit SmartNoise keeps ``max_ids`` random rows per unit with
    ``ROW_NUMBER() OVER (PARTITION BY pid ORDER BY RANDOM())``; DuckDB 2.0 refuses volatile window orders.
    The random number is drawn one level down instead, as a column of the window's input, and the window
    orders by it: the same uniform order within each unit.
    """
    while match := _VOLATILE_ORDER.search(sql):
        open_at = match.end(1)
        close_at = _closing_paren(sql, open_at)
        sql = (
            f"{sql[: match.start()]}ORDER BY _sn_rnd ){match.group(1)} SELECT *, RANDOM() AS _sn_rnd FROM "
            f"({sql[open_at:close_at]}) AS _sn_inner {sql[close_at:]}"
        )
    return sql


class DuckCursor:
    """The part of a DB-API cursor that SmartNoise's PostgreSQL reader uses, on a DuckDB connection."""

    def __init__(self, con: Any) -> None:
        self._con = con
        self.description: Any = None
        self._rows: list[tuple[Any, ...]] = []

    def execute(self, sql: str) -> None:
        result = self._con.execute(duckdb_sql(sql))
        self.description = result.description
        self._rows = result.fetchall() if result.description else []

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._rows)


class DuckConnection:
    """A DuckDB connection as a DB-API connection (each DuckDB statement commits by itself)."""

    def __init__(self, con: Any) -> None:
        self._con = con

    def cursor(self) -> DuckCursor:
        return DuckCursor(self._con)

    def commit(self) -> None:
        return None

    def rollback(self) -> None:
        return None


def smartnoise_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Time SmartNoise SQL on the DuckDB file ``spec["db"]``; returns figures and settings as JSON data."""
    import duckdb
    import snsql  # type: ignore[import-not-found, unused-ignore]  # only in the peer venv
    from snsql.sql.private_reader import PrivateReader  # type: ignore[import-not-found, unused-ignore]
    from snsql.sql.reader.pandas import PandasReader  # type: ignore[import-not-found, unused-ignore]
    from snsql.sql.reader.postgres import PostgresReader  # type: ignore[import-not-found, unused-ignore]

    def log(message: str) -> None:
        print(f"  smartnoise: {message}", file=sys.stderr, flush=True)

    eps, delta, repeats = float(spec["epsilon"]), float(spec["delta"]), int(spec["repeats"])
    queries = [Query(**q) for q in spec["queries"]]
    con = duckdb.connect(spec["db"], read_only=True)
    out: dict[str, Any] = {
        "versions": {
            name: importlib.metadata.version(name)
            for name in ("smartnoise-sql", "opendp", "duckdb", "pandas")
        },
        "python": platform.python_version(),
        "duckdb": {},
        "pandas": {},
    }

    def reader_for(base: Any, setting: str, query: Query) -> tuple[Any, dict[str, Any]]:
        """A private reader whose mechanisms share ε evenly, and what it says the query costs."""
        meta = spec["metadata"][setting]
        probe = PrivateReader(base, meta, privacy=snsql.Privacy(epsilon=1.0, delta=delta))
        per_mechanism = [c for c in probe._get_mechanism_costs(smartnoise_sql(query)) if c is not None]
        k = sum(e for e, _ in per_mechanism)  # SmartNoise charges its ε once per noisy statistic
        reader = PrivateReader(base, meta, privacy=snsql.Privacy(epsilon=eps / k, delta=delta))
        cost = [float(c) for c in reader.get_privacy_cost(smartnoise_sql(query))]
        if cost[0] > eps * (1 + 1e-9):
            raise RuntimeError(f"SmartNoise would charge ε = {cost[0]} > {eps} for {query.key}")
        info = {"mechanisms": len(per_mechanism), "epsilon_each": eps / k, "cost": cost}
        return reader, info

    def time_query(
        base: Any, setting: str, query: Query, raw: Callable[[int], object] | None
    ) -> dict[str, Any]:
        reader, info = reader_for(base, setting, query)
        sql = smartnoise_sql(query)
        answers: list[Any] = []
        runs: dict[str, Callable[[int], object]] = {
            "smartnoise": lambda i: answers.append(reader.execute(sql))
        }
        if raw is not None:
            runs["raw"] = raw
        best = best_of(runs, repeats)
        info |= {
            "seconds": best["smartnoise"],
            "raw_seconds": best.get("raw"),
            "rows_out": len(answers[-1]) - 1,  # minus the header row
            "odometer": [float(s) for s in reader.odometer.spent],  # after all 1 + repeats runs
            "runs": repeats + 1,
        }
        return info

    base = PostgresReader(conn=DuckConnection(con))
    for setting in spec["settings"]:
        out["duckdb"][setting] = {}
        for query in queries:
            log(f"{setting}, {query.key} on the DuckDB connection")

            def raw(i: int, q: Query = query) -> object:
                return con.execute(q.raw()).fetchall()

            try:
                out["duckdb"][setting][query.key] = time_query(base, setting, query, raw)
            except Exception as err:
                out["duckdb"][setting][query.key] = {"error": f"{type(err).__name__}: {err}"}
    subset = int(spec["pandas_rows"])
    if subset > 0:
        log(f"pandas reader: loading {subset:,} rows into SQLite")
        frame = con.execute(f"SELECT * FROM {TABLE} WHERE pid <= ?", [subset]).df()
        t0 = time.perf_counter()
        pandas_base = PandasReader(frame, spec["metadata"]["row"])
        out["pandas"] = {"rows": len(frame), "load_seconds": time.perf_counter() - t0, "results": {}}
        for setting in spec["settings"]:
            out["pandas"]["results"][setting] = {}
            for query in queries:
                log(f"pandas reader, {setting}, {query.key}")
                try:
                    result = time_query(pandas_base, setting, query, None)
                except Exception as err:
                    result = {"error": f"{type(err).__name__}: {err}"}
                out["pandas"]["results"][setting][query.key] = result
    con.close()
    return out


if __name__ == "__main__":
    worker_main(smartnoise_worker)
