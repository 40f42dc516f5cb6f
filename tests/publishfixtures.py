"""Shared by the publication tests: the shipped example people loaded with their metadata, and what every
publication has spent (the owner's publication account plus every shared budget's draw)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from privdb.cli import app
from privdb.database import Database
from privdb.publish.charge import OWNER_ACCOUNT

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


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
