"""What a DP-SELECT will do, before it reads any data (``privdb explain``): per output column its
mechanism(s), ε share and 95% ± in the answer's units (privdb.sql.answer.predict says how, and where the
± depends on the data, why it is stated for public sizes instead); per noisy statistic its sensitivity and
noise; the engine SQL; personalised ε, the ACCURACY request and the zCDP composition where they apply."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlglot

from privdb import deadline
from privdb.accounting.disclosure import presence_disclosure
from privdb.database import Database
from privdb.sql.accuracy import first as accuracy_first
from privdb.sql.answer.predict import columns_of
from privdb.sql.front.dpselect.parse import parse_bigquery
from privdb.sql.implicit import staged
from privdb.sql.plan import truncation
from privdb.sql.plan.gaussian import zcdp_cost
from privdb.sql.plan.personal import personal_table, summary
from privdb.sql.plan.types import AggregatePlan, Plan
from privdb.sql.prepare import prepare
from privdb.sql.release.plan import ReleasePlan
from privdb.sql.run.targets import histogram_queries

__all__ = ["describe", "describe_release", "explain"]

_RECORD = {"ci95_half_width": None, "note": "each released value is randomised; no interval"}


def _pretty(sql: str) -> str:
    if not sql:
        return ""
    try:
        return sqlglot.transpile(sql, read="duckdb", write="duckdb", pretty=True)[0]
    except RecursionError:  # a long chain: the plain SQL says the same
        return sql


def _order_statistic(agg: AggregatePlan) -> dict[str, Any]:
    """A quantile's or mode's mechanism: the exponential mechanism's utility loss, or (USING SMOOTH) the
    smooth-sensitivity noise's δ per group, with no utility loss or interval to state."""
    hist = agg.histogram
    assert hist is not None
    smooth = hist.smooth_delta > 0
    return {
        "column": agg.output,
        "kind": agg.kind,
        "q": agg.q,
        "mechanism": "smooth_sensitivity" if smooth else "exponential",
        "epsilon_per_group": hist.epsilon,
        "sensitivity": None if smooth else hist.sensitivity,  # the smooth noise's S depends on the data
        "candidates": hist.points,
        "resolution": hist.width if hist.values is None else None,
        "utility_loss95": None if smooth else hist.mechanism().utility_loss(hist.points, 0.05),
    } | ({"delta_per_group": hist.smooth_delta} if smooth else {})


def describe(plan: Plan, engine_sql: Iterable[str]) -> dict[str, Any]:
    """The plan of a DP-SELECT with aggregates (``engine_sql``: its bound engine queries)."""
    stats = []
    for stat in plan.statistics:
        mech = stat.mechanism()
        stats.append(
            {
                "statistic": stat.name,
                "kind": stat.kind,
                "column": stat.column.name if stat.column else None,
                "sensitivity": stat.sensitivity,
                "changed_groups": stat.changed,
                "mechanism": mech.name,
                "epsilon": stat.epsilon,
                "scale": mech.scale,
                "ci95_half_width": mech.half_width(0.05),
            }
        )
    order_statistics = [_order_statistic(agg) for agg in plan.aggregates if agg.histogram is not None]
    if plan.domains is not None:
        keys = "public domain"
    elif plan.threshold:
        keys = f"noisy threshold τ = {plan.threshold.tau:.4g} on {plan.threshold.statistic}"
    else:
        keys = "none"
    return {
        "table": plan.table.name,
        "engine_sql": "\n\n".join(_pretty(q) for q in engine_sql if q),
        "privacy_unit": plan.table.privacy_unit,
        "neighbouring": plan.table.neighbouring,
        "columns": columns_of(plan),
        "aggregates": [
            {
                "column": a.output if a.visible else f"{a.output} (for HAVING, ORDER BY or an expression)",
                "kind": a.kind,
                "epsilon": a.epsilon,
                "statistics": list(a.statistics),
            }
            for a in plan.aggregates
        ],
        "expressions": [
            {"column": name, "formula": plan.resolved.formulas[i].text, "epsilon": 0.0}
            for name, role, i in plan.resolved.outputs
            if role == "formula"
        ],
        "having": plan.resolved.having.text if plan.resolved.having is not None else None,
        "statistics": stats,
        "order_statistics": order_statistics,
        "keys": keys,
        "groups_released": len(plan.public_groups())
        if plan.domains is not None and plan.resolved.keys
        else None,
        "epsilon": plan.epsilon,
        "delta": plan.delta,
    } | truncation.describe(plan)


def describe_release(plan: ReleasePlan, sql: str) -> dict[str, Any]:
    """The plan of a record release: per released column its mechanism and ε."""
    release = [{"column": c.output, "mechanism": c.mechanism, "epsilon": c.epsilon} for c in plan.columns]
    return {
        "table": plan.table.name,
        "engine_sql": _pretty(sql),
        "privacy_unit": plan.table.privacy_unit,
        "neighbouring": plan.neighbouring,
        "count_epsilon": plan.count_epsilon,
        "columns": [
            r | {"role": "record", "epsilon_share": c.epsilon / plan.epsilon} | _RECORD
            for r, c in zip(release, plan.columns, strict=True)
        ],
        "release": release,
        "aggregates": [],
        "statistics": [],
        "keys": "none (record release)",
        "groups_released": None,
        "epsilon": plan.epsilon,
        "delta": plan.delta,
    }


def explain(db: Database, text: str, analyst: str | None = None) -> dict[str, Any]:
    """The plan, without reading data or spending: per output column its mechanism, ε share and 95% ±; per
    noisy statistic its sensitivity and noise; the engine SQL. ``analyst``: asked by that analyst, so only
    for a table granted to them (None: the owner). Under the query's time limit."""
    with deadline.limit(db.query_timeout):
        return _explain(db, text, analyst)


def _explain(db: Database, text: str, analyst: str | None) -> dict[str, Any]:
    plan, sql = prepare(db, text, analyst)
    if isinstance(plan, ReleasePlan):
        described = describe_release(plan, sql)
    else:
        described = describe(plan, [sql, *histogram_queries(db, plan).values()])
        if (personal := personal_table(db, plan.relation)) is not None:
            described["personalised"] = summary(personal, plan.epsilon)
    if (
        isinstance(plan, Plan)
        and (stage := staged(db, analyst, parse_bigquery(text), plan, budget=False)) is not None
    ):
        described["implicit_bounds"] = {
            "items": [i.item for i in stage.items],
            "epsilon_each": stage.share,
            "note": "these aggregates' bounds are found from the data first (ZetaSQL's approximate "
            "bounds) at epsilon_each each; the plan above shows the owner's bounds, and the answer runs "
            "with the bounds found at the rest of epsilon (docs/answers.md)",
        }
    if plan.query.accuracy is not None:
        half, confidence, most = plan.query.accuracy
        described["accuracy_request"] = {"half_width": half, "confidence": confidence, "max_epsilon": most}
        if isinstance(plan, Plan) and plan.query.schedule is not None:
            described["accuracy_first"] = accuracy_first.describe(plan)
    if isinstance(plan, Plan) and (cost := zcdp_cost(plan)) is not None:
        rho, eps_g, delta_g = cost
        described["composition"] = {
            "method": "zcdp", "rho": rho, "epsilon_plain": eps_g, "delta": delta_g,
            "note": "the Gaussian part is charged what this ρ adds to the analyst's Gaussian answers after "
                    "conversion at their summed δ: at most epsilon_plain, less after the first",
        }  # fmt: skip
    return described | {"disclosure": presence_disclosure(plan.epsilon)}
