"""What a publication costs, in the ledger: the owner's account of the table, and the table's lifetime budget.

A release is an answer about every person in the table, so it draws on the table's lifetime budget like any
analyst's answer (privdb.accounting.ledger, "Shared budgets") and is refused, before anything is computed,
when the budget cannot pay. The owner's own account (analyst ``(owner)``, a name no grant can take) records
every publication; it is an account, not a limit: it grows with what is published, and the log shows each
release with its note. Re-publishing is a new charge.
"""

from __future__ import annotations

from fractions import Fraction

from privdb.accounting.ledger import Reservation
from privdb.database import Database
from privdb.mechanisms._validate import exact

__all__ = ["OWNER_ACCOUNT", "reserve_release"]

OWNER_ACCOUNT = "(owner)"


def reserve_release(db: Database, table: str, epsilon: float, delta: float, note: str) -> Reservation:
    """Reserve a release's (ε, δ) on the owner's account, drawing on ``table``'s lifetime budget: commit it
    once the data has been read, release it if the work stops before that."""
    budget = db.ledger.budget(OWNER_ACCOUNT, db.name)
    eps, dlt = exact(epsilon), exact(delta)
    if (
        not db.ledger.has_budget(OWNER_ACCOUNT, db.name)
        or budget.epsilon_remaining < eps
        or (budget.delta_remaining < dlt)
    ):
        db.ledger.set_budget(  # the account grows by what this release needs (δ kept below 1)
            OWNER_ACCOUNT, db.name, epsilon=budget.epsilon_total + eps,
            delta=min(Fraction(999_999, 1_000_000), budget.delta_total + dlt),
        )  # fmt: skip
    return db.ledger.reserve(
        OWNER_ACCOUNT, db.name, epsilon=eps, delta=dlt, note=note[:500], draws=[("table", table)]
    )
