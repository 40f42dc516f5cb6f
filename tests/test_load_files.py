"""Owners' files as they come (issue 15): UCI Adult without a header, `, `-separated, `?` for missing;
Parquet, JSON and Excel; `privdb infer` skeletons that load back; warnings where the data strays from the
metadata; and the same load over a server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import privdb
from privdb.catalog.files import ReadOptions
from privdb.cli import app
from privdb.database import Database
from privdb.errors import InvalidParameter
from serverfixtures import Server, make_server_db

ROOT = Path(__file__).resolve().parents[1]
UCI = ROOT / "data" / "adult" / "adult_uci.data"
NAMES = (
    "age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,race,sex,"
    "capital-gain,capital-loss,hours-per-week,native-country,income"
)
UCI_OPTIONS = ["--no-header", "--delimiter", ", ", "--null", "?", "--names", NAMES]
runner = CliRunner()


def _truth() -> pd.DataFrame:
    """UCI Adult read independently of privdb: pandas, stripping the space after each comma."""
    return pd.read_csv(
        UCI, header=None, names=NAMES.split(","), sep=",", skipinitialspace=True, na_values="?"
    )


def _invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_uci_adult_loads_clean(tmp_path: Path) -> None:
    code, out, err = _invoke("load", "--db", str(tmp_path / "db"), "adult", str(UCI), *UCI_OPTIONS)
    assert code == 0, err
    assert "32,561 rows, 15 columns" in out
    truth = _truth()
    with Database(tmp_path / "db") as db:
        loaded = db.owner_sql('SELECT * FROM adult ORDER BY "fnlwgt", age, "hours-per-week"')
        types = db.backend.columns("adult")
    assert list(loaded.columns) == NAMES.split(",")
    assert types["age"] == "int" and types["workclass"] == "text"
    for column in ("workclass", "occupation", "native-country"):
        assert int(loaded[column].isna().sum()) == int(truth[column].isna().sum()) > 0  # `?` is NULL
    assert not loaded["workclass"].dropna().str.startswith(" ").any()  # no leading spaces kept
    assert sorted(loaded["income"].unique()) == ["<=50K", ">50K"]
    assert loaded["age"].sum() == truth["age"].sum()


def test_without_the_options_the_problem_the_issue_saw_is_visible(tmp_path: Path) -> None:
    """The sniffer alone names the columns column00… — the options are what fix it."""
    with Database(tmp_path / "db") as db:
        db.load("raw", UCI)
        assert next(iter(db.backend.columns("raw"))) == "column00"


@pytest.mark.parametrize("kind", ["parquet", "json", "excel"])
def test_other_formats_load_the_same_table(tmp_path: Path, kind: str) -> None:
    frame = pd.read_csv(ROOT / "examples" / "people.csv").head(200)
    path = tmp_path / {"parquet": "p.parquet", "json": "p.json", "excel": "p.xlsx"}[kind]
    if kind == "parquet":
        frame.to_parquet(path)
    elif kind == "json":
        frame.to_json(path, orient="records")
    else:
        frame.to_excel(path, index=False)
    meta = ROOT / "examples" / "people.yaml"
    code, _, err = _invoke("load", "--db", str(tmp_path / "db"), "people", str(path), "--metadata", str(meta))
    assert code == 0, err
    with Database(tmp_path / "db") as db:
        back = db.owner_sql("SELECT * FROM people ORDER BY pid")
    assert len(back) == 200
    pd.testing.assert_series_equal(back["income"], frame["income"], check_names=False)
    assert list(back["state"]) == list(frame["state"])


def test_names_rename_a_parquet_files_columns(tmp_path: Path) -> None:
    pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}).to_parquet(tmp_path / "f.parquet")
    with Database(tmp_path / "db") as db:
        db.load("t", tmp_path / "f.parquet", {}, ReadOptions(names=("n", "label")))
        assert list(db.backend.columns("t")) == ["n", "label"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--names", "a,b"], "--names gives 2 names but"),
        (["--names", "a,,b"], "comma-separated column names"),
        (["--names", "a,a"], "--names repeats a"),
        (["--delimiter", ",,,,,"], "--delimiter must be 1 to 4 bytes"),
        (["--quote", "ab"], "--quote must be one character"),
    ],
)
def test_bad_reading_options_say_what_to_fix(tmp_path: Path, args: list[str], message: str) -> None:
    code, _, err = _invoke("load", "--db", str(tmp_path / "db"), "adult", str(UCI), "--no-header", *args)
    assert code == 2 and message in err and "Traceback" not in err


def test_csv_options_on_a_parquet_file_are_refused(tmp_path: Path) -> None:
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "f.parquet")
    code, _, err = _invoke(
        "load", "--db", str(tmp_path / "db"), "t", str(tmp_path / "f.parquet"), "--delimiter", ";"
    )
    assert code == 2 and "--delimiter do not apply to parquet files" in err


def test_infer_writes_a_reviewable_skeleton_that_loads_back(tmp_path: Path) -> None:
    code, out, err = _invoke("infer", "adult", str(UCI), *UCI_OPTIONS)
    assert code == 0, err
    assert "NOT public knowledge" in out and "REVIEW EVERY LINE" in out
    spec = yaml.safe_load(out)["tables"]["adult"]["columns"]
    truth = _truth()
    assert spec["age"] == {"type": "int", "lower": int(truth["age"].min()), "upper": int(truth["age"].max())}
    assert spec["sex"] == {"type": "category", "values": ["Female", "Male"]}
    assert spec["income"]["values"] == ["<=50K", ">50K"]
    assert out.count("from the data") >= 14  # every bound and domain is marked
    # fnlwgt is an integer unique per row, but a census weight, never a person (issue 27): no unit guessed
    assert "privacy_unit" not in yaml.safe_load(out)["tables"]["adult"]
    assert spec["fnlwgt"]["lower"] == int(truth["fnlwgt"].min()) and "private_id" not in spec["fnlwgt"]
    assert "no privacy unit guessed" in err
    skeleton = tmp_path / "adult.yaml"
    skeleton.write_text(out)
    db = str(tmp_path / "db")
    code, out, err = _invoke("load", "--db", db, "adult", str(UCI), *UCI_OPTIONS, "--metadata", str(skeleton))
    assert code == 0, err
    assert "warning" not in err  # bounds and domains from the data fit the data
    assert _invoke("grant", "--db", db, "eve", "--epsilon", "1")[0] == 0
    code, out, err = _invoke(
        "query", "--db", db, "--analyst", "eve", "DP-SELECT 0.5 sex, COUNT(*) FROM adult GROUP BY sex"
    )
    assert code == 0, err


def test_infer_guesses_the_privacy_unit_and_keeps_free_text_as_text(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {"pid": range(1, 101), "name": [f"person {i}" for i in range(100)], "x": [0.5] * 100}
    )
    frame.to_csv(tmp_path / "f.csv", index=False)
    code, out, _ = _invoke("infer", "t", str(tmp_path / "f.csv"))
    table = yaml.safe_load(out)["tables"]["t"]
    assert code == 0 and table["privacy_unit"] == "pid"
    assert table["columns"]["pid"] == {"type": "int", "private_id": True}
    assert table["columns"]["name"] == {"type": "text"} and "identifier: true if it names" in out


@pytest.mark.parametrize(
    ("columns", "unit"),
    [
        ({"row": range(100), "person_id": [i // 2 for i in range(100)]}, "person_id"),  # id name, repeats
        ({"order_id": range(100), "user_id": [i % 7 for i in range(100)]}, "user_id"),  # a person's id first
        ({"UserID": [f"u{i}" for i in range(100)], "x": [1] * 100}, "UserID"),  # a text id, camel case
        ({"wgt_id": range(100), "serial": range(100)}, None),  # a weight, and a unique int not named id
        ({"id": [i + 0.5 for i in range(100)]}, None),  # a float never names a person
    ],
)
def test_infer_guesses_the_unit_by_name_never_a_weight_or_float(
    tmp_path: Path, columns: dict[str, object], unit: str | None
) -> None:
    pd.DataFrame(columns).to_csv(tmp_path / "f.csv", index=False)
    code, out, err = _invoke("infer", "t", str(tmp_path / "f.csv"))
    table = yaml.safe_load(out)["tables"]["t"]
    assert code == 0 and table.get("privacy_unit") == unit
    assert [c for c, s in table["columns"].items() if s.get("private_id")] == ([unit] if unit else [])
    assert ("no privacy unit guessed" in err) == (unit is None)


def test_load_warns_where_the_data_strays_from_the_metadata(tmp_path: Path) -> None:
    meta = tmp_path / "bad.yaml"
    meta.write_text(
        "tables:\n  adult:\n    columns:\n"
        "      age: {type: int, lower: 0, upper: 60}\n"
        "      sex: {type: category, values: [M, F]}\n"
        "      capital-gain: {type: int, lower: 100, upper: 10000}\n"
    )
    code, _, err = _invoke(
        "load", "--db", str(tmp_path / "db"), "adult", str(UCI), *UCI_OPTIONS, "--metadata", str(meta)
    )
    assert code == 0  # a warning, not a refusal: the metadata is the owner's to choose
    truth = _truth()
    above = int((truth["age"] > 60).sum())
    assert f"column 'age': {above:,} values above the declared upper bound" in err
    assert f"{above / len(truth):.1%}" in err
    assert "column 'sex': 32,561 values outside the declared domain" in err and "'Male'" in err
    below = int((truth["capital-gain"] < 100).sum())
    assert f"column 'capital-gain': {below:,} values below the declared lower bound" in err
    with Database(tmp_path / "db") as db:  # the same findings from the library
        kinds = {(f.column, f.kind): f.count for f in db.conformance("adult")}
    assert kinds[("age", "above_upper")] == above and kinds[("sex", "outside_domain")] == 32_561


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    path = tmp_path_factory.mktemp("load") / "db"
    tokens = make_server_db(path, people=100)
    server = Server(path).start()
    try:
        yield server, tokens
    finally:
        server.stop()


def test_load_over_a_server_reads_the_file_here(
    served: tuple[Server, dict[str, str]], tmp_path: Path
) -> None:
    server, tokens = served
    meta = tmp_path / "m.yaml"
    meta.write_text("tables:\n  adult:\n    columns:\n      age: {type: int, lower: 0, upper: 60}\n")
    code, out, err = _invoke(
        "load",
        "adult",
        str(UCI),
        *UCI_OPTIONS,
        "--metadata",
        str(meta),
        "--url",
        server.url,
        "--token",
        tokens["owner"],
    )
    assert code == 0, err
    assert "32,561 rows" in out and "column 'age'" in err
    with privdb.connect(server.url, token=tokens["owner"]) as owner:
        frame = owner.owner_sql("SELECT COUNT(*) AS n, COUNT(workclass) AS w FROM adult")
    assert int(frame["n"].iloc[0]) == 32_561 and int(frame["w"].iloc[0]) == int(
        _truth()["workclass"].notna().sum()
    )
    code, _, err = _invoke("load", "x", str(UCI), "--url", server.url, "--token", tokens["alice"])
    assert code == 2 and "Traceback" not in err


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameter, match="does not exist"), Database(tmp_path / "db") as db:
        db.load("t", tmp_path / "nope.csv")


def test_attach_warns_where_the_engines_data_strays(tmp_path: Path) -> None:
    import sqlite3

    with sqlite3.connect(tmp_path / "src.db") as con:
        con.execute("CREATE TABLE t (age INTEGER, sex TEXT)")
        con.executemany("INSERT INTO t VALUES (?, ?)", [(20, "F"), (70, "M"), (80, "0"), (30, None)])
    meta = tmp_path / "t.yaml"
    meta.write_text(
        "age: {type: int, lower: 0, upper: 65}\n".replace("age", "columns:\n  age", 1)
        + "  sex: {type: category, values: [F, M]}\n"
    )
    code, _, err = _invoke(
        "attach",
        "t",
        "--db",
        str(tmp_path / "db"),
        "--engine",
        f"sqlite:///{tmp_path / 'src.db'}",
        "--metadata",
        str(meta),
    )
    assert code == 0, err
    assert "column 'age': 2 values above the declared upper bound (clipped down to it): 50.0%" in err
    assert "column 'sex': 1 value outside the declared domain" in err and "'0'" in err
