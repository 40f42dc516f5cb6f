"""What privdb keeps beside the rows of a table it loads, for user-level bounding to be one scan: the
privacy unit whose per-row unit sizes to store, and the columns whose per-unit group choice to store.

A grouped query with ``max_groups: 1`` keeps, for each unit, one of the groups it reaches, chosen
uniformly at random among them (privdb.sql.run.rewrite). For a GROUP BY of one column with declared values
that choice can be drawn once, when the table is written, and kept on the rows (privdb.backends.
duckdb_layout); the query then filters and weighs rows instead of grouping by unit
(privdb.sql.run.layout). Which columns: those an analyst can group by with public keys — declared
``values`` or booleans — but the unit and private identifiers, which are never keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from privdb.catalog.metadata import TableMeta

__all__ = ["MAX_CHOICES", "Layout", "layout_of"]

MAX_CHOICES = 16  # columns with a kept choice per table: each costs one pass over the table when written


@dataclass(frozen=True)
class Layout:
    """The hidden per-unit columns of a table: each row's unit size, and per column in ``choices`` the
    rows its unit has in the group chosen for it (0 on the unit's other rows)."""

    unit: str
    choices: tuple[str, ...] = ()


def layout_of(meta: TableMeta) -> Layout | None:
    """The layout a table with this metadata keeps (None without a privacy unit)."""
    if meta.privacy_unit is None or meta.public:
        return None
    choices = [
        c.name
        for c in meta.columns.values()
        if (c.values is not None or c.type == "bool")
        and not c.private_id
        and c.name.lower() != meta.privacy_unit.lower()
    ]
    return Layout(meta.privacy_unit, tuple(choices[:MAX_CHOICES]))
