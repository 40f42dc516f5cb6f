"""``privdb anonymize | check | risk`` end to end on Adult and on small tables: the output format of
DESIGN.md, the report, coverage, and bad input that writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import seeded
from privdb.cli import app

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
QI = "age,workclass,education,marital-status,occupation,race,sex,native-country"
qi_list = QI.split(",")

runner = CliRunner()


def _unshuffled(path: Path, seed: int, out: Path) -> Path:
    """A release written with ``--seed`` put back in the input's row order (for ``check --original``)."""
    from privdb.anonymize.release import publishable

    released = pd.read_csv(path, sep=";", dtype=str, keep_default_na=False)
    order = publishable(pd.DataFrame({"i": range(len(released))}), ["i"], seeded(seed))["i"].to_numpy()
    back = released.copy()
    back.iloc[order] = released.to_numpy()
    back.to_csv(out, sep=";", index=False)
    return out


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_mondrian_release_writes_only_its_columns_shuffled_and_reports_design_fields(tmp_path: Path) -> None:
    out, report = tmp_path / "out.csv", tmp_path / "r.json"
    code, text = _run(
        "anonymize", str(ADULT / "adult.csv"), "--qi", QI, "--sensitive", "salary-class", "--k", "10",
        "-o", str(out), "--report", str(report), "--report-png", str(tmp_path / "r.png"),
        "--report-html", str(tmp_path / "r.html"), "--seed", "3",
    )  # fmt: skip
    assert code == 0, text
    original = pd.read_csv(ADULT / "adult.csv", sep=";")
    released = pd.read_csv(out, sep=";")  # the input's delimiter is kept
    # only the quasi-identifiers and the sensitive column (no unclassified column), in the input's order
    assert list(released.columns) == [c for c in original.columns if c in {*qi_list, "salary-class"}]
    assert sorted(released["salary-class"]) == sorted(original["salary-class"])
    assert released["salary-class"].tolist() != original["salary-class"].tolist()  # rows shuffled
    body = json.loads(report.read_text())
    assert body["achieved"]["k"] >= 10
    assert {"ncp", "discernibility", "avg_class_size", "suppressed"} <= set(body["utility"])
    assert 0 <= body["utility"]["ncp"] <= 0.1124  # the reference Mondrian's NCP at k = 10
    assert {"prosecutor_max", "prosecutor_avg"} <= set(body["risk"]) and body["risk"]["prosecutor_max"] <= 0.1
    assert body["coverage"]["ok"] and body["seconds"] > 0
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
    assert "<img" in (tmp_path / "r.html").read_text()
    code, text = _run(
        "check", str(_unshuffled(out, 3, tmp_path / "back.csv")), "--qi", QI, "--format", "json",
        "--original", str(ADULT / "adult.csv"),
    )  # fmt: skip
    assert code == 0, text
    assert json.loads(text)["achieved"]["k"] == body["achieved"]["k"]


def test_lattice_release_suppresses_whole_records(tmp_path: Path) -> None:
    """Issue 15: the shipped age hierarchy (5 under '0-4', 40 under '35-39', …) is refused with its bad rows;
    with --fix-labels its labels become the spans of their ages and `check --original` passes."""
    out, report = tmp_path / "lat.csv", tmp_path / "lat.json"
    base = [
        "anonymize", str(ADULT / "adult.csv"), "--qi", QI, "--k", "10", "--algorithm", "lattice",
        "--hierarchies", str(ADULT / "hierarchies"), "-o", str(out), "--report", str(report), "--seed", "5",
    ]  # fmt: skip
    code, text = _run(*base)
    assert code == 2 and "Traceback" not in text and not out.exists()
    assert "row 40 (40;35-39;30-39;20-39;*): 40 is not in '35-39'" in text and "--fix-labels" in text
    code, text = _run(*base, "--fix-labels")
    assert code == 0, text
    back = _unshuffled(out, 5, tmp_path / "back.csv")
    check = ["check", str(back), "--original", str(ADULT / "adult.csv"), "--format", "json"]
    code, text = _run(*check, "--qi", QI, "--hierarchies", str(ADULT / "hierarchies"), "--fix-labels")
    assert code == 0, text
    assert json.loads(text)["coverage"] == {
        "ok": True,
        "violations": 0,
        "by_column": dict.fromkeys(qi_list, 0),
    }
    code, text = _run(*check, "--qi", "age")  # the ranges alone, read as ranges, hold every age
    assert code == 0 and json.loads(text)["coverage"]["ok"], text
    ages = pd.read_csv(out, sep=";", dtype=str)["age"]
    assert set(ages) == {"*", "1-20", "21-40", "41-60", "61-80", "81-100"}
    released = pd.read_csv(out, sep=";", dtype=str)
    qi = QI.split(",")
    starred = released[qi].eq("*")
    suppressed = starred.all(axis=1)
    body = json.loads(report.read_text())
    assert suppressed.sum() == body["suppression"]["records"] <= 0.05 * len(released)
    assert body["utility"]["ncp"] <= 0.344  # no worse than ARX's optimum under the same hierarchies
    # issue 41: utility.ncp is the loss the search minimised (docs: 33.15 %), not the ranges' width over
    # span (0.33967 was reported); that measure is named apart, and the columns' losses average to ncp
    from privdb.anonymize import anonymize

    adult = pd.read_csv(ADULT / "adult.csv", sep=";")
    again = anonymize(
        adult, qi, k=10, algorithm="lattice", hierarchies=str(ADULT / "hierarchies"), fix_labels=True
    )
    util = body["utility"]
    assert util["ncp"] == pytest.approx(again.ncp, abs=1e-12) and util["ncp"] == pytest.approx(
        0.33154, abs=5e-6
    )
    assert util["ncp_ranges"] == pytest.approx(0.33967, abs=5e-6)
    assert util["ncp_by_column"] == pytest.approx(again.ncp_by_column, abs=1e-12)
    assert sum(util["ncp_by_column"].values()) / len(qi) == pytest.approx(util["ncp"], abs=1e-12)
    assert set(util["ncp_ranges_by_column"]) == set(qi)
    sizes = released[~suppressed].groupby(qi).size()
    assert sizes.min() >= 10  # suppressed records are not a class of their own


def test_check_catches_a_range_that_excludes_its_record(tmp_path: Path) -> None:
    original = pd.DataFrame({"plz": [3400, 3210, 3250, 3270], "age": [30, 31, 32, 33], "d": list("abab")})
    released = pd.DataFrame(
        {"plz": ["3200-3299"] * 4, "age": ["30-33"] * 4, "d": list("abab")}
    )  # the notes' slip: 3400 published inside 3200-3299
    original.to_csv(tmp_path / "o.csv", index=False)
    released.to_csv(tmp_path / "r.csv", index=False)
    code, text = _run("check", str(tmp_path / "r.csv"), "--qi", "plz,age", "--sensitive", "d",
                      "--original", str(tmp_path / "o.csv"), "--format", "json")  # fmt: skip
    assert code == 0, text
    body = json.loads(text)
    assert body["coverage"] == {"ok": False, "violations": 1, "by_column": {"plz": 1, "age": 0}}
    assert body["achieved"]["k"] == 4 and body["achieved"]["l"] == 2


def test_risk_of_raw_adult(tmp_path: Path) -> None:
    code, text = _run("risk", str(ADULT / "adult.csv"), "--qi", QI, "--format", "json")
    assert code == 0, text
    body = json.loads(text)
    assert body["prosecutor_avg"] == pytest.approx(0.6004, abs=1e-4)  # #classes / n, as ARX
    assert body["sample_uniques"] == pytest.approx(0.465, abs=1e-3)


@pytest.mark.parametrize(
    ("rows", "args", "needle"),
    [
        ("a,b\n1,x\n2,y\n", ["--qi", "a,nosuch", "--k", "1"], "unknown column"),
        ("a,b\n1,x\n2,y\n", ["--qi", "a", "--k", "3"], "larger than the table"),
        ("a,b\n1,x\n2,y\n", ["--qi", "a", "--k", "0"], "at least 1"),
        ("a,b\n", ["--qi", "a", "--k", "1"], "empty"),
        ("a,b\n1,x\n2,y\n", ["--qi", "", "--k", "1"], "at least one column"),
        ("a,b\n1,x\n2,y\n", ["--qi", "a", "--k", "1", "--l", "2"], "sensitive"),
        ("a,b\n1,x\n,y\n2,x\n", ["--qi", "a", "--k", "1", "--algorithm", "lattice"], "1 missing value"),
    ],
)
def test_bad_input_is_a_clear_error_and_writes_nothing(
    tmp_path: Path, rows: str, args: list[str], needle: str
) -> None:
    source = tmp_path / "in.csv"
    source.write_text(rows)
    out, report = tmp_path / "out.csv", tmp_path / "r.json"
    code, text = _run("anonymize", str(source), *args, "-o", str(out), "--report", str(report))
    assert code == 2 and needle in text and "Traceback" not in text
    assert not out.exists() and not report.exists()


def test_a_hierarchy_missing_a_value_is_named(tmp_path: Path) -> None:
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "job.csv").write_text("nurse;care;*\ndoctor;care;*\n")
    source = tmp_path / "in.csv"
    source.write_text("job,age\nnurse,30\ndoctor,40\npilot,50\nnurse,31\n")
    out = tmp_path / "out.csv"
    base = ["anonymize", str(source), "--qi", "job", "--k", "2", "--hierarchies", str(tmp_path / "h")]
    code, text = _run(*base, "-o", str(out))
    assert code == 2 and "pilot" in text and not out.exists()
    code, text = _run(*base, "--hierarchy-fallback", "-o", str(out))
    assert code == 0, text


@pytest.mark.parametrize("option", ["-o", "--report-png", "--report"])
def test_an_output_in_a_missing_folder_fails_before_the_work(tmp_path: Path, option: str) -> None:
    """Issue 15: `-o /missing/x.csv` and `--report-png /missing/a.png` failed with an internal error after
    the whole release was computed; they are refused first, naming the folder."""
    source = tmp_path / "in.csv"
    source.write_text("a,b\n1,x\n2,y\n3,z\n4,w\n")
    suffix = {"-o": "x.csv", "--report-png": "a.png", "--report": "r.json"}[option]
    paths = {"-o": str(tmp_path / "out.csv"), option: str(tmp_path / "missing" / suffix)}
    args = [item for pair in paths.items() for item in pair]
    code, text = _run("anonymize", str(source), "--qi", "a", "--k", "2", *args)
    assert code == 2 and "does not exist" in text and "Traceback" not in text
    assert not (tmp_path / "out.csv").exists()


METRICS = ("loss", "discernibility", "aecs")


def test_each_metric_picks_the_node_that_minimises_it(tmp_path: Path) -> None:
    """--metric: the lattice search returns the anonymous node with the least loss, discernibility or
    average class size (docs/anonymize.md); on Adult at k = 10 the three optima are three different nodes."""
    from privdb.anonymize import load_hierarchies
    from privdb.anonymize.lattice import Lattice
    from privdb.anonymize.resolve import resolve

    nodes: dict[str, dict[str, int]] = {}
    for metric in METRICS:
        out, report = tmp_path / f"{metric}.csv", tmp_path / f"{metric}.json"
        code, text = _run(
            "anonymize", str(ADULT / "adult.csv"), "--qi", QI, "--k", "10", "--algorithm", "lattice",
            "--hierarchies", str(ADULT / "hierarchies"), "--fix-labels", "--metric", metric,
            "-o", str(out), "--report", str(report),
        )  # fmt: skip
        assert code == 0, text
        body = json.loads(report.read_text())
        assert body["parameters"]["metric"] == metric
        nodes[metric] = body["parameters"]["lattice_node"]
    assert len({tuple(node.values()) for node in nodes.values()}) == 3
    adult = pd.read_csv(ADULT / "adult.csv", sep=";")
    hierarchies = resolve(adult, qi_list, load_hierarchies(ADULT / "hierarchies", qi_list, fix_labels=True))
    for metric in METRICS:
        lattice = Lattice(adult, qi_list, hierarchies, 10, metric=metric)
        values = {m: lattice.evaluate([node[c] for c in qi_list])[0] for m, node in nodes.items()}
        assert all(v.anonymous for v in values.values())
        assert values[metric].value == min(v.value for v in values.values()), metric
    code, text = _run("anonymize", str(ADULT / "adult.csv"), "--qi", QI, "--metric", "aecs",
                      "-o", str(tmp_path / "m.csv"))  # fmt: skip
    assert code == 2 and "--algorithm lattice" in text


def test_the_html_report_reads_as_text_with_loss_per_column(tmp_path: Path) -> None:
    for extra in (
        ["--sensitive", "salary-class", "--l", "2"],
        ["--algorithm", "lattice", "--hierarchies", str(ADULT / "hierarchies"), "--fix-labels"],
    ):
        page = tmp_path / "r.html"
        code, text = _run("anonymize", str(ADULT / "adult.csv"), "--qi", QI, "--k", "10", *extra,
                          "-o", str(tmp_path / "o.csv"), "--report-html", str(page))  # fmt: skip
        assert code == 0, text
        html = page.read_text()
        for repr_mark in ("{'", "['", "np.float64(", "np.int64(", "<class", "None", "True", "False"):
            assert repr_mark not in html, repr_mark
        assert "Loss per quasi-identifier" in html and "age, workclass, education" in html
        for column in qi_list:
            assert f"<th scope='row'>{column}</th><td>" in html
        assert "Class sizes" in html and "<img" in html


def test_the_cli_on_a_million_rows_equals_the_library(tmp_path: Path) -> None:
    """Issue 15's scale: Adult tiled to 1,000,000 records, age jittered (seeded); the command's file and
    report equal what the library computes on the same table."""
    import numpy as np

    from privdb.anonymize import anonymize
    from privdb.anonymize.models import check
    from privdb.anonymize.release import publishable
    from privdb.anonymize.report import read_table

    adult = pd.read_csv(ADULT / "adult.csv", sep=";")
    rng = np.random.default_rng(20261123)
    big = adult.iloc[np.resize(np.arange(len(adult)), 1_000_000)].reset_index(drop=True)
    big["age"] = np.clip(big["age"].to_numpy() + rng.integers(-2, 3, len(big)), 17, 90)
    source, out, report = tmp_path / "big.csv", tmp_path / "out.csv", tmp_path / "r.json"
    big.to_csv(source, sep=";", index=False)
    code, text = _run("anonymize", str(source), "--qi", QI, "--sensitive", "salary-class", "--k", "10",
                      "-o", str(out), "--report", str(report), "--seed", "11")  # fmt: skip
    assert code == 0, text
    frame, _ = read_table(source)
    expected = anonymize(frame, qi_list, k=10, sensitive="salary-class").table
    written = pd.read_csv(out, sep=";", dtype=str, keep_default_na=False)
    shuffled = publishable(expected, [*qi_list, "salary-class"], seeded(11))
    assert written.equals(shuffled.astype(str))
    body = json.loads(report.read_text())
    achieved = check(expected, qi_list, "salary-class")
    assert body["achieved"]["k"] == achieved.k >= 10 and body["classes"] == achieved.classes.n_classes
    assert body["records"] == 1_000_000 and body["coverage"]["ok"]


def test_arx_metrics_from_the_command_line(tmp_path: Path) -> None:
    """Issue 41: --metric monotonic-entropy is ARX's PrecomputedEntropy(…, true): on ARX's own case
    (KAnonymity[2]: k = 5, no suppression, all nine columns) ARX's node and its entropy 407289.5388925293;
    a gs factor outside 0..1 is refused in one line."""
    out, report = tmp_path / "e.csv", tmp_path / "e.json"
    base = [
        "anonymize", str(ADULT / "adult.csv"), "--qi", QI + ",salary-class", "--k", "5", "--algorithm",
        "lattice", "--hierarchies", str(ADULT / "hierarchies"), "--fix-labels", "--suppression-limit", "0",
        "-o", str(out), "--report", str(report),
    ]  # fmt: skip
    code, text = _run(*base, "--metric", "monotonic-entropy")
    assert code == 0, text
    params = json.loads(report.read_text())["parameters"]
    assert params["metric_value"] == pytest.approx(407289.5388925293, rel=1e-9)
    arx_order = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
    node = params["lattice_node"]
    assert [node[c] for c in [*arx_order, "occupation", "salary-class"]] == [1, 2, 1, 1, 3, 2, 2, 1, 1]
    code, text = _run(*base, "--metric", "entropy", "--gs-factor", "2")
    assert code == 2 and "Traceback" not in text and "gs_factor" in text


def test_ordered_t_closeness_of_a_category_from_the_command_line(tmp_path: Path) -> None:
    """--t-distance ordered on occupation (text, in sorted order) is ARX's OrderedDistanceTCloseness: its case
    OrderedDistanceTCloseness[2] (k = 5, t = 0.1, no suppression, DM*) gives ARX's node and 97868020; the
    report measures t with the same distance. --t-distance hierarchical without the sensitive column's
    hierarchy is refused."""
    out, report = tmp_path / "t.csv", tmp_path / "t.json"
    qi = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]
    base = [
        "anonymize", str(ADULT / "adult.csv"), "--qi", ",".join(qi), "--k", "5", "--t", "0.1", "--sensitive",
        "occupation", "--algorithm", "lattice", "--suppression-limit", "0", "-o", str(out), "--report",
        str(report),
    ]  # fmt: skip
    hier = ["--hierarchies", str(ADULT / "hierarchies"), "--fix-labels", "--metric", "dm-star"]
    code, text = _run(*base, *hier, "--t-distance", "ordered")
    assert code == 0, text
    body = json.loads(report.read_text())
    assert body["parameters"]["metric_value"] == 97868020
    assert [body["parameters"]["lattice_node"][c] for c in qi] == [1, 1, 1, 2, 3, 2, 2, 1]
    assert body["diversity"]["distance"] == "ordered" and body["achieved"]["t"] <= 0.1 + 1e-12
    code, text = _run(*base, "--t-distance", "hierarchical")
    assert code == 2 and "Traceback" not in text and "--t-distance hierarchical needs" in text
    no_t = [a for a in base if a not in ("--t", "0.1")]
    code, text = _run(*no_t, "--t-distance", "ordered")
    assert code == 2 and "give --t as well" in text


def test_mondrian_on_whole_and_fractional_numbers_reports_its_own_release(tmp_path: Path) -> None:
    """A column of whole numbers and fractions: a class of only 20.0 is labelled "20", and the report's
    coverage reads the raw 20.0 by the same one-rule-per-value text (it once said "20.0" there, because
    other records held fractions, and refused the command's own release)."""
    rows = [(v, s) for v in (20.0, 20.5, 21.25, 22.0, 23.75, 30.0) for s in ("a", "b", "c", "a")]
    src = tmp_path / "t.csv"
    pd.DataFrame(rows, columns=["score", "diag"]).to_csv(src, index=False)
    out, report = tmp_path / "out.csv", tmp_path / "r.json"
    code, text = _run(
        "anonymize", str(src), "--qi", "score", "--sensitive", "diag", "--k", "4", "-o", str(out),
        "--report", str(report),
    )  # fmt: skip
    assert code == 0, text
    body = json.loads(report.read_text())
    assert body["coverage"]["ok"], body["coverage"]
    labels = set(pd.read_csv(out, dtype=str)["score"])
    assert "20" in labels and "20.0" not in labels  # single-value classes, each labelled by its value
    assert "20.5" in labels
