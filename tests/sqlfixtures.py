"""Databases for the SQL tests: the notes' tax_office and a generated census table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privdb.data.census import METADATA, generate
from privdb.database import Database

DATA = Path(__file__).resolve().parents[1] / "data"
PACKAGED = Path(__file__).resolve().parents[1] / "src" / "privdb" / "data"

TAX_METADATA: dict[str, Any] = {
    "columns": {
        "id": {"type": "int", "identifier": True},
        "name": {"type": "text", "identifier": True},
        "salary": {"type": "int", "lower": 0, "upper": 500_000},
        "deposits": {"type": "int", "lower": -1_000_000_000, "upper": 1_000_000_000},
        "age": {"type": "int", "lower": 0, "upper": 120},
        "postcode": {"type": "int"},
        "profession": {"type": "text"},
    }
}


def tax_office_csv() -> Path:
    """The notes' tax office table: packaged with privdb (data/examples/README.md lists it there)."""
    return PACKAGED / "tax_office.csv"


def make_db(path: Path, *, people: int = 20_000, repeat_share: float = 0.0) -> Database:
    db = Database(path)
    db.load("tax_office", tax_office_csv(), TAX_METADATA)
    db.backend.load_frame("people", generate(people, seed=7, repeat_share=repeat_share))
    db.set_metadata("people", METADATA)
    db.grant("alice", epsilon=100, delta=1e-3)
    return db
