"""Personalised privacy metadata: each unit's own ε (Jorgensen, Yu, Cormode, ICDE 2015), declared by the
owner as ``epsilon_column`` (a number column: the unit's ε) or ``epsilon_policy`` (an ε per value of a text
column, e.g. a consent level). The SQL that reads it is privdb.sql.plan.personal; the proof is
docs/proofs/personalised.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from privdb.errors import InvalidParameter

if TYPE_CHECKING:
    from privdb.catalog.metadata import TableMeta

__all__ = ["PersonalEpsilon", "with_personal"]


@dataclass(frozen=True)
class PersonalEpsilon:
    """Personalised privacy (docs/proofs/personalised.md): each unit's own ε, read from ``column`` — its
    values when ``policy`` is None (a number in ``[lower, upper]``), else ``policy`` maps the column's values
    to an ε and every other value (NULL included) gets ``default``. ``lower`` and ``upper`` are the smallest
    and largest ε any unit can have."""

    column: str
    lower: float
    upper: float
    policy: tuple[tuple[Any, float], ...] | None = None
    default: float | None = None

    def to_dict(self) -> tuple[str, Any]:
        if self.policy is None:
            return "epsilon_column", self.column
        values = dict(self.policy)
        return "epsilon_policy", {"column": self.column, "values": values, "default": self.default}


def _positive_epsilon(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise InvalidParameter(f"{where} must be a positive number (an ε), got {value!r}")
    return float(value)


def with_personal(meta: TableMeta, spec: dict[str, Any]) -> TableMeta:
    """``meta`` with its personalised ε (``epsilon_column`` or ``epsilon_policy``), validated: the column
    exists, is not the privacy unit, and every ε it can give is positive and known from the metadata. The
    column is marked an identifier: never released (docs/proofs/personalised.md, "The ε column")."""
    table = meta.name
    column_key, policy_key = spec.get("epsilon_column"), spec.get("epsilon_policy")
    if column_key is None and policy_key is None:
        return meta
    if column_key is not None and policy_key is not None:
        raise InvalidParameter(
            f"table {table!r}: give epsilon_column (each unit's ε as a number) or epsilon_policy (an ε per "
            "value of a column), not both"
        )
    if meta.public:
        raise InvalidParameter(f"table {table!r}: a public table has no units to give an ε; remove public")
    if meta.neighbouring != "add_remove":
        raise InvalidParameter(
            f"table {table!r}: personalised privacy (epsilon_column, epsilon_policy) is stated for "
            "neighbouring: add_remove (one person in or out); remove neighbouring: substitute"
        )
    policy: tuple[tuple[Any, float], ...] | None = None
    default: float | None = None
    if column_key is not None:
        if not isinstance(column_key, str) or not column_key:
            raise InvalidParameter(f"table {table!r}: epsilon_column must name a column, got {column_key!r}")
        col = meta.column(column_key)
        if col.type not in ("int", "float") or not col.bounded:
            raise InvalidParameter(
                f"table {table!r}: epsilon_column {col.name!r} must be a number column with lower and upper "
                f"(the smallest and largest ε a person may choose), e.g. {col.name}: "
                "{type: float, lower: 0.1, upper: 2}"
            )
        assert col.lower is not None and col.upper is not None
        if col.lower <= 0:
            raise InvalidParameter(
                f"table {table!r}: epsilon_column {col.name!r} has lower {col.lower:g}; every ε must be "
                "positive: set lower to the smallest ε a person may choose (> 0)"
            )
        lower, upper = col.lower, col.upper
    else:
        where = f"table {table!r}: epsilon_policy"
        if not isinstance(policy_key, dict) or set(policy_key) - {"column", "values", "default"}:
            raise InvalidParameter(
                f"{where} must be a mapping like {{column: consent, values: {{full: 1.0, restricted: 0.1}}, "
                "default: 0.01}"
            )
        if not isinstance(policy_key.get("column"), str):
            raise InvalidParameter(f"{where}: column must name a column")
        col = meta.column(policy_key["column"])
        values = policy_key.get("values")
        if not isinstance(values, dict) or not values:
            raise InvalidParameter(f"{where}: values must map each value of {col.name!r} to its ε")
        if col.type not in ("text", "category"):
            raise InvalidParameter(
                f"{where}: column {col.name!r} is {col.type}; a policy reads a text or category column "
                "(its values name the classes)"
            )
        for value in values:
            if not isinstance(value, str):
                raise InvalidParameter(
                    f"{where}: value {value!r} is not text; quote it in the YAML (e.g. '1': 0.5)"
                )
        policy = tuple((v, _positive_epsilon(f"{where}: the ε of {v!r}", e)) for v, e in values.items())
        found = [e for _, e in policy]
        default = _positive_epsilon(f"{where}: default", policy_key.get("default", min(found)))
        lower, upper = min([*found, default]), max([*found, default])
    if col.name == meta.privacy_unit:
        raise InvalidParameter(f"table {table!r}: the ε column {col.name!r} cannot be the privacy unit")
    columns = dict(meta.columns)
    columns[col.name] = replace(col, identifier=True)
    personal = PersonalEpsilon(col.name, lower, upper, policy, default)
    return replace(meta, columns=columns, personal=personal)
