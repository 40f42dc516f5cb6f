"""Population-based models (δ-presence, k-map against a population table) through `privdb anonymize`, with
ARX's Adult hierarchies: the report's ``models`` block must judge the release as the lattice enforced it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from privdb.anonymize import load_hierarchies
from privdb.anonymize.criteria import Models, evaluate
from privdb.anonymize.resolve import resolve
from privdb.cli import app
from privdb.errors import InvalidParameter

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
QI = ["age", "sex", "race", "marital-status", "education"]
runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, pd.DataFrame, pd.DataFrame]:
    """A 2,000-record research sample drawn from a population of Adult's first 8,000 records."""
    folder = tmp_path_factory.mktemp("pop")
    people = pd.read_csv(ADULT / "adult.csv", sep=";").iloc[:8000]
    rows = np.sort(np.random.default_rng(0).choice(len(people), 2000, replace=False))
    sample = people.iloc[rows].reset_index(drop=True)
    src, pop = folder / "sample.csv", folder / "pop.csv"
    sample.to_csv(src, sep=";", index=False)
    people.to_csv(pop, sep=";", index=False)
    return src, pop, sample, people


def _anonymize(src: Path, pop: Path, tmp: Path, *model: str) -> tuple[str, dict[str, object]]:
    report = tmp / "r.json"
    args = [
        "anonymize", str(src), "--qi", ",".join(QI), "--k", "2", "--hierarchies", str(ADULT / "hierarchies"),
        "--fix-labels", "--population", str(pop), "-o", str(tmp / "out.csv"), "--report", str(report),
        "--seed", "1", *model,
    ]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output, json.loads(report.read_text())


def test_delta_presence_report_joins_through_the_hierarchies(
    files: tuple[Path, Path, pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    """Category labels (``Undergraduate``) cover their raw values (``Bachelors``): the release the lattice
    chose meets δ-presence, and the report says so (it said FAILS, 8,000 population records uncovered)."""
    src, pop, _, _ = files
    text, body = _anonymize(src, pop, tmp_path, "--delta-presence", "0,0.5")
    (found,) = body["models"]  # type: ignore[misc]
    assert found["model"] == "δ-presence" and found["holds"], found
    assert found["population_uncovered"] < 1000 and 0 < found["value"] <= 0.5  # was: all 8,000 uncovered
    assert "δ-presence holds" in text


def test_k_map_report_counts_the_population_through_the_hierarchies(
    files: tuple[Path, Path, pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    src, pop, sample, people = files
    _, body = _anonymize(src, pop, tmp_path, "--k-map", "10")
    (found,) = body["models"]  # type: ignore[misc]
    assert found["model"] == "k-map" and found["holds"] and found["value"] >= 10, found
    # the smallest count, recomputed by generalising the population to the chosen node's levels
    node = body["parameters"]["lattice_node"]  # type: ignore[index]
    hier = resolve(sample, QI, load_hierarchies(ADULT / "hierarchies", QI, fix_labels=True))
    released = pd.read_csv(tmp_path / "out.csv", sep=";", dtype=str, keep_default_na=False)
    kept = released[~(released[QI] == "*").all(axis=1)]
    pop_keys = pd.DataFrame({c: hier[c].generalize(people[c], node[c]) for c in QI})
    counts = pop_keys.value_counts()
    smallest = min(counts[tuple(r)] for r in kept[QI].drop_duplicates().itertuples(index=False))
    assert found["value"] == smallest


def test_evaluate_without_hierarchies_refuses_labels_it_cannot_read(
    files: tuple[Path, Path, pd.DataFrame, pd.DataFrame],
) -> None:
    """A category label (``Undergraduate``) is no range, set, mask, ``*`` or population value: without the
    hierarchies it would cover nobody and the population be under-counted (all 8,000 records uncovered), so
    ``evaluate`` refuses; with them it joins."""
    _, _, sample, people = files
    hier = resolve(sample, QI, load_hierarchies(ADULT / "hierarchies", QI, fix_labels=True))
    table = sample.copy()
    table["education"] = hier["education"].generalize(sample["education"], 1)
    n_labels = table["education"].nunique()
    models = Models(delta_presence=(0.0, 1.0))
    with pytest.raises(InvalidParameter) as refused:
        evaluate(table, QI, models, population=people)
    message = str(refused.value)
    assert f"{n_labels} released values of 'education'" in message and "hierarchies" in message
    assert "'Graduate'" in message and "Bachelors" not in message  # release labels only
    (joined,) = evaluate(table, QI, models, population=people, hierarchies=hier)
    generalised = people[QI].assign(education=hier["education"].generalize(people["education"], 1))
    in_sample = pd.MultiIndex.from_frame(generalised.astype(str)).isin(
        pd.MultiIndex.from_frame(table[QI].astype(str))
    )
    assert joined.detail["population_uncovered"] == int((~in_sample).sum()) < len(people)
    # a hierarchy that does not know the labels is refused too (here: marital-status's for education)
    wrong = {"education": load_hierarchies(ADULT / "hierarchies", ["marital-status"])["marital-status"]}
    with pytest.raises(InvalidParameter, match="population value or label of its hierarchy"):
        evaluate(table, QI, models, population=people, hierarchies=wrong)


def test_population_values_of_another_type_still_match(
    files: tuple[Path, Path, pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    """Ages read as floats (39.0) in the population join the sample's 39: the same release as with ints
    (it was the all-'*' node, every record shown suppressed, with no reason)."""
    src, pop, _, people = files
    floats = tmp_path / "pop_float.csv"
    people.assign(age=people["age"].astype(float)).to_csv(floats, sep=";", index=False)
    _, as_int = _anonymize(src, pop, tmp_path, "--delta-presence", "0,0.5")
    _, as_float = _anonymize(src, floats, tmp_path, "--delta-presence", "0,0.5")
    assert as_float["parameters"] == {**as_int["parameters"]}  # the same node
    assert as_float["utility"] == as_int["utility"] and as_float["models"] == as_int["models"]


def test_population_refusals(files: tuple[Path, Path, pd.DataFrame, pd.DataFrame], tmp_path: Path) -> None:
    src, _, _, people = files
    blank, apart = tmp_path / "blank.csv", tmp_path / "apart.csv"
    people.assign(age=people["age"].where(people.index != 5)).to_csv(blank, sep=";", index=False)
    people.assign(sex=people["sex"].str.upper()).to_csv(apart, sep=";", index=False)
    base = ["anonymize", str(src), "--qi", ",".join(QI), "--k", "2", "--delta-presence", "0,0.5"]
    for path, message in [
        (blank, "quasi-identifier 'age' has 1 missing value(s): fill or drop"),
        (apart, "no value of 'sex' in the population occurs in the sample"),
    ]:
        result = runner.invoke(app, [*base, "--population", str(path), "-o", str(tmp_path / "o.csv")])
        assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
        assert "Traceback" not in result.output and not (tmp_path / "o.csv").exists()


def test_the_top_node_says_why_every_record_is_starred(
    files: tuple[Path, Path, pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    """Population = sample: δ = 1 in every class, so only the all-'*' node meets δmax = 0.5; the line
    must say why all 2,000 records are shown suppressed, far past the 5 % limit."""
    src, _, _, _ = files
    text, body = _anonymize(src, src, tmp_path, "--delta-presence", "0,0.5")
    assert body["utility"]["suppressed"] == 2000  # type: ignore[index]
    flat = " ".join(text.split())
    assert "2,000 suppressed (2,000 generalised to '*' in every quasi-identifier: no less general" in flat
    assert body["suppression"]["reason"].startswith("2,000 generalised")  # type: ignore[index]


def test_check_refuses_a_population_no_model_uses(
    files: tuple[Path, Path, pd.DataFrame, pd.DataFrame],
) -> None:
    src, pop, _, _ = files
    for extra in ([], ["--average-risk", "0.1"]):
        args = ["check", str(src), "--qi", ",".join(QI), "--population", str(pop), *extra]
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "population table" in result.output, result.output


CHECKED = ["--k-map", "10", "--delta-presence", "0,0.5"]


def test_check_with_the_hierarchies_says_what_the_report_says(
    files: tuple[Path, Path, pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    """`privdb check --hierarchies` of the written release gives the report's k-map and δ-presence (it
    parsed labels only: 0 population records under ``Undergraduate``, every class counted at its own size)."""
    src, pop, _, _ = files
    _, body = _anonymize(src, pop, tmp_path, *CHECKED)
    hierarchies = ["--hierarchies", str(ADULT / "hierarchies"), "--fix-labels"]
    args = ["check", str(tmp_path / "out.csv"), "--qi", ",".join(QI), "--population", str(pop), *CHECKED]
    result = runner.invoke(app, [*args, *hierarchies, "--format", "json"])
    assert result.exit_code == 0, result.output
    checked = json.loads(result.output)["models"]
    assert checked == body["models"] and len(checked) == 2, (checked, body["models"])
    assert all(m["holds"] for m in checked)
    shown = runner.invoke(app, [*args, *hierarchies])  # the table view says the same
    assert shown.exit_code == 0 and "k-map" in shown.output and "holds" in shown.output, shown.output


def test_check_without_the_hierarchies_refuses_a_release_of_labels(
    files: tuple[Path, Path, pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    """Without --hierarchies the labels cannot be read: exit 2, invalid_parameter, how many values, and
    what to pass; never a population value (a raw value such as ``Bachelors`` that the release hides)."""
    src, pop, _, _ = files
    _anonymize(src, pop, tmp_path, *CHECKED)
    out = tmp_path / "out.csv"
    released = pd.read_csv(out, sep=";", dtype=str, keep_default_na=False)
    kept = released[~(released[QI] == "*").all(axis=1)]
    labels = sorted(set(kept["education"]) - set(pd.read_csv(pop, sep=";")["education"].astype(str)))
    assert labels  # the chosen node generalises education to category names
    args = ["check", str(out), "--qi", ",".join(QI), "--population", str(pop), *CHECKED, "--format", "json"]
    result = runner.invoke(app, args)
    flat = " ".join(result.output.split())
    assert result.exit_code == 2 and flat.startswith("error [invalid_parameter]:"), result.output
    assert f"{len(labels)} released values of 'education'" in flat and "--hierarchies DIR" in flat, flat
    assert "Traceback" not in flat and "Bachelors" not in flat and "Masters" not in flat
    assert "2 released values of 'marital-status'" in flat  # 'spouse present', 'spouse not present'
    # a release of raw values and ranges only is still read without hierarchies
    plain = tmp_path / "plain.csv"
    kept.assign(education="*", **{"marital-status": "*"}).to_csv(plain, sep=";", index=False)
    result = runner.invoke(app, ["check", str(plain), *args[2:]])
    assert result.exit_code == 0, result.output
