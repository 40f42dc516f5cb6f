"""Two neighbouring databases (one person in, one out) and the outcome an analyst observes on each.

An outcome is everything the analyst sees besides the noisy values: through the library, whether the query
answered, how many rows and which columns, or the error code and message; through the command line, the
exit code and the error line. Tests assert the outcomes are identical on both neighbours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from conftest import seeded
from privdb.cli import app
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine

PEOPLE_META: dict[str, Any] = {
    "columns": {
        "name": {"type": "text", "identifier": True},
        "disease": {"type": "text"},
        "income": {"type": "float", "lower": 0, "upper": 100_000},
        "age": {"type": "int", "lower": 0, "upper": 100},
        "visits": {"type": "int", "lower": 0, "upper": 50},
        "born": {"type": "date"},
    }
}
ALICE = {"name": "Alice", "disease": "HIV", "income": 55_555.0, "age": 40, "visits": 7,
         "born": pd.Timestamp("1985-03-02")}  # fmt: skip


def people(n: int = 400, seed: int = 3) -> pd.DataFrame:
    """A small table of people; nobody has HIV and nobody is called Alice."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "name": [f"person{i}" for i in range(n)],
            "disease": rng.choice(["flu", "cold", "none"], n),
            "income": rng.uniform(0, 100_000, n).round(2),
            "age": rng.integers(0, 100, n),
            "visits": rng.integers(0, 50, n),
            "born": pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 20_000, n), unit="D"),
        }
    )


@dataclass
class Neighbours:
    without: Database
    with_: Database

    def both(self) -> tuple[Database, Database]:
        return self.without, self.with_

    def close(self) -> None:
        self.without.close()
        self.with_.close()


def neighbours(
    tmp_path: Path,
    frame: pd.DataFrame | None = None,
    extra: dict[str, Any] | list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
) -> Neighbours:
    """The table ``frame`` without and with the ``extra`` row(s) (default: Alice), as table ``people``."""
    base = people() if frame is None else frame
    rows = [ALICE] if extra is None else ([extra] if isinstance(extra, dict) else extra)
    grown = pd.concat([base, pd.DataFrame(rows)], ignore_index=True)
    dbs = []
    for name, data in (("without", base), ("with", grown)):
        db = Database(tmp_path / name)
        db.backend.load_frame("people", data)
        db.set_metadata("people", meta or PEOPLE_META)
        db.grant("eve", epsilon=1_000, delta=1e-3)
        db.noise_source = seeded(11)
        dbs.append(db)
    return Neighbours(dbs[0], dbs[1])


def outcome(db: Database, query: str) -> tuple[Any, ...]:
    """What the analyst observes of ``query`` besides the noisy values."""
    try:
        result = engine.run(db, "eve", query)
    except PrivdbError as err:
        return ("error", err.code, err.message)
    return ("answered", tuple(result.columns), len(result.rows))


def cli_outcome(db: Database, query: str) -> tuple[Any, ...]:
    """The command line's exit code and error line (values left out) for ``query``."""
    path = str(db.path)
    result = CliRunner().invoke(app, ["query", "--db", path, "--analyst", "eve", query, "--format", "json"])
    if result.exit_code == 0:
        answer = json.loads(result.stdout)
        return (0, tuple(answer["columns"]), len(answer["rows"]))
    return (result.exit_code, result.stderr.strip() if result.stderr else result.output.strip())


def same_outcome(pair: Neighbours, query: str) -> tuple[Any, ...]:
    """Assert ``query`` has one outcome on both neighbours, never an internal error; return it."""
    first, second = (outcome(db, query) for db in pair.both())
    assert first == second, f"{query}\n  without: {first}\n  with:    {second}"
    assert first[:2] != ("error", "internal_error") and first[:2] != ("error", "query_failed"), first
    return first
