"""The command line: documented commands run, errors are one line with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from privdb.cli import app

runner = CliRunner(env={"COLUMNS": "200"})


def test_demo_shows_truth_noise_accuracy_and_a_refusal() -> None:
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Randomised response" in out and "tax_office" in out
    assert "95% interval" in out
    assert "not differentially private" in out
    assert "refused" in out and "budget_exhausted" not in out  # a friendly sentence, not a code dump


def test_audit_json_shape() -> None:
    result = runner.invoke(app, ["audit", "laplace", "rr_coin", "--samples", "5000", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == ["laplace", "rr_coin"]
    for row in rows:
        assert {"name", "epsilon", "delta", "epsilon_lower_bound", "samples"} <= row.keys()
        assert row["samples"] == 5000
        assert row["epsilon_lower_bound"] <= row["epsilon"] + 0.5


def test_audit_table_flags_a_broken_mechanism() -> None:
    result = runner.invoke(app, ["audit", "rr_heads_say_yes", "--samples", "5000"])
    assert result.exit_code == 0
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
