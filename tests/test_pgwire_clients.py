"""The tools analysts open, against a real ``privdb serve --pg-port`` (issue 38): pgcli driven as a user
runs it (start-up, ``\\dt``, ``\\d``, a DP query), and the forms DBeaver's and Metabase's drivers send on
connect and while browsing, as test cases of the same shapes (their source read, not copied)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from pgwirefixtures import PgServed, start_pg_server

PGCLI = shutil.which("pgcli", path=str(Path(sys.executable).parent)) or shutil.which("pgcli")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServed]:
    served = start_pg_server(tmp_path_factory.mktemp("pgclients") / "db", budget=20.0)
    yield served
    served.server.stop()


@pytest.mark.skipif(PGCLI is None, reason="pgcli not installed (make test installs the dev extra)")
def test_pgcli_starts_lists_describes_and_answers(served: PgServed, tmp_path: Path) -> None:
    assert PGCLI is not None
    env = os.environ | {
        "PGPASSWORD": served.tokens["bob"],
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path),
    }
    command = [
        PGCLI,
        "-h",
        "127.0.0.1",
        "-p",
        str(served.pg_port),
        "-U",
        "bob",
        "-d",
        "privdb",
        "--less-chatty",
    ]
    for statement in (
        r"\dt",
        r"\d people",
        "DP-SELECT 1 COUNT(*) AS n FROM people",
        "SELECT 1 AS one",
        "DP-SELECT 1 COUNT(*) FROM people WHERE age > 30",
    ):
        command += ["-c", statement]
    run = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "| public | people | table |" in out.replace("  ", " ").replace("  ", " ")
    assert "double precision" in out and "n_ci95_low" in out and "| one" in out
    assert "COUNT(" not in out and "| count " in out  # PostgreSQL's name for an unaliased COUNT(*)
    assert "unrecognized configuration parameter" not in out + run.stderr
    log = tmp_path / "pgcli" / "log"
    errors = [line for line in (log.read_text().splitlines() if log.exists() else []) if " ERROR " in line]
    assert errors == []  # its start-up queries (schemata, tables, columns, functions…) all answered


# the forms DBeaver sends (its PostgreSQL plug-in) on connect and in its navigator
_DBEAVER = [
    "SET extra_float_digits = 3",
    "SET application_name = 'DBeaver 25 - Main <privdb>'",
    "SELECT current_schema(), session_user",
    "SELECT n.oid, n.*, d.description FROM pg_catalog.pg_namespace n "
    "LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid = n.oid AND d.objsubid = 0 "
    "AND d.classoid = 'pg_namespace'::regclass ORDER BY nspname",
    "SELECT n.nspname = ANY(current_schemas(true)), n.nspname, t.typname FROM pg_catalog.pg_type t "
    "JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = 1034",
    "SELECT c.oid, c.*, d.description FROM pg_catalog.pg_class c LEFT OUTER JOIN pg_catalog.pg_description d "
    "ON d.objoid = c.oid AND d.objsubid = 0 AND d.classoid = 'pg_class'::regclass "
    "WHERE c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'public') "
    "AND c.relkind NOT IN ('i', 'I', 'c')",
    "SELECT a.oid, a.* FROM pg_catalog.pg_roles a ORDER BY a.rolname",
    "SELECT db.oid, db.* FROM pg_catalog.pg_database db WHERE datname = 'privdb'",
    "SELECT c.relname, a.*, pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) AS def_value, "
    "dsc.description FROM pg_catalog.pg_attribute a INNER JOIN pg_catalog.pg_class c ON (a.attrelid = c.oid) "
    "LEFT OUTER JOIN pg_catalog.pg_attrdef ad ON (a.attrelid = ad.adrelid AND a.attnum = ad.adnum) "
    "LEFT OUTER JOIN pg_catalog.pg_description dsc ON (c.oid = dsc.objoid AND a.attnum = dsc.objsubid) "
    "WHERE NOT a.attisdropped AND c.relname = 'people' ORDER BY a.attnum",
    "SELECT pg_backend_pid()",
    "SHOW search_path",
]
# the forms Metabase's PostgreSQL driver sends (beside pgjdbc's own metadata queries, tests/test_pgwire.py)
_METABASE = [
    "SET SESSION TIMEZONE TO 'UTC'",
    "SHOW TIMEZONE",
    "SELECT current_setting('TIMEZONE') AS tz",
    "SELECT nspname AS \"TABLE_SCHEM\" FROM pg_catalog.pg_namespace WHERE nspname <> 'information_schema' "
    "AND nspname NOT LIKE 'pg\\_%' ORDER BY 1",
    "SELECT has_table_privilege('people', 'SELECT') AS \"select\"",
]


@pytest.mark.parametrize("statement", _DBEAVER + _METABASE)
def test_what_dbeaver_and_metabase_send_is_answered_in_postgresqls_terms(
    served: PgServed, statement: str
) -> None:
    with psycopg.connect(served.url("bob"), autocommit=True) as conn:
        cursor = conn.execute(statement)
        if cursor.description is not None:
            cursor.fetchall()


def test_metabase_style_quoted_qualified_aggregates_at_a_session_epsilon(served: PgServed) -> None:
    with psycopg.connect(served.url("bob") + "?options=-c%20privdb.epsilon%3D0.5", autocommit=True) as conn:
        rows = conn.execute(
            'SELECT "public"."people"."sex" AS "sex", avg("public"."people"."income") AS "avg" '
            'FROM "public"."people" GROUP BY "public"."people"."sex" ORDER BY "public"."people"."sex" ASC '
            "LIMIT 2000"
        ).fetchall()
        assert [r[0] for r in rows] == ["F", "M"]


# Grafana's PostgreSQL data source (postgresMetaQuery.ts and useAutoDetectFeatures.ts, read): the server
# version, TimescaleDB's, the schemas, the tables (in one schema, or on the search path, which it reads by
# splitting current_setting('search_path') in FROM), a table's columns through parse_ident, and pgx's ping
_SEARCH_PATH = (
    "quote_ident(table_schema) IN (SELECT CASE WHEN trim(s[i]) = '\"$user\"' THEN user ELSE trim(s[i]) END "
    "FROM generate_series(array_lower(string_to_array(current_setting('search_path'),','),1), "
    "array_upper(string_to_array(current_setting('search_path'),','),1)) as i, "
    "string_to_array(current_setting('search_path'),',') s)"
)
_COLUMNS = (
    'SELECT quote_ident(column_name) AS "column", data_type AS "type" FROM information_schema.columns '
    "WHERE CASE WHEN array_length(parse_ident('{0}'),1) = 2 "
    "THEN quote_ident(table_schema) = (parse_ident('{0}'))[1] AND quote_ident(table_name) = "
    "(parse_ident('{0}'))[2] ELSE quote_ident(table_name) = '{0}' AND " + _SEARCH_PATH + " END"
)
_PEOPLE = [("pid", "bigint"), ("age", "bigint"), ("income", "double precision"), ("sex", "text")]
_PEOPLE += [("state", "text"), ("education", "text")]
_GRAFANA = {
    "SELECT current_setting('server_version_num')::int/100 as version": [(1600,)],
    "SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'": [],
    'SELECT schema_name AS "name" FROM information_schema.schemata WHERE schema_name NOT IN '
    "('information_schema', 'pg_catalog', 'pg_toast', '_timescaledb_cache') ORDER BY schema_name": [
        ("public",)
    ],
    'SELECT quote_ident(table_name) AS "table" FROM information_schema.tables '
    "WHERE quote_ident(table_schema) = 'public' ORDER BY 1": [("people",)],  # bob's one table
    f"SELECT CASE WHEN {_SEARCH_PATH} THEN quote_ident(table_name) ELSE quote_ident(table_schema) || '.' "
    '|| quote_ident(table_name) END AS "table" FROM information_schema.tables '
    "WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog', '_timescaledb_cache') "
    f"ORDER BY CASE WHEN {_SEARCH_PATH} THEN 0 ELSE 1 END, 1": [("people",)],
    _COLUMNS.format("people"): _PEOPLE,
    _COLUMNS.format("public.people"): _PEOPLE,
    _COLUMNS.format('"public".people'): _PEOPLE,
    _COLUMNS.format("other.people"): [],
}


@pytest.mark.parametrize("statement", list(_GRAFANA))
def test_what_grafana_sends_gets_postgresqls_answers(served: PgServed, statement: str) -> None:
    with psycopg.connect(served.url("bob"), autocommit=True) as conn:
        assert conn.execute(statement).fetchall() == _GRAFANA[statement]


def test_a_grafana_table_panel_and_ping(served: PgServed) -> None:
    """A panel's query is plain aggregate SQL (answered at the session ε); pgx pings with a comment."""
    with psycopg.connect(served.url("bob") + "?options=-c%20privdb.epsilon%3D0.5", autocommit=True) as conn:
        assert conn.execute("-- ping").description is None
        rows = conn.execute(
            "SELECT sex AS metric, COUNT(*) AS value FROM people GROUP BY sex ORDER BY 1"
        ).fetchall()
        assert [r[0] for r in rows] == ["F", "M"] and all(r[1] > 1000 for r in rows)


# Superset 6.1's chart query for a custom SQL metric MEDIAN(age), exactly as it sent it in the run of
# e2e/superset (make superset): it writes MEDIAN for PostgreSQL as the ordered-set aggregate
_SUPERSET_MEDIAN = (
    "SELECT\n  sex AS sex,\n  PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY\n    age) AS median_age\n"
    "FROM public.people\nGROUP BY\n  sex\nORDER BY\n  median_age DESC\nLIMIT 10000"
)


def _bob_spent(served: PgServed) -> float:
    headers = {"Authorization": f"Bearer {served.tokens['bob']}"}
    return float(httpx.get(served.server.url + "/v1/budget", headers=headers).json()["epsilon_spent"])


def test_superset_median_metric_is_answered_as_a_dp_quantile_at_the_session_epsilon(served: PgServed) -> None:
    """PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY x) is QUANTILE(x, p) (PERCENTILE_DISC too, 1 − p for a
    descending order); it was refused with a false message (``the quantile's level is a number between 0
    and 1``: the DuckDB rendering of the lifted DP-SELECT, ``QUANTILE_CONT(age, 0.5 ORDER BY age)``)."""
    with psycopg.connect(served.url("bob") + "?options=-c%20privdb.epsilon%3D0.25", autocommit=True) as conn:
        before = _bob_spent(served)
        cursor = conn.execute(_SUPERSET_MEDIAN)
        assert [d.name for d in cursor.description or []] == ["sex", "median_age"]
        rows = cursor.fetchall()
        assert sorted(r[0] for r in rows) == ["F", "M"] and all(20 <= r[1] <= 65 for r in rows)
        assert _bob_spent(served) == pytest.approx(before + 0.25)
        cursor = conn.execute("SELECT percentile_disc(0.9) WITHIN GROUP (ORDER BY age DESC) FROM people")
        assert [d.name for d in cursor.description or []] == ["percentile_disc"]  # PostgreSQL's name
        (low,) = cursor.fetchone() or (None,)
        assert low is not None and 0 <= low <= 40  # the 10th percentile of ages
        assert _bob_spent(served) == pytest.approx(before + 0.5)
        for refused in (  # other ordered-set forms keep the DP-SELECT's hint; nothing is spent
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY age, income) FROM people",
            "SELECT mode() WITHIN GROUP (ORDER BY sex) FROM people",
        ):
            with pytest.raises(psycopg.errors.FeatureNotSupported, match="QUANTILE"):
                conn.execute(refused)
        assert _bob_spent(served) == pytest.approx(before + 0.5)
