"""SQLite files made the course's way: ``CREATE TABLE people (pid, age, income)`` without declared types,
values inserted with ``?`` from Python. SQLite types values, not columns: such a column gets its privdb type
from the ``typeof()`` of its values when the owner attaches the file, and DP-SELECTs run on it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import seeded
from privdb.backends.sqlite import SQLiteBackend, affinity, sqlite_type, value_typed
from privdb.catalog.metadata import StoredType
from privdb.cli import app
from privdb.database import Database
from privdb.errors import InvalidParameter
from privdb.sql import engine

META: dict[str, Any] = {
    "columns": {
        "age": {"type": "int", "lower": 0, "upper": 100},
        "income": {"type": "float", "lower": 0, "upper": 1000},
        "city": {"type": "category", "values": ["Bern", "Basel", "Chur"]},
    }
}


def _rows(n: int, seed: int) -> list[tuple[Any, ...]]:
    """Python ints, floats (some incomes whole: SQLite stores those as integers) and strings."""
    rng = np.random.default_rng(seed)
    cities = ["Bern", "Basel", "Chur"]
    return [
        (
            i,
            int(rng.integers(0, 100)),
            float(rng.integers(0, 1000)) if i % 3 == 0 else round(float(rng.uniform(0, 1000)), 2),
            cities[int(rng.integers(0, 3))],
        )
        for i in range(n)
    ]


def _course_file(
    path: Path, rows: list[tuple[Any, ...]], create: str = "people (pid, age, income, city)"
) -> Path:
    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE {create}")
    con.executemany(f"INSERT INTO {create.split()[0]} VALUES (?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    return path


@pytest.fixture
def course(tmp_path: Path) -> Iterator[tuple[Database, list[tuple[Any, ...]]]]:
    rows = _rows(3000, seed=5)
    db = Database(tmp_path / "db")
    db.attach("people", f"sqlite:///{_course_file(tmp_path / 'people.db', rows)}", metadata=META)
    db.grant("eve", epsilon=1000)
    db.noise_source = seeded(17)
    yield db, rows
    db.close()


# ---------------------------------------------------------------- types from the values


def test_untyped_columns_get_their_type_from_the_values(tmp_path: Path) -> None:
    rows = [(1, 30, 10, "Bern"), (2, 40, 2.5, "Basel"), (3, None, None, None)]
    backend = SQLiteBackend(_course_file(tmp_path / "p.db", rows))
    try:
        types = backend.columns("people")
    finally:
        backend.close()
    assert types == {"pid": "int", "age": "int", "income": "float", "city": "text"}
    assert all(isinstance(t, StoredType) for t in types.values())


def test_an_untyped_file_attaches_without_metadata(tmp_path: Path) -> None:
    with Database(tmp_path / "db") as db:
        meta = db.attach("people", f"sqlite:///{_course_file(tmp_path / 'p.db', _rows(50, seed=1))}")
        assert {c: m.type for c, m in meta.columns.items()} == {
            "pid": "int", "age": "int", "income": "float", "city": "text"
        }  # fmt: skip
        assert db.tables()[0]["columns"]["income"] == {"type": "float"}  # stored as plain strings


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ("INTEGER", "INTEGER"), ("BIGINT", "INTEGER"), ("VARCHAR(20)", "TEXT"), ("CLOB", "TEXT"),
        ("", "BLOB"), ("BLOB", "BLOB"), ("DOUBLE PRECISION", "REAL"), ("FLOAT", "REAL"),
        ("NUMERIC", "NUMERIC"), ("DECIMAL(10,2)", "NUMERIC"), ("BOOLEAN", "NUMERIC"), ("DATETIME", "NUMERIC"),
    ],
)  # fmt: skip
def test_affinity_follows_sqlite_rules(declared: str, expected: str) -> None:
    assert affinity(declared) == expected


def test_which_columns_are_typed_by_their_values() -> None:
    assert [value_typed(t) for t in ("", "BLOB", "NUMERIC", "DECIMAL(10,2)", "ANY")] == [True] * 5
    assert [value_typed(t) for t in ("INT", "TEXT", "REAL", "BOOLEAN", "DATE", "TIMESTAMP")] == [False] * 6
    assert sqlite_type("BOOLEAN") == "bool" and sqlite_type("DATETIME") == "date"


def test_numeric_affinity_columns_are_typed_by_their_values(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (a NUMERIC, b DECIMAL(10,2), c BLOB, d BOOLEAN, e DATE)")
    con.executemany(
        "INSERT INTO t VALUES (?, ?, ?, ?, ?)", [(1, 1.5, "x", 1, "2024-01-01"), (2, 2, "y", 0, None)]
    )
    con.commit()
    con.close()
    backend = SQLiteBackend(path)
    try:
        assert backend.columns("t") == {"a": "int", "b": "float", "c": "text", "d": "bool", "e": "date"}
    finally:
        backend.close()


def test_types_are_read_again_after_another_connection_changes_the_file(tmp_path: Path) -> None:
    path = _course_file(tmp_path / "p.db", [(1, 30, 10, "Bern")])
    backend = SQLiteBackend(path)
    try:
        assert backend.columns("people")["income"] == "int"
        assert backend.columns("people")["income"] == "int"  # cached
        con = sqlite3.connect(path)
        con.execute("INSERT INTO people VALUES (2, 40, 2.5, 'Basel')")
        con.commit()
        con.close()
        assert backend.columns("people")["income"] == "float"
    finally:
        backend.close()


# ---------------------------------------------------------------- DP-SELECT over it


def _close(value: float, truth: float, accuracy: dict[str, Any]) -> None:
    lo, hi = accuracy["ci95"]
    assert abs(value - truth) <= 3 * (hi - lo) + 1e-9, (value, truth, accuracy)


def test_count_sum_avg_over_untyped_columns_are_close_to_the_truth(
    course: tuple[Database, list[tuple[Any, ...]]],
) -> None:
    db, rows = course
    res = engine.run(db, "eve", "DP-SELECT 100 COUNT(*), SUM(age), AVG(income) FROM people WHERE age >= 20")
    kept = [r for r in rows if r[1] >= 20]
    truths = [len(kept), sum(r[1] for r in kept), sum(r[2] for r in kept) / len(kept)]
    for value, truth, accuracy in zip(res.rows[0], truths, res.accuracy, strict=True):
        _close(value, truth, accuracy)
    assert res.epsilon_spent == 100


def test_group_by_over_an_untyped_text_column(course: tuple[Database, list[tuple[Any, ...]]]) -> None:
    db, rows = course
    res = engine.run(db, "eve", "DP-SELECT 100 city, COUNT(*), AVG(age) FROM people GROUP BY city")
    assert [r[0] for r in res.rows] == ["Bern", "Basel", "Chur"]
    for city, count, mean in res.rows:
        ages = [r[1] for r in rows if r[3] == city]
        assert abs(count - len(ages)) < 5
        assert abs(mean - sum(ages) / len(ages)) < 1


def test_the_attach_command_takes_a_course_file(tmp_path: Path) -> None:
    path = _course_file(tmp_path / "p.db", _rows(200, seed=2))
    (tmp_path / "m.yaml").write_text(
        "tables:\n  people:\n    columns:\n      age: {type: int, lower: 0, upper: 100}\n"
    )
    runner = CliRunner()
    db = str(tmp_path / "db")
    done = runner.invoke(app, ["attach", "people", "--db", db, "--engine", f"sqlite:///{path}",
                               "--metadata", str(tmp_path / "m.yaml")])  # fmt: skip
    assert done.exit_code == 0, done.output
    runner.invoke(app, ["grant", "eve", "--db", db, "--epsilon", "100"])
    asked = runner.invoke(app, ["query", "--db", db, "--analyst", "eve", "DP-SELECT 50 AVG(age) FROM people",
                                "--format", "json"])  # fmt: skip
    assert asked.exit_code == 0, asked.output


# ---------------------------------------------------------------- declared types against the values


def test_a_mixed_column_is_text_and_refused_as_a_number_with_a_count(tmp_path: Path) -> None:
    rows = [(i, i, "secret-value" if i % 10 == 0 else i * 1.5, "Bern") for i in range(100)]
    url = f"sqlite:///{_course_file(tmp_path / 'p.db', rows)}"
    with Database(tmp_path / "db") as db:
        for kind in ("int", "float"):
            with pytest.raises(InvalidParameter) as refused:
                db.attach(
                    "people", url, metadata={"columns": {"income": {"type": kind, "lower": 0, "upper": 9}}}
                )
            message = refused.value.message
            assert "column 'income'" in message and f"declared {kind}" in message
            assert "10 of its 100 values are not numbers" in message
            assert "secret" not in message
        assert db.table_names() == []  # nothing attached
        meta = db.attach("people", url)  # without a declared type: text
        assert meta.column("income").type == "text"
        db.attach("people2", url, source="people", metadata={"columns": {"income": {"type": "category"}}})


@pytest.mark.parametrize(
    ("declared", "storage"), [("int", "int"), ("float", "int"), ("text", "int"), ("category", "int")]
)
def test_a_declared_type_the_values_fit_attaches(tmp_path: Path, declared: str, storage: str) -> None:
    url = f"sqlite:///{_course_file(tmp_path / 'p.db', [(1, 30, 10, 'Bern'), (2, 40, 20, 'Basel')])}"
    with Database(tmp_path / "db") as db:
        meta = db.attach("people", url, metadata={"columns": {"income": {"type": declared}}})
        assert meta.column("income").type == declared and meta.column("income").storage == storage


def test_an_empty_column_is_text_unless_the_metadata_says_otherwise(tmp_path: Path) -> None:
    url = f"sqlite:///{_course_file(tmp_path / 'p.db', [(1, 30, None, 'Bern')])}"
    with Database(tmp_path / "db") as db:
        assert db.attach("a", url, source="people").column("income").type == "text"
        meta = db.attach("b", url, source="people", metadata={"columns": {"income": {"type": "int"}}})
        assert meta.column("income").type == "int" and meta.column("income").storage == "int"
        db.grant("eve", epsilon=10)
        db.attach(
            "c",
            url,
            source="people",
            metadata={"columns": {"income": {"type": "float", "lower": 0, "upper": 9}}},
        )
        assert engine.run(db, "eve", "DP-SELECT 1 COUNT(income) FROM c").rows[0][0] is not None


def test_a_text_column_declared_a_number_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{_course_file(tmp_path / 'p.db', _rows(20, seed=3))}"
    with (
        Database(tmp_path / "db") as db,
        pytest.raises(InvalidParameter, match="20 of its 20 values are not"),
    ):
        db.attach("people", url, metadata={"columns": {"city": {"type": "int"}}})


def test_declared_column_types_still_work(tmp_path: Path) -> None:
    rows = _rows(500, seed=4)
    path = _course_file(tmp_path / "p.db", rows, "people (pid INTEGER, age INTEGER, income REAL, city TEXT)")
    with Database(tmp_path / "db") as db:
        meta = db.attach("people", f"sqlite:///{path}", metadata=META)
        assert {c: m.storage for c, m in meta.columns.items()} == {
            "age": "int", "income": "float", "city": "text", "pid": "int"
        }  # fmt: skip
        assert not any(
            isinstance(t, StoredType) for t in db.backend_for("people")[0].columns("people").values()
        )
        db.grant("eve", epsilon=1000)
        db.noise_source = seeded(3)
        res = engine.run(db, "eve", "DP-SELECT 100 COUNT(*), SUM(age) FROM people")
        for value, truth, accuracy in zip(
            res.rows[0], [len(rows), sum(r[1] for r in rows)], res.accuracy, strict=True
        ):
            _close(value, truth, accuracy)
        with pytest.raises(InvalidParameter, match="declared int but the data holds text"):
            db.attach(
                "again", f"sqlite:///{path}", source="people", metadata={"columns": {"city": {"type": "int"}}}
            )


def test_a_query_never_depends_on_the_values_a_column_holds_now(tmp_path: Path) -> None:
    """Once attached, a column typed by its values is read with its declared type: a person whose age is
    later stored as text (one row of a neighbouring file) changes no query's outcome (the outcome rule)."""
    outcomes = []
    for i, odd in enumerate((False, True)):
        rows = _rows(500, seed=5)
        path = _course_file(tmp_path / f"people{i}.db", rows)
        db = Database(tmp_path / f"db{i}")
        db.attach("people", f"sqlite:///{path}", metadata=META)
        db.grant("eve", epsilon=1000)
        if odd:  # the owner's file changes after the attach: one value of another type
            con = sqlite3.connect(path)
            con.execute("INSERT INTO people VALUES (9999, 'forty', 100.0, 'x')")
            con.commit()
            con.close()
        res = engine.run(db, "eve", "DP-SELECT 1 COUNT(*), SUM(age), AVG(income) FROM people WHERE age > 30")
        outcomes.append((res.columns, len(res.rows), res.epsilon_spent))
        db.close()
    assert outcomes[0] == outcomes[1]
