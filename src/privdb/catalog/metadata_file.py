"""Reading a metadata YAML file: one table's spec (from a file of many tables, one table's own file, or
SmartNoise SQL's layout) and the shared budgets declared at its top level (``budgets:``). What a spec may say,
and its checks, is privdb.catalog.metadata_spec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privdb.accounting.renewal import parse_period
from privdb.catalog.smartnoise import from_smartnoise, is_smartnoise
from privdb.errors import InvalidParameter
from privdb.suggest import did_you_mean

__all__ = ["load_budgets", "load_metadata"]


def load_metadata(path: str | Path, table: str) -> dict[str, Any]:
    """Read a metadata YAML file and return the spec of ``table`` (a file may describe many tables)."""
    import yaml  # where a file is read: the commands that open a database without one go without it

    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidParameter(f"metadata file {str(path)!r} does not exist") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise InvalidParameter(f"metadata file {str(path)!r} is not valid YAML{where}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise InvalidParameter(f"metadata file {str(path)!r} must hold a mapping")
    doc = {k: v for k, v in doc.items() if k != "budgets"}  # shared budgets: load_budgets
    if "tables" in doc:
        tables = doc["tables"]
        if not isinstance(tables, dict):
            raise InvalidParameter(f"metadata file {str(path)!r}: tables must be a mapping")
        for name, spec in tables.items():
            if str(name).lower() == table.lower():
                return dict(spec or {})
        hint = did_you_mean(table, [str(t) for t in tables])
        raise InvalidParameter(f"metadata file {str(path)!r} does not describe table {table!r}{hint}")
    if is_smartnoise(doc):  # SmartNoise SQL's collection → schema → table layout
        return from_smartnoise(doc, table, str(path))
    return doc


def load_budgets(path: str | Path, table: str) -> list[tuple[str, str, float, float, str | float | None]]:
    """The shared budgets a metadata file declares at its top level that apply now: ``table``'s lifetime
    budget and every group's, as (kind, name, ε, δ, renewal period or None). ``budgets: {tables: {people:
    {epsilon: 10, delta: 1e-6}}, groups: {team_a: {epsilon: 5, renew: 30d}}}`` (docs/metadata.md)."""
    import yaml  # as in load_metadata

    doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    budgets = doc.get("budgets") if isinstance(doc, dict) else None
    if budgets is None:
        return []
    where = f"metadata file {str(path)!r}: budgets"
    if not isinstance(budgets, dict) or set(budgets) - {"tables", "groups"}:
        raise InvalidParameter(
            f"{where} must be a mapping with tables and/or groups, e.g. "
            "budgets: {tables: {people: {epsilon: 10}}, groups: {team_a: {epsilon: 5}}}"
        )
    found: list[tuple[str, str, float, float, str | float | None]] = []
    for key, kind in (("tables", "table"), ("groups", "group")):
        entries = budgets.get(key) or {}
        if not isinstance(entries, dict):
            raise InvalidParameter(f"{where}.{key} must map names to {{epsilon: E, delta: D}}")
        for name, spec in entries.items():
            if kind == "table" and str(name).lower() != table.lower():
                continue  # applied when that table is loaded
            if (
                not isinstance(spec, dict)
                or "epsilon" not in spec
                or set(spec) - {"epsilon", "delta", "renew"}
            ):
                raise InvalidParameter(
                    f"{where}.{key}.{name} must be {{epsilon: E}}, {{epsilon: E, delta: D}} and may add "
                    "renew: 30d (a refill period)"
                )
            renew = spec.get("renew")
            parse_period(renew)  # refused here, before the table is loaded, if it is not a period
            entry = (kind, str(name), float(spec["epsilon"]), float(spec.get("delta", 0.0)), renew)
            found.append(entry)
    return found
