"""User-level bounding's per-unit choice (issue 30): with ``max_groups: 1`` each unit keeps one of its groups
with one ``arg_max`` aggregate (DuckDB; Spark's ``max_by``), no window; the choice is uniform among the unit's
groups (chi-square, false-failure rate ≤ 1e-6 at a fixed seed); and where no unit exceeds the bounds the
bounded answer is plain SQL's on DuckDB and SQLite (tests/test_truth_oracle.py runs the same shapes on
PostgreSQL and a Spark sample at ε = 1000).
"""

from __future__ import annotations

import random
import sqlite3
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from conftest import ALPHA, seeded
from privdb.backends.names import layout_of
from privdb.database import Database
from privdb.sql import engine
from privdb.sql.plan.truncation import COLUMN as T_COLUMN
from privdb.sql.plan.types import Plan
from test_truth_oracle import compare

KINDS = ["a", "b", "c", "d"]
SIZES = {
    "a": 1,
    "b": 2,
    "c": 3,
    "d": 4,
}  # rows per kind in every unit: a choice weighted by rows is not uniform
UNITS = 4000


def _meta(m: int, g: int) -> dict[str, object]:
    return {
        "privacy_unit": "pid",
        "max_contributions": m,
        "max_groups": g,
        "columns": {
            "pid": {"type": "int", "private_id": True},
            "kind": {"type": "category", "values": KINDS},
            "cost": {"type": "float", "lower": 0, "upper": 100},
        },
    }


def _heavy() -> pd.DataFrame:
    """Every unit holds 1, 2, 3, 4 rows of kinds a, b, c, d."""
    rows = [(u, k, 1.0) for u in range(UNITS) for k in KINDS for _ in range(SIZES[k])]
    return pd.DataFrame(rows, columns=["pid", "kind", "cost"])


def _light(seed: int = 5) -> pd.DataFrame:
    """Within ``m = 3, G = 1``: each unit 1–3 rows of one kind (a few NULL costs)."""
    rng = random.Random(seed)
    rows = []
    for u in range(600):
        kind = rng.choice(KINDS)
        for _ in range(rng.randint(1, 3)):
            cost = None if rng.random() < 0.05 else round(100 * rng.random(), 2)
            rows.append((u, kind, cost))
    return pd.DataFrame(rows, columns=["pid", "kind", "cost"])


def _db(path: Path, frame: pd.DataFrame, m: int, g: int) -> Database:
    db = Database(path)
    frame.to_parquet(path.with_suffix(".parquet"))
    db.load("visits", path.with_suffix(".parquet"), _meta(m, g))
    db.grant("alice", epsilon=100_000, delta=1e-3)
    db.noise_source = seeded(3)
    return db


def test_one_group_per_unit_is_one_aggregate_without_a_window(tmp_path: Path) -> None:
    with _db(tmp_path / "db", _light(), 3, 1) as db:
        query = "DP-SELECT 1 kind, COUNT(*), SUM(cost) FROM visits{} GROUP BY kind"
        _, sql = engine.prepare(db, query.format(" WHERE cost > 1"))  # the WHERE comes before the bound
        assert "arg_max" in sql.lower() and " OVER " not in sql.upper()
        _, sql = engine.prepare(db, query.format(""))  # the whole table: the group drawn at load
        assert "arg_max" not in sql.lower() and " OVER " not in sql.upper() and "__privdb_kept_" in sql


@pytest.mark.parametrize("drawn", ["by the query", "at load"])
def test_the_kept_group_is_uniform_among_a_units_groups(tmp_path: Path, drawn: str) -> None:
    """Each unit has 4 groups of 1–4 rows; ``m`` is large, so the engine's count of a kind is its size times
    the units that kept it. Those numbers must look Multinomial(UNITS, 1/4): a chi-square with 3 degrees of
    freedom above its 1 − 1e-6 quantile fails (a rule keeping the first group, or weighting by rows, fails
    with certainty at 4,000 units). The group is drawn by the query where it has a WHERE (the bound comes
    after it), else once when the table is written (privdb.backends.duckdb_layout); the engine's
    ``random()`` is seeded (``setseed``) on the connection that draws it."""
    with _db(tmp_path / "db", _heavy(), 100, 1) as db:
        where = " WHERE kind IS NOT NULL" if drawn == "by the query" else ""
        plan, sql = engine.prepare(db, f"DP-SELECT 1 kind, COUNT(*) FROM visits{where} GROUP BY kind")
        assert isinstance(plan, Plan) and ("__privdb_kept_" in sql) == (not where)
        if where:
            db.backend.fetch("SELECT setseed(0.125)")  # this thread's cursor, which runs the next query too
        else:  # the layout drawn again on the connection that writes it
            db.backend._con.execute("SELECT setseed(0.125)")
            db.backend.write_layout("visits", layout_of(db.metadata("visits")))
        frame = db.backend.fetch(sql)
        counts = {row.k0: row.s0 / SIZES[row.k0] for row in frame.itertuples()}
        assert all(float(v).is_integer() for v in counts.values())  # a unit's whole group, never a mix
        observed = [counts.get(k, 0.0) for k in KINDS]
        assert sum(observed) == UNITS and frame[T_COLUMN].sum() == UNITS
        chi2 = sum((o - UNITS / 4) ** 2 / (UNITS / 4) for o in observed)
        assert chi2 < stats.chi2.ppf(1 - ALPHA, df=3), observed


PLAIN = "SELECT kind, COUNT(*), SUM(cost), AVG(cost) FROM visits GROUP BY kind"


@pytest.mark.parametrize("where", ["duckdb", "sqlite"])
def test_bounded_answers_are_plain_sql_where_no_unit_exceeds_the_bounds(tmp_path: Path, where: str) -> None:
    """At ε = 1000 the answer is the plain aggregate within 8 half-widths of its 95% interval (the truth
    oracle's comparison: a false failure ≤ 0.05⁸ per cell); bounding must change nothing here."""
    frame = _light()
    with _db(tmp_path / "db", frame, 3, 1) as db:
        table = "visits"
        if where == "sqlite":
            path = tmp_path / "v.sqlite"
            with closing(sqlite3.connect(path)) as lite:
                frame.to_sql("visits", lite, index=False)
            db.attach("lite", f"sqlite:///{path}", source="visits", metadata=_meta(3, 1))
            table = "lite"
        truth = db.owner_sql(PLAIN)
        res = engine.run(
            db, "alice", f"DP-SELECT 1000 kind, COUNT(*), SUM(cost), AVG(cost) FROM {table} GROUP BY kind"
        )
        problems, _ = compare(res, truth)
        assert not problems, problems
