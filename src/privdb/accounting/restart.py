"""Reservations whose process died, settled when the ledger is opened again (a server restarted, or any
later command on the database).

A query reserves its cost before it touches data and settles it after; a process killed in between (``kill
-9``, the OOM killer, a power cut) leaves the reservation ``reserved``. Whether it is charged follows the
outcome rule (docs/proofs/sql.md, "Outcomes"): a query that had begun to read data is charged, since its
end could depend on the data (a read that exhausted memory ends the process), and one that had not cannot
have learnt anything, so it costs nothing. The ledger knows which: a query that reserves before its read
(``Ledger.reserve(before_read=True)``) is marked ``unread`` until ``Reservation.reading()`` clears the mark,
in a write that returns before the engine is called; every other reservation (a publication, whose rows are
read already) counts as read from the start. docs/proofs/ledger.md, "Restarts", gives the crash argument.

Only a process known dead is settled (privdb.accounting.owners): another host's or another container's
reservations, and rows from before owners were recorded, are left reserved and keep counting. Each settled
spend records how it ended (``spends.ended``), which the log shows (privdb.catalog.querylog):

* ``read``: it had begun to read: committed whole, the log's ``interrupted`` with its cost and the code
  ``query_failed`` (the one outcome of a failure after reading);
* ``unread``: it had not: released, the log's ``interrupted`` at ε = 0;
* ``kept``: it had not, but it is a Gaussian answer and a later Gaussian answer of the analyst was charged
  with it in their zCDP sum: returning it could leave that later charge short (docs/proofs/ledger.md,
  "Releases"), so it is committed whole, logged ``interrupted`` with its cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from privdb.accounting.amounts import _frac
from privdb.accounting.owners import is_dead
from privdb.accounting.settle import settle_spend
from privdb.accounting.sqlstore import Cursor, SQLStore

__all__ = ["Orphan", "notice", "settle_orphans"]


@dataclass(frozen=True)
class Orphan:
    """A reservation whose process died, and how it was settled (``outcome``: read, unread or kept)."""

    id: int
    analyst: str
    database: str
    created: float
    epsilon: Fraction
    delta: Fraction
    gdelta: Fraction | None
    unread: bool
    note: str
    outcome: str = ""


def settle_orphans(store: SQLStore) -> list[Orphan]:
    """Settle every reservation of a process known dead, in one synced transaction; what was settled."""
    rows = store.execute(
        "SELECT id, analyst, database, created, epsilon, delta, gdelta, unread, pid, owner, note "
        "FROM spends WHERE state = 'reserved' AND owner IS NOT NULL"
    )
    one_host = store.dialect == "sqlite"  # WAL mode: every writer of the file runs on this host
    dead = [_orphan(r) for r in rows if is_dead(r[9], int(r[8]), one_host=one_host)]
    if not dead:
        return []
    settled = []
    with store.transaction(durable=True) as cur:
        # the latest first: a later Gaussian answer released first no longer holds an earlier one whole
        for orphan in sorted(dead, key=lambda o: -o.id):
            outcome = "read" if not orphan.unread else "kept" if _priced_with(cur, orphan) else "unread"
            state = "released" if outcome == "unread" else "committed"
            if settle_spend(cur, orphan, state, ended=outcome):  # False: another process settled it first
                settled.append(replace(orphan, outcome=outcome))
    return sorted(settled, key=lambda o: o.id)


def _orphan(row: Sequence[Any]) -> Orphan:
    """The orphan of a ``spends`` row as :func:`settle_orphans` selects it."""
    spend_id, analyst, database, created, eps, dlt, gdelta, unread, _, _, note = row
    return Orphan(
        int(spend_id), str(analyst), str(database), float(created), _frac(eps), _frac(dlt),
        None if gdelta is None else _frac(gdelta), bool(unread), str(note),
    )  # fmt: skip


def _priced_with(cur: Cursor, orphan: Orphan) -> bool:
    """Whether ``orphan`` is a Gaussian answer that a later Gaussian answer of its analyst, still counted,
    was charged with (its zCDP charge is the marginal over a sum that held the orphan's ρ)."""
    if orphan.gdelta is None:
        return False
    later = cur.execute(
        "SELECT 1 FROM spends WHERE analyst = ? AND database = ? AND id > ? AND gcharge IS NOT NULL "
        "AND state <> 'released' LIMIT 1",
        (orphan.analyst, orphan.database, orphan.id),
    ).fetchone()
    return later is not None


def notice(orphans: list[Orphan]) -> str:
    """The owner's one line on what opening the ledger settled."""
    charged = [o for o in orphans if o.outcome != "unread"]
    spent = float(sum((o.epsilon for o in charged), Fraction(0)))
    reservations = "reservation" if len(orphans) == 1 else "reservations"
    return (
        f"settled {len(orphans)} {reservations} of queries whose process died: {len(charged)} charged "
        f"(ε {spent:g} in all: they had begun to read, or a later answer was priced with them), "
        f"{len(orphans) - len(charged)} released (they had not read); `privdb log --outcome interrupted` "
        "lists them"
    )
