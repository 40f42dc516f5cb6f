"""A command imports only what it uses (issue 40): ``privdb query``, ``budget`` and ``explain`` on a real
database, and ``privdb serve`` up to where it listens, load none of SciPy, pandas, Arrow, the web framework
(but serve), matplotlib, publishing, anonymisation or the local model's protocols, and at most a budget of
privdb's own modules; a budget, a grant or the log load no engine at all. Checked by behaviour (which modules
a run loads, in a fresh process), not by wall-clock time, which depends on the machine; bench/startup.py times
them (docs/benchmarks.md).
``--version`` and ``--help``: tests/test_cli_startup.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# what no analyst's command needs: calibration (SciPy: the Gaussian's, imported where σ is calibrated),
# frames (pandas, where one is built), Arrow (an answer over HTTP), the server, charts, and the owner's
# publishing, anonymisation and the local model (privdb.local's package and limits are light: the CLI's
# survey options read them)
NEVER = ("scipy", "pandas", "pyarrow", "matplotlib", "fastapi", "starlette", "uvicorn", "httpx", "mpmath")
NEVER_PRIVDB = ("privdb.publish", "privdb.anonymize", "privdb.audit", "privdb.holdout", "privdb.server")
LIGHT_LOCAL = {"privdb.local", "privdb.local.limits"}
# privdb's own modules a run may load: the CLI, the catalog and ledger, and for a query the whole SQL path
# (up to 205 today, packages included: BigQuery's implicit bounds, quantile arrays and query parameters
# added 8 small modules that import nothing heavy, which NEVER checks; the warm start's hand-over, tried
# first, and the cold entry point 5 more); a new module on that path raises it here, on purpose
MAX_PRIVDB = 205

# the modules are listed by an exit function: a command ends through atexit work and os._exit
# (privdb.cli.entry.leave), never back into this script
_PROBE = """
import atexit, json, sys
sys.argv = ["privdb", *{args!r}]
atexit.register(lambda: print("\\nLOADED" + json.dumps(sorted(sys.modules)), flush=True))
from privdb.cli import main
main()
"""


def _run(code: str) -> tuple[str, int, set[str]]:
    # the cold start, whose imports these budgets are about (a warm start's command runs in the user's warm
    # process, forked from one that imported all of it once: tests/test_warm.py)
    cold = os.environ | {"PRIVDB_WARM": "0"}
    ran = subprocess.run([sys.executable, "-c", code], env=cold, capture_output=True, text=True, timeout=300)
    out, _, loaded = ran.stdout.rpartition("\nLOADED")
    assert loaded, ran.stderr
    return out, ran.returncode, set(json.loads(loaded))


def _heavy(modules: set[str]) -> list[str]:
    local = {m for m in modules if m.startswith("privdb.local")} - LIGHT_LOCAL
    return sorted(
        {m.split(".")[0] for m in modules if m.split(".")[0] in NEVER}
        | {m for m in modules if m.startswith(NEVER_PRIVDB)}
        | local
    )


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 rows (an identifier and a bounded age) and an analyst with a large budget who has asked once (so
    the log has an entry whichever of this module's tests pytest-xdist runs in this process)."""
    from privdb.database import Database
    from privdb.sql import engine

    where = tmp_path_factory.mktemp("startup")
    data = where / "people.csv"
    data.write_text("id,age\n" + "".join(f"{i},{20 + i % 50}\n" for i in range(200)), encoding="utf-8")
    meta = {
        "columns": {
            "id": {"type": "int", "identifier": True},
            "age": {"type": "int", "lower": 0, "upper": 99},
        }
    }
    database = Database(where / "db")
    try:
        database.load("people", data, meta)
        database.grant("alice", epsilon=1000)
        engine.run(database, "alice", "DP-SELECT 0.5 COUNT(*) FROM people")
    finally:
        database.close()
    return where / "db"


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["budget", "--analyst", "alice"], "remaining"),
        (["query", "--analyst", "alice", "DP-SELECT 0.5 COUNT(*) FROM people"], "COUNT(*)"),
        (["query", "--analyst", "alice", "DP-SELECT 0.5 AVG(age) FROM people", "--format", "json"], "AVG"),
        (["explain", "DP-SELECT 0.5 COUNT(*), SUM(age) FROM people"], "per column"),
    ],
)
def test_a_command_imports_only_what_it_uses(db: Path, args: list[str], shown: str) -> None:
    out, code, modules = _run(_PROBE.format(args=[*args, "--db", str(db)]))
    assert code in (0, None) and shown in out, out
    assert _heavy(modules) == [], f"privdb {args[0]} imported {_heavy(modules)}"
    own = sorted(m for m in modules if m.startswith("privdb"))
    assert len(own) <= MAX_PRIVDB, f"privdb {args[0]} imported {len(own)} of privdb's modules"
    # Typer builds only the command that runs; its Rich help and Markdown are for help only
    assert not {"typer.rich_utils", "rich.markdown", "markdown_it"} & modules


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["budget", "--analyst", "alice"], "remaining"),
        (["log"], "alice"),
        (["grant", "bob", "--epsilon", "1"], ""),
    ],
)
def test_a_command_that_never_reads_the_data_loads_no_engine(db: Path, args: list[str], shown: str) -> None:
    """Budgets, grants and the log are the catalog's and the ledger's: neither DuckDB, the parser, NumPy
    nor the SQL engine is imported (the data is imported and opened on first use: Database.backend)."""
    out, code, modules = _run(_PROBE.format(args=[*args, "--db", str(db)]))
    assert code in (0, None) and shown in out, out
    engines = {m.split(".")[0] for m in modules} & {"duckdb", "sqlglot", "numpy", "cryptography"}
    assert engines == set(), f"privdb {args[0]} imported {sorted(engines)}"
    assert not [m for m in modules if m.startswith(("privdb.sql", "privdb.backends.duckdb"))]


def test_a_csv_answer_builds_its_frame(db: Path) -> None:
    """pandas where a frame is built: the CSV of an answer (and nothing else heavy)."""
    args = ["query", "--analyst", "alice", "DP-SELECT 0.5 COUNT(*) FROM people", "--format", "csv"]
    out, code, modules = _run(_PROBE.format(args=[*args, "--db", str(db)]))
    assert code in (0, None) and "COUNT(*)" in out, out
    assert "pandas" in modules
    assert "scipy" not in {m.split(".")[0] for m in modules}


_SERVE = """
import json, sys
import uvicorn

def listen(app, **options):  # where the server would listen: what it has imported by then
    print("\\nLOADED" + json.dumps(sorted(sys.modules)), flush=True)

uvicorn.run = listen
sys.argv = ["privdb", "serve", "--db", {db!r}, "--port", "8999"]
from privdb.cli import main
main()
"""


def test_serve_imports_only_what_serving_needs_before_it_listens(db: Path) -> None:
    _, _, modules = _run(_SERVE.format(db=str(db)))
    assert "fastapi" in modules and "privdb.server.app" in modules
    # serving's own (the web framework, the survey routes' store) may load; the rest waits for a request
    serving = {"fastapi", "starlette", "uvicorn", "privdb.local.store"}
    heavy = [m for m in _heavy(modules) if m not in serving and not m.startswith("privdb.server")]
    assert heavy == [], f"privdb serve imported {heavy} before listening"


def test_a_server_session_loads_no_engine() -> None:
    """``privdb.connect(URL, token=…)`` (and the CLI's ``--url``): HTTP only; Arrow comes with an answer."""
    code = (
        "import json, sys, privdb\n"
        "privdb.connect('http://127.0.0.1:9', token='t').close()\n"
        'print("\\nLOADED" + json.dumps(sorted(sys.modules)))\n'
    )
    _, _, modules = _run(code)
    assert "httpx" in modules and "privdb.client" in modules
    engines = {m.split(".")[0] for m in modules} & {
        "duckdb",
        "sqlglot",
        "numpy",
        "pandas",
        "pyarrow",
        "scipy",
    }
    assert engines == set(), f"a server session imported {sorted(engines)}"
    assert not [m for m in modules if m.startswith(("privdb.sql", "privdb.local.survey", "privdb.publish"))]
