"""Adversarial group keys (issue 13, finding 8): NULL, NaN, ±inf, −0.0, '', unicode, NaT, dates.

DuckDB hands such keys to privdb as ``pd.NA``, NaN, ``NaT``, numpy scalars or timestamps; sorting them with
``(v is None, v)`` raised after the engine had read the data, so a query with one NULL key in an integer
column failed — charged — exactly when such a row existed. Here two neighbouring databases differ by one
row holding the special key, either joining a large group of that key or alone; every query must answer on
both, with the same columns and the same released keys (a one-row key passes the noisy threshold with
probability ≤ δ = 1e-9 per query: over the ≈ 200 queries below the false-failure rate is < 1e-6), and the
answer must survive JSON (it is stored, and served again from there).
"""

from __future__ import annotations

import datetime
import json
import random
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import seeded
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine
from privdb.sql.front.keys import canonical_key, order_key

# (SQL type of the key column, ordinary keys, special keys) — keys written as DuckDB text, cast on load
KEY_TYPES: dict[str, tuple[str, list[str], list[str | None]]] = {
    "int": ("BIGINT", ["-7", "0", "42"], [None]),
    "float": ("DOUBLE", ["-1.5", "1", "2.25"], [None, "nan", "inf", "-inf", "-0.0"]),
    "text": ("VARCHAR", ["a", "b", "NULL"], [None, "", "é中🙂\u200b", "nan"]),
    "date": ("DATE", ["2020-01-01", "1999-12-31", "2024-02-29"], [None, "1970-01-01"]),
    "timestamp": ("TIMESTAMP", ["2020-01-01 10:00:00", "2020-01-01 00:00:00"], [None]),
    "bool": ("BOOLEAN", ["true"], [None, "false"]),  # public domain {false, true}: NULL is not released
}
QUERIES = [
    "DP-SELECT 1 DELTA 1e-9 k, COUNT(*), SUM(v), AVG(v), VARIANCE(v) FROM t GROUP BY k ORDER BY k",
    "DP-SELECT 1 DELTA 1e-9 k, MEDIAN(v), MODE(cat) FROM t GROUP BY k ORDER BY k DESC",
    "DP-SELECT 1 DELTA 1e-9 k, cat, COUNT(*) AS n FROM t GROUP BY k, cat ORDER BY n",
]
GROUP = 300  # rows per ordinary key: far above any threshold below


def _frame(keys: list[str | None], rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "pid": np.arange(rows),
            "k": pd.Series(keys, dtype="object"),
            "v": rng.integers(0, 10, rows),
            "cat": rng.choice(["x", "y"], rows),
        }
    )


def _database(path: Path, keys: list[str | None], sql_type: str, unit: bool, seed: int) -> Database:
    db = Database(path)
    db.backend.load_frame("t", _frame(keys, len(keys), seed))
    db.backend.raw(f"ALTER TABLE t ALTER COLUMN k SET DATA TYPE {sql_type}")  # 'nan' → NaN, '-0.0' → −0.0
    meta: dict[str, Any] = {
        "columns": {
            "v": {"type": "int", "lower": 0, "upper": 10},
            "cat": {"type": "category", "values": ["x", "y"]},
        }
    }
    if unit:
        meta |= {"privacy_unit": "pid", "max_contributions": 1}
        meta["columns"]["pid"] = {"type": "int", "private_id": True}
    db.set_metadata("t", meta)
    db.grant("eve", epsilon=1000, delta=1e-3)
    db.noise_source = seeded(seed)
    return db


def _outcome(db: Database, query: str) -> tuple[Any, ...]:
    """What the analyst sees besides the noisy values: the error code, or the columns, the released keys
    (canonical, in their order when unordered by a noisy value) and the shape of the accuracy entries."""
    try:
        result = engine.run(db, "eve", query)
    except PrivdbError as err:
        return ("error", err.code)
    stored = json.loads(json.dumps(result.to_dict()))  # what the catalog stores and serves again
    again = engine.run(db, "eve", query)
    assert again.cached and json.loads(json.dumps(again.to_dict()))["rows"] == stored["rows"]
    nkeys = sum(1 for name in result.columns if name in ("k", "cat"))
    keys = sorted((tuple(canonical_key(v) for v in row[:nkeys]) for row in result.rows), key=order_key)
    shape = [sorted(entry) for entry in result.accuracy]
    return ("ok", tuple(result.columns), tuple(keys), json.dumps(shape))


CASES = [
    (kind, special, joins)
    for kind, (_, _, specials) in KEY_TYPES.items()
    for special in specials
    for joins in (True, False)
]


@pytest.mark.parametrize(("kind", "special", "joins"), CASES)
def test_a_special_key_row_changes_nothing_but_noise(
    tmp_path: Path, kind: str, special: str | None, joins: bool
) -> None:
    sql_type, ordinary, _ = KEY_TYPES[kind]
    base = [key for key in ordinary for _ in range(GROUP)] + ([special] * GROUP if joins else [])
    random.Random(1).shuffle(base)
    grown = [*base, special]
    unit = kind in ("float", "text")  # user-level bounding too (IS NOT DISTINCT FROM on NULL/NaN keys)
    outcomes = []
    for i, keys in enumerate((base, grown)):
        db = _database(tmp_path / f"d{i}", keys, sql_type, unit, seed=100 + i)
        try:
            outcomes.append([_outcome(db, query) for query in QUERIES])
        finally:
            db.close()
    assert outcomes[0] == outcomes[1]
    for outcome in outcomes[0]:
        assert outcome[0] == "ok", outcome
    released = {key[0] for key in outcomes[0][0][2]}
    # every ordinary key, the special one when it is a large group (bool: its public domain, always)
    assert len(released) == (2 if kind == "bool" else len(ordinary) + joins)


def test_nan_and_null_are_one_key_and_minus_zero_is_zero(tmp_path: Path) -> None:
    """NaN and NULL meet in one null key (their counts added), −0.0 and 0.0 in one 0.0 key."""
    keys: list[str | None] = [None] * 200 + ["nan"] * 200 + ["0.0"] * 200 + ["-0.0"] * 200
    db = _database(tmp_path / "d", keys, "DOUBLE", unit=False, seed=5)
    try:
        result = engine.run(db, "eve", "DP-SELECT 10 DELTA 1e-9 k, COUNT(*) FROM t GROUP BY k")
    finally:
        db.close()
    assert [row[0] for row in result.rows] == [0.0, None]
    assert [str(row[0]) for row in result.rows] == ["0.0", "None"]  # never "-0.0"
    assert all(abs(row[1] - 400) < 20 for row in result.rows)


def test_date_keys_are_iso_text(tmp_path: Path) -> None:
    keys: list[str | None] = ["2024-02-29"] * 300 + ["2024-03-01"] * 300 + [None] * 300
    db = _database(tmp_path / "d", keys, "DATE", unit=False, seed=6)
    try:
        result = engine.run(db, "eve", "DP-SELECT 10 DELTA 1e-9 k, COUNT(*) FROM t GROUP BY k")
    finally:
        db.close()
    assert [row[0] for row in result.rows] == ["2024-02-29", "2024-03-01", None]


# ---------------------------------------------------------------- canonical keys and their order

WEIRD: list[Any] = [
    None, pd.NA, pd.NaT, float("nan"), np.float64("nan"), np.datetime64("NaT"),
    0.0, -0.0, np.float32(-0.0), 1, np.int64(1), True, np.bool_(False), float("inf"), -float("inf"),
    "", "a", "é中🙂", "NULL", "nan", b"\x00\\x", bytearray(b"a"),
    datetime.date(2020, 1, 1), pd.Timestamp("2020-01-01"), pd.Timestamp("2020-01-01 10:00:00.000000001"),
    pd.Timestamp("2020-01-01 10:00", tz="Europe/Zurich"), datetime.datetime(2020, 1, 1, 9, 0),
    datetime.time(10, 30), pd.Timedelta(days=1), datetime.timedelta(seconds=5), np.timedelta64(3, "s"),
    uuid.UUID(int=7), np.array([1, 2]), [1, None, float("nan")], {"a": 1, "b": pd.NA},
]  # fmt: skip


def test_canonical_keys_are_hashable_json_and_meet_where_they_should() -> None:
    canon = [canonical_key(v) for v in WEIRD]
    json.dumps(canon)
    assert len({hash(c) for c in canon}) > 1
    assert {canonical_key(v) for v in (None, pd.NA, pd.NaT, float("nan"), np.datetime64("NaT"))} == {None}
    assert str(canonical_key(-0.0)) == str(canonical_key(np.float32(-0.0))) == "0.0"
    assert (
        canonical_key(pd.Timestamp("2020-01-01")) == canonical_key(datetime.date(2020, 1, 1)) == "2020-01-01"
    )
    assert canonical_key(pd.Timestamp("2020-01-01 10:00", tz="Europe/Zurich")) == "2020-01-01 09:00:00+00:00"
    assert canonical_key(np.array([1, 2])) == (1, 2) and canonical_key([1, None, float("nan")]) == (
        1,
        None,
        None,
    )
    assert canonical_key(b"\x00\\x") == "\\x00\\x5Cx"


def test_order_key_is_a_total_order_whatever_the_input_order() -> None:
    """Sorting any shuffle of mixed values gives one order: the released order depends on the keys only."""
    first = [canonical_key(v) for v in sorted(WEIRD, key=order_key)]
    for seed in range(50):
        shuffled = WEIRD.copy()
        random.Random(seed).shuffle(shuffled)
        assert [canonical_key(v) for v in sorted(shuffled, key=order_key)] == first
    assert first[-1] is None  # null last
    keys = [(1, None), (None, "a"), (1, "a"), (float("-inf"), ""), (None, None)]
    assert sorted(keys, key=lambda g: tuple(order_key(v) for v in g)) == [
        (float("-inf"), ""), (1, "a"), (1, None), (None, "a"), (None, None),
    ]  # fmt: skip
