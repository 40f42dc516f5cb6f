"""Spark tables privdb writes (``privdb load --engine spark://…``, privdb.engine_loads): the per-unit layout
beside the rows, used while the files are the ones written, and the same statistics as DuckDB's for every
DP-SELECT form of tests/test_engines.py. Slow (Spark local[2], one session for the module)."""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from privdb.backends.names import unit_choice_column, unit_rows_column
from privdb.cli import app
from privdb.database import Database
from privdb.engine_loads import load_engine, written_layout
from privdb.errors import InvalidParameter, PrivdbError
from privdb.sql import engine
from privdb.sql.run import targets
from test_engines import META, QUERIES, _people, engine_statistics

pytestmark = pytest.mark.slow
SPARK = "spark://local[2]"


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark_loaded")


@pytest.fixture(scope="module")
def db(work: Path) -> Iterator[Database]:
    frame = _people(400, seed=3)
    frame.to_parquet(work / "people.parquet")
    database = Database(work / "db")
    home = frame.city[frame.pid == 0].iloc[0]  # a unit in one city: the group it keeps is not drawn
    more = pd.DataFrame({"pid": [0, 0, 0, 10_000], "age": [30, 31, 32, 33], "income": [1.0, 2, 3, 4],
                         "city": [home] * 3 + ["Chur"]})  # fmt: skip
    more.to_parquet(work / "more.parquet")
    # DuckDB's tables first (the Spark tests compare with them): as loaded, with m = 4, and appended to
    for name, rows, meta in (("duck", frame, META), ("duck4", frame, META | {"max_contributions": 4}),
                             ("duck2", pd.concat([frame, more], ignore_index=True), META)):  # fmt: skip
        database.backend.load_frame(name, rows)
        database.set_metadata(name, meta)
    owners = frame.drop_duplicates("pid")[["pid", "city"]]
    owners.to_parquet(work / "owners.parquet")
    owned = {"privacy_unit": "pid", "max_contributions": 1,
             "columns": {"pid": META["columns"]["pid"], "city": META["columns"]["city"]}}  # fmt: skip
    database.backend.load_frame("duck_owners", owners)
    database.set_metadata("duck_owners", owned)
    load_engine(database, "owners", str(work / "owners.parquet"), SPARK, owned)
    load_engine(database, "loaded", str(work / "people.parquet"), SPARK, META)
    yield database
    database.close()


def _sent(db: Database, query: str) -> list[str]:
    plan, sql = engine.prepare(db, query)
    return [s for s in (sql, *targets.histogram_queries(db, plan).values()) if s]


@pytest.mark.parametrize("query", QUERIES)
def test_a_loaded_spark_table_returns_duckdbs_statistics(db: Database, query: str) -> None:
    frames = [
        engine_statistics(db, query.format(t=t), d) for t, d in (("duck", "duckdb"), ("loaded", "spark"))
    ]
    for duck, spark in zip(*frames, strict=True):
        pd.testing.assert_frame_equal(duck, spark, check_dtype=False, rtol=1e-9)
    # the layout is used: units within the bound take the plain aggregate, read through the hidden column
    assert all(unit_rows_column("pid") in sql for sql in _sent(db, query.format(t="loaded")))


def test_a_join_on_the_unit_of_two_loaded_tables_returns_duckdbs_statistics(db: Database) -> None:
    """The join of a one-row-per-unit table with a many-row one (J1 of bench.engines.spark_user): on Spark
    the plain join aggregate for units within the bound and the eager join for the others (no fsum for
    DuckDB's weighted form), the same statistics, a WHERE on either side or none."""
    query = "DP-SELECT 1 o.city, COUNT(*) FROM {o} o JOIN {e} e ON o.pid = e.pid GROUP BY o.city"

    def statistics(text: str, table: str) -> pd.DataFrame:
        _, sql = engine.prepare(db, text)
        frame = db.backend_for(table)[0].fetch(sql)
        return frame.sort_values(list(frame.columns)).reset_index(drop=True)

    for where in ("", " WHERE e.age > 40", " WHERE o.city <> 'Bern'"):
        text = query.replace(" GROUP BY", f"{where} GROUP BY")
        duck = statistics(text.format(o="duck_owners", e="duck"), "duck")
        spark = statistics(text.format(o="owners", e="loaded"), "loaded")
        pd.testing.assert_frame_equal(duck, spark, check_dtype=False, rtol=1e-9)
        assert "__privdb_o_" in engine.prepare(db, text.format(o="owners", e="loaded"))[1]


def _mixed(units: int, seed: int) -> pd.DataFrame:
    """Units of 1–6 rows spread over two cities (or one), some rows' city NULL: the group a unit keeps
    (max_groups 1) is drawn."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, units)
    pid = np.repeat(np.arange(units), sizes)
    first, second = rng.integers(0, 3, units), rng.integers(0, 3, units)
    city = np.where(rng.random(len(pid)) < 0.5, first[pid], second[pid])
    names = np.array(["Bern", "Basel", "Chur"], dtype=object)[city]
    names[rng.random(len(pid)) < 0.05] = None
    return pd.DataFrame({"pid": pid, "age": rng.integers(0, 100, len(pid)),
                         "income": rng.uniform(0, 1000, len(pid)).round(2), "city": names})  # fmt: skip


def test_a_grouped_query_reads_the_stored_choice(db: Database, work: Path) -> None:
    """J3 of bench.engines.spark_user: GROUP BY one column with max_groups 1 and no WHERE reads the group
    drawn for each unit at write time (one value per unit, its rows there on its rows, 0 elsewhere), and
    returns the bounded statistics of that draw: units within m in their group as plain rows, the others
    scaled by m / c. With a WHERE the query draws as before."""
    frame = _mixed(3000, seed=5)
    frame.to_parquet(work / "mixed.parquet")
    load_engine(db, "mixed", str(work / "mixed.parquet"), SPARK, META)
    backend, view = db.backend_for("mixed")
    hidden = unit_choice_column("pid", "city")
    assert backend.unit_choice(view, "pid", "city") == hidden
    stored = backend.fetch(f"SELECT pid, city, income, `{hidden}` AS c FROM {view}")
    assert len(stored) == len(frame)
    stored["key"] = stored.city.fillna("<null>")
    chosen = stored[stored.c > 0]
    assert chosen.groupby("pid").key.nunique().eq(1).all() and chosen.pid.nunique() == frame.pid.nunique()
    rows = chosen.groupby(["pid", "key"]).agg(n=("c", "size"), c=("c", "max"))
    assert (rows.n == rows.c).all()  # the rows the unit has in the value drawn, on each of them
    # uniform among a unit's values: units holding Bern and Basel only keep Bern half the time
    values = stored.groupby("pid").key.agg(lambda k: frozenset(k))
    pair = values[values == frozenset({"Bern", "Basel"})].index
    kept_bern = int((chosen.drop_duplicates("pid").set_index("pid").key.loc[pair] == "Bern").sum())
    # |k - n/2| > 5.3 sd has probability < 1.2e-7 under a fair draw
    assert abs(kept_bern - len(pair) / 2) <= 5.3 * np.sqrt(len(pair) / 4), (kept_bern, len(pair))
    # the statistics: each unit's kept rows weighted min(1, m / c), units over the bound counted
    m = META["max_contributions"]
    weight = np.minimum(1.0, m / chosen.c)
    by_key = chosen.assign(w=weight, wi=weight * chosen.income).groupby("key")[["w", "wi"]].sum()
    query = "DP-SELECT 1 city, COUNT(*), SUM(income) FROM mixed GROUP BY city"
    sent = _sent(db, query)
    assert any(hidden in sql for sql in sent)
    (got,) = engine_statistics(db, query, "spark")
    got["key"] = got.k0.fillna("<null>")
    got = got.set_index("key").sort_index()
    np.testing.assert_allclose(got.iloc[:, 1], by_key.w.sort_index(), rtol=1e-9)
    np.testing.assert_allclose(got.iloc[:, 2], by_key.wi.sort_index(), rtol=1e-9)
    size = stored.groupby("pid").size()
    over = int(((size > m) | (chosen.groupby("pid").size() < size)).sum())
    assert int(got.iloc[:, -1].sum()) == over
    assert not any(hidden in sql for sql in _sent(db, query.replace("GROUP", "WHERE age > 3 GROUP")))


def test_distinct_counts_keep_every_value_of_units_within_the_bound(db: Database, work: Path) -> None:
    """With m = 4 every unit (1–4 rows) is within the bound: its values are all kept, read through the
    layout without the per-unit draw, and the counts are plain SQL's on both engines."""
    wide = META | {"max_contributions": 4}
    load_engine(db, "loaded4", str(work / "people.parquet"), SPARK, wide)
    frame = _people(400, seed=3)
    for query, expected in (
        ("DP-SELECT 1 COUNT(DISTINCT age) FROM {t}", [frame.age.nunique()]),
        ("DP-SELECT 1 city, COUNT(DISTINCT age) FROM {t} GROUP BY city",
         list(frame.groupby("city").age.nunique().sort_index())),
    ):  # fmt: skip
        for t, d in (("duck4", "duckdb"), ("loaded4", "spark")):
            (counts,) = [f for f in engine_statistics(db, query.format(t=t), d) if "n" in f.columns]
            assert sorted(counts.n) == sorted(expected), (t, query)
        sent = _sent(db, query.format(t="loaded4"))
        assert all(unit_rows_column("pid") in sql for sql in sent)


def test_the_layout_column_is_hidden_and_the_files_owner_only(db: Database) -> None:
    assert unit_rows_column("pid") not in db.metadata("loaded").columns
    db.grant("ann", epsilon=10, delta=1e-3)
    with pytest.raises(PrivdbError, match="__privdb_rows_per_pid"):
        engine.run(db, "ann", "DP-SELECT 1 SUM(__privdb_rows_per_pid) FROM loaded")
    assert db.budget("ann").epsilon_spent == 0
    _, source = db.catalog.attachments()["loaded"]
    folder = Path(source)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert folder.parent == db.path / "spark"
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in folder.iterdir())


def test_files_changed_outside_privdb_lose_the_layout(db: Database, work: Path) -> None:
    """A Parquet file copied into the table's folder: a fresh view reads it too, so the stored unit sizes no
    longer count every row, and the queries bound every unit (today's plan for attached tables)."""
    backend, view = db.backend_for("loaded")
    assert backend.unit_rows(view, "pid") == unit_rows_column("pid")
    copy = work / "copied"
    shutil.copytree(db.catalog.attachments()["loaded"][1], copy)
    parts = sorted(copy.glob("part-*.parquet"))
    shutil.copy(parts[0], copy / "part-99999-extra.parquet")
    layout = written_layout(db, "loaded")
    assert layout is not None
    backend.adopt_layout(
        str(copy), layout.to_dict()
    )  # what privdb wrote, but the folder now holds one file more
    extra = backend.resolve(str(copy))
    assert backend.unit_rows(extra, "pid") is None
    shutil.rmtree(copy / "part-99999-extra.parquet", ignore_errors=True)
    backend.adopt_layout(str(copy), None)


def test_append_recounts_units_and_replaces_the_folder(db: Database, work: Path) -> None:
    before = db.catalog.attachments()["loaded"][1]
    frame = pd.concat([_people(400, seed=3), pd.read_parquet(work / "more.parquet")], ignore_index=True)
    load_engine(db, "loaded2", str(work / "people.parquet"), SPARK, META)
    first = db.catalog.attachments()["loaded2"][1]
    _, rows = load_engine(db, "loaded2", str(work / "more.parquet"), SPARK, append=True)
    assert rows == len(frame)
    assert not Path(first).exists() and Path(db.catalog.attachments()["loaded2"][1]).exists()
    assert Path(before).exists()  # another table's folder untouched
    for query in (
        "DP-SELECT 1 COUNT(*), SUM(income) FROM {t}",
        "DP-SELECT 1 city, COUNT(*) FROM {t} GROUP BY city",
    ):
        duck, spark = (
            engine_statistics(db, query.format(t=t), d)
            for t, d in (("duck2", "duckdb"), ("loaded2", "spark"))
        )
        for a, b in zip(duck, spark, strict=True):
            pd.testing.assert_frame_equal(a, b, check_dtype=False, rtol=1e-9)
    backend, view = db.backend_for("loaded2")
    counts = backend.fetch(f"SELECT MAX(`{unit_rows_column('pid')}`) AS n FROM {view} WHERE pid = 0")
    assert int(counts.n[0]) == int((frame.pid == 0).sum())
    same = f"`{unit_choice_column('pid', 'city')}` = `{unit_rows_column('pid')}`"
    chosen = backend.fetch(f"SELECT COUNT(*) AS c FROM {view} WHERE {same}")
    assert int(chosen.c[0]) == len(frame)  # each unit in one city: its choice holds all its rows


def test_a_refused_load_changes_nothing(db: Database, work: Path) -> None:
    before = db.catalog.attachments()["loaded"]
    folders = set((db.path / "spark").iterdir())
    bad = {**META, "columns": {**META["columns"], "salary": {"type": "float", "lower": 0, "upper": 1}}}
    with pytest.raises(PrivdbError, match="salary"):
        load_engine(db, "loaded", str(work / "people.parquet"), SPARK, bad)
    with pytest.raises(InvalidParameter, match="needs its metadata"):
        load_engine(db, "loaded", str(work / "people.parquet"), SPARK)
    with pytest.raises(InvalidParameter, match="Spark only"):
        load_engine(db, "loaded", str(work / "people.parquet"), "sqlite:///nowhere.db", META)
    (work / "odd.parquet").write_bytes(b"not parquet")
    with pytest.raises(InvalidParameter, match="cannot read"):
        load_engine(db, "loaded", str(work / "odd.parquet"), SPARK, META)
    with pytest.raises(InvalidParameter, match="no table 'nothere' that privdb wrote"):
        load_engine(db, "nothere", str(work / "people.parquet"), SPARK, append=True)
    assert db.catalog.attachments()["loaded"] == before
    assert set((db.path / "spark").iterdir()) == folders


def test_privdb_load_engine_on_the_command_line(db: Database, work: Path) -> None:
    meta = work / "people.yaml"
    meta.write_text(json.dumps({"tables": {"cli": META}}))  # YAML is a superset of JSON
    db.close()  # the command opens the database itself
    result = CliRunner().invoke(
        app, ["load", "cli", str(work / "people.parquet"), "--db", str(work / "db"), "--metadata", str(meta),
              "--engine", SPARK],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "loaded cli" in result.output and "privacy unit: pid" in result.output
    wrong = CliRunner().invoke(app, ["load", "cli", str(work / "people.parquet"), "--db", str(work / "db"),
                                     "--into", str(work)])  # fmt: skip
    assert wrong.exit_code == 2 and "--engine" in wrong.output
