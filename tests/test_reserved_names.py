"""Names beginning ``__privdb`` are privdb's own (issue 37): refused, in any case, wherever an owner or an
analyst names a table (load, attach, metadata, a grant's tables, DP-SELECT and plain SELECT, over HTTP too),
and a table or view so named in the data file — the staging view an earlier privdb's crashed load left, or
the owner's own SQL — is never listed (library, HTTP, the page's list) nor queried. Opening the data for
writing drops such views, finishes a load a crash interrupted after its table committed, and says so; a
server's start empties DIR/uploads/. Staging lives in the reading connection's temporary catalog only."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from fastapi.testclient import TestClient

import privdb
from privdb.backends.duckdb_tables import PENDING
from privdb.database import Database
from privdb.errors import InvalidParameter, UnknownTable
from privdb.server.app import create_app

RESERVED = ["__privdb_file", "__PRIVDB_file", "__privdbx"]
ROWS = "pid,age\n1,30\n1,31\n2,40\n"
META = {"privacy_unit": "pid", "columns": {"age": {"type": "int", "lower": 0, "upper": 99}}}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    (tmp_path / "p.csv").write_text(ROWS)
    with Database(tmp_path / "db") as database:
        database.load("people", tmp_path / "p.csv", META)
        database.grant("alice", epsilon=10)
    return tmp_path / "db"


def _leave_crash_leftovers(db: Path, csv: Path) -> None:
    """What a crash could leave in the data file: an earlier privdb's lasting staging view over the raw file,
    a table the owner's own SQL named with the prefix, and a load committed but not finished."""
    con = duckdb.connect(str(db / "data.duckdb"))
    try:
        con.execute(f"CREATE VIEW __privdb_file AS SELECT * FROM read_csv('{csv}')")
        con.execute("CREATE TABLE __privdb_mine AS SELECT 1 AS x")
        con.execute("CREATE TABLE later AS SELECT * FROM read_csv(?)", [str(csv)])
        record = json.dumps(
            {"metadata": META | {"max_contributions": 2}, "budgets": [["table", "later", 3.0, 0.0, None]]}
        )
        con.execute(f"COMMENT ON TABLE later IS '{PENDING}{record}'")
    finally:
        con.close()


@pytest.mark.parametrize("name", RESERVED)
def test_an_owner_cannot_name_a_table_with_the_reserved_prefix(db: Path, tmp_path: Path, name: str) -> None:
    engine = tmp_path / "e.sqlite"
    with Database(db) as database:
        for refused in (
            lambda: database.load(name, tmp_path / "p.csv", META),
            lambda: database.attach(name, f"sqlite:///{engine}", "people", META),
            lambda: database.grant("bob", epsilon=1, tables=["people", name]),
        ):
            with pytest.raises(InvalidParameter, match="begins with '__privdb', which privdb keeps"):
                refused()
        with pytest.raises(UnknownTable, match="names beginning '__privdb' are privdb's own"):
            database.set_metadata(name, {})
        assert database.table_names() == ["people"] and not database.catalog.has_analyst("bob")


def test_crash_leftovers_are_never_listed_nor_queried_and_are_put_right(db: Path, tmp_path: Path) -> None:
    _leave_crash_leftovers(db, tmp_path / "p.csv")
    with Database(db, read_only=True) as database:  # read-only: hidden, and only told
        assert database.table_names() == ["people"]
        assert database.notices == [
            "the load of table 'later' was interrupted; it stays hidden until privdb opens the data for "
            "writing (a server with one worker, or privdb sql --db) and finishes it"
        ]
    with Database(db) as database:  # opened for writing: put right, and told
        notices = database.notices
        assert database.metadata("later").max_contributions == 2
        assert [b["name"] for b in database.shared_budgets()] == ["later"]  # its budget, from the mark
        assert database.owner_sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").empty
    assert notices[:2] == [
        "dropped the view '__privdb_file', a staging view a crashed load of an earlier privdb left behind",
        "finished the load of table 'later' that a crash had interrupted",
    ]
    assert notices[2].startswith("the data file holds a table '__privdb_mine'") and "DROP TABLE" in notices[2]
    with privdb.connect(db, analyst="alice") as alice:
        assert [t["name"] for t in alice.tables()] == ["later", "people"]
        for name in ("__privdb_file", "__PRIVDB_FILE", "__privdb_mine"):
            for sql in (f"DP-SELECT 1 COUNT(*) FROM {name}", f"SELECT * FROM {name}"):
                with pytest.raises(UnknownTable, match="names beginning '__privdb' are privdb's own"):
                    alice.sql(sql)
        assert alice.sql("DP-SELECT 1 COUNT(*) FROM later") is not None


def test_over_http_the_names_are_refused_and_leftovers_hidden_and_uploads_emptied(
    db: Path, tmp_path: Path
) -> None:
    _leave_crash_leftovers(db, tmp_path / "p.csv")
    (db / "uploads").mkdir(mode=0o700)
    (db / "uploads" / "0123.csv").write_text(ROWS)  # a crashed server's upload
    with Database(db) as database:
        owner = database.catalog.add_owner_token()
        alice = database.grant("alice", epsilon=10)
    with TestClient(create_app(db)) as client:
        assert not (db / "uploads" / "0123.csv").exists()
        auth = {"Authorization": f"Bearer {owner}"}
        for name in RESERVED:
            answer = client.post(
                "/v1/tables", json={"name": name, "csv": ROWS, "metadata": META}, headers=auth
            )
            assert answer.status_code == 400 and "which privdb keeps" in answer.json()["error"]["message"]
            attach = {"name": name, "engine": f"sqlite:///{tmp_path / 'e.sqlite'}", "metadata": META}
            assert client.post("/v1/attachments", json=attach, headers=auth).status_code == 400
            grant = {"name": "bob", "epsilon": 1, "tables": [name]}
            assert client.post("/v1/analysts", json=grant, headers=auth).status_code == 400
        for who in (owner, alice):  # what the page's grant boxes list, and an analyst's catalogue
            listed = client.get("/v1/tables", headers={"Authorization": f"Bearer {who}"}).json()
            assert [t["name"] for t in listed] == ["later", "people"]
        loaded = client.post(
            "/v1/tables", json={"name": "fresh", "csv": ROWS, "metadata": META}, headers=auth
        )
        assert loaded.status_code == 200 and loaded.json()["rows"] == 3
        assert list((db / "uploads").iterdir()) == []  # the upload is removed once loaded


def test_staging_is_temporary_on_the_reading_connection_only(tmp_path: Path) -> None:
    from privdb.catalog.files import ReadOptions, read_relation, release

    (tmp_path / "p.csv").write_text(ROWS)
    con = duckdb.connect(str(tmp_path / "d.duckdb"))
    other = con.cursor()
    view = read_relation(con, tmp_path / "p.csv", ReadOptions())
    assert view == "temp.__privdb_file" and con.execute(f"SELECT COUNT(*) FROM {view}").fetchone() == (3,)
    lasting = "SELECT view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary"
    assert con.execute(lasting).fetchall() == [] and other.execute(
        "SELECT COUNT(*) FROM duckdb_views() WHERE NOT internal"
    ).fetchone() == (0,)
    release(con)
    con.close()
