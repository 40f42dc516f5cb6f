"""Peak memory and time of plain SELECTs that tried to escape the public sandbox (issue 25), each in a fresh
child process so its peak RSS is its own (``os.wait4``'s rusage, Linux: kilobytes).

Each query runs through ``privdb.sql.engine.run`` as an analyst would send it, against a database with
one public table (``regions``, 1,000 rows) and the server's default query limit (``--timeout`` seconds).
The child prints the outcome (the rows' count, or the error code); the parent prints one line per query:
outcome, wall time, peak RSS. Results go to docs/security.md.

    .venv/bin/python -m bench.public_sandbox [--timeout 30] [query ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness.peers import environment, module_argv

ATTACKS = [
    "SELECT len(range(250000000))",
    "SELECT length(repeat('x', 1500000000))",
    "SELECT COUNT(*) FROM generate_series(1, 10000000000)",
    "SELECT len(list_value(1, 2, 3))",
    "SELECT SUM(x) FROM (SELECT unnest(range(100000000)) AS x)",
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT COUNT(*) FROM r",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT length(string_agg(a.name, ',')) FROM regions a, regions b, regions c",
    "SELECT length(replace(replace(replace(replace(replace('x', 'x', '"
    + "x" * 200
    + "'), 'x', '"
    + "x" * 200
    + "'), 'x', '"
    + "x" * 200
    + "'), 'x', '"
    + "x" * 200
    + "'), 'x', '"
    + "x" * 200
    + "'))",
    "SELECT COUNT(*) FROM regions a, regions b, regions c, regions d",
    "SELECT a.code, b.code FROM regions a, regions b, regions c ORDER BY a.name || b.name || c.name DESC",
]
LEGITIMATE = [
    "SELECT code, name FROM regions ORDER BY code LIMIT 5",
    "SELECT a.code, COUNT(*) AS n FROM regions a JOIN regions b ON a.code % 10 = b.code % 10 "
    "GROUP BY a.code ORDER BY a.code",
]


def child(path: str, sql: str, timeout: float) -> None:
    """Run one query on the database at ``path``; print its outcome as JSON."""
    from privdb.database import Database
    from privdb.errors import PrivdbError
    from privdb.sql import engine

    db = Database(Path(path))
    db.query_timeout = timeout
    started = time.monotonic()
    try:
        outcome = f"{len(engine.run(db, 'alice', sql).rows)} rows"
    except PrivdbError as err:
        outcome = f"{err.code}: {err.message[:70]}"
    print(json.dumps({"outcome": outcome, "seconds": time.monotonic() - started}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--legitimate", action="store_true", help="also time two ordinary queries")
    parser.add_argument("queries", nargs="*")
    args = parser.parse_args()
    import pandas as pd

    from privdb.database import Database

    with tempfile.TemporaryDirectory() as tmp:
        db = Database(Path(tmp) / "db")
        db.backend.load_frame(
            "regions", pd.DataFrame({"code": range(1000), "name": [f"region {i}" for i in range(1000)]})
        )
        db.set_metadata("regions", {"public": True})
        db.grant("alice", epsilon=1)
        db.close()
        for sql in args.queries or (ATTACKS + (LEGITIMATE if args.legitimate else [])):
            started = time.monotonic()
            proc = subprocess.Popen(
                [
                    *module_argv(sys.executable, "bench.public_sandbox"),
                    "--child",
                    str(Path(tmp) / "db"),
                    sql,
                    str(args.timeout),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=environment(),
            )
            assert proc.stdout is not None
            stdout = proc.stdout.read()
            _, _, usage = os.wait4(proc.pid, 0)  # reaped here (not by Popen.wait): its own rusage
            proc.returncode = 0
            wall = time.monotonic() - started
            out = stdout.strip().splitlines()[-1][:160] if stdout.strip() else "(no output)"
            print(f"{sql[:70]!r}\n    {out}\n    wall {wall:.2f} s, peak RSS {usage.ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        main()
