"""Issue 26, items 1 and 7: HAVING and ORDER BY mean what plain SQL means, or are refused before reading.

SmartNoise's PUMS metadata declares sex, educ, race and married ``type: string`` while the CSV holds their
codes as numbers, so the engine stores integers. There ``HAVING sex = 1`` dropped every group (the key was
compared as text with a number and gave NULL), ``COUNT(*) / CAST(educ AS INTEGER)`` was NULL in every group,
and the same comparison in WHERE was refused. Now a text column stored as numbers meets numbers as numbers
(and stands as a condition, non-zero true) in WHERE and HAVING alike; a real text key compared with a number
is refused before reading in both, free. At a huge ε every answer equals plain SQL on the same engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import seeded
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine

META: dict[str, Any] = {  # as SmartNoise's PUMS.yaml maps: codes declared string
    "columns": {
        "age": {"type": "int", "lower": 0, "upper": 100},
        "sex": {"type": "text"},
        "educ": {"type": "text"},
        "married": {"type": "text"},
        "city": {"type": "text"},
    }
}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    rng = np.random.default_rng(26)
    n = 3000
    frame = pd.DataFrame(
        {
            "age": rng.integers(0, 100, n),
            "sex": rng.integers(0, 2, n),  # stored as integers, declared text
            "educ": rng.integers(1, 17, n),
            "married": rng.integers(0, 2, n),
            "city": rng.choice(["Bern", "Chur", "Thun"], n),  # real text
        }
    )
    made = Database(tmp_path_factory.mktemp("typed"))
    made.backend.load_frame("pums", frame)
    made.set_metadata("pums", META)
    made.grant("eve", epsilon=1e6, delta=0.5)
    made.noise_source = seeded(26)
    yield made
    made.close()


def _plain(db: Database, sql: str) -> list[list[Any]]:
    frame = db.backend.raw(sql)
    return [[None if pd.isna(v) else v for v in row] for row in frame.itertuples(index=False, name=None)]


def _close(got: list[list[Any]], want: list[list[Any]]) -> None:
    assert len(got) == len(want), (got, want)
    for g, w in zip(got, want, strict=True):
        assert len(g) == len(w)
        for a, b in zip(g, w, strict=True):
            if isinstance(b, int | float | np.number) and not isinstance(b, bool):
                assert a is not None and abs(float(a) - float(b)) <= 1e-3 * max(1.0, abs(float(b))), (g, w)
            else:
                assert str(a) == str(b), (g, w)


# (DP-SELECT at ε = 1000, the plain SQL it must equal); keys are the stored codes, released as text
AGREES = [
    ("DP-SELECT 1000 DELTA 1e-9 sex, COUNT(*) FROM pums GROUP BY sex HAVING sex = 1",
     "SELECT sex, COUNT(*) FROM pums GROUP BY sex HAVING sex = 1"),
    ("DP-SELECT 1000 DELTA 1e-9 married, COUNT(*) FROM pums GROUP BY married HAVING married",
     "SELECT married, COUNT(*) FROM pums GROUP BY married HAVING married <> 0"),
    ("DP-SELECT 1000 DELTA 1e-9 sex, COUNT(*) FROM pums GROUP BY sex HAVING NOT (sex = TRUE)",
     "SELECT sex, COUNT(*) FROM pums GROUP BY sex HAVING NOT (sex <> 0)"),
    ("DP-SELECT 1000 DELTA 1e-9 educ, COUNT(*) FROM pums GROUP BY educ HAVING CAST(educ AS INTEGER) > 5 "
     "ORDER BY CAST(educ AS INTEGER)",
     "SELECT educ, COUNT(*) FROM pums GROUP BY educ HAVING educ > 5 ORDER BY educ"),
    ("DP-SELECT 1000 DELTA 1e-9 educ, COUNT(*) / CAST(educ AS INTEGER) AS r FROM pums GROUP BY educ "
     "ORDER BY CAST(educ AS INTEGER)",
     "SELECT educ, COUNT(*) / educ FROM pums GROUP BY educ ORDER BY educ"),
    ("DP-SELECT 1000 DELTA 1e-9 sex, COUNT(*) FROM pums GROUP BY sex HAVING sex = 1 OR sex = '0' "
     "ORDER BY sex",
     "SELECT sex, COUNT(*) FROM pums GROUP BY sex ORDER BY sex"),
    ("DP-SELECT 1000 COUNT(*) FROM pums WHERE sex = 1 AND married",
     "SELECT COUNT(*) FROM pums WHERE sex = 1 AND married <> 0"),
    ("DP-SELECT 1000 COUNT(*) FROM pums WHERE educ BETWEEN 3 AND 7 OR sex IN (0)",
     "SELECT COUNT(*) FROM pums WHERE educ BETWEEN 3 AND 7 OR sex IN (0)"),
    ("DP-SELECT 1000 COUNT(*) FROM pums WHERE sex = '1'", "SELECT COUNT(*) FROM pums WHERE sex = 1"),
    # ORDER BY an expression over output columns; one aggregate selected twice
    ("DP-SELECT 1000 DELTA 1e-9 educ, COUNT(*) AS n FROM pums GROUP BY educ ORDER BY -n, educ LIMIT 4",
     "SELECT CAST(educ AS VARCHAR) AS e, COUNT(*) AS n FROM pums GROUP BY e ORDER BY -n, e LIMIT 4"),
    ("DP-SELECT 1000 COUNT(*), COUNT(*) AS again, AVG(age), AVG(age) FROM pums",
     "SELECT COUNT(*), COUNT(*), AVG(age), AVG(age) FROM pums"),
    ("DP-SELECT .5 DELTA .001 COUNT(*) FROM pums WHERE age > .5", None),
]  # fmt: skip


@pytest.mark.parametrize(("query", "plain"), AGREES)
def test_answers_equal_plain_sql_at_a_huge_epsilon(db: Database, query: str, plain: str | None) -> None:
    result = engine.run(db, "eve", query)
    assert result.rows, query
    if plain is not None:
        _close(result.rows, _plain(db, plain))
    assert all(isinstance(v, int) for v in (r[-1] for r in result.rows)) or "AVG" in query or "/" in query


def test_a_selected_twice_aggregate_costs_once_and_names_its_columns(db: Database) -> None:
    before = db.budget("eve").epsilon_spent
    result = engine.run(db, "eve", "DP-SELECT 1 AVG(age), AVG(age), COUNT(*) AS n, COUNT(*) AS m FROM pums")
    assert result.columns == ["AVG(age)", "AVG(age)_1", "n", "m"]
    assert result.rows[0][0] == result.rows[0][1] and result.rows[0][2] == result.rows[0][3]
    assert [a["column"] for a in result.accuracy] == result.columns
    assert db.budget("eve").epsilon_spent - before == 1


@pytest.mark.parametrize(
    "query",
    [
        "DP-SELECT 1 city, COUNT(*) FROM pums GROUP BY city HAVING city = 1",
        "DP-SELECT 1 city, COUNT(*) FROM pums GROUP BY city HAVING city",
        "DP-SELECT 1 city, COUNT(*) FROM pums GROUP BY city HAVING NOT (city = TRUE)",
        "DP-SELECT 1 city, COUNT(*) AS n FROM pums GROUP BY city ORDER BY city + n",
        "DP-SELECT 1 COUNT(*) FROM pums WHERE city = 1",
    ],
)
def test_a_real_text_key_meeting_a_number_is_refused_free(db: Database, query: str) -> None:
    """WHERE and HAVING agree: refused before reading, never an empty answer that was paid for."""
    before = db.budget("eve").epsilon_spent
    with pytest.raises(PrivdbError) as caught:
        engine.run(db, "eve", query.replace("DP-SELECT 1 ", "DP-SELECT 1 DELTA 1e-6 ", 1))
    assert caught.value.code == "unsupported_query"
    assert "text" in caught.value.message
    assert db.budget("eve").epsilon_spent == before


def test_cast_of_real_text_reads_as_try_cast(db: Database) -> None:
    """CAST of a text key in HAVING reads it as TRY_CAST does (NULL where not a number), as in WHERE."""
    query = (
        "DP-SELECT 1000 DELTA 1e-9 city, COUNT(*) FROM pums GROUP BY city HAVING CAST(city AS DOUBLE) IS NULL"
    )
    assert sorted(r[0] for r in engine.run(db, "eve", query).rows) == ["Bern", "Chur", "Thun"]
    assert not engine.run(db, "eve", query.replace("IS NULL", "> 0")).rows
