"""Names, paths, labels and values the user or the data chose are printed as they are: Rich markup
(``[/b]x``, ``[red]a``) and emoji codes (``:cat:``) in them are never read, so a command neither ends with
"internal error" after it wrote a release or spent budget, nor prints silently wrong text. Every command
runs for real (CliRunner, files in tmp_path, DuckDB)."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from privdb.cli import app, core
from privdb.cli.core import console, errors
from privdb.cli.table_options import Steps
from privdb.database import Database
from privdb.result import Result

runner = CliRunner(env={"COLUMNS": "400"})  # wide: no line folded inside a name
SRC_CLI = Path(core.__file__).parent  # the code under test, wherever it is imported from

# a table whose column names and values are Rich markup; `[b]y`'s hierarchy generalises to `[red]a`/`[red]b`
PEOPLE = "[/b]x;[b]y;age;[/b]s\n" + "".join(
    f"{'uv'[i % 2]};{('engineer', 'lawyer', 'writer', 'dancer')[i % 4]};{20 + i % 40};"
    f"{('[red]flu', 'cold')[i % 3 == 0]}\n"
    for i in range(60)
)
HIERARCHY = "engineer;[red]a;*\nlawyer;[red]a;*\nwriter;[red]b;*\ndancer;[red]b;*\n"
RELEASE = (
    "[/b]x;[b]y;age;[/b]s\nu;[red]a;20-29;cold\nu;[red]a;20-29;cold\nv;[red]b;30-39;cold\n"
    "u;[red]b;40-49;[red]flu\n"
)
PUBLIC = "[/b]x;[b]y;age;name\nu;engineer;25;ann\nu;lawyer;27;bob\nv;writer;33;cy\nu;dancer;44;[/i]dee\n"
TABLE = "[/b]c,[/b]age\n" + "".join(f"{('[red]a', 'b')[i % 2]},{i % 90}\n" for i in range(200))
METADATA = """tables:
  t:
    columns:
      "[/b]c": {type: category, values: ["[red]a", "b"]}
      "[/b]age": {type: int, lower: 0, upper: 100}
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """The files, in a directory ``[/x]`` (a path that is itself markup), with hierarchies in ``h``."""
    folder = tmp_path / "[" / "x]"
    folder.mkdir(parents=True)
    hierarchies = tmp_path / "h"
    hierarchies.mkdir()
    (hierarchies / "[b]y.csv").write_text(HIERARCHY)
    (hierarchies / "age.csv").write_text(
        "".join(f"{a};{a // 10 * 10}-{a // 10 * 10 + 9};*\n" for a in range(120))
    )
    out = {"folder": folder, "hierarchies": hierarchies}
    for name, body in (
        ("[b]p.csv", PEOPLE),
        ("release.csv", RELEASE),
        ("public.csv", PUBLIC),
        ("t.csv", TABLE),
    ):
        out[name] = folder / name
        out[name].write_text(body)
    assert "[/x]" in str(folder)
    return out


@pytest.fixture
def db(tmp_path: Path, files: dict[str, Path]) -> Path:
    """A database holding ``t`` (columns ``[/b]c``, ``[/b]age``) and an analyst ``a`` with ε = 5 (made with
    the library: ``privdb load``'s own line is tested below)."""
    (tmp_path / "t.yaml").write_text(METADATA)
    with Database(tmp_path / "db") as database:
        database.load("t", files["t.csv"], tmp_path / "t.yaml")
        database.grant("a", epsilon=5)
    return tmp_path / "db"


def test_load_prints_the_column_names_verbatim(tmp_path: Path, files: dict[str, Path]) -> None:
    (tmp_path / "t.yaml").write_text(METADATA)
    args = [
        "load",
        "--db",
        str(tmp_path / "db"),
        "t",
        str(files["t.csv"]),
        "--metadata",
        str(tmp_path / "t.yaml"),
    ]
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output
    assert "loaded t: 200 rows, 2 columns; privacy unit: one row; bounded: [/b]age" in done.stdout


def _spent(db: Path) -> float:
    shown = runner.invoke(app, ["budget", "--db", str(db), "--analyst", "a", "--format", "json"])
    return float(json.loads(shown.stdout)["epsilon_spent"])


def test_anonymize_prints_the_path_it_wrote(files: dict[str, Path]) -> None:
    out = files["folder"] / "out.csv"
    done = runner.invoke(app, [
        "anonymize", str(files["[b]p.csv"]), "--qi", "[/b]x,[b]y,age", "--sensitive", "[/b]s", "--k", "3",
        "--hierarchies", str(files["hierarchies"]), "-o", str(out),
    ])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert f"wrote {out} (60 records)" in done.stdout
    assert out.read_text().startswith("[/b]x;[b]y;age;[/b]s")


def test_check_prints_file_and_column_names_verbatim(files: dict[str, Path]) -> None:
    original = files["folder"] / "original.csv"  # one value (`[/b]x` of the first record) not covered
    original.write_text(RELEASE.replace("\nu;", "\nw;", 1))
    done = runner.invoke(app, [
        "check", str(files["release.csv"]), "--qi", "[/b]x,[b]y,age", "--sensitive", "[/b]s",
        "--hierarchies", str(files["hierarchies"]), "--original", str(original),
    ])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "release.csv: 4 records" in done.stdout
    assert "not covered: {'[/b]x': 1, '[b]y': 0, 'age': 0}" in done.stdout


def test_risk_prints_file_and_quasi_identifier_names_verbatim(files: dict[str, Path]) -> None:
    done = runner.invoke(app, ["risk", str(files["[b]p.csv"]), "--qi", "[/b]x,[b]y,age"])
    assert done.exit_code == 0, done.output
    assert "re-identification risk of [b]p.csv" in done.stdout
    assert "quasi-identifiers: [/b]x,[b]y,age" in done.stdout


def test_linkage_prints_names_labels_and_values_verbatim(files: dict[str, Path]) -> None:
    done = runner.invoke(app, [
        "linkage", str(files["release.csv"]), str(files["public.csv"]), "--on", "[/b]x,[b]y,age",
        "--hierarchies", str(files["hierarchies"]),
    ])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "linked to exactly one of 4 public records on [/b]x, [b]y, age" in done.stdout
    assert "released [/b]s" in done.stdout  # a column header
    row = next(line for line in done.stdout.splitlines() if "[/i]dee" in line)  # the public name and the
    assert "[red]flu" in row  # released value of the linked record (the release's [red]b label matched)


def test_publish_safepub_prints_the_path_it_wrote(files: dict[str, Path], db: Path) -> None:
    out = files["folder"] / "safe.csv"
    done = runner.invoke(app, [
        "publish", "safepub", str(files["[b]p.csv"]), "--qi", "[b]y,age", "--epsilon", "1", "--delta", "1e-5",
        "--hierarchies", str(files["hierarchies"]), "--db", str(db), "--table", "p", "-o", str(out),
    ])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert f"of 'p' to {out} (k = " in done.stdout and out.is_file()


def test_publish_histogram_prints_the_path_it_wrote(files: dict[str, Path], db: Path) -> None:
    out = files["folder"] / "h.csv"
    done = runner.invoke(app, [
        "publish", "histogram", "t", "--db", str(db), "--epsilon", "0.5", "--columns", "[/b]c",
        "-o", str(out),
    ])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert f"released 2 cells of 1 marginal(s) to {out} · ε 0.5" in done.stdout


def test_publish_synthetic_prints_the_path_it_wrote(files: dict[str, Path], db: Path) -> None:
    out = files["folder"] / "s.csv"
    done = runner.invoke(app, [
        "publish", "synthetic", "t", "--db", str(db), "--epsilon", "0.5", "--delta", "1e-9", "--rows", "10",
        "-o", str(out),
    ])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert f"wrote 10 synthetic rows of 2 columns to {out} · ε 0.5" in done.stdout
    assert out.read_text().startswith("[/b]c,[/b]age")


QUERY = 'DP-SELECT 0.5 "[/b]c", COUNT(*) AS "[/b]n", AVG("[/b]age") AS ":cat:" FROM t GROUP BY "[/b]c"'


def test_query_prints_the_answer_whole_and_charges_once(db: Path) -> None:
    done = runner.invoke(app, ["query", "--db", str(db), "--analyst", "a", QUERY])
    assert done.exit_code == 0, done.output  # not "internal error" after the spend
    header = done.stdout.splitlines()[1]
    for name in ("[/b]c", "[/b]n", "[/b]n 95% interval", ":cat:", ":cat: 95% interval"):
        assert f" {name} " in header
    assert any(line.startswith("│ [red]a ") for line in done.stdout.splitlines())  # a released key
    assert "rows whose key ([/b]c) is outside its declared domain" in done.stdout
    assert _spent(db) == pytest.approx(0.5)


def test_a_result_prints_verbatim_on_any_rich_console(db: Path) -> None:
    """The library's own Rich view (``rich.print(result)`` in a notebook): markup is on there."""
    done = runner.invoke(app, ["query", "--db", str(db), "--analyst", "a", QUERY, "--format", "json"])
    assert done.exit_code == 0, done.output
    shown = io.StringIO()
    Console(file=shown, width=400).print(Result.from_dict(json.loads(done.stdout)))
    assert " [/b]n " in shown.getvalue() and " :cat: " in shown.getvalue() and "│ [red]a " in shown.getvalue()


def test_explain_prints_column_names_and_engine_sql_verbatim(db: Path) -> None:
    done = runner.invoke(app, ["explain", "--db", str(db), QUERY, "--verbose"])
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("table t  ·  ")
    rows = {line.split("│")[1].strip() for line in done.stdout.splitlines() if line.startswith("│")}
    assert {"[/b]c", "[/b]n", ":cat:"} <= rows  # the per-column table
    assert '"[/b]c" AS k0' in done.stdout  # the engine SQL


def test_owner_sql_prints_names_and_values_verbatim(db: Path) -> None:
    done = runner.invoke(app, ["sql", "--db", str(db), 'SELECT "[/b]c" FROM t ORDER BY 1 LIMIT 1'])
    assert done.exit_code == 0, done.output
    assert " [/b]c " in done.stdout and " [red]a " in done.stdout


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            'DP-SELECT 0.5 COUNT(*) FROM "[/b]nope:cat:"',
            "error [unknown_table]: no table '[/b]nope:cat:'; known: t",
        ),
        ('DP-SELECT 0.5 SUM("[/b]c") FROM t', "error [unsupported_query]: SUM([/b]c): '[/b]c' is category"),
    ],
)
def test_a_refusal_quoting_the_query_is_printed_verbatim(db: Path, sql: str, message: str) -> None:
    done = runner.invoke(app, ["query", "--db", str(db), "--analyst", "a", sql])
    assert done.exit_code == 2, done.output
    assert done.stderr.startswith(message)
    assert _spent(db) == 0


def test_the_progress_bar_prints_a_file_name_verbatim() -> None:
    """``Steps`` shows "reading <file>" on a terminal; the name is not markup there either."""
    steps = Steps(2)
    steps.next("reading [/x]:cat:.csv")
    shown = io.StringIO()
    Console(file=shown, width=200).print(steps.bar.make_tasks_table(steps.bar.tasks))
    assert "reading [/x]:cat:.csv" in shown.getvalue()


def test_the_cli_makes_its_consoles_in_one_place() -> None:
    """Every Console the CLI prints to comes from cli/core.py (markup and emoji codes off), and no line asks
    for markup back: a new command cannot reintroduce the bug by building its own."""
    for made in (console(), errors()):
        assert made.render_str("[/b]x [red]a :cat:").plain == "[/b]x [red]a :cat:"
    for path in SRC_CLI.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = (
                    node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                )
                assert called != "Console" or path.name == "core.py", (
                    f"{path.name}: Console() outside core.py"
                )
                assert called != "from_markup", f"{path.name}: Text.from_markup"
                for keyword in node.keywords:
                    if keyword.arg in ("markup", "emoji") and isinstance(keyword.value, ast.Constant):
                        assert keyword.value.value is False, f"{path.name}: {keyword.arg}=True"
