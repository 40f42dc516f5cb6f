"""Shared budgets: a table's lifetime budget and a budget group's, drawn on by spends in the ledger's own
transactions (privdb.accounting.ledger, "Shared budgets"; docs/proofs/ledger.md).

Each draw records what it charged its budget (``draws.epsilon``) and, for a Gaussian answer, the charge of
its Gaussian part (``draws.gcharge``): a shared budget accounts the Gaussian answers drawn on it by its own
zCDP composition (privdb.accounting.composition), over those answers alone — of every analyst, in its
current window if it renews — never at the marginal of one analyst's other answers, which earlier answers
elsewhere would make nearly free. A refusal names only the caller's own request: what is left of a shared
budget depends on other analysts' spends (accuracy first: on their noisy answers)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from fractions import Fraction

from privdb.accounting.amounts import Budget, _amount, _frac, _text
from privdb.accounting.composition import GaussianCost, gaussian_charge
from privdb.accounting.renewal import window_start
from privdb.accounting.sqlstore import Cursor, SQLStore
from privdb.errors import BudgetExhausted, InvalidParameter

__all__ = [
    "Draw",
    "SharedBudgets",
    "Window",
    "cap_row",
    "charge_caps",
    "gaussian_draws",
    "record_draws",
    "renewed_cap",
    "return_draws",
]

# a renewing budget's (period, start of its current window), in seconds; None for one that never renews
Window = tuple[float, float] | None

_WHO_DRAWS = {"table": "every analyst's answers about its people", "group": "all its members' answers"}
_BUDGET = {"table": "lifetime budget", "group": "budget"}


@dataclass(frozen=True)
class Draw:
    """What one spend draws on one shared budget: ε in all, and the zCDP charge of its Gaussian part
    (None: the spend has none), as that budget's own composition prices it."""

    kind: str
    name: str
    cap: Budget
    epsilon: Fraction
    gcharge: Fraction | None


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
        # what each draw charged this cap and still stands there (a release's residue only); a draw made
        # before draws recorded their own charge drew its spend's ε
        rows = cur.execute(
            "SELECT d.epsilon, d.gcharge, s.epsilon, s.delta, s.gdelta, s.state FROM draws d "
            "JOIN spends s ON s.id = d.spend_id "
            "WHERE d.kind = ? AND d.name = ? AND s.database = ? AND s.created >= ?",
            (kind, name, database, current),
        ).fetchall()
        eps, dlt = Fraction(0), Fraction(0)
        for drawn, gaussian, spent, delta, gdelta, state in rows:
            if state != "released":
                eps, dlt = eps + _frac(spent if drawn is None else drawn), dlt + _frac(delta)
            elif drawn is not None and gaussian is not None:  # a release whose Gaussian part stands
                eps, dlt = eps + _frac(drawn), dlt + _frac(gdelta)
        cur.execute(
            "UPDATE caps SET epsilon_spent = ?, delta_spent = ?, window_start = ? "
            "WHERE kind = ? AND name = ? AND database = ?",
            (_text(eps), _text(dlt), current, kind, name, database),
        )
        eps_spent, dlt_spent = _text(eps), _text(dlt)
        start = current
    budget = Budget(name, database, *(_frac(x) for x in (eps_total, dlt_total, eps_spent, dlt_spent)))
    return budget, None if period is None else (float(period), float(start))


def gaussian_draws(
    cur: Cursor, kind: str, name: str, database: str, window: Window
) -> list[tuple[int, float, Fraction, Fraction]]:
    """(spend id, ρ_i, δ_i, c_i) of the Gaussian answers drawn on the cap in its current window (all, if it
    never renews): c_i is what each charged this cap (a draw made before draws recorded it: its spend's
    charge, which is what it drew). A released one still counts whole while its draw keeps its charge (a
    later answer was charged with it: :func:`return_draws`)."""
    sql = (
        "SELECT s.id, s.rho, s.gdelta, s.gcharge, s.state, d.gcharge FROM draws d "
        "JOIN spends s ON s.id = d.spend_id WHERE d.kind = ? AND d.name = ? AND s.database = ? "
        "AND s.gcharge IS NOT NULL"
    )
    args: tuple[object, ...] = (kind, name, database)
    if window is not None:
        sql, args = sql + " AND s.created >= ?", (*args, window[1])
    out: list[tuple[int, float, Fraction, Fraction]] = []
    for spend_id, rho, gdelta, spent, state, drawn in cur.execute(sql, args).fetchall():
        if state != "released" or drawn is not None:  # a release that returned its charge counts nothing
            out.append((int(spend_id), float(rho), _frac(gdelta), _frac(spent if drawn is None else drawn)))
    return out


def charge_caps(
    cur: Cursor,
    database: str,
    draws: Sequence[tuple[str, str]],
    *,
    plain: Fraction,
    delta: Fraction,
    gaussian: GaussianCost | None,
) -> list[Draw]:
    """What a spend of ``plain`` ε (its Gaussian part ``gaussian``) and ``delta`` draws on each capped
    budget of ``draws``: the part that is not Gaussian at its ε, the Gaussian part at that budget's own zCDP
    marginal. Raises ``budget_exhausted`` if one cannot pay, naming only the caller's request."""
    rest = plain if gaussian is None else plain - gaussian.epsilon
    out = []
    for kind, name in dict.fromkeys(draws):
        found = renewed_cap(cur, kind, name, database)
        if found is None:
            continue
        cap, window = found
        gcharge = None
        if gaussian is not None:
            prior = [g[1:] for g in gaussian_draws(cur, kind, name, database, window)]
            gcharge = gaussian_charge(prior, gaussian)
        eps = rest + (gcharge or 0)
        if eps > cap.epsilon_remaining or delta > cap.delta_remaining:
            raise BudgetExhausted(
                f"the {kind} {name!r} has too little left of its shared {_BUDGET[kind]} "
                f"({_WHO_DRAWS[kind]} draw on it) for this query's ε={float(plain):g}, "
                f"δ={float(delta):g}; ask for less, or ask the owner"
            )
        out.append(Draw(kind, name, cap, eps, gcharge))
    return out


def record_draws(cur: Cursor, spend_id: int, database: str, drawn: Sequence[Draw], delta: Fraction) -> None:
    """Charge each cap its draw and record the draw with its own charges (in the spend's transaction)."""
    for d in drawn:
        draw_on(cur, d.kind, d.name, database, d.cap, d.epsilon, delta)
        cur.execute(
            "INSERT INTO draws (spend_id, kind, name, epsilon, gcharge) VALUES (?, ?, ?, ?, ?)",
            (spend_id, d.kind, d.name, _text(d.epsilon), None if d.gcharge is None else _text(d.gcharge)),
        )


def return_draws(
    cur: Cursor,
    spend_id: int,
    database: str,
    *,
    created: float,
    reserved: tuple[Fraction, Fraction],
    kept: tuple[Fraction, Fraction] | None,
    gdelta: Fraction | None = None,
) -> None:
    """Give each cap the settled spend drew on what returns to it, in its current window only (an older
    window is over); the draw then records what stands. A commit of less than was reserved (an answer with
    no Gaussian part) returns the difference. A release (``kept`` None) returns the whole draw, except that
    the Gaussian part of one a later Gaussian answer on the cap was charged with stays whole — its charge
    and its Gaussian δ ``gdelta`` — and keeps counting in the cap's zCDP sums: the later charges were
    marginals over sums that held it (docs/proofs/ledger.md, "Gaussian answers in zCDP")."""
    rows = cur.execute(
        "SELECT kind, name, epsilon, gcharge FROM draws WHERE spend_id = ?", (spend_id,)
    ).fetchall()
    for kind, name, drawn_text, gaussian_text in rows:
        found = renewed_cap(cur, kind, name, database)
        if found is None:
            continue
        cap, window = found
        if window is not None and created < window[1]:
            continue
        drawn = reserved[0] if drawn_text is None else _frac(drawn_text)
        gaussian = None if gaussian_text is None else _frac(gaussian_text)
        if kept is not None:
            back, stands, gstands = (drawn - kept[0], reserved[1] - kept[1]), kept[0], gaussian
        elif (
            gaussian is not None
            and gdelta is not None
            and any(g[0] > spend_id for g in gaussian_draws(cur, kind, name, database, window))
        ):
            back, stands, gstands = (drawn - gaussian, reserved[1] - gdelta), gaussian, gaussian
        else:
            back, stands, gstands = (drawn, reserved[1]), Fraction(0), None
        draw_on(cur, kind, name, database, cap, -back[0], -back[1])
        cur.execute(
            "UPDATE draws SET epsilon = ?, gcharge = ? WHERE spend_id = ? AND kind = ? AND name = ?",
            (_text(stands), None if gstands is None else _text(gstands), spend_id, kind, name),
        )


def draw_on(
    cur: Cursor, kind: str, name: str, database: str, cap: Budget, eps: Fraction, dlt: Fraction
) -> None:
    cur.execute(
        "UPDATE caps SET epsilon_spent = ?, delta_spent = ? WHERE kind = ? AND name = ? AND database = ?",
        (_text(cap.epsilon_spent + eps), _text(cap.delta_spent + dlt), kind, name, database),
    )
