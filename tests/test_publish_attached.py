"""Publishing a table attached from another engine (a SQLite file here; PostgreSQL and Spark go through the
same ``table_rows``): the release is read from that engine and is the one the same rows loaded into DuckDB
give, charged alike."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import seeded
from privdb.database import Database
from privdb.publish.service import publish_request, table_rows

META: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": 1,
    "columns": {
        "pid": {"type": "int", "private_id": True},
        "age": {"type": "int", "lower": 0, "upper": 100},
        "city": {"type": "category", "values": ["Bern", "Basel", "Chur"]},
    },
}


def _people(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    return pd.DataFrame(
        {
            "pid": np.arange(n),
            "age": rng.integers(0, 101, n),
            "city": np.array(["Bern", "Basel", "Chur"])[rng.integers(0, 3, n)],
        }
    )


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    frame = _people(600)
    path = tmp_path / "people.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE people (pid INTEGER, age INTEGER, city TEXT)")
    con.executemany("INSERT INTO people VALUES (?, ?, ?)", frame.itertuples(index=False, name=None))
    con.commit()
    con.close()
    database = Database(tmp_path / "db")
    database.backend.load_frame("duck", frame)
    database.set_metadata("duck", META)
    database.attach("lite", f"sqlite:///{path}", source="people", metadata=META)
    yield database
    database.close()


def test_an_attached_table_is_read_from_its_engine(db: Database) -> None:
    lite = table_rows(db, "lite").sort_values("pid").reset_index(drop=True)
    duck = table_rows(db, "duck")
    assert not [c for c in duck.columns if c.startswith("__privdb_")]  # the hidden columns stay hidden
    duck = duck.sort_values("pid").reset_index(drop=True)
    pd.testing.assert_frame_equal(lite[duck.columns], duck, check_dtype=False)


def test_a_histogram_of_an_attached_table_is_the_duckdb_copy_s(db: Database) -> None:
    options = {"columns": [["city"], ["age"]], "bins": {"age": 5}, "epsilon": 1.0}
    released = {}
    for table in ("duck", "lite"):
        db.noise_source = seeded(21)
        released[table] = publish_request(db, "histogram", table, options)
    # the released counts are the same (the intervals' widths are simulated from the public noise laws
    # with fresh draws each time: privdb.publish.marginals)
    counts = {t: [row[:3] + row[5:] for row in released[t]["rows"]] for t in released}
    assert counts["lite"] == counts["duck"]
    spent = {s.note.split()[2] for s in db.ledger.spends(None, db.name) if s.note.startswith("publish")}
    assert {"duck", "lite"} <= spent  # each release charged to its own table
