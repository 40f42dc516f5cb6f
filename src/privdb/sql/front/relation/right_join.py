"""The checks of a DP-SELECT over ``private RIGHT JOIN public`` (privdb.sql.front.relation.joins makes that
relation): what would read the NULL rows SQL makes for public keys no one matched is refused."""

from __future__ import annotations

from sqlglot import exp

from privdb.errors import PrivdbError, UnsupportedQuery
from privdb.sql.front.relation.model import Relation

__all__ = ["check_right_join"]

_NULL_AWARE = (exp.Is, exp.Coalesce, exp.Case, exp.If, exp.Nullif, exp.Not)


def check_right_join(select: exp.Select, relation: Relation) -> None:
    """Refuse, in a DP-SELECT over ``private RIGHT JOIN public``, what would read the NULL rows SQL makes for
    public keys no one matched (the relation leaves them out: module doc): ``COUNT(*)``, a GROUP BY on the
    private side, a WHERE on it (SQL's WHERE drops those keys: the condition belongs in ON), and NULL-aware
    forms (IS NULL, COALESCE, CASE, IF, NULLIF, NOT) of private-side columns.
    Every other use of a private-side column is NULL on those rows in SQL too, so the answers agree."""
    private = relation.outer_nulls
    meta = relation.meta
    aliases = {item.alias.lower(): item.this for item in select.expressions if isinstance(item, exp.Alias)}

    def reads_private(node: exp.Expression) -> bool:
        for column in node.find_all(exp.Column):
            try:
                name = meta.qualified(column.table or None, column.name).name
            except PrivdbError:
                target = aliases.get(column.name.lower()) if not column.table else None
                if target is not None and target is not node and reads_private(target):
                    return True
                continue
            if name in private:
                return True
        return False

    clauses = [select.args.get(k) for k in ("where", "having", "order", "group")] + list(select.expressions)
    for clause in clauses:
        if clause is None:
            continue
        for node in clause.walk():
            if isinstance(node, exp.Count) and isinstance(node.this, exp.Star | exp.Literal | type(None)):
                raise UnsupportedQuery(
                    "COUNT(*) over a RIGHT JOIN would count the NULL row SQL makes for each public key no "
                    "one matched; count a column of the private side instead, e.g. COUNT(p.pid)"
                )
            if isinstance(node, _NULL_AWARE) and reads_private(node):
                raise UnsupportedQuery(
                    f"{node.sql(dialect='duckdb')[:60]}: over a RIGHT JOIN, IS NULL, COALESCE, CASE, IF, "
                    "NULLIF and NOT of the private side's columns would see the NULL rows of public keys no "
                    "one matched; filter with plain comparisons, or use INNER JOIN"
                )
    where = select.args.get("where")
    if where is not None and reads_private(where.this):
        raise UnsupportedQuery(
            "WHERE on the private side's columns over a RIGHT JOIN drops the public keys no one matched "
            "(their row is NULL there); put the condition in ON (… ON t.k = g.k AND <condition>) to keep "
            "every public key, or use INNER JOIN"
        )
    group = select.args.get("group")
    for key in group.expressions if group is not None else []:
        if isinstance(key, exp.Literal) and key.is_int:
            position = int(key.this) - 1
            key = select.expressions[position] if 0 <= position < len(select.expressions) else key
        if reads_private(key):
            raise UnsupportedQuery(
                f"GROUP BY {key.sql(dialect='duckdb')[:60]}: over a RIGHT JOIN, group by the public side's "
                "columns (every public key is released); a private-side key is NULL for keys no one matched"
            )
