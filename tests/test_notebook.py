"""Jupyter (issue 29): the example notebook (examples/notebook.ipynb) runs start to end on a real kernel of
the tests' own Python (nbclient, ipykernel), its ``%%privdb`` cell shows the answer's table with interval
columns and an SVG chart; and the magic's refusals are messages, not tracebacks, and spend nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import privdb
from privdb.database import Database

nbformat = pytest.importorskip("nbformat", reason="the notebook extra: pip install -e '.[notebook]'")
nbclient = pytest.importorskip("nbclient", reason="the notebook extra: pip install -e '.[notebook]'")
pytest.importorskip("ipykernel", reason="the notebook extra: pip install -e '.[notebook]'")
IPython = pytest.importorskip("IPython", reason="the notebook extra: pip install -e '.[notebook]'")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
KERNEL = "privdb-tests-python"  # a kernel of this Python, whatever kernels the machine has registered


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernelspec running ``sys.executable`` (the venv's Python, with the checkout's privdb), found first
    through JUPYTER_PATH; the kernel inherits this process's environment (PYTHONPATH included)."""
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"})
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return KERNEL


def _outputs(cell: Any) -> list[dict[str, Any]]:
    return [dict(o) for o in cell.get("outputs", [])]


def test_the_example_notebook_runs_and_shows_intervals_and_a_chart(kernel: str) -> None:
    notebook = nbformat.read(EXAMPLES / "notebook.ipynb", as_version=4)
    for cell in notebook.cells:  # run what the sources say, not the outputs stored in the file
        if cell.cell_type == "code":
            cell.outputs = []
    client = nbclient.NotebookClient(
        notebook, kernel_name=kernel, timeout=300, resources={"metadata": {"path": str(EXAMPLES)}}
    )
    client.execute()
    code = [c for c in notebook.cells if c.cell_type == "code"]
    errors = [o for c in code for o in _outputs(c) if o["output_type"] == "error"]
    assert not errors, errors
    magic = next(c for c in code if c.source.startswith("%%privdb"))
    shown = [o for o in _outputs(magic) if o["output_type"] == "execute_result"]
    assert len(shown) == 1, _outputs(magic)
    page = shown[0]["data"]["text/html"]
    assert "<svg" in page and "</svg>" in page  # the error-bar chart
    assert "mean_income" in page and "±" in page and "ε spent 1" in page  # values with their intervals
    frame = next(c for c in code if c.source == "answer.to_pandas()")  # -o answer kept it
    table = next(o for o in _outputs(frame) if o["output_type"] == "execute_result")["data"]["text/html"]
    for column in ("n_ci95_low", "n_ci95_high", "mean_income_ci95_low", "mean_income_ci95_high"):
        assert column in table
    budget = next(o for o in _outputs(code[-1]) if o["output_type"] == "execute_result")
    assert "'epsilon_remaining': 1.0" in budget["data"]["text/plain"]  # 2 granted, 1 spent


def test_the_magic_refuses_clearly_and_spends_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython

    folder = tmp_path / "db"
    with privdb.connect(folder) as owner:
        owner.load("people", EXAMPLES / "people.csv", EXAMPLES / "people.yaml")
        owner.grant("alice", epsilon=2)
    shell = start_ipython()
    assert shell is not None
    shell.run_line_magic("load_ext", "privdb")
    conn = privdb.connect(folder, analyst="alice")
    shell.user_ns.update({"conn": conn, "number": 3})
    try:
        for line, message in [
            ("nosuch", "nosuch is not defined"),
            ("number", "is a int"),
            ("http://127.0.0.1:9", "needs --token VAR"),
            ("http://127.0.0.1:9 --token NO_SUCH_TOKEN_VARIABLE", "no such variable"),
            ("conn -o 1bad", "not a Python variable name"),
        ]:
            with pytest.raises(UsageError, match=message):
                shell.run_cell_magic("privdb", line, "DP-SELECT 1 COUNT(*) FROM people")
        assert shell.run_cell_magic("privdb", "conn", "DP-SELECT 1 COUNT(*) FROM nosuch") is None
        assert "error (unknown_table)" in capsys.readouterr().err
        assert conn.budget()["epsilon_spent"] == 0  # every refusal above was free
        answer = shell.run_cell_magic("privdb", "conn -o kept", "DP-SELECT 0.5 COUNT(*) AS n FROM people")
        assert shell.user_ns["kept"] is answer and answer.epsilon_spent == 0.5
    finally:
        conn.close()
    with Database(folder) as db:
        assert db.budget("alice").to_dict()["epsilon_spent"] == 0.5
