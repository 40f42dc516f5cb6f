"""ZetaSQL's implicit bounds, answered: the bounds' release (charged), then the query with them written in
(privdb.sql.implicit plans both steps and says why they are private)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from privdb.database import Database
from privdb.errors import InvalidParameter
from privdb.mechanisms.approx_bounds import find_bounds
from privdb.result import Result
from privdb.sql.answer.noise import NoisyAnswer
from privdb.sql.charge import charged
from privdb.sql.front.bigquery.implicit import with_found
from privdb.sql.implicit import COLUMNS, Staged
from privdb.sql.plan.types import Plan
from privdb.sql.prepare import prepare_query
from privdb.sql.run.bins import bin_counts

__all__ = ["answer_staged"]


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
        return NoisyAnswer(columns=list(COLUMNS), rows=released, accuracy=[])

    key = f"{plan.query.normalized} /* bounds found from the data */"
    bounds = charged(
        db, analyst, key=key, table=base, epsilon=spent, delta=0.0, read=read, respond=respond,
        tables=plan.relation.tables if plan.relation else None,
        note=f"bounds found from the data for {' '.join(query.text.split())}"[:500],
    )  # fmt: skip
    reports = {int(row[0]): dict(zip(COLUMNS[1:], row[1:], strict=True)) for row in bounds.rows}
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
