"""Synthetic data, issue 31: the saved model sampled again for free, NULLs as a value, DP bounds for numbers
without declared ones, MST's domain compression, AIM's workload, MWEM for small domains."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import seeded
from privdb.catalog.metadata import TableMeta
from privdb.catalog.metadata_spec import metadata_from_dict
from privdb.cli import app
from privdb.database import Database
from privdb.errors import InvalidParameter
from privdb.publish.aim import plan
from privdb.publish.dpbounds import dp_bounds
from privdb.publish.histogram import Domain
from privdb.publish.mst import compressed, mst
from privdb.publish.synthetic import domains_for, encode, release_synthetic
from privdb.publish.synthmodel import SeededSource, SyntheticModel, load_model
from publishfixtures import example_people, spent

runner = CliRunner()


def _table(n: int = 3_000, seed: int = 4) -> tuple[pd.DataFrame, TableMeta]:
    """a (3 values, 30% NULL), b (0/1 following a), x (a float, 20% NULL, no bounds declared)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.85, a % 2, 1 - a % 2)
    labels = np.array(["p", "q", "r"], dtype=object)[a]
    labels[rng.random(n) < 0.3] = None
    x = rng.lognormal(8, 0.5, n)
    x[rng.random(n) < 0.2] = np.nan
    frame = pd.DataFrame({"a": labels, "b": b, "x": x})
    spec = {"columns": {"a": {"type": "category", "values": ["p", "q", "r"]},
                        "b": {"type": "int", "lower": 0, "upper": 1}, "x": {"type": "float"}}}  # fmt: skip
    return frame, metadata_from_dict("t", spec, {"a": "text", "b": "int", "x": "float"})


def _model_one_way(model: SyntheticModel, column: str) -> np.ndarray:
    """The model's exact 1-way marginal of ``column`` over the original cells (a merged cell split evenly)."""
    k = model.columns.index(column)
    clique, table = next((c, t) for c, t in zip(model.cliques, model.tables, strict=True) if column in c)
    axis = clique.index(column)
    small = table.sum(axis=tuple(i for i in range(table.ndim) if i != axis))
    out = np.zeros(sum(len(g) for g in model.groups[k]))
    for cell, members in enumerate(model.groups[k]):
        out[members] += small[cell] / len(members)
    return out


@pytest.mark.slow  # mbi compiles its model (jax)
def test_sampling_again_reproduces_the_model_and_null_rates() -> None:
    """20,000 rows drawn from the saved model: each cell's share is within 0.03 of the model's exact
    marginal (Hoeffding: P(miss) ≤ 2e^(−2·20000·0.03²) ≈ 5e−16 per cell, ≤ 1e−14 over the ~20 cells). The
    NULL rates of the release (30% and 20% in the data) come back within 0.06 at ε = 3 (fixed seed)."""
    frame, meta = _table()
    released = release_synthetic(
        frame, meta, epsilon=3.0, delta=1e-9, rows=3_000, rng=seeded(1), bounds_share=0.1
    )
    assert released.model is not None and set(released.bounds) == {"x"}
    low, high = released.bounds["x"]
    assert low < float(np.nanmedian(frame["x"])) < high
    for name, rate in (("a", 0.3), ("x", 0.2)):
        assert abs(released.frame[name].isna().mean() - rate) < 0.06, name
    drawn = released.model.sample_codes(20_000, SeededSource(7))
    for k, name in enumerate(released.model.columns):
        share = np.bincount(drawn[:, k], minlength=len(released.domains[k].labels)) / len(drawn)
        assert np.abs(share - _model_one_way(released.model, name)).max() < 0.03, name
    rows = released.model.sample(2_000, SeededSource(8))
    for name, rate in (("a", 0.3), ("x", 0.2)):
        assert abs(rows[name].isna().mean() - rate) < 0.06, name
    assert set(rows["a"].dropna()) <= {"p", "q", "r"} and rows["x"].dropna().between(low, high).all()


def test_bounds_are_refused_without_a_share_and_found_with_one() -> None:
    frame, meta = _table()
    with pytest.raises(InvalidParameter, match=r"column .x. has no public bounds.*--bounds-share"):
        release_synthetic(frame, meta, epsilon=1.0, delta=1e-9, rows=5, method="mwem")
    with pytest.raises(InvalidParameter, match="--bounds-share must be in"):
        release_synthetic(frame, meta, epsilon=1.0, delta=1e-9, rows=5, method="mwem", bounds_share=1.0)
    values = pd.DataFrame({"x": np.random.default_rng(2).uniform(1_000, 5_000, 5_000)})
    column = meta.columns["x"]
    found = [dp_bounds(values, [column], 0.02, 1, 1e-9, seeded(s))["x"] for s in range(5)]
    for low, high in found:  # the occupied power-of-two bins: [512 or 1024, 8192)
        assert low in (512.0, 1024.0) and high == 8192.0, (low, high)
    planted = pd.DataFrame({"x": [*values["x"], 1e12]})  # one far outlier does not move the bounds
    assert dp_bounds(planted, [column], 0.02, 1, 1e-9, seeded(9))["x"][1] == 8192.0
    assert dp_bounds(values.iloc[:3], [column], 0.02, 1, 1e-9, seeded(9))["x"] == (0.0, 1.0)  # none occupied


def test_mwem_releases_small_domains_and_refuses_large_ones() -> None:
    frame, meta = _table()
    released = release_synthetic(
        frame, meta, epsilon=3.0, delta=1e-9, rows=2_000, rng=seeded(3), method="mwem", bounds_share=0.05,
        bins={"x": 4},
    )  # fmt: skip
    assert released.method == "mwem" and len(released.frame) == 2_000
    assert released.model is not None and released.model.cliques == [("a", "b", "x")]
    truth = pd.crosstab(frame["a"].fillna("∅"), frame["b"], normalize=True)
    made = pd.crosstab(released.frame["a"].fillna("∅"), released.frame["b"], normalize=True)
    assert float((truth - made).abs().to_numpy().sum()) / 2 < 0.1  # TV of the a×b marginal
    wide = metadata_from_dict(
        "w", {"columns": {f"c{i}": {"type": "int", "lower": 0, "upper": 99} for i in range(4)}},
        {f"c{i}": "int" for i in range(4)},
    )  # fmt: skip
    rows = pd.DataFrame({f"c{i}": [1, 2] for i in range(4)})
    with pytest.raises(InvalidParameter, match="--method mwem keeps the whole domain"):
        release_synthetic(rows, wide, epsilon=1.0, delta=1e-9, rows=5, method="mwem")


def test_compression_merges_the_rare_cells_of_the_noisy_counts() -> None:
    assert compressed(np.array([50.0, 1.0, 40.0, -2.0, 0.5]), 3.0) == [[0], [2], [1, 3, 4]]
    assert compressed(np.array([50.0, 1.0, 40.0]), 3.0) == [[0], [1], [2]]  # one rare cell stays alone
    codes = np.stack([np.r_[np.zeros(500, int), np.ones(500, int)], np.zeros(1_000, int)], axis=1)
    measured, groups = mst(codes, ["a", "b"], [40, 3], 1.0, 1, 1e-9, seeded(2))
    assert groups[0][:2] == [[0], [1]] and sorted(groups[0][2]) == list(range(2, 40))
    assert measured[0][1].shape == (3,) and measured[2][1].shape == (3, len(groups[1]))


def test_aim_workload_and_degree_are_public_choices() -> None:
    listed = plan(4, 1.0, [(0, 1), (2, 3)])
    assert set(listed.candidates) == {(0,), (1,), (2,), (3,), (0, 1), (2, 3)}
    assert len(plan(4, 1.0, None, 2).candidates) == 4 + 6


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return example_people(tmp_path / "db")


@pytest.mark.slow
def test_sample_again_charges_nothing_and_tampering_is_refused(db: Path, tmp_path: Path) -> None:
    model, out = tmp_path / "m", tmp_path / "s.csv"
    args = ["publish", "synthetic", "people", "--db", str(db), "--epsilon", "1", "--delta", "1e-9", "--rows",
            "300", "-o", str(out), "--columns", "sex,education,age", "--save-model", str(model)]  # fmt: skip
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.stderr
    body = json.loads((model / "model.json").read_text())
    assert body["method"] == "mst" and body["epsilon"] == 1.0 and body["table"] == "people"
    with Database(db) as database:
        entries = database.ledger.spends(None, database.name)
        assert body["ledger"]["id"] == entries[-1].id
    before = spent(db)
    again = tmp_path / "again.csv"
    drawn = runner.invoke(app, ["sample", str(model), "--rows", "500", "--seed", "3", "-o", str(again)])
    assert drawn.exit_code == 0, drawn.stderr
    rows = pd.read_csv(again)
    assert len(rows) == 500 and list(rows.columns) == ["sex", "education", "age"]
    assert spent(db) == before  # nothing charged
    with Database(db) as database:
        assert len(database.ledger.spends(None, database.name)) == len(entries)  # no new ledger entry
    same = runner.invoke(
        app, ["sample", str(model), "--rows", "500", "--seed", "3", "-o", str(tmp_path / "b")]
    )
    assert same.exit_code == 0 and (tmp_path / "b").read_text() == again.read_text()  # a seed reproduces
    for change, message in (
        ({"extra": 1}, "unknown field 'extra'"),
        ({"version": 2}, "not a privdb-synthetic-model version 1"),
        ({"epsilon": "1"}, "epsilon must be a number"),
    ):
        (model / "model.json").write_text(json.dumps({**body, **change}))
        bad = runner.invoke(app, ["sample", str(model), "--rows", "5"])
        assert bad.exit_code == 2 and message in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    (model / "model.json").write_text(json.dumps({k: v for k, v in body.items() if k != "ledger"}))
    with pytest.raises(InvalidParameter, match="field 'ledger' is missing"):
        load_model(model)
    (model / "model.json").write_text(json.dumps(body))
    arrays = dict(np.load(model / "arrays.npz"))
    arrays["clique_0"] = -arrays["clique_0"]
    np.savez(model / "arrays.npz", **arrays)
    with pytest.raises(InvalidParameter, match="holds a negative probability"):
        load_model(model)


def test_refusals_before_anything_is_spent(db: Path, tmp_path: Path) -> None:
    base = ["publish", "synthetic", "people", "--db", str(db), "--epsilon", "1", "--delta", "1e-9", "--rows",
            "5", "-o", str(tmp_path / "s.csv")]  # fmt: skip
    (tmp_path / "file").write_text("x")
    for extra, message in (
        (["--workload", "sex,age"], "--workload and --degree are AIM's and MWEM's"),
        (["--method", "aim", "--workload", "sex,nosuch"], "--workload names 'nosuch'"),
        (["--method", "aim", "--degree", "7"], "--degree must be 1 to 4"),
        (["--save-model", str(tmp_path / "file")], "is a file"),
        (["--save-model", str(tmp_path / "no" / "m")], "does not exist"),
        (["--bounds-share", "-0.1"], "--bounds-share must be in"),
    ):
        done = runner.invoke(app, [*base, *extra])
        assert done.exit_code == 2 and message in done.stderr, (extra, done.stderr)
    assert spent(db) == 0
    missing = runner.invoke(app, ["sample", str(tmp_path / "nothing"), "--rows", "5"])
    assert missing.exit_code == 2 and "is not a saved model" in missing.stderr


def test_domain_null_cell_holds_nulls_only() -> None:
    frame, meta = _table(50)
    domains = domains_for(meta, ["a", "b"], None, None, nulls=True)
    codes = encode(frame, domains)
    assert len(codes) == 50 and (codes[:, 0] == 3).sum() == frame["a"].isna().sum()
    assert (
        len(encode(frame, domains_for(meta, ["a", "b"], None, None, nulls=False))) == frame["a"].notna().sum()
    )


def test_a_model_round_trips_and_a_tampered_one_is_refused(tmp_path: Path) -> None:
    """Without mbi: a two-column model saved, loaded (same draws for one seed) and tampered with."""
    domains = [Domain("a", ("p", "q", None), null=True), Domain("x", ("0-5", "5-10"), 0.0, 10.0)]
    table = np.array([[0.5, 0.1], [0.0, 0.2], [0.1, 0.1]])
    model = SyntheticModel(
        domains, ["category", "float"], [("a", "x")], [table], [[[0], [1], [2]], [[0], [1]]]
    )
    model.info = {"method": "mwem", "epsilon": 1.0, "delta": 1e-9, "rho": 0.01, "table": "t", "measured": [],
                  "bounds": {}, "ledger": {"id": 3, "time": 0.0}, "created": 0.0}  # fmt: skip
    model.save(tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    first, again = loaded.sample(4_000, SeededSource(1)), model.sample(4_000, SeededSource(1))
    pd.testing.assert_frame_equal(first, again)
    assert abs(first["a"].isna().mean() - 0.2) < 0.03  # fixed seed (Hoeffding, any seed: ≤ 1.5e−3)
    assert first["x"].dropna().between(0, 10).all() and set(first["a"].dropna()) <= {"p", "q"}
    body = json.loads((tmp_path / "m" / "model.json").read_text())
    for change, message in (
        ({"surprise": 1}, "unknown field 'surprise'"),
        ({"cliques": [["a", "nosuch"]]}, "unknown column"),
        ({"method": "gan"}, "method must be"),
    ):
        (tmp_path / "m" / "model.json").write_text(json.dumps({**body, **change}))
        with pytest.raises(InvalidParameter, match=message):
            load_model(tmp_path / "m")
    columns = [{**body["columns"][0], "x": 1}, body["columns"][1]]
    (tmp_path / "m" / "model.json").write_text(json.dumps({**body, "columns": columns}))
    with pytest.raises(InvalidParameter, match="unknown field 'x' in column 'a'"):
        load_model(tmp_path / "m")
