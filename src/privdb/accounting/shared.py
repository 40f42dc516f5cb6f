"""Shared budgets: a table's lifetime budget and a budget group's, drawn on by spends in the ledger's own
transactions (privdb.accounting.ledger, "Shared budgets"; docs/proofs/ledger.md)."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from fractions import Fraction

from privdb.accounting.amounts import Budget, _amount, _frac, _text
from privdb.accounting.renewal import window_start
from privdb.accounting.sqlstore import Cursor, SQLStore
from privdb.errors import InvalidParameter

__all__ = ["SharedBudgets", "Window", "cap_row", "draw_on", "in_window", "renewed_cap"]

# a renewing budget's (period, start of its current window), in seconds; None for one that never renews
Window = tuple[float, float] | None


class SharedBudgets:
    """The ledger's methods for caps and group membership (mixed into :class:`Ledger`)."""

    _store: SQLStore

    def _transaction(self, *, durable: bool = True) -> AbstractContextManager[Cursor]:
        raise NotImplementedError

    def set_cap(
        self,
        kind: str,
        name: str,
        database: str,
        *,
        epsilon: float | Fraction,
        delta: float | Fraction = 0,
        renew: float | None = None,
    ) -> Budget:
        """Set a table's lifetime budget or a group's budget; it may not drop below what is drawn already.
        ``renew``: seconds after which it refills, window by window from now (None: never; module
        privdb.accounting.renewal says what that means for the guarantee)."""
        if kind not in ("table", "group"):
            raise InvalidParameter(f"a shared budget is for a table or a group, not {kind!r}")
        eps, dlt = _amount("epsilon", epsilon), _amount("delta", delta)
        with self._transaction() as cur:
            cap = cap_row(cur, kind, name, database)
            period = cur.execute(
                "SELECT period FROM caps WHERE kind = ? AND name = ? AND database = ?", (kind, name, database)
            ).fetchone()
            if period is not None and period[0] != renew:  # a new period starts its windows now
                cur.execute(
                    "UPDATE caps SET period = ?, window_start = ? "
                    "WHERE kind = ? AND name = ? AND database = ?",
                    (renew, time.time(), kind, name, database),
                )
            if cap is None:
                cur.execute(
                    "INSERT INTO caps (kind, name, database, epsilon_total, delta_total, epsilon_spent,"
                    " delta_spent, period, window_start) VALUES (?, ?, ?, ?, ?, '0/1', '0/1', ?, ?)",
                    (kind, name, database, _text(eps), _text(dlt), renew, time.time()),
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
        """Every shared budget of the database, as (kind, budget named after its table or group), what is
        drawn counted in the current window of a renewing one."""
        return [(kind, cap) for kind, cap, _ in self.caps_with_windows(database)]

    def caps_with_windows(self, database: str) -> list[tuple[str, Budget, Window]]:
        """:meth:`caps`, each with its :data:`Window`: the window its drawn figure is counted in, found once
        where the cap is renewed (asking :meth:`renewals` afterwards finds it again, and a window that ends
        in between would not be the one the figure was counted in)."""
        with self._transaction() as cur:
            names = cur.execute(
                "SELECT kind, name FROM caps WHERE database = ? ORDER BY kind, name", (database,)
            ).fetchall()
            found = [(kind, renewed_cap(cur, kind, name, database)) for kind, name in names]
        return [(kind, *cap) for kind, cap in found if cap is not None]

    def renewals(self, database: str) -> dict[tuple[str, str], tuple[float, float]]:
        """(kind, name) → (period, start of the current window) of every renewing shared budget."""
        rows = self._store.execute(
            "SELECT kind, name, period, window_start FROM caps WHERE database = ? AND period IS NOT NULL",
            (database,),
        )
        now = time.time()
        return {(r[0], r[1]): (float(r[2]), window_start(float(r[3]), float(r[2]), now)) for r in rows}

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
    """The cap, renewed first if its window is over: what is drawn is then recounted from the spends
    reserved or committed in the current window (inside the caller's transaction)."""
    found = renewed_cap(cur, kind, name, database)
    return None if found is None else found[0]


def renewed_cap(cur: Cursor, kind: str, name: str, database: str) -> tuple[Budget, Window] | None:
    """:func:`cap_row` and the window it counted in (None if the cap never renews)."""
    found = cur.execute(
        "SELECT epsilon_total, delta_total, epsilon_spent, delta_spent, period, window_start FROM caps "
        "WHERE kind = ? AND name = ? AND database = ?",
        (kind, name, database),
    ).fetchone()
    if found is None:
        return None
    eps_total, dlt_total, eps_spent, dlt_spent, period, start = found
    if period is not None and (current := window_start(start, period, time.time())) > start:
        rows = cur.execute(
            "SELECT s.epsilon, s.delta FROM draws d JOIN spends s ON s.id = d.spend_id WHERE d.kind = ? AND "
            "d.name = ? AND s.database = ? AND s.state <> 'released' AND s.created >= ?",
            (kind, name, database, current),
        ).fetchall()
        eps = sum((_frac(e) for e, _ in rows), Fraction(0))
        dlt = sum((_frac(d) for _, d in rows), Fraction(0))
        cur.execute(
            "UPDATE caps SET epsilon_spent = ?, delta_spent = ?, window_start = ? "
            "WHERE kind = ? AND name = ? AND database = ?",
            (_text(eps), _text(dlt), current, kind, name, database),
        )
        eps_spent, dlt_spent = _text(eps), _text(dlt)
        start = current
    budget = Budget(name, database, *(_frac(x) for x in (eps_total, dlt_total, eps_spent, dlt_spent)))
    return budget, None if period is None else (float(period), float(start))


def in_window(cur: Cursor, kind: str, name: str, database: str, created: float) -> bool:
    """Whether a spend made at ``created`` counts in the cap's current window (always, if it never renews)."""
    found = cur.execute(
        "SELECT window_start FROM caps WHERE kind = ? AND name = ? AND database = ? AND period IS NOT NULL",
        (kind, name, database),
    ).fetchone()
    return found is None or created >= float(found[0])


def draw_on(
    cur: Cursor, kind: str, name: str, database: str, cap: Budget, eps: Fraction, dlt: Fraction
) -> None:
    cur.execute(
        "UPDATE caps SET epsilon_spent = ?, delta_spent = ? WHERE kind = ? AND name = ? AND database = ?",
        (_text(cap.epsilon_spent + eps), _text(cap.delta_spent + dlt), kind, name, database),
    )
