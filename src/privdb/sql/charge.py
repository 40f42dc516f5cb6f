"""Answer once, in the one order privacy allows: the stored answer if there is one (free); else reserve the
budget (the analyst's, each table's lifetime budget, the group's), mark it as reaching the read, read, add
noise, commit the spend, store the answer. A failure after the engine has read the data is charged and told
without detail (DESIGN.md); a process that dies before the mark is charged nothing when the ledger is opened
again, one that dies after it is charged (privdb.accounting.restart)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, TypeVar

from privdb.accounting.amounts import Budget
from privdb.accounting.composition import GaussianCost
from privdb.accounting.sqlstore import Cursor
from privdb.database import Database
from privdb.errors import BudgetExhausted, InternalError, QueryFailed
from privdb.interrupt import interrupted
from privdb.mechanisms._validate import exact
from privdb.result import Result
from privdb.sql.answer.noise import NoisyAnswer

__all__ = ["after_reading", "charged"]

T = TypeVar("T")


def charged(
    db: Database,
    analyst: str,
    *,
    key: str,
    table: str,
    epsilon: float,
    delta: float,
    read: Callable[[], T],
    respond: Callable[[T], NoisyAnswer],
    extra: dict[str, Any] | None = None,
    note: str | None = None,
    tables: Sequence[str] | None = None,
    gaussian: GaussianCost | None = None,
    classes: Sequence[tuple[str, str, Fraction]] = (),
) -> Result:
    """Answer once, in the one order privacy allows: the stored answer to ``key`` if there is one (free);
    else reserve the budget, ``read`` the data (a failure from here on is charged, without detail),
    ``respond`` with noise, commit the spend, store the answer, return it. ``note``: what the log shows
    (the query as written; default the key); ``tables``: every table read (default ``table``), each of
    whose lifetime budget the spend draws on; ``gaussian``: the part of ``epsilon`` accounted in zCDP with
    the analyst's other Gaussian answers (privdb.accounting.composition): the answer states what was charged
    and what plain composition would have charged."""
    stored = db.catalog.stored_answer(analyst, key)
    if stored is not None:
        result = Result.from_dict(stored)
        result.epsilon_spent, result.delta_spent, result.cached = 0.0, 0.0, True
        result.budget = _budget(db, analyst)
        return result
    # the data as it is before the read: an answer read while a load or an append changed it is not stored
    # (the change drops stored answers after its commit; this one could be stored after that)
    version = db.data_version()
    # the spend also draws on each table's lifetime budget and the analyst's group's (where the owner set one)
    group = db.ledger.group_of(analyst, db.name)
    if delta >= 1:  # BigQuery's delta=1, used by a release threshold: legal, and more than any budget holds
        raise BudgetExhausted(
            f"this answer spends δ = {delta:g} (a release threshold uses it) and a budget's δ is below 1; "
            "ask a smaller delta (e.g. 1e-6)"
        )
    draws = [("table", t) for t in (tables or (table,))] + ([("group", group)] if group else [])
    reservation = db.ledger.reserve(
        analyst, db.name, epsilon=epsilon, delta=delta, note=(note or key)[:500], draws=draws,
        gaussian=gaussian, classes=classes, before_read=True,
    )  # fmt: skip
    if gaussian is not None:
        extra = dict(extra or {}) | {"composition": {
            "method": "zcdp", "rho": gaussian.rho, "epsilon_charged": float(reservation.epsilon),
            "epsilon_plain": float(reservation.epsilon_plain), "delta": float(gaussian.delta),
        }}  # fmt: skip
    try:  # the mark that the read is reached: a process that dies from here on is charged at restart
        reservation.reading()
    except Exception:
        with contextlib.suppress(Exception):  # else it stays reserved, unread: released at the next open
            reservation.release()  # nothing was read: nothing is spent
        raise
    try:
        answer = respond(read())
    except Exception:  # the post-read barrier: one outcome, whatever the data did
        if interrupted():  # Ctrl-C, which DuckDB reports as its own error: the spend stays reserved, so it
            raise KeyboardInterrupt from None  # is charged and logged "interrupted" (the analyst stopped it)
        reservation.commit(failed=True)  # charged; the log shows it failed
        raise QueryFailed(after_reading(db)) from None
    # what was reserved (the query's ε, or its zCDP charge for Gaussian answers) or, accuracy first, the
    # ex-post ε: the rest of the reservation returns in this commit
    kept = reservation.epsilon if answer.epsilon is None else exact(answer.epsilon)
    result = Result(
        columns=answer.columns,
        rows=answer.rows,
        epsilon_spent=float(kept),
        delta_spent=delta,
        budget={},
        accuracy=answer.accuracy,
        extra=dict(extra or {}) | answer.extra,
    )

    def store(cur: Cursor) -> None:  # in the spend's transaction: one synced commit for both
        result.budget = _remaining(db.ledger.budget(analyst, db.name, cur))
        if db.data_version() == version:
            db.catalog.store_answer(analyst, key, table, result.to_dict(), cur, tables or (table,))

    dlt = reservation.delta if answer.epsilon is None else delta
    try:
        reservation.commit(epsilon=kept, delta=dlt, then=store)
    except Exception as err:
        reservation.commit(epsilon=kept, delta=dlt)  # the spend stands whatever failed in storing the answer
        raise InternalError(
            f"the answer could not be stored ({type(err).__name__}); its cost was charged"
        ) from None
    if not result.budget:  # the spend was settled elsewhere already (``then`` did not run)
        result.budget = _budget(db, analyst)
    return result


def after_reading(db: Database) -> str:
    """The one message of every failure after the engine has read the data (the post-read barrier).

    Once the data is read, nothing it holds may change what the analyst observes but the noisy values
    (DESIGN.md, the outcome rule): an engine error, a time-out, a non-finite value, a fault in the noise or
    in post-processing all end here, with code ``query_failed`` and this text, which depends on the
    server's public time limit alone. Totality (privdb.sql.front.expr) makes every such failure impossible but
    the time-out; the barrier is what holds if a proof has a gap. docs/proofs/sql.md, "Outcomes"."""
    limit = "" if db.query_timeout is None else f" (the limit is {db.query_timeout:g} s)"
    return (
        "the query was stopped after the engine had read the data: it ran past the time limit"
        f"{limit}, or failed; its cost was charged, and the failure says nothing about the data. Narrow "
        "the query with WHERE, check it with `privdb explain`, or ask the owner"
    )


def _budget(db: Database, analyst: str) -> dict[str, float]:
    return _remaining(db.budget(analyst))


def _remaining(b: Budget) -> dict[str, float]:
    return {"epsilon_remaining": float(b.epsilon_remaining), "delta_remaining": float(b.delta_remaining)}
