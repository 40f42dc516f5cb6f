"""SmartNoise SQL's worker for bench.quantiles: runs inside the peer venv (``python -m
bench.quantiles.smartnoise``: smartnoise-sql, duckdb and pandas, not privdb), with bench.sql's DuckDB
adapter. Imports beyond the standard library stay inside the function."""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from typing import Any

from bench.harness.peers import worker_main
from bench.harness.timing import best_of
from bench.sql.smartnoise import DuckConnection


def smartnoise_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Try each spelling of each statistic with SmartNoise SQL on ``spec["db"]``; time those it answers."""
    import duckdb
    import snsql  # type: ignore[import-not-found, unused-ignore]  # only in the peer venv
    from snsql.sql.private_reader import PrivateReader  # type: ignore[import-not-found, unused-ignore]
    from snsql.sql.reader.postgres import PostgresReader  # type: ignore[import-not-found, unused-ignore]

    con = duckdb.connect(spec["db"], read_only=True)
    base = PostgresReader(conn=DuckConnection(con))
    out: dict[str, Any] = {
        "versions": {
            name: importlib.metadata.version(name)
            for name in ("smartnoise-sql", "opendp", "duckdb", "pandas")
        },
        "python": platform.python_version(),
        "results": {},
    }
    for setting in spec["settings"]:
        reader = PrivateReader(
            base,
            spec["metadata"][setting],
            privacy=snsql.Privacy(epsilon=float(spec["epsilon"]), delta=float(spec["delta"])),
        )
        out["results"][setting] = {}
        for key, forms in spec["forms"].items():
            tried = []
            for sql in forms:
                print(f"  smartnoise: {setting}, {sql}", file=sys.stderr, flush=True)
                try:
                    answer = reader.execute(sql)
                except Exception as err:
                    tried.append({"sql": sql, "error": f"{type(err).__name__}: {str(err).splitlines()[0]}"})
                    continue
                best = best_of({"smartnoise": lambda i, r=reader, s=sql: r.execute(s)}, spec["repeats"])
                tried.append({"sql": sql, "seconds": best["smartnoise"], "answer": repr(answer)[:200]})
            out["results"][setting][key] = tried
    con.close()
    return out


if __name__ == "__main__":
    worker_main(smartnoise_worker)
