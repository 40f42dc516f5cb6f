"""ZetaSQL's public groups: ``FROM t RIGHT OUTER JOIN (SELECT DISTINCT k FROM public_table) USING (k)
GROUP BY k`` (with ``group_selection_strategy=PUBLIC_GROUPS``) releases exactly the keys of the public side,
those no unit has included.

Read as the DP-SELECT whose relation is the per-unit subquery RIGHT JOINed to that public side (DP-SELECT's
public groups, docs/answers.md): each unit's clamped value per group in a middle subquery (row-wise, so the
NULL rows of unmatched keys are never looked at by a CASE), summed or averaged over the join. Whether the
joined side is public, and the join sound, is DP-SELECT's relation check: a private table there is refused.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from privdb.errors import UnsupportedQuery
from privdb.sql.front.bigquery.unnest import split_unnest

__all__ = ["GROUPS", "groups_join", "over_groups"]

GROUPS = "public_groups"  # the alias of the public side
_SHAPE = (
    "public groups are read as FROM t RIGHT OUTER JOIN (SELECT DISTINCT k FROM public_table) USING (k) "
    "GROUP BY k; for other joins write DP-SELECT ε …"
)


def groups_join(select: exp.Select) -> exp.Join | None:
    """The select's public-groups join (None without joins), or the refusal naming the shape read."""
    joins = split_unnest(select)[1]  # CROSS JOIN UNNEST([…]) goes with the table (bigquery.unnest)
    if not joins:
        return None
    join: exp.Join = joins[0]
    using = join.args.get("using") or []
    group = select.args.get("group")
    keys = [k.name.lower() for k in group.expressions] if group is not None else []
    if (
        len(joins) != 1
        or str(join.args.get("side") or "").upper() != "RIGHT"
        or len(using) != 1
        or keys != [using[0].name.lower()]
        or not isinstance(join.this, exp.Subquery | exp.Table)
    ):
        raise UnsupportedQuery(_SHAPE)
    return join


def over_groups(middle: exp.Select, join: exp.Join, key: str, outer_items: list[Any]) -> exp.Select:
    """``SELECT … FROM (middle) AS per_unit RIGHT JOIN <public side> AS public_groups ON per_unit.k =
    public_groups.k GROUP BY public_groups.k``; ``outer_items`` read the middle's columns by name."""
    side = join.this.copy()
    side.set("alias", exp.TableAlias(this=exp.to_identifier(GROUPS)))
    per_unit = exp.alias_(exp.Subquery(this=middle), "per_unit", table=True)
    condition = exp.EQ(this=exp.column(key, table="per_unit"), expression=exp.column(key, table=GROUPS))
    outer = exp.select(*outer_items).from_(per_unit)
    outer = outer.join(side, on=condition, join_type="RIGHT")
    return outer.group_by(exp.column(key, table=GROUPS))
