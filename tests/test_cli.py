"""The command line: documented commands run, errors are one line with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from privdb.cli import app

runner = CliRunner(env={"COLUMNS": "200"})


def test_demo_shows_truth_noise_accuracy_and_a_refusal() -> None:
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Randomised response" in out and "tax_office" in out
    assert "95% interval" in out and "owner's true answer" in out
    assert "not differentially private" in out
    assert "DP-SELECT 0.5 COUNT(*) FROM people WHERE age > 30" in out
    assert "ε left 0" in out
    assert "refused" in out and "budget_exhausted" not in out  # a friendly sentence, not a code dump


def test_audit_json_shape() -> None:
    result = runner.invoke(app, ["audit", "laplace", "rr_coin", "--samples", "5000", "--format", "json"])
    # the default confidence holds for the run: a false alarm (exit 3) at most once in a million runs
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == ["laplace", "rr_coin"]
    for row in rows:
        assert {"name", "epsilon", "delta", "epsilon_lower_bound", "samples"} <= row.keys()
        assert row["samples"] == 5000
        assert row["epsilon_lower_bound"] <= row["epsilon"] + 0.5


def test_audit_table_flags_a_broken_mechanism() -> None:
    result = runner.invoke(app, ["audit", "rr_heads_say_yes", "--samples", "5000"])
    assert result.exit_code == 3  # issue 15: a violated claim is a non-zero exit (3: not a user error)
    assert "VIOLATES CLAIM" in result.output


def test_user_errors_exit_2_with_one_line_and_no_traceback() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "privdb", "audit", "no_such_mechanism"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error [invalid_parameter]")
    assert "Traceback" not in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "privdb", "audit", "--samples", "10"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and "samples" in proc.stderr and "Traceback" not in proc.stderr


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "privdb", *args], capture_output=True, text=True, check=False
    )


def test_database_commands_end_to_end(tmp_path: Path) -> None:
    """load → grant → explain → query (table, json, csv) → budget → sql, as documented in DESIGN.md."""
    db = str(tmp_path / "db")
    meta = tmp_path / "people.yaml"
    meta.write_text(
        "tables:\n  people:\n    privacy_unit: pid\n    columns:\n"
        "      pid: {type: int, private_id: true}\n      age: {type: int, lower: 0, upper: 100}\n"
        "      income: {type: float, lower: 0, upper: 500000}\n      sex: {type: category, values: [F, M]}\n"
    )
    csv = tmp_path / "people.csv"
    csv.write_text(
        "pid;age;income;sex\n" + "".join(f"{i};{20 + i % 50};{2000 * i};{'FM'[i % 2]}\n" for i in range(300))
    )
    result = runner.invoke(app, ["load", "--db", db, "people", str(csv), "--metadata", str(meta)])
    assert result.exit_code == 0, result.output
    assert "300 rows" in result.output and "privacy unit: pid" in result.output

    result = runner.invoke(app, ["grant", "--db", db, "alice", "--epsilon", "2", "--delta", "1e-6"])
    assert result.exit_code == 0 and len(result.stdout.strip()) > 20

    result = runner.invoke(
        app, ["explain", "--db", db, "DP-SELECT 1 sex, AVG(income) FROM people GROUP BY sex", "-v"]
    )
    assert result.exit_code == 0, result.output
    assert "laplace" in result.output and "THEN 500000.0" in result.output  # clamped to the bound

    result = runner.invoke(
        app,
        [
            "query",
            "--db",
            db,
            "--analyst",
            "alice",
            "DP-SELECT 0.5 sex, COUNT(*) AS n FROM people GROUP BY sex",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["columns"] == ["sex", "n"] and len(payload["rows"]) == 2
    assert payload["epsilon_spent"] == 0.5 and payload["budget"]["epsilon_remaining"] == 1.5
    assert {"column", "mechanism", "scale", "ci95"} <= payload["accuracy"][0].keys()

    result = runner.invoke(
        app,
        ["query", "--db", db, "--analyst", "alice", "DP-SELECT 0.5 COUNT(*) FROM people", "--format", "csv"],
    )
    assert (
        result.exit_code == 0
        and result.stdout.splitlines()[0] == "COUNT(*),COUNT(*)_ci95_low,COUNT(*)_ci95_high"
    )
    result = runner.invoke(
        app, ["query", "--db", db, "--analyst", "alice", "DP-SELECT 0.5 SUM(income) FROM people"]
    )
    assert result.exit_code == 0 and "95% interval" in result.output

    result = runner.invoke(app, ["budget", "--db", db, "--analyst", "alice", "--format", "json"])
    assert json.loads(result.stdout)["epsilon_remaining"] == 0.5
    result = runner.invoke(app, ["budget", "--db", db, "--analyst", "alicia"])  # was an all-zero budget
    assert result.exit_code == 2 and "no analyst 'alicia'" in result.stderr

    result = runner.invoke(app, ["sql", "--db", db, "SELECT COUNT(*) AS n FROM people", "--format", "csv"])
    assert result.exit_code == 0 and result.stdout.splitlines() == ["n", "300"]


def test_query_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n1,2\n3,4\n")
    assert _run("load", "--db", db, "t", str(csv)).returncode == 0
    assert _run("grant", "--db", db, "bob", "--epsilon", "1").returncode == 0
    for query, code in [
        ("SELECT * FROM t", "raw_access_denied"),
        ("DP-SELECT 1 SUM(a) FROM t", "invalid_parameter"),
        ("DP-SELECT 1 COUNT(*) FROM u", "unknown_table"),
        ("DP-SELECT 5 COUNT(*) FROM t", "budget_exhausted"),
    ]:
        proc = _run("query", "--db", db, "--analyst", "bob", query)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error [{code}]"), proc.stderr
    proc = _run("query", "--db", db, "--analyst", "nobody", "DP-SELECT 1 COUNT(*) FROM t")
    assert proc.returncode == 2 and "unauthorized" in proc.stderr
    proc = _run("load", "--db", db, "t2", str(tmp_path / "missing.csv"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_grant_refuses_an_unknown_table_with_a_suggestion(tmp_path: Path) -> None:
    """Issue 27: `grant --tables peeple` granted a table that is not there, without a word."""
    db = str(tmp_path / "db")
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n1,2\n3,4\n")
    assert _run("load", "--db", db, "people", str(csv)).returncode == 0
    proc = _run("grant", "--db", db, "bob", "--epsilon", "1", "--tables", "people,peeple")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and proc.stdout == "", proc.stderr
    assert "no table 'peeple'" in lines[0] and "did you mean 'people'?" in lines[0]
    proc = _run("query", "--db", db, "--analyst", "bob", "DP-SELECT 1 COUNT(*) FROM people")
    assert "unauthorized" in proc.stderr  # refused before anything changed: bob was not created
    assert _run("grant", "--db", db, "bob", "--epsilon", "1", "--tables", "People").returncode == 0


def test_attach_help_shows_four_slashes_for_an_absolute_sqlite_path() -> None:
    """Issue 27: the help showed sqlite:///path, which reads an absolute path as a relative one."""
    result = runner.invoke(app, ["attach", "--help"], env={"COLUMNS": "200"})
    text = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 0
    assert "sqlite:////abs/path.db (absolute: four slashes)" in text and "sqlite:///relative.db" in text
    assert "sqlite:///path/file.db" not in text
    engines = (Path(__file__).resolve().parents[1] / "docs" / "engines.md").read_text()
    assert "sqlite:////abs/path.db" in engines and "sqlite:///path/file.db" not in engines


def test_demo_local_writes_the_local_vs_central_plot(tmp_path: Path) -> None:
    out = tmp_path / "lc.png"
    result = runner.invoke(app, ["demo", "local", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "√n" in result.output and out.read_bytes()[:4] == b"\x89PNG"
    bad = runner.invoke(app, ["demo", "nosuch"])
    assert bad.exit_code == 2 and "unknown demo" in bad.output


def test_demo_linkage_shows_the_attack_before_and_after() -> None:
    result = runner.invoke(app, ["demo", "linkage"])
    assert result.exit_code == 0, result.output
    assert "names removed only" in result.output and "71%" in result.output and "0%" in result.output


def test_version() -> None:
    """Issue 15: ``privdb --version`` prints the package's version and exits 0."""
    import privdb

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"privdb {privdb.__version__}"


def test_a_mistyped_db_is_not_created_by_a_read_command(tmp_path: Path) -> None:
    """Issue 15: `privdb query --db typo …` created the directory; a read command refuses, creates nothing."""
    missing = tmp_path / "typo"
    for args in (
        ["query", "--db", str(missing), "--analyst", "a", "DP-SELECT 1 COUNT(*) FROM t"],
        ["explain", "--db", str(missing), "DP-SELECT 1 COUNT(*) FROM t"],
        ["budget", "--db", str(missing), "--analyst", "a"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "no privdb database" in result.output
        assert not missing.exists()
