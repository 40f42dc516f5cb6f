"""ZetaSQL's implicit bounds, planned (privdb.sql.implicit_run answers): a BigQuery-spelled COUNT, SUM or
AVG without contribution bounds gets its per-unit bounds from the data first
(privdb.sql.front.bigquery.implicit says which aggregates), then is answered with them, each step charged in
the one order privacy allows.

    prepare (with the owner's bounds: every refusal, free) → bins queries bound → enough budget for both
    steps? → charge the bounds' ε, read the bins, noise them, find the bounds (a stored answer on a repeat)
    → no bounds: a total refused (the bounds' ε spent), a grouped aggregate NULL in every group, as
    ZetaSQL's → the query with the bounds written in, prepared and answered at the rest of ε

Each aggregate with implicit bounds spends half of its equal share ``ε/n`` (``n`` aggregates in the query)
on its bounds, as ZetaSQL's ``BoundedSum`` does; the answer states both spends as one, and lists the bounds
(``implicit_bounds``) for ZetaSQL's ``bounding_report``. Whether bounds were found depends on the noisy
histogram alone, so refusing (or a NULL) when none were is post-processing (DESIGN.md, the outcome rule).
The bounds are found once per aggregate over all its groups (privdb.sql.front.bigquery.implicit).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from privdb.database import Database
from privdb.errors import BudgetExhausted
from privdb.sql.front.bigquery.implicit import Implicit, aggregates, implicit_items, with_found
from privdb.sql.front.query import DPQuery
from privdb.sql.plan.types import Plan
from privdb.sql.prepare import prepare_query
from privdb.sql.run.bins import bins_sql
from privdb.sql.run.targets import DatabaseTables

__all__ = ["COLUMNS", "Staged", "staged"]

COLUMNS = ["item", "lower_bound", "upper_bound", "num_inputs", "num_outside"]


@dataclass(frozen=True)
class Staged:
    """A query whose bounds are found first: the parsed query, its aggregates with implicit bounds, the ε
    each spends on its bounds, their bound bins queries, and its plan with the owner's bounds."""

    query: DPQuery
    items: tuple[Implicit, ...]
    share: float
    bins: dict[int, str]
    plan: Plan


def staged(
    db: Database, analyst: str | None, query: DPQuery | None, plan: Plan, *, budget: bool = True
) -> Staged | None:
    """The two-step answer of ``query`` (BigQuery's spelling as parsed, None for any other; prepared as
    ``plan`` with the owner's bounds), or None when no aggregate has implicit bounds. Binds the bins
    queries and (``budget``) checks the analyst's budget: refused here, free."""
    if query is None or query.bigquery is None or query.accuracy is not None:
        return None
    if plan.relation is None or plan.delta >= 1:
        return None  # δ ≥ 1: the ledger's refusal, free, as without implicit bounds
    source = query.select.args.get("from_") or query.select.args.get("from")
    if source is None or not isinstance(source.this, exp.Table):
        return None
    items = implicit_items(query, DatabaseTables(db, analyst).meta(source.this.name))
    if not items:
        return None
    share = query.epsilon / (2 * max(aggregates(query), 1))
    bins = {i.item: bins_sql(db, plan, i.column) for i in items}
    # the query as it will run, with bounds that clamp: refused now (free) if it would be then
    prepare_query(db, with_found(query, {i.item: i.placeholder() for i in items}, query.epsilon), analyst)
    left = db.budget(analyst) if budget and analyst is not None else None
    if left is not None and (left.epsilon_remaining < query.epsilon or left.delta_remaining < plan.delta):
        raise BudgetExhausted(
            f"this query needs ε = {query.epsilon:g} (its bounds found from the data, then its answer) and "
            f"δ = {plan.delta:g}; {float(left.epsilon_remaining):g} and {float(left.delta_remaining):g} "
            "remain. Ask a smaller epsilon, or give contribution_bounds_per_group"
        )
    return Staged(query, items, share, bins, plan)
