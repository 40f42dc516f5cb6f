"""Owners never lose data (issue 27): a reload is atomic (a refused, failed or killed load leaves the old
table and its metadata as they were); a CSV's malformed line is refused by name, or skipped and counted when
asked; `privdb infer` never copies free text into a domain."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from privdb.cli import app
from privdb.database import Database

runner = CliRunner()
OLD = "person_id,age,name\n1,30,alice\n2,40,bob\n3,50,carol\n"
OLD_META = "tables:\n  people:\n    columns:\n      age: {type: int, lower: 0, upper: 100}\n"
BAD_LINE = "person_id,age,name\n1,30,alice\n2,40,bob\n3,50,carol,extra\n4,20,dan\n5,21,eve\n6,22,fay\n"


def _invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def loaded(tmp_path: Path) -> Path:
    """A database holding ``people`` (3 rows) with its metadata."""
    (tmp_path / "old.csv").write_text(OLD)
    (tmp_path / "old.yaml").write_text(OLD_META)
    db = tmp_path / "db"
    code, _, err = _invoke("load", "people", str(tmp_path / "old.csv"), "--db", str(db), "--metadata",
                           str(tmp_path / "old.yaml"))  # fmt: skip
    assert code == 0, err
    return db


def _intact(db: Path) -> None:
    """The old table and its metadata, as first loaded."""
    with Database(db) as database:
        assert database.owner_sql("SELECT person_id, age, name FROM people ORDER BY 1").values.tolist() == [
            [1, 30, "alice"], [2, 40, "bob"], [3, 50, "carol"]
        ]  # fmt: skip
        meta = database.metadata("people")
        assert meta.privacy_unit is None and meta.columns["age"].upper == 100
        assert database.catalog.metadata("people") == meta.to_dict()


def test_a_reload_refused_by_its_metadata_keeps_the_old_table(loaded: Path, tmp_path: Path) -> None:
    (tmp_path / "new.csv").write_text("person_id,age,name\n7,31,dave\n")
    (tmp_path / "bad.yaml").write_text(
        "tables:\n  people:\n    privacy_unit: person_id\n    columns:\n"
        "      name: {type: int, lower: 0, upper: 9}\n"
    )
    code, _, err = _invoke("load", "people", str(tmp_path / "new.csv"), "--db", str(loaded), "--metadata",
                           str(tmp_path / "bad.yaml"))  # fmt: skip
    assert code == 2 and "declared int but the data holds text" in err
    _intact(loaded)


def test_a_reload_refused_for_its_columns_or_lines_keeps_the_old_table(loaded: Path, tmp_path: Path) -> None:
    (tmp_path / "hidden.csv").write_text("person_id,__privdb_x\n1,2\n")
    code, _, err = _invoke("load", "people", str(tmp_path / "hidden.csv"), "--db", str(loaded))
    assert code == 2 and "reserved for privdb" in err
    (tmp_path / "bad.csv").write_text(BAD_LINE)
    code, _, err = _invoke("load", "people", str(tmp_path / "bad.csv"), "--db", str(loaded))
    assert code == 2 and "line 4" in err
    _intact(loaded)
    with Database(loaded) as database:
        assert database.table_names() == ["people"]  # no staging table left behind


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six million rows, each person on one: a load that takes seconds even on a quiet machine (reading, then
    the unit counts), so each kill below lands inside it."""
    path = tmp_path_factory.mktemp("big") / "big.csv"
    duckdb.connect().execute(
        f"COPY (SELECT range AS person_id, range % 97 AS age, 'x' || (range % 13) AS name "
        f"FROM range(6000000)) TO '{path}'"
    )
    return path


@pytest.mark.parametrize("delay", [0.0, 0.2, 0.4])
def test_a_reload_killed_midway_leaves_the_old_table_and_metadata(
    loaded: Path, tmp_path: Path, big_csv: Path, delay: float
) -> None:
    """kill -9 of a real `privdb load` at several points of a large reload (reading the file, building the
    hidden per-unit counts): the database opens, with the old table and metadata."""
    (tmp_path / "unit.yaml").write_text(
        "tables:\n  people:\n    privacy_unit: person_id\n    columns:\n"
        "      age: {type: int, lower: 0, upper: 100}\n"
    )
    data = loaded / "data.duckdb"
    before = data.stat().st_size
    process = subprocess.Popen(
        [sys.executable, "-m", "privdb", "load", "people", str(big_csv), "--db", str(loaded), "--metadata",
         str(tmp_path / "unit.yaml")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:  # wait until it writes the new rows
        wal = data.with_name("data.duckdb.wal")
        if data.stat().st_size > before + (1 << 20) or (wal.exists() and wal.stat().st_size > 1 << 20):
            break
        time.sleep(0.02)
    time.sleep(delay)
    assert process.poll() is None, "the load finished before it could be killed: make the file larger"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    _intact(loaded)
    code, out, err = _invoke("sql", "--db", str(loaded), "SELECT COUNT(*) AS n FROM people")
    assert code == 0 and "3" in out, err


def test_a_csv_with_a_bad_line_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "bad.csv").write_text(BAD_LINE)
    db = str(tmp_path / "db")
    code, out, err = _invoke("load", "t", str(tmp_path / "bad.csv"), "--db", db)
    assert code == 2 and "line 4 of 'bad.csv': too many columns" in err and "--skip-bad-lines" in err
    assert "carol" not in err and "extra" not in err  # the line is named, not shown
    code, out, err = _invoke("load", "t", str(tmp_path / "bad.csv"), "--db", db, "--skip-bad-lines")
    assert code == 0 and "5 rows, 3 columns" in out and "skipped 1 malformed line" in err
    with Database(db) as database:
        assert database.owner_sql("SELECT name FROM t ORDER BY person_id")["name"].tolist() == [
            "alice", "bob", "dan", "eve", "fay"
        ]  # fmt: skip


def test_a_value_of_the_wrong_type_past_the_sniffed_sample_names_line_and_column(tmp_path: Path) -> None:
    rows = "\n".join(f"{i},{i % 90}" for i in range(30_000))
    (tmp_path / "late.csv").write_text(f"id,age\n{rows}\n30000,unknown\n")
    code, _, err = _invoke("load", "t", str(tmp_path / "late.csv"), "--db", str(tmp_path / "db"))
    assert code == 2 and "line 30002" in err and "column 'age'" in err and "unknown" not in err


def test_infer_refuses_a_bad_line_and_never_copies_free_text(tmp_path: Path) -> None:
    (tmp_path / "bad.csv").write_text(BAD_LINE)
    code, out, err = _invoke("infer", "t", str(tmp_path / "bad.csv"))
    assert code == 2 and "line 4" in err and out == ""
    code, out, err = _invoke("infer", "t", str(tmp_path / "bad.csv"), "--skip-bad-lines")
    assert code == 0 and "skipped 1 malformed line" in err
    columns = yaml.safe_load(out)["tables"]["t"]["columns"]
    assert columns["name"] == {"type": "text"}  # five people's names: free text, no domain
    assert "alice" not in out and "carol" not in out
    assert "no domain written for name" in err


def test_infer_keeps_short_repeated_codes_and_drops_long_or_unique_text(tmp_path: Path) -> None:
    n = 200
    lines = [f"{'F' if i % 2 else 'M'},note number {i} about someone's day,{'x' * 40 if i % 2 else 'y' * 40}"
             for i in range(n)]  # fmt: skip
    (tmp_path / "f.csv").write_text("sex,note,code\n" + "\n".join(lines) + "\n")
    code, out, err = _invoke("infer", "t", str(tmp_path / "f.csv"))
    columns = yaml.safe_load(out)["tables"]["t"]["columns"]
    assert code == 0 and columns["sex"] == {"type": "category", "values": ["F", "M"]}
    assert columns["note"] == {"type": "text"} and columns["code"] == {"type": "text"}  # unique; long
    assert "no domain written for note, code" in err and "x" * 40 not in out
