"""SmartNoise SQL metadata files load as privdb metadata (issue 15): SmartNoise's own PUMS.yaml files, the
``""`` collection, what is mapped, ignored and refused, and the empty-key message gone."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from privdb.catalog.metadata_file import load_metadata
from privdb.catalog.metadata_spec import metadata_from_dict
from privdb.cli import app
from privdb.database import Database
from privdb.errors import InvalidParameter

PUMS = Path(__file__).resolve().parents[1] / "data" / "pums"
runner = CliRunner()


def _write(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "meta.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_smartnoise_pums_files_load_and_answer(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    for table, csv, meta in (
        ("PUMS", "PUMS.csv", "PUMS.yaml"),
        ("pums_pid", "PUMS_pid.csv", "PUMS_pid.yaml"),
    ):
        result = runner.invoke(
            app, ["load", "--db", db, table, str(PUMS / csv), "--metadata", str(PUMS / meta)]
        )
        assert result.exit_code == 0, result.stderr
    assert "privacy unit: pid" in result.stdout  # PUMS_pid.yaml: private_id on pid, under the "" collection
    with Database(tmp_path / "db") as database:
        row = database.metadata("PUMS")
        unit = database.metadata("pums_pid")
    assert row.privacy_unit is None and unit.privacy_unit == "pid" and unit.max_contributions == 1
    assert (row.columns["age"].lower, row.columns["age"].upper) == (0, 100)
    assert (row.columns["income"].lower, row.columns["income"].upper) == (0, 500_000)
    assert row.columns["sex"].type == "text"
    assert runner.invoke(app, ["grant", "--db", db, "a", "--epsilon", "2"]).exit_code == 0
    asked = runner.invoke(app, ["query", "--db", db, "--analyst", "a", "DP-SELECT 0.5 AVG(age) FROM PUMS"])
    assert asked.exit_code == 0, asked.stderr


def test_a_table_is_found_by_name_schema_name_or_as_the_only_one(tmp_path: Path) -> None:
    doc = {
        "": {"Sales": {"Orders": {"row_privacy": True, "amount": {"type": "float", "lower": 0, "upper": 10}}}}
    }
    path = _write(tmp_path, doc)
    for name in ("orders", "Sales.Orders", "anything"):  # the only table answers to any name
        assert load_metadata(path, name)["columns"]["amount"] == {"type": "float", "lower": 0, "upper": 10}
    doc[""]["Sales"]["Items"] = {"row_privacy": True, "n": {"type": "int"}}
    with pytest.raises(InvalidParameter, match=r"describes Sales.Items, Sales.Orders, not 'anything'"):
        load_metadata(_write(tmp_path, doc), "anything")


def test_table_options_map_or_are_ignored_with_reason(tmp_path: Path) -> None:
    doc = {
        "DB": {
            "S": {
                "T": {
                    "max_ids": 3,
                    "sample_max_ids": True,
                    "censor_dims": False,
                    "clamp_counts": True,
                    "clamp_columns": True,
                    "use_dpsu": False,
                    "rows": 5,
                    "uid": {"type": "int", "private_id": True, "name": "uid"},
                    "ok": {"type": "boolean", "nullable": False},
                    "when": {"type": "datetime"},
                    "junk": {"type": "unknown"},
                }
            }
        }
    }
    spec = load_metadata(_write(tmp_path, doc), "T")
    assert spec["privacy_unit"] == "uid" and spec["max_contributions"] == 3
    assert spec["columns"]["ok"] == {"type": "bool"} and spec["columns"]["when"] == {"type": "date"}
    assert spec["columns"]["junk"] == {
        "type": "text",
        "identifier": True,
    }  # SmartNoise ignores it; never released


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"x": {"type": "int"}}, "no column has private_id and row_privacy is not set"),
        ({"row_privacy": True, "max_ids": 2, "x": {"type": "int"}}, "with row_privacy, max_ids must be 1"),
        ({"a": {"type": "int", "private_id": True}, "b": {"type": "int", "private_id": True}}, "one column"),
        ({"row_privacy": True, "x": {"type": "int", "sensitivity": 5}}, "give those instead of sensitivity"),
        ({"row_privacy": True, "x": {"type": "int", "missing_value": 0}}, "does not replace NULLs"),
        ({"row_privacy": True, "x": {"type": "decimal"}}, "is not a SmartNoise type"),
        ({"row_privacy": True, "colour": "blue", "x": {"type": "int"}}, "SmartNoise table option 'colour'"),
    ],
)
def test_what_privdb_cannot_honour_is_refused_with_what_to_write(
    tmp_path: Path, table: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidParameter, match=message):
        load_metadata(_write(tmp_path, {"": {"S": {"T": table}}}), "T")


def test_the_empty_key_message_is_gone() -> None:
    """An empty key (SmartNoise's "" collection where privdb metadata was expected) shows as ''."""
    with pytest.raises(InvalidParameter, match=r"unknown metadata key\(s\) ''; allowed"):
        metadata_from_dict("t", {"": {"x": 1}, "columns": {}}, {"x": "int"})
