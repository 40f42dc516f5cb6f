"""Shared by the publication tests: the shipped example people loaded with their metadata, Adult with ARX's
hierarchies as its public domains, and what every publication has spent (the owner's publication account plus
every shared budget's draw)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from privdb.catalog.metadata import TableMeta
from privdb.catalog.metadata_spec import metadata_from_dict
from privdb.cli import app
from privdb.database import Database
from privdb.publish.charge import OWNER_ACCOUNT

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"


def example_people(path: Path) -> Path:
    """A database at ``path`` holding examples/people.csv as ``people``, loaded by the command line."""
    loaded = CliRunner().invoke(
        app, ["load", "--db", str(path), "people", str(EXAMPLES / "people.csv"), "--metadata",
              str(EXAMPLES / "people.yaml")],
    )  # fmt: skip
    assert loaded.exit_code == 0, loaded.stderr
    return path


def spent(path: Path) -> float:
    """ε drawn from every shared budget plus the owner's publication account."""
    with Database(path) as database:
        return sum(b["epsilon_spent"] for b in database.shared_budgets()) + float(
            database.ledger.budget(OWNER_ACCOUNT, database.name).epsilon_spent
        )


def adult_with_domains() -> tuple[pd.DataFrame, TableMeta]:
    """Adult (30,162 rows) and its metadata: age 17..90, every other column's values from ARX's hierarchy."""
    frame = pd.read_csv(ADULT / "adult.csv", sep=";")
    columns: dict[str, dict[str, object]] = {"age": {"type": "int", "lower": 17, "upper": 90}}
    for name in frame.columns.drop("age"):
        values = pd.read_csv(ADULT / "hierarchies" / f"{name}.csv", sep=";", header=None)[0]
        columns[name] = {"type": "category", "values": [str(v) for v in values]}
    meta = metadata_from_dict(
        "adult", {"columns": columns}, {c: "int" if c == "age" else "text" for c in frame}
    )
    return frame, meta
