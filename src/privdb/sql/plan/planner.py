"""Plan a DP-SELECT: the noisy statistics it needs, their mechanisms and ε shares, and the key selection.

Every aggregate is built from per-group sums the engine computes in one pass:

| aggregate | statistics (sums over kept rows)                | ε split |
|-----------|--------------------------------------------------|---------|
| COUNT(*)  | rows                                             | 1       |
| COUNT(c)  | non-null c                                       | 1       |
| SUM(c)    | clamp(c)                                         | 1       |
| AVG(c)    | clamp(c), non-null c                             | 1/2 each|
| VARIANCE, STDDEV(c) | clamp(c)², clamp(c), non-null c        | 1/3 each|
| VAR_POP, STDDEV_POP(c) | the same three (population formula) | 1/3 each|

A query's ε is divided evenly among its aggregates, plus one share for a key-selection count when
keys are not public and the query has no COUNT(*) to reuse: the query costs exactly the ε written. On a
table with a privacy unit, ε/20 goes first to the noisy count of units over the contribution bound
(privdb.sql.plan.truncation), and the shares divide the rest.
Each statistic's sensitivity, and the histograms of order statistics and modes: privdb.sql.plan.sensitivity.
"""

from __future__ import annotations

import math
from typing import Any

from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import InvalidParameter, UnsupportedQuery
from privdb.sql.front.checks.validate import resolve
from privdb.sql.front.query import DPQuery
from privdb.sql.plan.gaussian import gaussian_statistics
from privdb.sql.plan.order import check_calibration
from privdb.sql.plan.selection import selects_total, spent_delta, threshold_tau
from privdb.sql.plan.sensitivity import (
    make_histogram,
    make_statistic,
    numeric_bounds,
    unit_reach,
)
from privdb.sql.plan.smooth import check_smooth, smooth_histogram
from privdb.sql.plan.truncation import split
from privdb.sql.plan.types import AggregatePlan, Histogram, Plan, Shape, Statistic, Threshold

__all__ = ["MAX_PUBLIC_GROUPS", "PAIR_STATISTICS", "plan_query", "plan_shape"]

MAX_PUBLIC_GROUPS = 1_000_000
# the noisy sufficient statistics of each two-column aggregate (x the regressor of REGR_*(y, x)), in order
PAIR_STATISTICS = {
    "covar": ("pn", "sx", "sy", "sxy"),
    "corr": ("pn", "sx", "sy", "sxx", "syy", "sxy"),
    "regr_slope": ("pn", "sx", "sy", "sxx", "sxy"),
    "regr_intercept": ("pn", "sx", "sy", "sxx", "sxy"),
}
# sample (N − 1) and population (N) variance and their square roots: Σx², Σx, N (privdb.sql.answer.combine)
_VARIANCE_NAMES = {
    "variance": "VARIANCE",
    "stddev": "STDDEV",
    "variance_pop": "VAR_POP",
    "stddev_pop": "STDDEV_POP",
}
_DERIVED_DOMAIN_SPAN = 100_000  # integer ranges up to this size give derived public key domains


def _derived_domain(key_sql: str, columns: tuple[ColumnMeta, ...], evaluate: Any) -> tuple[Any, ...] | None:
    """Public values of a key: declared ``values``, booleans, or an expression of one bounded int column."""
    distinct = {c.name: c for c in columns}
    if len(distinct) != 1:
        return None
    column = next(iter(distinct.values()))
    plain = key_sql.strip('"').lower() == column.name.lower()
    domain = column.public_values(_DERIVED_DOMAIN_SPAN)
    if domain is None:
        return None
    if column.values is not None or column.type == "bool":
        if plain:
            return tuple(domain)
        if column.values is None:  # an expression of a boolean column: its keys pass the threshold
            return None
    if evaluate is None:
        return None
    derived: tuple[Any, ...] | None = evaluate(key_sql, column, domain)
    return derived


def plan_shape(query: DPQuery, table: TableMeta, evaluate_domain: Any = None) -> Shape:
    """Resolve the SELECT and derive its keys' public domains: nothing here depends on ε or δ."""
    resolved = resolve(query.select, table)
    domains: list[tuple[Any, ...]] | None = []
    for key in resolved.keys:
        dom = _derived_domain(key.sql, key.columns, evaluate_domain)
        if dom is None:
            domains = None
            break
        assert domains is not None
        domains.append(tuple(dom))
    if domains is not None and math.prod(len(d) for d in domains) > MAX_PUBLIC_GROUPS:
        raise UnsupportedQuery(
            f"the public key domains give more than {MAX_PUBLIC_GROUPS:,} groups; group by fewer columns"
        )
    return Shape(resolved, None if domains is None else tuple(domains))


def _calibrated(stat: Statistic) -> None:
    """Build a statistic's mechanism while planning, so that noise it cannot calibrate (an ε too small for
    its sensitivity, a sensitivity beyond float64) is refused before anything is read: free."""
    try:
        stat.mechanism()
    except (OverflowError, ZeroDivisionError, ValueError):
        what = stat.column.name if stat.column is not None else "rows"
        raise InvalidParameter(
            f"the noise of a {stat.kind} statistic of {what!r} at epsilon {stat.epsilon:g} cannot be "
            "calibrated in float64 (its sensitivity is too large or not finite); declare narrower bounds"
        ) from None


def plan_query(
    query: DPQuery,
    table: TableMeta,
    evaluate_domain: Any = None,
    relation: Any = None,
    shape: Shape | None = None,
) -> Plan:
    """Resolve, then size every noisy statistic. ``evaluate_domain(sql, column, values)`` maps public
    column values through a key expression (the engine evaluates it on the values, not on the data);
    ``relation`` is the FROM clause's relation (privdb.sql.front.relation.model), kept for the rewrite;
    ``shape``: the
    query's :func:`plan_shape`, if known already (the sizing below is all that depends on ε and δ)."""
    shape = shape or plan_shape(query, table, evaluate_domain)
    resolved = shape.resolved
    domains = None if shape.domains is None else list(shape.domains)
    grouped = bool(resolved.keys)
    m, g = unit_reach(table, grouped)
    substitute = table.neighbouring == "substitute"
    needs_threshold = grouped and domains is None
    if needs_threshold and query.delta <= 0:
        listed = ", ".join(k.sql for k in resolved.keys)
        raise InvalidParameter(
            f"GROUP BY {listed}: these keys have no public domain, so releasing them needs key selection "
            f"with δ > 0 (e.g. DP-SELECT {query.epsilon:g} DELTA 1e-6 …), or declare the key values in the "
            "metadata (values: [...])"
        )
    if query.noise == "smooth":
        check_smooth(query, resolved, m, needs_threshold)
    thresholded = needs_threshold or selects_total(query, grouped)
    # BigQuery's spelling selects by the noisy count of distinct units (privdb.sql.plan.selection)
    by_units = query.selection is not None and table.privacy_unit is not None
    reuse = any(a.kind == "count_star" for a in resolved.aggregates) and not by_units
    shares = len(resolved.aggregates) + (1 if thresholded and not reuse else 0)
    if shares == 0:  # a key release over public domains: the keys are public, nothing is read or spent
        return Plan(query, resolved, (), (), tuple(tuple(d) for d in domains or ()), None, 0.0, 0.0,
                    relation=relation)  # fmt: skip
    # with a privacy unit, ε/20 pays for the estimate of what bounding dropped (not for an ACCURACY
    # request: its ε is chosen for the accuracy); the shares split the rest
    eps_truncation, eps_rest = split(query.epsilon, table, query.accuracy is not None)
    eps_each = eps_rest / shares

    changed = 2 * g if substitute and grouped else g
    # an order statistic or mode runs one exponential mechanism per group; a unit reaches at most
    # `changed` groups, so each group's mechanism gets that share of the aggregate's ε (composition)
    group_factor = changed
    statistics: list[Statistic] = []
    plans: list[AggregatePlan] = []
    histograms: list[Histogram] = []

    def add(kind: str, column: ColumnMeta | None, eps: float, column2: ColumnMeta | None = None) -> str:
        statistics.append(make_statistic(f"s{len(statistics)}", kind, column, eps, table, grouped, column2))
        return statistics[-1].name

    for agg in resolved.aggregates:
        col = agg.column
        if agg.kind == "count_star":
            names: tuple[str, ...] = (add("rows", None, eps_each),)
        elif agg.kind == "count_distinct":
            names = (add("distinct_unit" if agg.of_unit else "distinct", col, eps_each),)
        elif agg.kind == "count":
            names = (add("nonnull", col, eps_each),)
        elif agg.kind == "sum":
            names = (add("sum", col, eps_each),)
        elif agg.kind == "avg":
            assert col is not None
            numeric_bounds(col, "AVG")
            names = (add("sum", col, eps_each / 2), add("nonnull", col, eps_each / 2))
        elif agg.kind in PAIR_STATISTICS:
            assert col is not None and agg.column2 is not None
            x, y = (agg.column2, col) if agg.kind.startswith("regr") else (col, agg.column2)
            wanted = PAIR_STATISTICS[agg.kind]
            share = eps_each / len(wanted)
            spec = {"pn": ("pn", x, y), "sx": ("psum", x, y), "sy": ("psum", y, x), "sxx": ("psq", x, y),
                    "syy": ("psq", y, x), "sxy": ("pprod", x, y)}  # fmt: skip
            names = tuple(add(spec[w][0], spec[w][1], share, spec[w][2]) for w in wanted)
        elif agg.kind in ("quantile", "mode"):
            assert col is not None
            hist = make_histogram(
                f"h{len(histograms)}", agg.kind, col, eps_each / group_factor, m, substitute, agg.q
            )
            if query.noise == "smooth":
                hist = smooth_histogram(hist, query.delta / (shares * group_factor), agg.output)
            else:
                check_calibration(hist, agg.output, query.epsilon)
            histograms.append(hist)
            plans.append(
                AggregatePlan(agg.output, agg.kind, col, (), eps_each, hist, agg.q, visible=agg.visible)
            )
            continue
        elif agg.kind in _VARIANCE_NAMES:
            assert col is not None
            numeric_bounds(col, _VARIANCE_NAMES[agg.kind])
            names = tuple(add(k, col, eps_each / 3) for k in ("sumsq", "sum", "nonnull"))
        else:
            raise UnsupportedQuery(f"aggregate kind {agg.kind!r} has no plan")
        plans.append(
            AggregatePlan(
                agg.output, agg.kind, col, names, eps_each, column2=agg.column2, visible=agg.visible
            )
        )

    threshold = None
    stat_name = None
    if thresholded and by_units:
        stat_name = add("distinct_unit", table.columns[str(table.privacy_unit)], eps_each)
    elif thresholded:
        stat_name = next((p.statistics[0] for p in plans if p.kind == "count_star"), None) or add(
            "rows", None, eps_each
        )
    # USING GAUSSIAN: the threshold's count keeps Laplace noise (its δ comes from that law); the query's δ
    # is then split evenly between the threshold and the Gaussian noise
    threshold_delta = query.delta / 2 if query.noise == "gaussian" and needs_threshold else query.delta
    if query.noise == "gaussian":
        gauss_delta = query.delta - threshold_delta if needs_threshold else query.delta
        statistics = gaussian_statistics(statistics, skip=stat_name, delta=gauss_delta)
    if stat_name is not None:
        stat = next(s for s in statistics if s.name == stat_name)
        # a key present in one neighbour only has true count ≤ m (1 for distinct units) in ≤ G groups (2G
        # under substitution): τ keeps the sum of their release probabilities ≤ δ (privdb.sql.plan.selection)
        reach = 1 if by_units else m
        tau = threshold_tau(query, stat.laplace(), reach, changed, threshold_delta)
        # a total's threshold reveals no key: no δ; a τ raised by k or M spends less than δ
        spent = spent_delta(stat.laplace(), reach, changed, tau, threshold_delta) if needs_threshold else 0.0
        threshold = Threshold(stat_name, tau, spent)

    for s in statistics:
        _calibrated(s)
    return Plan(
        query=query,
        resolved=resolved,
        statistics=tuple(statistics),
        aggregates=tuple(plans),
        domains=None if domains is None else tuple(domains),
        threshold=threshold,
        epsilon=query.epsilon,
        delta=_charged_delta(query, threshold, needs_threshold, threshold_delta),
        histograms=tuple(histograms),
        relation=relation,
        truncation_epsilon=eps_truncation,
    )


def _charged_delta(query: DPQuery, threshold: Threshold | None, needs: bool, threshold_delta: float) -> float:
    """The plan's δ: the query's, less what a threshold raised by k or M does not spend; 0 without a key
    threshold or a δ-using noise."""
    if not needs and query.noise not in ("gaussian", "smooth"):
        return 0.0
    if needs and threshold is not None and threshold.delta < threshold_delta:
        return query.delta - threshold_delta + threshold.delta
    return query.delta
