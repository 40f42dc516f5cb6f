"""Personalised privacy metadata: each unit's own ε (Jorgensen, Yu, Cormode, ICDE 2015), declared by the
owner as ``epsilon_column`` (a number column: the unit's ε) or ``epsilon_policy`` (an ε per value of a text
column, e.g. a consent level). This module holds the declared ε as a type and imports nothing of the rest of
the metadata, so privdb.catalog.metadata can hold it in a TableMeta; the declaration is checked with the
table's other metadata (privdb.catalog.metadata_spec). The SQL that reads it is privdb.sql.plan.personal;
the proof is docs/proofs/personalised.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["PersonalEpsilon"]


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
