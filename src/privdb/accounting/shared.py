"""Shared budgets: a table's lifetime budget and a budget group's, drawn on by spends in the ledger's own
transactions (privdb.accounting.ledger, "Shared budgets"; docs/proofs/ledger.md)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from fractions import Fraction

from privdb.accounting.amounts import Budget, _amount, _frac, _text
from privdb.accounting.sqlstore import Cursor, SQLStore
from privdb.errors import InvalidParameter

__all__ = ["SharedBudgets", "cap_row", "draw_on"]


class SharedBudgets:
    """The ledger's methods for caps and group membership (mixed into :class:`Ledger`)."""

    _store: SQLStore

    def _transaction(self, *, durable: bool = True) -> AbstractContextManager[Cursor]:
        raise NotImplementedError

    def set_cap(
        self, kind: str, name: str, database: str, *, epsilon: float | Fraction, delta: float | Fraction = 0
    ) -> Budget:
        """Set a table's lifetime budget or a group's budget; it may not drop below what is drawn already."""
        if kind not in ("table", "group"):
            raise InvalidParameter(f"a shared budget is for a table or a group, not {kind!r}")
        eps, dlt = _amount("epsilon", epsilon), _amount("delta", delta)
        with self._transaction() as cur:
            cap = cap_row(cur, kind, name, database)
            if cap is None:
                cur.execute(
                    "INSERT INTO caps VALUES (?, ?, ?, ?, ?, '0/1', '0/1')",
                    (kind, name, database, _text(eps), _text(dlt)),
                )
            elif eps < cap.epsilon_spent or dlt < cap.delta_spent:
                raise InvalidParameter(
                    f"the {kind} {name!r} has already drawn ε={float(cap.epsilon_spent):g}, "
                    f"δ={float(cap.delta_spent):g}; its budget must be at least that"
                )
            else:
                cur.execute(
                    "UPDATE caps SET epsilon_total = ?, delta_total = ? WHERE kind = ? AND name = ? "
                    "AND database = ?",
                    (_text(eps), _text(dlt), kind, name, database),
                )
            found = cap_row(cur, kind, name, database)
        assert found is not None
        return found

    def caps(self, database: str) -> list[tuple[str, Budget]]:
        """Every shared budget of the database, as (kind, budget named after its table or group)."""
        rows = self._store.execute(
            "SELECT kind, name, epsilon_total, delta_total, epsilon_spent, delta_spent FROM caps "
            "WHERE database = ? ORDER BY kind, name",
            (database,),
        )
        return [(r[0], Budget(r[1], database, *(_frac(x) for x in r[2:]))) for r in rows]

    def set_group(self, analyst: str, database: str, group: str | None) -> None:
        """Make the analyst a member of ``group`` (None: of none): their spends draw on its budget too."""
        with self._transaction() as cur:
            cur.execute("DELETE FROM members WHERE analyst = ? AND database = ?", (analyst, database))
            if group is not None:
                cur.execute("INSERT INTO members VALUES (?, ?, ?)", (analyst, database, group))

    def members(self, database: str) -> dict[str, list[str]]:
        """Each group's members."""
        rows = self._store.execute(
            "SELECT grp, analyst FROM members WHERE database = ? ORDER BY grp, analyst", (database,)
        )
        out: dict[str, list[str]] = {}
        for grp, analyst in rows:
            out.setdefault(str(grp), []).append(str(analyst))
        return out

    def group_of(self, analyst: str, database: str) -> str | None:
        rows = self._store.execute(
            "SELECT grp FROM members WHERE analyst = ? AND database = ?", (analyst, database)
        )
        return None if not rows else str(rows[0][0])


def cap_row(cur: Cursor, kind: str, name: str, database: str) -> Budget | None:
    found = cur.execute(
        "SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM caps "
        "WHERE kind = ? AND name = ? AND database = ?",
        (kind, name, database),
    ).fetchone()
    return None if found is None else Budget(name, database, *(_frac(x) for x in found))


def draw_on(
    cur: Cursor, kind: str, name: str, database: str, cap: Budget, eps: Fraction, dlt: Fraction
) -> None:
    cur.execute(
        "UPDATE caps SET epsilon_spent = ?, delta_spent = ? WHERE kind = ? AND name = ? AND database = ?",
        (_text(cap.epsilon_spent + eps), _text(cap.delta_spent + dlt), kind, name, database),
    )
