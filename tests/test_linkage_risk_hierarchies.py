"""`privdb linkage` and `privdb risk --population` on a release of hierarchy labels (Adult's
``Undergraduate``): with --hierarchies they join the public table through the hierarchy, as the classes
imply; without it they refuse instead of finding too few matches (linkage looks weaker, risk higher)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from privdb.anonymize import load_hierarchies
from privdb.anonymize.hierarchy import Hierarchy
from privdb.anonymize.linkage import link
from privdb.anonymize.risk import risk
from privdb.cli import app
from privdb.errors import InvalidParameter

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
QI = ["age", "sex", "race", "marital-status", "education"]
LABELLED = {"education": 1, "marital-status": 1}  # generalised to category names, the rest raw
HIERARCHIES = ["--hierarchies", str(ADULT / "hierarchies"), "--fix-labels"]
runner = CliRunner()


@pytest.fixture(scope="module")
def hier() -> dict[str, Hierarchy]:
    return load_hierarchies(ADULT / "hierarchies", QI, fix_labels=True)


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return pd.read_csv(ADULT / "adult.csv", sep=";").iloc[:8000].reset_index(drop=True)


def _generalise(frame: pd.DataFrame, hier: dict[str, Hierarchy], levels: dict[str, int]) -> pd.DataFrame:
    """``frame`` with each column of ``levels`` replaced by its hierarchy's labels at that level (text)."""
    out = frame.copy()
    for column, level in levels.items():
        out[column] = np.asarray(hier[column].generalize(frame[column], level), dtype=object)
    return out


def _write(frame: pd.DataFrame, path: Path) -> str:
    frame.to_csv(path, sep=";", index=False)
    return str(path)


def _sample(adult: pd.DataFrame, size: int, seed: int) -> pd.DataFrame:
    rows = np.sort(np.random.default_rng(seed).choice(len(adult), size, replace=False))
    return adult.iloc[rows].reset_index(drop=True)


# ------------------------------------------------------------------------------------------------ linkage


def _expected_links(release: pd.DataFrame, public: pd.DataFrame) -> list[dict[str, int]]:
    """The links the classes imply, by exact keys: the public table mapped through the hierarchies to the
    release's levels; a released record is linked when its key is held by it alone and by one public
    record (records numbered from 1)."""
    rel_key = pd.MultiIndex.from_frame(release[QI].astype(str))
    pub_key = pd.MultiIndex.from_frame(public[QI].astype(str))
    rel_n, pub_n = rel_key.value_counts(), pub_key.value_counts()
    alone = [k for k, n in rel_n.items() if n == 1 and pub_n.get(k, 0) == 1]
    rel_at = {k: i for i, k in enumerate(rel_key)}
    pub_at = {k: i for i, k in enumerate(pub_key)}
    pairs = sorted((rel_at[k], pub_at[k]) for k in alone)
    return [{"released_record": r + 1, "public_record": p + 1} for r, p in pairs]


@pytest.fixture(scope="module")
def linkage_files(
    adult: pd.DataFrame, hier: dict[str, Hierarchy], tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, str, list[dict[str, int]], pd.DataFrame, pd.DataFrame]:
    """A release of 3,000 of the 8,000 people with labels for education and marital status, and a public
    list of another draw of 4,000 with names (so some released people are on it, some not)."""
    folder = tmp_path_factory.mktemp("link")
    release = _generalise(_sample(adult, 3000, 1), hier, LABELLED)
    public = _sample(adult, 4000, 2)[QI]
    public.insert(0, "name", [f"person-{i}" for i in range(len(public))])
    expected = _expected_links(release, _generalise(public, hier, LABELLED))
    return (
        _write(release, folder / "release.csv"),
        _write(public, folder / "public.csv"),
        expected,
        release,
        public,
    )


def test_linkage_with_hierarchies_finds_the_links_the_classes_imply(
    linkage_files: tuple[str, str, list[dict[str, int]], pd.DataFrame, pd.DataFrame],
    hier: dict[str, Hierarchy],
) -> None:
    release_csv, public_csv, expected, release, public = linkage_files
    assert len(expected) > 100  # raw ages pin many down
    args = ["linkage", release_csv, public_csv, "--on", ",".join(QI), "--format", "json"]
    result = runner.invoke(app, [*args, *HIERARCHIES])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["matches"] == expected and body["unique"] == len(expected)
    # the library says the same; read as text, the labels match nobody: no link at all (the unsafe answer)
    assert link(release, public, QI, hierarchies=hier).unique == len(expected)
    assert link(release, public, QI).unique == 0


def test_linkage_without_hierarchies_refuses_a_release_of_labels(
    linkage_files: tuple[str, str, list[dict[str, int]], pd.DataFrame, pd.DataFrame],
) -> None:
    release_csv, public_csv, _, release, _ = linkage_files
    result = runner.invoke(app, ["linkage", release_csv, public_csv, "--on", ",".join(QI)])
    flat = " ".join(result.output.split())
    assert result.exit_code == 2 and flat.startswith("error [invalid_parameter]:"), result.output
    n_education = release["education"].nunique()
    assert f"{n_education} released values of 'education'" in flat and "--hierarchies DIR" in flat, flat
    assert "2 released values of 'marital-status'" in flat and "public value" in flat
    assert "Traceback" not in flat and "Bachelors" not in flat and "person-" not in flat  # no public value
    # the columns released raw are not refused, though some of their values are on nobody's list
    raw = runner.invoke(app, ["linkage", release_csv, public_csv, "--on", "age,sex,race", "--format", "json"])
    assert raw.exit_code == 0, raw.output
    assert json.loads(raw.stdout)["released"] == len(release)


def test_linkage_of_raw_values_missing_from_the_public_list_is_not_refused(
    adult: pd.DataFrame, tmp_path: Path
) -> None:
    """People not on the public list are normal in a linkage attack: their values are counted on stderr."""
    release = _sample(adult, 500, 3)[QI]
    public = release.iloc[:250]  # half the released people are on the list
    args = ["linkage", _write(release, tmp_path / "r.csv"), _write(public, tmp_path / "p.csv")]
    result = runner.invoke(app, [*args, "--on", ",".join(QI), "--format", "json"])
    assert result.exit_code == 0, result.output
    ages = set(release["age"]) - set(public["age"])
    held = int(release["age"].isin(ages).sum())
    assert ages and f"{len(ages)} of 'age' ({held} records)" in result.stderr, result.stderr
    assert "--hierarchies" in result.stderr
    assert json.loads(result.stdout)["unique"] == link(release, public, QI).unique > 0


def test_link_refuses_labels_only_when_asked(
    linkage_files: tuple[str, str, list[dict[str, int]], pd.DataFrame, pd.DataFrame],
) -> None:
    """The library's default keeps every join it made (a column may share no value with a tiny public
    list); ``refuse_labels`` is the command's rule, and ``unread`` names the values either way."""
    _, _, _, release, public = linkage_files
    found = link(release, public, QI)
    assert set(found.unread) == {"education", "marital-status"}
    with pytest.raises(InvalidParameter, match="cannot join the release with the public table"):
        link(release, public, QI, refuse_labels=True)


# --------------------------------------------------------------------------------------------------- risk


def test_risk_with_hierarchies_counts_the_population_the_classes_cover(
    adult: pd.DataFrame, hier: dict[str, Hierarchy], tmp_path: Path
) -> None:
    """Journalist risk max 1/F and marketer (1/n)·Σ|E|/F, F counted in the population mapped through the
    hierarchies to the release's levels (ages in 5-year ranges, education and marital status labels)."""
    levels = {"age": 1, **LABELLED}
    release = _generalise(_sample(adult, 2000, 4), hier, levels)
    population = _generalise(adult, hier, levels)
    sizes = release[QI].astype(str).value_counts()
    in_population = population[QI].astype(str).value_counts()
    f = np.maximum(in_population.reindex(sizes.index).to_numpy(), sizes.to_numpy())
    j_max, marketer = float((1 / f).max()), float((sizes.to_numpy() / f).sum() / len(release))
    args = ["risk", _write(release, tmp_path / "r.csv"), "--qi", ",".join(QI)]
    args += ["--population", _write(adult, tmp_path / "people.csv"), "--format", "json"]
    result = runner.invoke(app, [*args, *HIERARCHIES])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["model"] == "population table"
    assert body["journalist_max"] == pytest.approx(j_max) and body["marketer"] == pytest.approx(marketer)
    assert body["journalist_avg"] == pytest.approx(marketer) and marketer < body["prosecutor_avg"]
    found = risk(release, QI, adult, hierarchies=hier)
    assert (found.journalist_max, found.marketer) == pytest.approx((j_max, marketer))
    # without the hierarchies: refused, naming the unread labels and what to pass, exit 2
    refused = runner.invoke(app, args)
    flat = " ".join(refused.output.split())
    assert refused.exit_code == 2 and flat.startswith("error [invalid_parameter]:"), refused.output
    assert f"{release['education'].nunique()} released values of 'education'" in flat
    assert "--hierarchies DIR" in flat and "population value" in flat and "Bachelors" not in flat
    with pytest.raises(InvalidParameter, match="under-count the population"):
        risk(release, QI, adult)


def test_risk_refuses_hierarchies_without_a_population(tmp_path: Path, adult: pd.DataFrame) -> None:
    source = _write(adult.iloc[:50], tmp_path / "r.csv")
    result = runner.invoke(app, ["risk", source, "--qi", "age,sex", *HIERARCHIES])
    assert result.exit_code == 2 and "give --population too" in result.output, result.output


def test_months_and_years_of_the_automatic_date_hierarchy_cover_their_dates() -> None:
    """privdb's own date hierarchy releases `2020-01` and `2020`: `2020-01` once parsed as the empty range
    2020..1 and covered nobody (journalist risk 0.5 where it is 0.2), and `2020` was refused with advice
    the CLI could not follow (no file holds an automatic hierarchy)."""
    from privdb.anonymize.hierarchy import DateHierarchy

    days = pd.to_datetime("2020-01-01") + pd.to_timedelta(
        np.random.default_rng(1).integers(0, 90, 20), unit="D"
    )
    population = pd.DataFrame({"d": days.strftime("%Y-%m-%d")})
    sample = population.iloc[:8]
    for level, width in ((1, "%Y-%m"), (2, "%Y")):
        release = pd.DataFrame({"d": DateHierarchy("d").labels(sample["d"].to_numpy(), level)})
        assert release["d"].tolist() == pd.to_datetime(sample["d"]).dt.strftime(width).tolist()
        covered = pd.to_datetime(population["d"]).dt.strftime(width).value_counts()
        expected = 1 / covered[release["d"].unique()].min()  # independent: the smallest covered class
        found = risk(release, ["d"], population)
        assert found.journalist_max == pytest.approx(expected)
        assert (
            found.journalist_max
            == risk(release, ["d"], population, hierarchies={"d": DateHierarchy("d")}).journalist_max
        )


def test_a_label_that_only_looks_like_a_range_is_refused_not_read_as_empty() -> None:
    """`5-3` parses as the range 5..3, which holds nothing: it is unread, not a class covering nobody."""
    population = pd.DataFrame({"x": [str(v) for v in range(10)]})
    release = pd.DataFrame({"x": ["5-3"] * 3 + ["0-9"] * 3})
    with pytest.raises(InvalidParameter, match="--hierarchies"):
        risk(release, ["x"], population)
