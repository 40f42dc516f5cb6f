"""Growing tables (issue 37): `privdb load --append` (the CLI, `load(..., append=True)` in Python, and over
HTTP) adds rows atomically, with the checks of a load; the per-unit row counts and a user-level COUNT are
those of loading the whole file at once; a failing append changes nothing; no stored answer outlives an
append."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import privdb
from conftest import seeded
from privdb.cli import app
from privdb.database import Database
from privdb.errors import InvalidParameter
from privdb.sql import engine
from privdb.sql.answer.noise import NoisyAnswer
from privdb.sql.charge import charged
from serverfixtures import Server

runner = CliRunner()
HEADER = "pid,age,income,sex"
META = """tables:
  people:
    privacy_unit: pid
    max_contributions: 2
    columns:
      pid: {type: int, private_id: true}
      age: {type: int, lower: 0, upper: 100}
      income: {type: float, lower: 0, upper: 100000}
      sex: {type: category, values: [F, M]}
"""
COUNT = "DP-SELECT 1 COUNT(*) FROM people"


def _rows(n: int, seed: int) -> list[str]:
    """People of 400 ids, 1 to many rows each (and a few rows without an id), in random order."""
    rng = random.Random(seed)
    rows = [f"{rng.randrange(400)},{rng.randrange(90)},{rng.randrange(90_000)}.5,{rng.choice('FM')}"
            for _ in range(n)]  # fmt: skip
    for at in (7, n - 5):  # no id: the rows without one are one unit, as in a load (in both parts)
        rows[at] = f",{rng.randrange(90)},100.5,F"
    return rows


def _write(path: Path, rows: list[str], header: str = HEADER) -> Path:
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def _invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def parts(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The metadata, a first part and a second part whose people overlap the first's."""
    rows = _rows(3000, seed=1)
    meta = tmp_path / "people.yaml"
    meta.write_text(META)
    return meta, _write(tmp_path / "a.csv", rows[:1800]), _write(tmp_path / "b.csv", rows[1800:])


def _state(db: Path) -> tuple[list[tuple[object, ...]], object]:
    """Each unit's rows and hidden count, and an analyst's user-level COUNT under seeded noise."""
    with Database(db) as database:
        counts = database.owner_sql(
            "SELECT pid, COUNT(*) AS n, MIN(__privdb_rows_per_pid) AS lo, MAX(__privdb_rows_per_pid) AS hi "
            "FROM people GROUP BY pid ORDER BY pid NULLS FIRST"
        )
        assert database.backend.unit_rows("people", "pid") is not None  # current: the comment matches
        if not database.catalog.has_analyst("ann"):
            database.grant("ann", epsilon=10)
        database.noise_source = seeded(5)
        answer = engine.run(database, "ann", COUNT).rows[0][0]
    rows = [tuple(None if pd.isna(v) else int(v) for v in r) for r in counts.itertuples(index=False)]
    return rows, answer


def test_an_append_over_the_cli_is_the_whole_file_loaded_at_once(
    parts: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    meta, first, second = parts
    whole = _write(
        tmp_path / "whole.csv", first.read_text().splitlines()[1:] + second.read_text().splitlines()[1:]
    )
    code, _, err = _invoke(
        "load", "people", str(first), "--db", str(tmp_path / "grown"), "--metadata", str(meta)
    )
    assert code == 0, err
    code, out, err = _invoke("load", "people", str(second), "--db", str(tmp_path / "grown"), "--append")
    assert code == 0 and "added 1,200 rows to people: 3,000 rows" in out, err
    code, _, err = _invoke(
        "load", "people", str(whole), "--db", str(tmp_path / "once"), "--metadata", str(meta)
    )
    assert code == 0, err
    grown, once = _state(tmp_path / "grown"), _state(tmp_path / "once")
    assert grown == once
    assert all(n == lo == hi for _, n, lo, hi in grown[0])  # every row holds its unit's count in the table
    # the bound's share told after an append is the whole table's, as after the load of the whole file
    assert "of the 3,000 rows" in err


def test_an_append_in_python_checks_the_file_and_keeps_the_metadata(
    parts: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    meta, first, second = parts
    with privdb.connect(tmp_path / "db") as owner:
        owner.load("people", first, meta)
        with pytest.raises(InvalidParameter, match="keep its metadata"):
            owner.load("people", second, meta, append=True)
        kept = owner.load("people", second, append=True)
        assert kept.max_contributions == 2 and kept.columns["income"].upper == 100000
        assert int(owner.owner_sql("SELECT COUNT(*) AS n FROM people")["n"].iloc[0]) == 3000
        shuffled = _write(tmp_path / "c.csv", ["M,1,5,40.5"], header="sex,pid,age,income")  # any order
        owner.load("people", shuffled, append=True)
        added = owner.owner_sql("SELECT sex, age FROM people WHERE pid = 1 AND income = 40.5")
        assert added.values.tolist() == [["M", 5]]
        _write(tmp_path / "d.csv", ["1,5,40.5"], header="pid,agee,income")
        with pytest.raises(
            InvalidParameter, match=r"missing 'age', 'sex'; not in the table 'agee'; did you mean"
        ):
            owner.load("people", tmp_path / "d.csv", append=True)
        with pytest.raises(privdb.errors.UnknownTable):
            owner.load("nobody", second, append=True)


def _bad(tmp_path: Path) -> Path:
    rows = _rows(500, seed=3)
    rows[300] = "17,44,not-a-number,F"
    return _write(tmp_path / "bad.csv", rows)


def test_a_failing_append_changes_nothing(parts: tuple[Path, Path, Path], tmp_path: Path) -> None:
    meta, first, _ = parts
    db = str(tmp_path / "db")
    assert _invoke("load", "people", str(first), "--db", db, "--metadata", str(meta))[0] == 0
    before = _state(tmp_path / "db")
    code, _, err = _invoke("load", "people", str(_bad(tmp_path)), "--db", db, "--append")
    assert code == 2 and "line 302 of 'bad.csv': column 'income' holds a value that is not a float" in err
    assert "not-a-number" not in err and "--skip-bad-lines" in err
    assert _state(tmp_path / "db") == before  # rows, counts and the answer: the table as it was
    code, out, err = _invoke(
        "load", "people", str(_bad(tmp_path)), "--db", db, "--append", "--skip-bad-lines"
    )
    assert code == 0 and "added 499 rows" in out and "skipped 1 malformed line" in err


def test_no_stored_answer_outlives_an_append(tmp_path: Path) -> None:
    meta = tmp_path / "m.yaml"
    meta.write_text(META.replace("people:", "visits:") + META.split("tables:\n")[1])
    people = _write(tmp_path / "people.csv", _rows(600, seed=4))
    visits = _write(tmp_path / "visits.csv", _rows(300, seed=5))
    with Database(tmp_path / "db") as db:
        db.load("people", people, meta)
        db.load("visits", visits, meta)
        db.grant("ann", epsilon=100)
        joined = "DP-SELECT 1 COUNT(*) FROM people p JOIN visits v ON p.pid = v.pid"
        for query in (COUNT, joined):
            first = engine.run(db, "ann", query)
            repeat = engine.run(db, "ann", query)
            assert repeat.cached and repeat.rows == first.rows and repeat.epsilon_spent == 0
        db.append("visits", _write(tmp_path / "more.csv", _rows(200, seed=6)))
        # the join read visits, though people is its first table: it is answered afresh, and paid
        again = engine.run(db, "ann", joined)
        assert not again.cached and again.epsilon_spent == 1
        assert engine.run(db, "ann", COUNT).cached  # people did not change: its answer stands
        db.append("people", _write(tmp_path / "more2.csv", _rows(200, seed=7)))
        assert not engine.run(db, "ann", COUNT).cached
        assert engine.run(db, "ann", COUNT).cached
        db.owner_sql("INSERT INTO people SELECT * FROM people LIMIT 5")  # the owner's own write, the same
        assert not engine.run(db, "ann", COUNT).cached


def test_an_answer_read_while_an_append_commits_is_not_stored(tmp_path: Path) -> None:
    """An answer whose read started before an append changed the data is never stored for the new data."""
    meta = tmp_path / "m.yaml"
    meta.write_text(META)
    with Database(tmp_path / "db") as db:
        db.load("people", _write(tmp_path / "p.csv", _rows(100, seed=8)), meta)
        db.grant("ann", epsilon=10)
        more = _write(tmp_path / "more.csv", _rows(10, seed=9))

        def read() -> int:
            count = int(db.owner_sql("SELECT COUNT(*) AS n FROM people")["n"].iloc[0])
            db.append("people", more)  # the owner's append commits while this answer is on its way
            return count

        def respond(count: int) -> NoisyAnswer:
            return NoisyAnswer(columns=["n"], rows=[[count]], accuracy=[])

        kwargs = {"key": "k", "table": "people", "epsilon": 1.0, "delta": 0.0, "respond": respond}
        assert charged(db, "ann", read=read, **kwargs).rows == [[100]]
        assert db.catalog.stored_answer("ann", "k") is None  # read from the old rows: not kept for the new
        assert charged(db, "ann", read=lambda: 110, **kwargs).rows == [[110]]
        assert db.catalog.stored_answer("ann", "k") is not None


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    path = tmp_path_factory.mktemp("append") / "db"
    with Database(path) as db:
        token = db.catalog.add_owner_token()
    running = Server(path).start()
    try:
        yield running, token
    finally:
        running.stop()


def test_an_append_over_http_is_the_whole_file_loaded_at_once(
    server: tuple[Server, str], parts: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    running, token = server
    meta, first, second = parts
    with privdb.connect(running.url, token=token) as owner:
        owner.load("people", first, meta)
        answer = owner.load("people", second, append=True)
        assert answer["appended"] == 1200 and answer["rows"] == 3000
        assert answer["contributions"]["max_contributions"] == 2
        remote = ("--url", running.url, "--token", token, "--append")
        code, out, err = _invoke("load", "people", str(_bad(tmp_path)), *remote)
        assert code == 2 and "line 302 of 'bad.csv'" in err and "not-a-number" not in err
        code, out, err = _invoke(
            "load", "people", str(second), "--url", running.url, "--token", token, "--append"
        )
        assert code == 0 and "added 1,200 rows to people: 4,200 rows" in out, err
        remote = owner.owner_sql(
            "SELECT pid, COUNT(*) AS n, MIN(__privdb_rows_per_pid) AS lo, MAX(__privdb_rows_per_pid) AS hi "
            "FROM people GROUP BY pid"
        )
    assert (remote["n"] == remote["lo"]).all() and (remote["n"] == remote["hi"]).all()
    assert int(remote["n"].sum()) == 4200


def test_an_append_over_http_reads_the_file_as_the_tables_types(
    server: tuple[Server, str], tmp_path: Path
) -> None:
    running, token = server
    (tmp_path / "c.yaml").write_text("tables:\n  codes:\n    columns:\n      code: {type: text}\n")
    (tmp_path / "c.csv").write_text("id,code\n1,A7\n2,00042\n")
    (tmp_path / "more.csv").write_text(
        "code,id\n00077,3\n"
    )  # alone, DuckDB would read 00077 as the number 77
    with privdb.connect(running.url, token=token) as owner:
        owner.load("codes", tmp_path / "c.csv", tmp_path / "c.yaml")
        owner.load("codes", tmp_path / "more.csv", append=True)
        assert owner.owner_sql("SELECT code FROM codes ORDER BY id")["code"].tolist() == [
            "A7",
            "00042",
            "00077",
        ]
