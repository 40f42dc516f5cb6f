"""ZetaSQL's implicit bounds, run: a BigQuery-spelled COUNT, SUM or AVG without contribution bounds gets its
per-unit bounds from the data first (privdb.sql.front.bigquery.implicit says which aggregates), then is
answered with them, each step charged in the one order privacy allows.

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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from privdb.database import Database
from privdb.errors import BudgetExhausted, InvalidParameter, PrivdbError
from privdb.mechanisms.approx_bounds import find_bounds
from privdb.result import Result
from privdb.sql.answer.noise import NoisyAnswer
from privdb.sql.charge import charged
from privdb.sql.front.bigquery.implicit import Implicit, aggregates, implicit_items, with_found
from privdb.sql.front.dpselect.parse import parse_dp_select
from privdb.sql.front.query import DPQuery
from privdb.sql.plan.types import Plan
from privdb.sql.prepare import prepare_query
from privdb.sql.run.bins import bin_counts, bins_sql
from privdb.sql.run.targets import DatabaseTables

__all__ = ["Staged", "answer_staged", "staged"]

_COLUMNS = ["item", "lower_bound", "upper_bound", "num_inputs", "num_outside"]


@dataclass(frozen=True)
class Staged:
    """A query whose bounds are found first: the parsed query, its aggregates with implicit bounds, the ε
    each spends on its bounds, their bound bins queries, and the plan's table and G."""

    query: DPQuery
    items: tuple[Implicit, ...]
    share: float
    bins: dict[int, str]
    plan: Plan


def staged(db: Database, analyst: str, text: str, plan: Plan) -> Staged | None:
    """The two-step answer of ``text`` (prepared as ``plan`` with the owner's bounds), or None when no
    aggregate has implicit bounds. Binds the bins queries and checks the budget: refused here, free."""
    if plan.relation is None or plan.delta >= 1 or "with" not in text.lower():
        return None  # δ ≥ 1: the ledger's refusal, free, as without implicit bounds
    try:
        query = parse_dp_select(text)
    except PrivdbError:
        return None
    if query.bigquery is None or query.accuracy is not None:
        return None
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
    left = db.budget(analyst)
    if left.epsilon_remaining < query.epsilon or left.delta_remaining < plan.delta:
        raise BudgetExhausted(
            f"this query needs ε = {query.epsilon:g} (its bounds found from the data, then its answer) and "
            f"δ = {plan.delta:g}; {float(left.epsilon_remaining):g} and {float(left.delta_remaining):g} "
            "remain. Ask a smaller epsilon, or give contribution_bounds_per_group"
        )
    return Staged(query, items, share, bins, plan)


def _without(result: Result, items: list[int]) -> Result:
    """``result`` with the columns of ``items`` NULL in every group (ZetaSQL's answer where no bounds were
    found: a group's aggregate without bounds is NULL), their intervals dropped."""
    if not items:
        return result
    names = {result.columns[i] for i in items}
    result.rows = [[None if c in items else v for c, v in enumerate(row)] for row in result.rows]
    result.accuracy = [a for a in result.accuracy if a.get("column") not in names]
    return result


def answer_staged(
    db: Database, analyst: str, stage: Staged, answer: Callable[[Plan, str], Result]
) -> tuple[Result, dict[int, dict[str, Any]]]:
    """Find the bounds (charged), then ``answer`` the query with them written in; the result and each
    item's bounding report (lower, upper, num_inputs, num_outside)."""
    query, plan = stage.query, stage.plan
    spent = stage.share * len(stage.items)
    base = str(plan.relation.base if plan.relation else plan.table.name)
    backend, _ = db.backend_for(base)
    groups = int(plan.relation.meta.max_groups) if plan.relation is not None else 1

    def read() -> dict[int, list[dict[Any, Any]]]:
        out = {}
        for item, sql in stage.bins.items():
            frame = backend.fetch(sql, timeout=db.query_timeout)
            out[item] = frame.to_dict("records")
        return out

    def respond(rows: dict[int, list[dict[Any, Any]]]) -> NoisyAnswer:
        released = []
        for i in stage.items:
            counts = bin_counts(rows[i.item], i.integral)
            found = find_bounds(
                counts, integral=i.integral, epsilon=stage.share, groups=groups, symmetric=i.symmetric,
                rng=db.noise_source,
            )  # fmt: skip
            values = [None] * 4 if found is None else [found.lower, found.upper, found.num_inputs,
                                                        found.num_outside]  # fmt: skip
            released.append([i.item, *values])
        return NoisyAnswer(columns=list(_COLUMNS), rows=released, accuracy=[])

    key = f"{plan.query.normalized} /* bounds found from the data */"
    bounds = charged(
        db, analyst, key=key, table=base, epsilon=spent, delta=0.0, read=read, respond=respond,
        tables=plan.relation.tables if plan.relation else None,
        note=f"bounds found from the data for {' '.join(query.text.split())}"[:500],
    )  # fmt: skip
    reports = {int(row[0]): dict(zip(_COLUMNS[1:], row[1:], strict=True)) for row in bounds.rows}
    missing = [i for i in stage.items if reports[i.item]["lower_bound"] is None]
    grouped = query.select.args.get("group") is not None
    if missing and not grouped:
        what = ", ".join(query.select.expressions[i.item].unalias().sql(dialect="bigquery") for i in missing)
        raise InvalidParameter(
            f"no bounds were found from the data for {what}: no bin of the privacy units' values passed the "
            f"noise threshold (too few units; ZetaSQL's 'bin count threshold was too large'); the bounds' ε "
            f"= {spent:g} was spent. Give contribution_bounds_per_group => (lower, upper), or query more "
            "units"
        )
    found = {
        i.item: i.placeholder() if i in missing else (float(reports[i.item]["lower_bound"]),
                                                       float(reports[i.item]["upper_bound"]))
        for i in stage.items
    }  # fmt: skip
    final, sql = prepare_query(db, with_found(query, found, query.epsilon - spent), analyst)
    result = _without(answer(final, sql), [i.item for i in missing])
    result.epsilon_spent += bounds.epsilon_spent
    result.extra = dict(result.extra or {}) | {
        "implicit_bounds": [{"item": i, **r, "epsilon": stage.share} for i, r in sorted(reports.items())]
    }
    return result, reports
