"""The privacy budget ledger: durable, atomic, exact.

* **Exact.** Amounts are rationals (``fractions.Fraction``); a float a user typed is read as the decimal
  they wrote (``0.1`` is 1/10), so fifty spends of 0.1 fit a budget of 5 exactly. Stored as text ``"n/d"``.
* **Atomic.** Check-and-spend is one SQLite ``BEGIN IMMEDIATE`` transaction: it takes the database's write
  lock before reading the running total, so parallel processes serialise and can never overspend. Given a
  ``postgresql://`` URL the ledger lives in PostgreSQL instead, shared by several servers, and the same
  transactions take one advisory lock first, so writers on every host serialise alike
  (:mod:`privdb.accounting.sqlstore`, the only place the two differ).
* **Durable.** WAL journal with ``synchronous=FULL``: a committed spend survives a crash or power loss. A
  ``kill -9`` at any moment leaves either the whole transaction or none of it. A *reservation* (a
  release, and the mark that a query reaches its read) is written with ``synchronous=NORMAL``: atomic, and
  seen by every other process at once, but synced to disk only by the commit that follows it (the WAL is
  synced in order, so syncing the commit syncs the reservation before it). No answer leaves before that
  commit, so a power cut can lose only a reservation whose answer nobody received; it saves one fsync per
  query (~0.3 ms here).
* **Group commit.** Concurrent reservations of one process share one transaction, and concurrent commits
  one synced transaction, each job in its savepoint (:mod:`privdb.accounting.groupcommit`); a commit
  returns only once its batch is synced.
* **Reserve, then commit.** A query first *reserves* its cost (counted as spent at once). A query refused
  before it reads data *releases* the reservation; once data has been read the reservation is *committed*
  before the answer leaves. A query that reserves before its read marks the reservation as reaching the
  read (``Reservation.reading()``) just before the engine is called; a reservation whose process died is
  settled when the ledger is opened again: charged if it had reached the read, released if not
  (privdb.accounting.restart). Where privdb cannot know that the process is dead (another host), it stays
  counted, on the side of the people in the data.

**Shared budgets.** Besides the analyst's own budget a spend draws, in the same transaction, on every *cap* it
names: a table's lifetime budget (every analyst's answers about its people add up there, so analysts who
pool their answers learn no more than the cap allows) and the budget of the analyst's group (a team sharing
one budget). A draw on a table or group without a cap draws nothing. A spend is refused unless the analyst's
budget and every cap it draws on can pay it all; a release returns it to all of them (docs/proofs/ledger.md).

Sequential composition: the spent ε (δ) is the sum of the answers' ε (δ) — the notes' "T answers of ε cost
Tε" — except that Gaussian answers are accounted together in zCDP by each budget they draw on: the analyst's
over the analyst's Gaussian answers (the spend records its ρ, its δ and the ε it was charged: ``gdelta``,
``gcharge``), each cap over the Gaussian answers drawn on it (the draw records what it charged that cap:
``draws.epsilon``, ``draws.gcharge``). Each is charged only what its sum of ρ adds after conversion
(:mod:`privdb.accounting.composition`), never more than plain composition would.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from privdb.accounting.amounts import Budget, _amount, _frac, _text
from privdb.accounting.composition import GaussianCost, gaussian_charge
from privdb.accounting.groupcommit import GroupCommit
from privdb.accounting.ledger_schema import ADDED, SCHEMA
from privdb.accounting.owners import this_process
from privdb.accounting.restart import Orphan, settle_orphans
from privdb.accounting.settle import budget_row, settle_spend
from privdb.accounting.shared import SharedBudgets, charge_caps, record_draws
from privdb.accounting.sqlstore import Cursor, is_store_url, open_store
from privdb.errors import BudgetExhausted, InternalError, InvalidParameter

__all__ = ["Budget", "Ledger", "Reservation", "Spend"]


@dataclass(frozen=True)
class Spend:
    """One line of the ledger's log."""

    id: int
    epsilon: Fraction
    delta: Fraction
    rho: float | None
    state: str
    note: str
    analyst: str = ""
    created: float = 0.0
    ended: str | None = None  # how a dead process's spend was settled (privdb.accounting.restart)


class Reservation:
    """A reserved spend: ``commit()`` once data was read, ``release()`` if refused before that; one
    reserved before its read calls ``reading()`` just before the engine reads."""

    def __init__(
        self,
        ledger: Ledger,
        spend_id: int,
        epsilon: Fraction,
        delta: Fraction,
        plain: Fraction | None = None,
        *,
        analyst: str,
        database: str,
        created: float,
        gdelta: Fraction | None = None,
        unread: bool = False,
    ) -> None:
        self._ledger = ledger
        # reserved before its read, which has not begun (privdb.accounting.restart)
        self.unread = unread
        self.gdelta = gdelta  # a Gaussian answer's δ: its charges stand whole, it cannot commit less
        self.id = spend_id
        # the spend's row as reserved: settling it need not read it back (one statement fewer under the lock)
        self.analyst, self.database, self.created = analyst, database, created
        self.epsilon = epsilon  # what is charged
        self.delta = delta
        self.epsilon_plain = epsilon if plain is None else plain  # what plain composition would charge
        self.state = "reserved"

    def commit(
        self,
        *,
        epsilon: float | Fraction | None = None,
        delta: float | Fraction | None = None,
        then: Callable[[Cursor], None] | None = None,
        failed: bool = False,
    ) -> None:
        """Commit the spend. With ``epsilon``/``delta`` (at most what was reserved) only that much stands: the
        rest returns to the analyst's budget and to every cap drawn on, in the same transaction (accuracy
        first reserves its MAX and commits the ex-post ε: docs/proofs/accuracy-first.md). ``then`` runs in
        that transaction after the spend is settled (the answer stored with its spend: one synced commit);
        if it raises, nothing of the transaction stands and the reservation stays reserved. ``failed``: the
        query failed after reading the data (charged, no answer): the log shows it ``failed``."""
        if self.state != "reserved":
            return
        eps = self.epsilon if epsilon is None else _amount("epsilon", epsilon)
        dlt = self.delta if delta is None else _amount("delta", delta)
        if eps > self.epsilon or dlt > self.delta:
            raise InvalidParameter(
                f"a commit of ε={float(eps):g}, δ={float(dlt):g} exceeds its reservation of "
                f"ε={float(self.epsilon):g}, δ={float(self.delta):g}"
            )
        if self.gdelta is not None and (eps, dlt) != (self.epsilon, self.delta):
            raise InvalidParameter("a Gaussian answer's reservation is committed whole or released")
        self._ledger._settle(self, "committed", (eps, dlt), then, ended="failed" if failed else None)
        self.epsilon, self.delta, self.state = eps, dlt, "committed"

    def release(self) -> None:
        if self.state == "reserved":
            self._ledger._settle(self, "released")
            self.state = "released"

    def reading(self) -> None:
        """Record that the query reaches its read: called just before the engine reads, it returns once
        the mark is written, so a process that dies after it is charged at restart, and one that dies
        before it is not (privdb.accounting.restart). Raises ``InternalError`` if the spend was settled
        already: the read must not begin."""
        if self.state == "reserved" and self.unread:
            self._ledger._reading(self)
            self.unread = False


class Ledger(SharedBudgets):
    """Budgets and spends of one privdb installation: in one SQLite file, or in the PostgreSQL database a
    ``postgresql://`` URL names (shared by several servers)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        target = str(path) if is_store_url(path) else Path(path)
        self._store = open_store(target)
        self._store.create([s for s in SCHEMA.split(";") if s.strip()], ADDED)
        # concurrent reservations share one transaction, and concurrent commits one synced transaction
        # (privdb.accounting.groupcommit): a thread returns once its own has committed
        self._reserves = GroupCommit(self._store, durable=False)
        self._commits = GroupCommit(self._store, durable=True)
        # the reservations of processes that died, settled now (charged if they had reached the read)
        self.orphans: list[Orphan] = settle_orphans(self._store)

    def close(self) -> None:
        self._store.close()

    def release_thread(self) -> None:
        """Close the calling thread's own connection to the store (privdb.perthread)."""
        self._store.release_thread()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _transaction(self, *, durable: bool = True) -> AbstractContextManager[Cursor]:
        """One write transaction holding the store's write lock from its first statement; synced to disk
        when it commits if ``durable`` (module doc: only reservations and releases are not)."""
        return self._store.transaction(durable=durable)

    def set_budget(
        self, analyst: str, database: str, *, epsilon: float | Fraction, delta: float | Fraction = 0
    ) -> Budget:
        """Set an analyst's total budget (a new grant, or a raise); it may not drop below what is spent."""
        eps, dlt = _amount("epsilon", epsilon), _amount("delta", delta)
        with self._transaction() as cur:
            row = self._row(cur, analyst, database)
            if row is None:
                cur.execute(
                    "INSERT INTO budgets VALUES (?, ?, ?, ?, '0/1', '0/1')",
                    (analyst, database, _text(eps), _text(dlt)),
                )
            else:
                if eps < row.epsilon_spent or dlt < row.delta_spent:
                    raise InvalidParameter(
                        f"analyst {analyst!r} has already spent ε={float(row.epsilon_spent):g}, "
                        f"δ={float(row.delta_spent):g}; a budget must be at least that"
                    )
                cur.execute(
                    "UPDATE budgets SET epsilon_total = ?, delta_total = ? "
                    "WHERE analyst = ? AND database = ?",
                    (_text(eps), _text(dlt), analyst, database),
                )
            budget = self._row(cur, analyst, database)
        assert budget is not None
        return budget

    def budget(self, analyst: str, database: str, cur: Cursor | None = None) -> Budget:
        """The analyst's budget (read in ``cur``'s transaction if given); ``forbidden``-style refusal is the
        caller's: here, a missing grant is 0."""
        if cur is None:
            with self._store.cursor() as own:
                row = self._row(own, analyst, database)
        else:
            row = self._row(cur, analyst, database)
        if row is None:
            return Budget(analyst, database, Fraction(0), Fraction(0), Fraction(0), Fraction(0))
        return row

    def has_budget(self, analyst: str, database: str) -> bool:
        with self._store.cursor() as cur:
            return self._row(cur, analyst, database) is not None

    def reserve(
        self,
        analyst: str,
        database: str,
        *,
        epsilon: float | Fraction,
        delta: float | Fraction = 0,
        rho: float | None = None,
        note: str = "",
        draws: Sequence[tuple[str, str]] = (),
        gaussian: GaussianCost | None = None,
        classes: Sequence[tuple[str, str, Fraction]] = (),
        before_read: bool = False,
    ) -> Reservation:
        """Check and reserve in one transaction, or raise ``budget_exhausted`` naming what is left. ``draws``:
        the caps the spend also draws on, as ``(kind, name)``: ``("table", t)``, ``("group", g)``.
        ``gaussian``: the part of ``epsilon`` that is Gaussian noise, charged in zCDP with the analyst's
        earlier Gaussian answers (module doc); the reservation's ``epsilon`` is what is charged.
        ``before_read``: no data is read yet, and ``Reservation.reading()`` will say when it is (else the
        reservation counts as read from the start)."""
        eps, dlt = _amount("epsilon", epsilon), _amount("delta", delta)
        plain = eps
        owner = this_process()

        def work(cur: Cursor) -> Reservation:  # a job of a shared transaction, synced by the next commit
            created = time.time()  # under the lock, as the caps' renewal windows are moved
            charged, spend_rho = eps, rho
            row = self._row(cur, analyst, database)
            if row is None:
                raise BudgetExhausted(
                    f"analyst {analyst!r} has no budget on database {database!r}; "
                    f"the owner grants one with `privdb grant`"
                )
            gcharge = None
            if gaussian is not None:
                spend_rho = gaussian.rho
                prior = cur.execute(
                    "SELECT rho, gdelta, gcharge FROM spends WHERE analyst = ? AND database = ? "
                    "AND gcharge IS NOT NULL AND state <> 'released'",
                    (analyst, database),
                ).fetchall()
                gcharge = gaussian_charge([(r, _frac(d), _frac(c)) for r, d, c in prior], gaussian)
                charged = eps - gaussian.epsilon + gcharge
            if charged > row.epsilon_remaining or dlt > row.delta_remaining:
                raise BudgetExhausted(
                    f"this needs ε={float(charged):g}, δ={float(dlt):g} but analyst {analyst!r} has "
                    f"ε={float(row.epsilon_remaining):g}, δ={float(row.delta_remaining):g} left on "
                    f"{database!r}; ask for less or ask the owner for more budget"
                )
            # each cap charges the Gaussian part by its own composition, not at the analyst's marginal
            drawn = charge_caps(cur, database, draws, plain=plain, delta=dlt, gaussian=gaussian)
            cur.execute(
                "UPDATE budgets SET epsilon_spent = ?, delta_spent = ? WHERE analyst = ? AND database = ?",
                (_text(row.epsilon_spent + charged), _text(row.delta_spent + dlt), analyst, database),
            )
            spend_id = cur.insert(
                "INSERT INTO spends (analyst, database, epsilon, delta, rho, gdelta, gcharge, state, note,"
                " pid, created, owner, unread) VALUES (?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?, ?, ?, ?)",
                (analyst, database, _text(charged), _text(dlt), spend_rho,
                 None if gaussian is None else _text(gaussian.delta),
                 None if gcharge is None else _text(gcharge), note, os.getpid(), created, owner,
                 1 if before_read else None),
            )  # fmt: skip
            record_draws(cur, spend_id, database, drawn, dlt)
            for table, name, lost in classes:  # personalised privacy: what each class of units loses
                cur.execute(
                    "INSERT INTO class_losses VALUES (?, ?, ?, ?)", (spend_id, table, name, _text(lost))
                )
            return Reservation(
                self, spend_id, charged, dlt, plain, analyst=analyst, database=database, created=created,
                gdelta=None if gaussian is None else gaussian.delta, unread=before_read,
            )  # fmt: skip

        return self._reserves.run(work)

    def spend(
        self,
        analyst: str,
        database: str,
        *,
        epsilon: float | Fraction,
        delta: float | Fraction = 0,
        rho: float | None = None,
        note: str = "",
        draws: Sequence[tuple[str, str]] = (),
        gaussian: GaussianCost | None = None,
    ) -> Reservation:
        """Reserve and commit at once."""
        reservation = self.reserve(
            analyst,
            database,
            epsilon=epsilon,
            delta=delta,
            rho=rho,
            note=note,
            draws=draws,
            gaussian=gaussian,
        )
        reservation.commit()
        return reservation

    def _settle(
        self,
        reservation: Reservation,
        state: str,
        kept: tuple[Fraction, Fraction] | None = None,
        then: Callable[[Cursor], None] | None = None,
        ended: str | None = None,
    ) -> None:
        """Settle a reservation (privdb.accounting.settle); ``then`` runs after, in the same transaction,
        if this settled it."""

        def work(cur: Cursor) -> None:  # one job of a shared transaction (module doc)
            if settle_spend(cur, reservation, state, kept, ended=ended) and then is not None:
                then(cur)

        # a commit is synced before it returns; a lost release only over-counts
        (self._commits if state == "committed" else self._reserves).run(work)

    def _reading(self, reservation: Reservation) -> None:
        """Clear the reservation's ``unread`` mark, in a transaction of the reservations' kind: it reaches
        the file (SQLite's WAL, PostgreSQL's log) before this returns, so it survives the process, and a
        sync that keeps a later write keeps it (docs/proofs/ledger.md, "Restarts")."""

        def work(cur: Cursor) -> int:
            return int(
                cur.execute(
                    "UPDATE spends SET unread = NULL WHERE id = ? AND state = 'reserved'", (reservation.id,)
                ).rowcount
            )

        if self._reserves.run(work) != 1:
            raise InternalError("the query's reservation was settled before its read; nothing was read")

    def class_losses(self, database: str) -> dict[tuple[str, str], Fraction]:
        """(table, class) → the ε that class of a personalised table's units has lost over every answer
        reserved or committed (privdb.sql.plan.personal): each answer at threshold t costs it
        min(ε_class, t)."""
        rows = self._store.execute(
            "SELECT c.tbl, c.class, c.epsilon FROM class_losses c JOIN spends s ON s.id = c.spend_id "
            "WHERE s.database = ? AND s.state <> 'released' ORDER BY c.tbl, c.spend_id",
            (database,),
        )
        out: dict[tuple[str, str], Fraction] = {}
        for table, name, lost in rows:
            out[(table, name)] = out.get((table, name), Fraction(0)) + _frac(lost)
        return out

    def spends(self, analyst: str | None, database: str) -> list[Spend]:
        """The log of an analyst's spends on a database (every analyst's with ``None``), oldest first."""
        sql = (
            "SELECT id, epsilon, delta, rho, state, note, analyst, created, ended FROM spends "
            "WHERE database = ?"
        )
        args: tuple[str, ...] = (database,)
        if analyst is not None:
            sql, args = sql + " AND analyst = ?", (database, analyst)
        rows = self._store.execute(sql + " ORDER BY id", args)
        return [Spend(r[0], _frac(r[1]), _frac(r[2]), r[3], r[4], r[5], r[6], r[7], r[8]) for r in rows]

    @staticmethod
    def _row(cur: Cursor, analyst: str, database: str) -> Budget | None:
        return budget_row(cur, analyst, database)
