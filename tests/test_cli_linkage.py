"""``privdb linkage`` and ``privdb risk`` with a population: the course's patients against a voter list, and
journalist / marketer risk worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from privdb.cli import app

runner = CliRunner()

# The notes' patients (names removed) and a voter list holding them and three other people.
PATIENTS = (
    "job,sex,age,disease\nengineer,male,35,hepatitis\nengineer,male,38,hepatitis\nlawyer,male,38,HIV\n"
    "writer,female,30,flu\nwriter,female,33,HIV\ndancer,female,31,HIV\ndancer,female,31,HIV\n"
)
VOTERS = (
    "name,job,sex,age\nBob,engineer,male,35\nFred,engineer,male,38\nDoug,lawyer,male,38\nAlice,writer,female,30\n"
    "Cathy,writer,female,33\nEmily,dancer,female,31\nGladys,dancer,female,31\nHank,lawyer,male,52\n"
    "Ivy,writer,female,44\nJules,dancer,male,31\n"
)
GENERALISED = (
    "job,sex,age,disease\nengineer|lawyer,male,35-38,hepatitis\nengineer|lawyer,male,35-38,hepatitis\n"
    "engineer|lawyer,male,35-38,HIV\ndancer|writer,female,30-33,flu\ndancer|writer,female,30-33,HIV\n"
    "dancer|writer,female,30-33,HIV\ndancer|writer,female,30-33,HIV\n"
)


def _files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, body in (("patients", PATIENTS), ("voters", VOTERS), ("release", GENERALISED)):
        out[name] = tmp_path / f"{name}.csv"
        out[name].write_text(body)
    return out


def test_linkage_names_five_of_seven_raw_records_and_none_after_generalising(tmp_path: Path) -> None:
    f = _files(tmp_path)
    # Bob, Fred, Doug, Alice and Cathy are alone in their (job, sex, age) and so is their voter record;
    # Emily and Gladys share theirs, so neither is pinned down.
    result = runner.invoke(app, ["linkage", str(f["patients"]), str(f["voters"]), "--on", "job,sex,age",
                                 "--format", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert body["on"] == ["job", "sex", "age"]
    assert (body["released"], body["public"], body["unique"]) == (7, 10, 5)
    assert body["share"] == pytest.approx(5 / 7)
    assert body["matches"] == [{"released_record": i, "public_record": i} for i in range(1, 6)]
    result = runner.invoke(app, ["linkage", str(f["patients"]), str(f["voters"]), "--on", "job,sex,age"])
    assert result.exit_code == 0, result.output
    assert "5 of 7 released records (71.4%) linked to exactly one of 10 public records" in result.output
    assert "Cathy" in result.output and "Emily" not in result.output and "released disease" in result.output
    result = runner.invoke(app, ["linkage", str(f["release"]), str(f["voters"]), "--on", "job,sex,age",
                                 "--format", "json"])  # fmt: skip
    body = json.loads(result.output)
    assert body["unique"] == 0 and body["matches"] == []


def test_linkage_refuses_an_unknown_column(tmp_path: Path) -> None:
    f = _files(tmp_path)
    result = runner.invoke(app, ["linkage", str(f["release"]), str(f["voters"]), "--on", "job,zip"])
    assert (
        result.exit_code == 2 and "unknown column 'zip'" in result.output and "Traceback" not in result.output
    )


def test_journalist_and_marketer_risk_by_hand(tmp_path: Path) -> None:
    """The release has classes of 3 (men, 35-38) and 4 (women, 30-33), n = 7.

    Population table (the voters): the men's class covers Bob, Fred, Doug (Hank is 52, Jules a dancer):
    F = 3; the women's covers Alice, Cathy, Emily, Gladys (Ivy is 44): F = 4. Journalist max = 1/3, average
    = marketer = (3/3 + 4/4) / 7 = 2/7. Population size N = 70 (π = 1/10): F̂ = 30 and 40, journalist max
    = 1/30, marketer = (3/30 + 4/40) / 7 = 1/35. Prosecutor risk stays 1/3 and 2/7 throughout.
    """
    f = _files(tmp_path)
    base = ["risk", str(f["release"]), "--qi", "job,sex,age", "--format", "json"]
    expected = {
        (): (1 / 3, 2 / 7, "sample as population"),
        ("--population", str(f["voters"])): (1 / 3, 2 / 7, "population table"),
        ("--population-size", "70"): (1 / 30, 1 / 35, "sampling fraction"),
    }
    for extra, (j_max, marketer, model) in expected.items():
        result = runner.invoke(app, [*base, *extra])
        assert result.exit_code == 0, result.output
        body = json.loads(result.output)
        assert body["journalist_max"] == pytest.approx(j_max) and body["model"] == model
        assert body["journalist_avg"] == pytest.approx(marketer) and body["marketer"] == pytest.approx(
            marketer
        )
        assert body["prosecutor_max"] == pytest.approx(1 / 3) and body["prosecutor_avg"] == pytest.approx(
            2 / 7
        )
    result = runner.invoke(app, [*base, "--population-size", "5"])
    assert result.exit_code == 2 and "smaller than the table" in result.output
    result = runner.invoke(app, ["risk", str(f["release"]), "--qi", "job,sex,age", "--population-size", "70"])
    assert result.exit_code == 0 and "sampling fraction" in result.output


def _people(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "person_id": np.arange(1, n + 1), "name": [f"person {i}" for i in range(n)],
        "age": rng.integers(20, 70, n), "sex": rng.choice(["F", "M"], n),
        "zip": rng.choice(["02138", "02139", "02140"], n), "disease": rng.choice(["flu", "hiv", "none"], n),
    })  # fmt: skip


def test_anonymize_writes_only_classified_columns_and_linkage_on_an_id_shows_full_reidentification(
    tmp_path: Path,
) -> None:
    """Issue 27: every column nobody classified (the id, the name) is left out and the rows are shuffled;
    a release that keeps the id (--keep) is linked on it, all 10,000 records (it was refused: the join
    built a 10,000 × 10,000 grid)."""
    people = _people(10_000, 1)
    people.to_csv(tmp_path / "in.csv", index=False)
    people[["person_id", "name", "age", "sex", "zip"]].to_csv(tmp_path / "public.csv", index=False)
    source = str(tmp_path / "in.csv")
    base = ["anonymize", source, "--qi", "age,sex,zip", "--sensitive", "disease", "--k", "5"]
    result = runner.invoke(app, [*base, "-o", str(tmp_path / "release.csv")])
    assert result.exit_code == 0, result.output
    release = pd.read_csv(tmp_path / "release.csv", dtype=str)
    assert list(release.columns) == ["age", "sex", "zip", "disease"]
    assert sorted(release["disease"]) == sorted(people["disease"])
    assert release["disease"].tolist() != people["disease"].tolist()  # shuffled (chance 1 in 10,000!)
    result = runner.invoke(app, ["linkage", str(tmp_path / "release.csv"), str(tmp_path / "public.csv"),
                                 "--on", "person_id"])  # fmt: skip
    assert result.exit_code == 2 and "unknown column 'person_id' in the release" in result.output
    result = runner.invoke(app, [*base, "--keep", "person_id", "-o", str(tmp_path / "kept.csv")])
    assert result.exit_code == 0, result.output
    assert list(pd.read_csv(tmp_path / "kept.csv").columns) == ["person_id", "age", "sex", "zip", "disease"]
    result = runner.invoke(app, ["linkage", str(tmp_path / "kept.csv"), str(tmp_path / "public.csv"),
                                 "--on", "person_id", "--format", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert (body["released"], body["unique"], body["share"]) == (10_000, 10_000, 1.0)


def test_anonymize_a_database_table_never_writes_what_its_metadata_marks_identifying(tmp_path: Path) -> None:
    _people(200, 2).to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "m.yaml").write_text(
        "tables:\n  people:\n    privacy_unit: person_id\n    columns:\n"
        "      name: {type: text, identifier: true}\n"
    )
    db = str(tmp_path / "db")
    result = runner.invoke(app, ["load", "people", str(tmp_path / "in.csv"), "--db", db, "--metadata",
                                 str(tmp_path / "m.yaml")])  # fmt: skip
    assert result.exit_code == 0, result.output
    base = ["anonymize", "people", "--db", db, "--qi", "age,sex", "--k", "5", "-o", str(tmp_path / "r.csv")]
    for keep in ("name", "person_id"):
        result = runner.invoke(app, [*base, "--keep", f"zip,{keep}"])
        assert result.exit_code == 2 and f"column '{keep}' of 'people' identifies people" in result.output
        assert not (tmp_path / "r.csv").exists()
    result = runner.invoke(app, [*base, "--keep", "zip"])
    assert result.exit_code == 0, result.output
    release = pd.read_csv(tmp_path / "r.csv", dtype=str)
    assert list(release.columns) == ["age", "sex", "zip"] and len(release) == 200
