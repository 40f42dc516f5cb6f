"""Settling a reserved spend, inside a write transaction of the ledger's store: ``committed`` keeps what
stands and returns the rest, ``released`` returns all of it, to the analyst's budget and to every cap the
spend drew on (privdb.accounting.shared). One function for the two callers: a live query's reservation
(privdb.accounting.ledger) and a dead process's, settled when the ledger is opened again
(privdb.accounting.restart)."""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Protocol

from privdb.accounting.amounts import Budget, _frac, _text
from privdb.accounting.shared import return_draws
from privdb.accounting.sqlstore import Cursor

__all__ = ["Held", "budget_row", "settle_spend"]


class Held(Protocol):
    """A reserved spend as its row holds it (what settling it needs, without reading it back)."""

    @property
    def id(self) -> int: ...
    @property
    def analyst(self) -> str: ...
    @property
    def database(self) -> str: ...
    @property
    def created(self) -> float: ...
    @property
    def epsilon(self) -> Fraction: ...
    @property
    def delta(self) -> Fraction: ...
    @property
    def gdelta(self) -> Fraction | None: ...


def settle_spend(
    cur: Cursor,
    held: Held,
    state: str,
    kept: tuple[Fraction, Fraction] | None = None,
    *,
    ended: str | None = None,
) -> bool:
    """Settle ``held`` as ``state`` (``committed`` keeps ``kept``, default all); ``ended``: how a spend
    of a dead process ended (privdb.accounting.restart), ``failed`` for a live query that failed after
    reading (charged, no answer), None for a live query's answer. The row changes only while
    it is still reserved (the guard in the ``UPDATE``), so a spend is settled once: False if it was
    settled already."""
    eps, dlt = held.epsilon, held.delta  # what the row holds: reserved, not yet settled
    keep_eps, keep_dlt = (Fraction(0), Fraction(0)) if state == "released" else (kept or (eps, dlt))
    # the log shows what stands; a release keeps what was reserved
    shown = (keep_eps, keep_dlt) if state == "committed" else (eps, dlt)
    settled = cur.execute(
        "UPDATE spends SET state = ?, settled = ?, epsilon = ?, delta = ?, ended = ? "
        "WHERE id = ? AND state = 'reserved'",
        (state, time.time(), _text(shown[0]), _text(shown[1]), ended, held.id),
    ).rowcount
    if settled != 1:
        return False
    back_eps, back_dlt = eps - keep_eps, dlt - keep_dlt
    if back_eps or back_dlt:
        row = budget_row(cur, held.analyst, held.database)
        assert row is not None
        spent = (_text(row.epsilon_spent - back_eps), _text(row.delta_spent - back_dlt))
        cur.execute(
            "UPDATE budgets SET epsilon_spent = ?, delta_spent = ? WHERE analyst = ? AND database = ?",
            (*spent, held.analyst, held.database),
        )
    if back_eps or back_dlt or state == "released":  # each cap's draw has its own figures
        return_draws(
            cur, held.id, held.database, created=held.created, reserved=(eps, dlt),
            kept=None if state == "released" else (keep_eps, keep_dlt), gdelta=held.gdelta,
        )  # fmt: skip
    return True


def budget_row(cur: Cursor, analyst: str, database: str) -> Budget | None:
    """The analyst's budget row on ``database``, read in ``cur``'s transaction (None: no grant)."""
    found = cur.execute(
        "SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets "
        "WHERE analyst = ? AND database = ?",
        (analyst, database),
    ).fetchone()
    if found is None:
        return None
    return Budget(analyst, database, *(_frac(x) for x in found))
