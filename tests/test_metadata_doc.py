"""docs/metadata.md names every key the code accepts, and its examples load."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from privdb.catalog.metadata_spec import metadata_from_dict
from privdb.catalog.smartnoise import from_smartnoise, is_smartnoise

DOC = (Path(__file__).resolve().parents[1] / "docs" / "metadata.md").read_text()
TABLE_KEYS = [
    "privacy_unit", "max_contributions", "max_groups", "neighbouring", "columns", "quasi_identifiers",
    "sensitive", "rows", "row_privacy", "public", "epsilon_column", "epsilon_policy",
]  # fmt: skip
COLUMN_KEYS = ["type", "lower", "upper", "values", "private_id", "identifier", "nullable", "max_length"]


def _blocks() -> list[object]:
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", DOC, re.S)]


def test_every_key_is_documented() -> None:
    for key in TABLE_KEYS + COLUMN_KEYS:
        assert f"`{key}`" in DOC, key


def test_every_example_loads() -> None:
    blocks = _blocks()
    assert len(blocks) >= 3
    for doc in blocks:
        assert isinstance(doc, dict)
        if "tables" in doc:
            for name, spec in doc["tables"].items():
                engine = {
                    c: {"category": "text"}.get(s["type"], s["type"]) for c, s in spec["columns"].items()
                }
                metadata_from_dict(name, spec, engine)
        elif is_smartnoise(doc):
            spec = from_smartnoise(doc, "PUMS", "docs/metadata.md")
            engine = {c: s["type"] for c, s in spec["columns"].items()}
            assert metadata_from_dict("PUMS", spec, engine).privacy_unit == "pid"
        else:  # a columns excerpt
            engine = {c: {"category": "text"}.get(s["type"], s["type"]) for c, s in doc["columns"].items()}
            metadata_from_dict("t", doc, engine)
