"""privdb over PostgreSQL's wire protocol (``privdb serve --pg-port``) with real clients: Debian's psql,
psycopg, pandas.read_sql through SQLAlchemy's postgresql+psycopg dialect, polars, and the PostgreSQL JDBC
driver (Debian's libpostgresql-jdbc-java) where Java and the jar are installed."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pandas as pd
import psycopg
import pytest

import privdb
from pgwirefixtures import PSQL, PgServed, psql, start_pg_server

pytestmark = pytest.mark.skipif(PSQL is None, reason="psql not installed (apt-get install postgresql)")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServed]:
    served = start_pg_server(tmp_path_factory.mktemp("pgwire") / "db", budget=5.0)
    yield served
    served.server.stop()


def _budget(served: PgServed, user: str) -> float:
    headers = {"Authorization": f"Bearer {served.tokens[user]}"}
    spent = httpx.get(served.server.url + "/v1/budget", headers=headers).json()["epsilon_spent"]
    return float(spent)


def test_a_wrong_token_or_another_analysts_token_is_refused(served: PgServed) -> None:
    wrong = psql(served, "bob", "SELECT 1", password="not-a-token")
    assert wrong.returncode == 2 and 'password authentication failed for user "bob"' in wrong.stderr
    swapped = psql(served, "alice", "SELECT 1", password=served.tokens["bob"])  # bob's token as alice
    assert swapped.returncode == 2 and "password authentication failed" in swapped.stderr
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(served.url("bob").replace(served.tokens["bob"], "wrong"))
    assert psql(served, "bob", "SELECT 1").stdout.strip() == "1"


def test_an_analyst_sees_only_the_granted_tables(served: PgServed) -> None:
    listing = psql(served, "bob", r"\dt")
    assert listing.returncode == 0, listing.stderr
    assert [line.split("|")[1] for line in listing.stdout.split()] == ["people"]  # not secret, not regions
    alice = psql(served, "alice", "SELECT table_name FROM information_schema.tables ORDER BY 1")
    assert alice.stdout.split() == ["people", "regions", "secret"]
    bob = psql(served, "bob", "SELECT table_name FROM information_schema.tables ORDER BY 1")
    assert bob.stdout.split() == ["people"]
    columns = psql(
        served, "bob", "SELECT column_name FROM information_schema.columns WHERE table_name = 'people'"
    )
    assert "income" in columns.stdout.split()
    relations = psql(served, "alice", r"\d")
    assert relations.returncode == 0 and [line.split("|")[1] for line in relations.stdout.split()] == [
        "people",
        "regions",
        "secret",
    ]
    # the catalog's copies of the tables are empty: no row of data comes from a catalog query
    rows = psql(served, "bob", "SELECT count(*) FROM pg_catalog.pg_class c, information_schema.columns")
    assert rows.returncode == 0
    assert (
        psql(served, "bob", "SELECT count(*) FROM (SELECT 1 FROM pg_catalog.pg_namespace) AS n").returncode
        == 0
    )


def test_a_dp_answer_is_the_library_frame_and_costs_what_http_charges(served: PgServed) -> None:
    query = "DP-SELECT 0.5 sex, COUNT(*) AS n, AVG(age) AS mean_age FROM people GROUP BY sex"
    before = _budget(served, "bob")
    notices: list[str] = []
    with psycopg.connect(served.url("bob"), autocommit=True) as conn:
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        cursor = conn.execute(query)
        columns = [d.name for d in cursor.description or []]
        rows = cursor.fetchall()
    spent_pg = _budget(served, "bob") - before
    assert spent_pg == pytest.approx(0.5)
    assert notices and "ε spent 0.5" in notices[-1] and "budget left ε" in notices[-1]
    # the same query over HTTP by another analyst costs the same
    before = _budget(served, "alice")
    with privdb.connect(served.server.url, token=served.tokens["alice"]) as alice:
        alice.sql(query)
    assert _budget(served, "alice") - before == pytest.approx(spent_pg)
    # bob asking again over HTTP gets the stored answer: the frame the library gives is what psql got
    with privdb.connect(served.server.url, token=served.tokens["bob"]) as bob:
        frame = bob.sql(query).to_pandas()
    assert columns == list(frame.columns)
    assert columns == [
        "sex",
        "n",
        "n_ci95_low",
        "n_ci95_high",
        "mean_age",
        "mean_age_ci95_low",
        "mean_age_ci95_high",
    ]
    got = pd.DataFrame(rows, columns=columns)
    pd.testing.assert_frame_equal(got, frame, check_dtype=False)
    assert _budget(served, "bob") - before >= 0  # (the stored answer cost nothing more)


@pytest.mark.parametrize(
    ("user", "query", "sqlstate", "code"),
    [
        ("bob", "DP-SELECT 99 COUNT(*) FROM people", "53400", "budget_exhausted"),
        ("bob", "DP-SELECT 0.5 COUNT(*) FROM secret", "42501", "forbidden"),
        ("bob", "DP-SELECT 0.5 COUNT(*) FROM people WHERE", "42601", "parse_error"),
        ("bob", "SELECT age FROM people", "42501", None),  # a plain SELECT on a private table
        ("bob", "DP-SELECT 0.5 COUNT(*) FROM nowhere", "42501", "forbidden"),  # not granted: not told more
        ("alice", "DP-SELECT 0.5 COUNT(*) FROM nowhere", "42P01", "unknown_table"),
        ("alice", "DP-SELECT 0.5 COUNT(nothing) FROM people", "42703", "unknown_column"),
    ],
)
def test_a_refused_query_spends_nothing_and_has_its_sqlstate(
    served: PgServed, user: str, query: str, sqlstate: str, code: str | None
) -> None:
    before = _budget(served, user)
    with psycopg.connect(served.url(user), autocommit=True) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute(query)
    assert raised.value.sqlstate == sqlstate
    if code is not None:
        assert raised.value.diag.message_detail == f"privdb error code: {code}"
    assert _budget(served, user) == before
    shown = psql(served, user, query)
    assert shown.returncode != 0 and shown.stderr.startswith("ERROR:")


def test_refusals_and_answers_are_in_the_log(served: PgServed) -> None:
    psql(served, "bob", "DP-SELECT 0.5 COUNT(*) FROM people WHERE age > 77")
    psql(served, "bob", "DP-SELECT 0.5 COUNT(*) FROM secret")
    headers = {"Authorization": f"Bearer {served.tokens['bob']}"}
    log = httpx.get(
        served.server.url + "/v1/log", headers=headers, params={"order": "desc", "limit": 5}
    ).json()
    texts = {(entry["query"], entry["outcome"]) for entry in log}
    assert ("DP-SELECT 0.5 COUNT(*) FROM people WHERE age > 77", "answered") in texts
    assert ("DP-SELECT 0.5 COUNT(*) FROM secret", "refused") in texts


def test_a_plain_select_on_a_public_table_is_free(served: PgServed) -> None:
    before = _budget(served, "alice")
    answer = psql(served, "alice", "SELECT code, name FROM regions ORDER BY code")
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.split() == ["1|north", "2|south", "3|east"]
    assert _budget(served, "alice") == before


def test_version_show_set_and_transactions_answer(served: PgServed) -> None:
    out = psql(served, "bob", "SELECT version()", "SHOW server_version", "SET application_name = 'report'",
               "SHOW application_name", "SELECT current_user", "SELECT current_schema()")  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert lines[0].startswith("PostgreSQL 16.0 (privdb") and "16.0" in lines[1]
    assert "report" in out.stdout and "bob" in out.stdout and "public" in out.stdout
    unknown = psql(served, "bob", "SHOW no_such_setting")
    assert 'unrecognized configuration parameter "no_such_setting"' in unknown.stderr
    with psycopg.connect(served.url("bob")) as conn:  # psycopg opens a transaction block
        assert conn.execute("SELECT 1").fetchone() == (1,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DP-SELECT 0.5 COUNT(*) FROM secret")
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):  # until ROLLBACK, as PostgreSQL does
            conn.execute("SELECT 1")
        conn.rollback()
        assert conn.execute("SHOW transaction isolation level").fetchone() == ("read committed",)


def test_prepared_statements_and_bind_parameters(served: PgServed) -> None:
    before = _budget(served, "bob")
    with psycopg.connect(served.url("bob"), autocommit=True) as conn:
        row = conn.execute(
            "DP-SELECT 0.25 COUNT(*) AS n FROM people WHERE age > %s AND sex = %s", (40, "F"), prepare=True
        ).fetchone()
        assert row is not None and len(row) == 3  # n, n_ci95_low, n_ci95_high
    assert _budget(served, "bob") - before == pytest.approx(0.25)
    with psycopg.connect(served.url("alice"), autocommit=True) as conn:
        again = conn.execute("SELECT name FROM regions WHERE code = %s", (2,), prepare=True).fetchall()
        assert again == [("south",)]
        quoted = conn.execute("SELECT name FROM regions WHERE name = %s", ("x' OR '1'='1",)).fetchall()
        assert quoted == []  # the value is a literal, never SQL


def test_pandas_read_sql_and_polars_through_sqlalchemy(served: PgServed) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    engine = sqlalchemy.create_engine(served.url("alice").replace("postgresql://", "postgresql+psycopg://"))
    frame = pd.read_sql("DP-SELECT 0.5 education, COUNT(*) AS n FROM people GROUP BY education", engine)
    assert list(frame.columns) == ["education", "n", "n_ci95_low", "n_ci95_high"]
    assert sorted(frame["education"]) == sorted(
        ["none", "primary", "secondary", "bachelor", "master", "doctorate"]
    )
    assert sqlalchemy.inspect(engine).get_table_names() == ["people", "regions", "secret"]
    polars = pytest.importorskip("polars")
    with engine.connect() as conn:
        answer = polars.read_database("SELECT code FROM regions ORDER BY code", conn)
    assert answer["code"].to_list() == [1, 2, 3]
    engine.dispose()


_JDBC_JAR = Path("/usr/share/java/postgresql.jar")
_JAVA = """
import java.sql.*;
public class PrivdbJdbc {
    public static void main(String[] a) throws Exception {
        try (Connection c = DriverManager.getConnection(a[0], a[1], a[2]);
             Statement s = c.createStatement()) {
            try (ResultSet r = s.executeQuery(a[3])) {
                ResultSetMetaData m = r.getMetaData();
                StringBuilder h = new StringBuilder("columns");
                for (int i = 1; i <= m.getColumnCount(); i++) h.append(":").append(m.getColumnName(i));
                System.out.println(h);
                while (r.next()) System.out.println("row:" + r.getString(1));
            }
            try (ResultSet r = c.getMetaData().getTables(null, null, "%", new String[]{"TABLE"})) {
                while (r.next()) System.out.println("table:" + r.getString("TABLE_NAME"));
            }
        } catch (SQLException e) {
            System.out.println("error:" + e.getSQLState());
        }
    }
}
"""


@pytest.mark.skipif(
    shutil.which("javac") is None or not _JDBC_JAR.exists(),
    reason="needs javac and Debian's libpostgresql-jdbc-java (apt-get install libpostgresql-jdbc-java)",
)
def test_jdbc(served: PgServed, tmp_path: Path) -> None:
    (tmp_path / "PrivdbJdbc.java").write_text(_JAVA)
    subprocess.run(["javac", "PrivdbJdbc.java"], cwd=tmp_path, check=True, timeout=120)
    url = f"jdbc:postgresql://127.0.0.1:{served.pg_port}/privdb"

    def java(user: str, password: str, query: str) -> list[str]:
        run = subprocess.run(
            ["java", "-cp", f"{_JDBC_JAR}:.", "PrivdbJdbc", url, user, password, query],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        return run.stdout.split()

    out = java("bob", served.tokens["bob"], "DP-SELECT 0.25 COUNT(*) AS n FROM people WHERE age < 30")
    assert out[0] == "columns:n:n_ci95_low:n_ci95_high" and out[1].startswith("row:")
    assert [line for line in out if line.startswith("table:")] == ["table:people"]
    assert java("bob", "wrong", "SELECT 1") == ["error:28P01"]


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made here (cryptography is a dependency of privdb)."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                       critical=False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def test_tls_when_the_server_has_a_certificate(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    served = start_pg_server(tmp_path / "db", extra=["--pg-tls-cert", str(cert), "--pg-tls-key", str(key)])
    try:
        url = served.url("bob") + f"?sslmode=verify-full&sslrootcert={cert}"
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.pgconn.ssl_in_use
            assert conn.execute("SELECT current_user").fetchone() == ("bob",)
    finally:
        served.server.stop()


def test_tls_is_refused_without_a_certificate(served: PgServed) -> None:
    with pytest.raises(psycopg.OperationalError, match="SSL"):
        psycopg.connect(served.url("bob") + "?sslmode=require")
    with psycopg.connect(served.url("bob") + "?sslmode=prefer", autocommit=True) as conn:
        assert not conn.pgconn.ssl_in_use


def test_the_catalog_reads_no_file_and_runs_one_select(served: PgServed, tmp_path: Path) -> None:
    data = served.server.db / "data.duckdb"
    for query in (
        f"SELECT * FROM read_csv('{tmp_path}/x.csv')",
        f"SELECT 1 FROM pg_class; ATTACH '{data}' AS stolen",  # one prepared statement, two commands
        "SELECT 1; SELECT 2",
    ):
        conn = psycopg.connect(served.url("bob"), autocommit=True)
        with conn, pytest.raises(psycopg.Error) as raised:
            conn.execute(query, prepare=True)  # the extended protocol: Parse takes one statement
        assert raised.value.sqlstate in ("42601", "0A000"), query
    assert psql(served, "bob", "SELECT 1; SELECT 2").stdout.split() == ["1", "2"]  # the simple protocol
