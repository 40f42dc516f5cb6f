"""A people / visits / regions database for the tests of subqueries, joins and distinct counts.

people (one row per person: pid, age, income, sex, region), visits (several rows per person: pid, cost,
kind), regions (public: code → name). ``people_visits(path)`` builds it in privdb's DuckDB with metadata;
``drop`` removes one person from every table (the neighbouring database of the audits).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privdb.database import Database

REGIONS = ["North", "South", "East", "West", "Centre"]
KINDS = ["gp", "dentist", "hospital", "pharmacy"]

PEOPLE_META: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": 1,
    "columns": {
        "pid": {"type": "int", "private_id": True},
        "age": {"type": "int", "lower": 0, "upper": 100},
        "income": {"type": "float", "lower": 0, "upper": 200_000},
        "sex": {"type": "category", "values": ["F", "M"]},
        "region": {"type": "int", "lower": 1, "upper": 5},
    },
}
VISITS_META: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": 5,
    "max_groups": 2,
    "columns": {
        "pid": {"type": "int", "private_id": True},
        "cost": {"type": "float", "lower": 0, "upper": 1000},
        "kind": {"type": "category", "values": KINDS},
    },
}
REGIONS_META: dict[str, Any] = {
    "public": True,
    "columns": {"code": {"type": "int"}, "name": {"type": "category", "values": REGIONS}},
}


def frames(people: int = 5000, seed: int = 3) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    persons = pd.DataFrame(
        {
            "pid": np.arange(1, people + 1),
            "age": rng.integers(18, 90, people),
            "income": np.round(rng.gamma(2.0, 20_000, people), 2),
            "sex": rng.choice(["F", "M"], people),
            "region": rng.integers(1, 6, people),
        }
    )
    counts = rng.poisson(2.0, people)
    visits = pd.DataFrame(
        {
            "pid": np.repeat(persons["pid"].to_numpy(), counts),
            "cost": np.round(rng.uniform(10, 900, int(counts.sum())), 2),
            "kind": rng.choice(KINDS, int(counts.sum())),
        }
    )
    regions = pd.DataFrame({"code": [1, 2, 3, 4, 5], "name": REGIONS})
    return {"people": persons, "visits": visits, "regions": regions}


def drop(tables: dict[str, pd.DataFrame], pid: int) -> dict[str, pd.DataFrame]:
    """The neighbouring database: person ``pid`` removed from every table (public tables unchanged)."""
    return {
        name: (frame[frame["pid"] != pid].reset_index(drop=True) if "pid" in frame else frame)
        for name, frame in tables.items()
    }


def people_visits(
    path: Path, tables: dict[str, pd.DataFrame] | None = None, epsilon: float = 1000
) -> Database:
    """A database with the three tables, their metadata and analyst ``alice`` (ε ``epsilon``, δ 1e-3)."""
    tables = tables if tables is not None else frames()
    db = Database(path)
    for name, meta in (("people", PEOPLE_META), ("visits", VISITS_META), ("regions", REGIONS_META)):
        db.backend.load_frame(name, tables[name])
        db.set_metadata(name, meta)
    db.grant("alice", epsilon=epsilon, delta=1e-3)
    return db
