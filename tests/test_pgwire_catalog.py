"""The catalog queries of psql's ``\\d TABLE`` and SQLAlchemy's reflection, answered by privdb's catalog
(docs/clients.md): only the granted tables, their columns and PostgreSQL type names, no row and no size."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pgwirefixtures import PSQL, PgServed, psql, start_pg_server

pytestmark = pytest.mark.skipif(PSQL is None, reason="psql not installed (apt-get install postgresql)")

_PEOPLE = [
    ("pid", "bigint"), ("age", "bigint"), ("income", "double precision"), ("sex", "text"),
    ("state", "text"), ("education", "text"),
]  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServed]:
    served = start_pg_server(tmp_path_factory.mktemp("pgcat") / "db")
    yield served
    served.server.stop()


def test_psql_describes_a_granted_table(served: PgServed) -> None:
    for command in (r"\d people", r"\d+ people"):
        shown = psql(served, "bob", command)
        assert shown.returncode == 0, shown.stderr
        rows = [line.split("|") for line in shown.stdout.split("\n") if line]
        assert [(r[0], r[1]) for r in rows] == _PEOPLE
    sizes = psql(served, "bob", r"\dt+")
    assert sizes.returncode == 0, sizes.stderr
    assert sizes.stdout.split("|")[1:3] == ["people", "table"] and "0 bytes" in sizes.stdout  # no real size
    for command in (r"\l", r"\du", r"\df", r"\dn", r"\di"):
        assert psql(served, "bob", command).returncode == 0, command


def test_psql_says_an_ungranted_table_is_not_there_as_it_does_for_a_missing_one(served: PgServed) -> None:
    secret = psql(served, "bob", r"\d secret")
    nowhere = psql(served, "bob", r"\d nowhere")
    assert secret.returncode == nowhere.returncode == 1
    assert secret.stderr.replace("secret", "X") == nowhere.stderr.replace("nowhere", "X")
    assert "Did not find any relation" in secret.stderr
    assert psql(served, "alice", r"\d secret").returncode == 0  # alice is granted it


def test_sqlalchemy_reflects_columns_keys_and_indexes(served: PgServed) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    engine = sqlalchemy.create_engine(served.url("bob").replace("postgresql://", "postgresql+psycopg://"))
    try:
        inspector = sqlalchemy.inspect(engine)
        columns = inspector.get_columns("people")
        assert [(c["name"], str(c["type"])) for c in columns] == [
            ("pid", "BIGINT"), ("age", "BIGINT"), ("income", "DOUBLE PRECISION"), ("sex", "TEXT"),
            ("state", "TEXT"), ("education", "TEXT"),
        ]  # fmt: skip
        assert inspector.get_pk_constraint("people")["constrained_columns"] == []
        assert inspector.get_indexes("people") == []
        assert inspector.get_foreign_keys("people") == []
        assert inspector.get_unique_constraints("people") == []
        assert inspector.get_table_comment("people") == {"text": None}
        table = sqlalchemy.Table("people", sqlalchemy.MetaData(), autoload_with=engine)
        assert table.c.keys() == [name for name, _ in _PEOPLE]
        with pytest.raises(sqlalchemy.exc.NoSuchTableError):
            inspector.get_columns("secret")  # not granted to bob: as if it did not exist
    finally:
        engine.dispose()
