"""Plan a DP-SELECT: the noisy statistics it needs, their sensitivities, mechanisms and ε shares.

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
keys are not public and the query has no COUNT(*) to reuse: the query costs exactly the ε written.

Sensitivities (docs/proofs/sql.md), with ``m`` = max_contributions, ``G`` = max_groups (both 1 without a
privacy unit), bounds ``[L, U]``, ``B = max(|L|, |U|)``:

| statistic | add/remove | substitute, no GROUP BY | substitute, GROUP BY |
|-----------|-----------|--------------------------|----------------------|
| count     | m         | m                        | 2m                   |
| sum       | m·B       | m·max(U − L, B)          | 2m·B                 |
| sum of squares | m·B²  | m·B²                     | 2m·B²                |

The L1 sensitivity covers the whole vector of groups: a unit's rows are bounded to ``m`` in total over at
most ``G`` groups, so at most ``G`` coordinates change (``2G`` under substitution).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import InvalidParameter, UnsupportedQuery
from privdb.mechanisms import (
    DiscreteGaussian,
    ExponentialMechanism,
    Gaussian,
    Geometric,
    Laplace,
    RandomSource,
)
from privdb.mechanisms.base import AdditiveNoise
from privdb.sql.gaussian_plan import gaussian_statistics
from privdb.sql.order import answer_share
from privdb.sql.parse import DPQuery
from privdb.sql.validate import Resolved, resolve

__all__ = [
    "Histogram",
    "Plan",
    "Shape",
    "Statistic",
    "Threshold",
    "make_statistic",
    "plan_query",
    "plan_shape",
]

MAX_PUBLIC_GROUPS = 1_000_000
QUANTILE_CELLS = 2**14  # grid of a float column's range for order statistics
MAX_INT_CELLS = 2**16  # int columns of at most this span get one cell per integer
MAX_MODE_VALUES = 100_000
# the noisy sufficient statistics of each two-column aggregate (x the regressor of REGR_*(y, x)), in order
_PAIR_STATISTICS = {
    "covar": ("pn", "sx", "sy", "sxy"),
    "corr": ("pn", "sx", "sy", "sxx", "syy", "sxy"),
    "regr_slope": ("pn", "sx", "sy", "sxx", "sxy"),
    "regr_intercept": ("pn", "sx", "sy", "sxx", "sxy"),
}
# sample (N − 1) and population (N) variance and their square roots: Σx², Σx, N (noise.py combines them)
_VARIANCE_NAMES = {
    "variance": "VARIANCE",
    "stddev": "STDDEV",
    "variance_pop": "VAR_POP",
    "stddev_pop": "STDDEV_POP",
}
_DERIVED_DOMAIN_SPAN = 100_000  # integer ranges up to this size give derived public key domains


@dataclass(frozen=True)
class Statistic:
    """One noisy per-group sum."""

    name: str
    kind: (
        str  # rows | nonnull | sum | sumsq; over rows where column2 is not null too: pn | psum | psq | pprod
    )
    column: ColumnMeta | None
    sensitivity: float
    changed: int
    epsilon: float
    integer: bool  # integer counts (no privacy unit, or distinct counts): the geometric mechanism
    column2: ColumnMeta | None = None
    # USING GAUSSIAN: ρ-zCDP noise at this ρ share, its ε stated at ``delta`` (the query's Gaussian δ)
    noise: str = "laplace"
    rho: float = 0.0
    delta: float = 0.0

    def mechanism(self, rng: RandomSource | None = None) -> AdditiveNoise:
        """The mechanism that noises this statistic (``rng`` only for reproducible tests). The sensitivity is
        an L1 bound over the groups one unit reaches, hence also an L2 bound for the Gaussian."""
        if self.noise == "gaussian":
            if self.integer:
                return DiscreteGaussian(
                    rho=self.rho, delta=self.delta, sensitivity=int(self.sensitivity), rng=rng
                )
            return Gaussian(
                rho=self.rho, delta=self.delta, sensitivity=self.sensitivity, changed=self.changed, rng=rng
            )
        return self.laplace(rng)

    def laplace(self, rng: RandomSource | None = None) -> Laplace:
        """The Laplace (geometric, for integer counts) mechanism at this statistic's ε."""
        if self.integer:
            return Geometric(epsilon=self.epsilon, sensitivity=int(self.sensitivity), rng=rng)
        return Laplace(epsilon=self.epsilon, sensitivity=self.sensitivity, changed=self.changed, rng=rng)


@dataclass(frozen=True)
class Threshold:
    """Key selection: a key is released only if its noisy count reaches ``tau`` (costs δ)."""

    statistic: str
    tau: float
    delta: float


@dataclass(frozen=True)
class Histogram:
    """Per-group counts of one column over cells, for an order statistic or a mode (exponential mechanism).

    Quantiles: the clamped value's cell on a grid of ``[L, U]`` (width 1 for int columns of span up to
    ``MAX_INT_CELLS``, else ``(U − L)/QUANTILE_CELLS``); candidates are the grid points. Modes: one cell per
    public domain value. ``epsilon`` is per group, ``sensitivity`` the utility's Δ.
    """

    name: str
    column: ColumnMeta
    lo: float
    width: float
    cells: int
    values: tuple[Any, ...] | None
    epsilon: float
    sensitivity: float
    monotone: bool

    @property
    def integer(self) -> bool:
        return self.values is None and self.width == 1.0 and self.column.type == "int"

    @property
    def points(self) -> int:
        """How many candidates the mechanism chooses among."""
        if self.values is not None or self.integer:
            return self.cells
        return self.cells + 1

    def mechanism(self, rng: RandomSource | None = None) -> ExponentialMechanism:
        """The answer's mechanism, at its share of ``epsilon`` (a quantile's interval gets the rest)."""
        return ExponentialMechanism(
            epsilon=self.epsilon * answer_share(self),
            sensitivity=self.sensitivity,
            monotone=self.monotone,
            rng=rng,
        )


@dataclass(frozen=True)
class AggregatePlan:
    output: str
    kind: str
    column: ColumnMeta | None
    statistics: tuple[str, ...]
    epsilon: float
    histogram: Histogram | None = None
    q: float | None = None
    column2: ColumnMeta | None = None
    visible: bool = True  # in the answer (False: used only by HAVING, ORDER BY or an expression)


@dataclass(frozen=True)
class Plan:
    """Everything needed to run a DP-SELECT, decided before any data is read."""

    query: DPQuery
    resolved: Resolved
    statistics: tuple[Statistic, ...]
    aggregates: tuple[AggregatePlan, ...]
    domains: tuple[tuple[Any, ...], ...] | None  # public key values per key, or None (thresholding)
    threshold: Threshold | None
    epsilon: float
    delta: float
    histograms: tuple[Histogram, ...] = ()
    relation: Any = None  # privdb.sql.relation.Relation the query reads (None: the table itself)

    @property
    def table(self) -> TableMeta:
        return self.resolved.table

    def statistic(self, name: str) -> Statistic:
        return next(s for s in self.statistics if s.name == name)

    def public_groups(self) -> list[tuple[Any, ...]]:
        """Every combination of public key values (the Cartesian product), in order."""
        assert self.domains is not None
        return list(itertools.product(*self.domains))


def _bounds(column: ColumnMeta, aggregate: str) -> tuple[float, float]:
    if not column.numeric:
        raise UnsupportedQuery(f"{aggregate}({column.name}): {column.name!r} is {column.type}, not numeric")
    if column.lower is None or column.upper is None:
        raise InvalidParameter(
            f"{aggregate}({column.name}) needs public bounds for {column.name!r}: add lower and upper to its "
            "metadata (privdb load … --metadata M.yaml); privdb never takes bounds from the data"
        )
    return column.lower, column.upper


def _histogram(
    name: str, kind: str, column: ColumnMeta, epsilon: float, m: int, substitute: bool, q: float | None = None
) -> Histogram:
    """The cells of an order statistic (a grid of the bounds) or a mode (the public domain).

    The utility of a quantile candidate ``y`` is minus the distance from ``q·n`` to its rank interval
    ``[#{x < y}, #{x ≤ y}]`` (Smith 2011, with ties scored fairly). Adding a unit's ``w ≤ m`` rows moves
    both ends by ``0 … w`` and ``q·n`` by ``q·w``: Δ = m·max(q, 1 − q) under add/remove; a substituted unit
    moves the ends by up to ``m`` with ``n`` fixed: Δ = m. A mode's utility is a value's count (Δ = m),
    which only grows when a unit is added: monotone under add/remove, so ``exp(ε·u/Δ)`` applies there."""
    if kind == "mode":
        domain = (
            column.values if column.values is not None else ((False, True) if column.type == "bool" else None)
        )
        if domain is None and column.type == "int" and column.bounded:
            assert column.lower is not None and column.upper is not None
            first, last = math.ceil(column.lower), math.floor(column.upper)
            if last - first + 1 <= MAX_MODE_VALUES:
                domain = tuple(range(first, last + 1))
        if domain is None:
            raise InvalidParameter(
                f"MODE({column.name}) chooses among public values: declare `values: [...]` for "
                f"{column.name!r} in its metadata (or bounds, for an int column)"
            )
        return Histogram(
            name, column, 0.0, 1.0, len(domain), tuple(domain), epsilon, float(m), not substitute
        )
    lo, hi = _bounds(column, "QUANTILE")
    assert q is not None
    delta = float(m) if substitute else m * max(q, 1.0 - q)
    if column.type == "int" and float(lo).is_integer() and float(hi).is_integer() and hi - lo < MAX_INT_CELLS:
        return Histogram(name, column, lo, 1.0, int(hi - lo) + 1, None, epsilon, delta, False)
    if hi == lo:
        return Histogram(name, column, lo, 1.0, 1, None, epsilon, delta, False)
    return Histogram(
        name, column, lo, (hi - lo) / QUANTILE_CELLS, QUANTILE_CELLS, None, epsilon, delta, False
    )


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


DISTINCT_KINDS = ("distinct", "distinct_unit")


def _bounds_of(table: TableMeta, grouped: bool) -> tuple[int, int]:
    """``(m, G)``: rows and groups one unit reaches. Without a privacy unit a row is a unit, and a row
    joined with ``k`` public rows (the relation's multiplicity) reaches ``k`` rows in up to ``k`` groups."""
    k = int(getattr(table, "multiplicity", 1))
    if table.privacy_unit is not None:
        return table.max_contributions, table.max_groups if grouped else 1
    return k, k if grouped else 1


def make_statistic(
    name: str,
    kind: str,
    column: ColumnMeta | None,
    epsilon: float,
    table: TableMeta,
    grouped: bool,
    column2: ColumnMeta | None = None,
) -> Statistic:
    """One noisy per-group sum with its sensitivity (the table in the module doc) for ``table``'s privacy
    unit and neighbouring relation."""
    unit = table.privacy_unit is not None
    m, g = _bounds_of(table, grouped)
    substitute = table.neighbouring == "substitute"

    def sum_sens(lo: float, hi: float, squared: bool) -> float:
        if squared:
            lo, hi = (0.0 if lo <= 0 <= hi else min(lo * lo, hi * hi)), max(lo * lo, hi * hi)
        big = max(abs(lo), abs(hi))
        if not substitute:
            return m * big
        # a substituted unit may pass WHERE with any of 0..m rows before and after, so its contribution
        # lies in [min(0, m·L), max(0, m·U)]: the change is at most m·max(U − L, B)
        return 2 * m * big if grouped else m * max(hi - lo, big)

    if kind in ("rows", "nonnull", "pn", "distinct"):
        sens = float(2 * m if substitute and grouped else m)
    elif kind == "distinct_unit":  # COUNT(DISTINCT unit): one per group, in at most min(m, G) groups
        reach = min(m, g) if grouped else 1
        sens = float(2 * reach if substitute and grouped else reach)
    elif kind == "pprod":
        assert column is not None and column2 is not None
        (lo1, hi1), (lo2, hi2) = _bounds(column, "CORR"), _bounds(column2, "CORR")
        corners = (lo1 * lo2, lo1 * hi2, hi1 * lo2, hi1 * hi2)
        sens = sum_sens(min(corners), max(corners), False)
    else:
        assert column is not None
        lo, hi = _bounds(column, "SUM" if kind in ("sum", "psum") else "VARIANCE")
        sens = sum_sens(lo, hi, kind in ("sumsq", "psq"))
    if sens == 0:
        sens = 1e-300  # a constant column: any noise is fine; keep the mechanisms' validation happy
    changed = 2 * g if substitute and grouped else g
    # distinct counts are sampled, never scaled: integers with a privacy unit too
    integer = (kind in ("rows", "nonnull", "pn") and not unit) or kind in DISTINCT_KINDS
    return Statistic(name, kind, column, sens, changed, epsilon, integer, column2)


@dataclass(frozen=True)
class Shape:
    """What a plan takes from the query's text and the metadata alone, before ε and δ size the noise:
    the resolved SELECT and the public key domains (None: keys go through the noisy threshold). Queries
    that differ only in ε share it (privdb.sql.prepared keeps it by query shape)."""

    resolved: Resolved
    domains: tuple[tuple[Any, ...], ...] | None


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


def plan_query(
    query: DPQuery,
    table: TableMeta,
    evaluate_domain: Any = None,
    relation: Any = None,
    shape: Shape | None = None,
) -> Plan:
    """Resolve, then size every noisy statistic. ``evaluate_domain(sql, column, values)`` maps public
    column values through a key expression (the engine evaluates it on the values, not on the data);
    ``relation`` is the FROM clause's relation (privdb.sql.relation), kept for the rewrite; ``shape``: the
    query's :func:`plan_shape`, if known already (the sizing below is all that depends on ε and δ)."""
    shape = shape or plan_shape(query, table, evaluate_domain)
    resolved = shape.resolved
    domains = None if shape.domains is None else list(shape.domains)
    grouped = bool(resolved.keys)
    m, g = _bounds_of(table, grouped)
    substitute = table.neighbouring == "substitute"
    needs_threshold = grouped and domains is None
    if needs_threshold and query.delta <= 0:
        listed = ", ".join(k.sql for k in resolved.keys)
        raise InvalidParameter(
            f"GROUP BY {listed}: these keys have no public domain, so releasing them needs key selection "
            f"with δ > 0 (e.g. DP-SELECT {query.epsilon:g} DELTA 1e-6 …), or declare the key values in the "
            "metadata (values: [...])"
        )
    has_count_star = any(a.kind == "count_star" for a in resolved.aggregates)
    shares = len(resolved.aggregates) + (1 if needs_threshold and not has_count_star else 0)
    if shares == 0:  # a key release over public domains: the keys are public, nothing is read or spent
        return Plan(query, resolved, (), (), tuple(tuple(d) for d in domains or ()), None, 0.0, 0.0,
                    relation=relation)  # fmt: skip
    eps_each = query.epsilon / shares

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
            _bounds(col, "AVG")
            names = (add("sum", col, eps_each / 2), add("nonnull", col, eps_each / 2))
        elif agg.kind in _PAIR_STATISTICS:
            assert col is not None and agg.column2 is not None
            x, y = (agg.column2, col) if agg.kind.startswith("regr") else (col, agg.column2)
            wanted = _PAIR_STATISTICS[agg.kind]
            share = eps_each / len(wanted)
            spec = {"pn": ("pn", x, y), "sx": ("psum", x, y), "sy": ("psum", y, x), "sxx": ("psq", x, y),
                    "syy": ("psq", y, x), "sxy": ("pprod", x, y)}  # fmt: skip
            names = tuple(add(spec[w][0], spec[w][1], share, spec[w][2]) for w in wanted)
        elif agg.kind in ("quantile", "mode"):
            assert col is not None
            hist = _histogram(
                f"h{len(histograms)}", agg.kind, col, eps_each / group_factor, m, substitute, agg.q
            )
            histograms.append(hist)
            plans.append(
                AggregatePlan(agg.output, agg.kind, col, (), eps_each, hist, agg.q, visible=agg.visible)
            )
            continue
        elif agg.kind in _VARIANCE_NAMES:
            assert col is not None
            _bounds(col, _VARIANCE_NAMES[agg.kind])
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
    if needs_threshold:
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
        mech = stat.laplace()
        # a key present in one neighbour only has true count ≤ m in ≤ G groups (2G under substitution);
        # each is released w.p. P(noise ≥ τ − m) = q^⌈(τ−m)/g⌉/(1+q) ≤ e^(−λ(τ−m)/g)/(1+q): sum ≤ δ
        q = math.exp(-mech.rate)
        t = (mech.granularity / mech.rate) * math.log(changed / (threshold_delta * (1 + q)))
        tau = m + max(t, 0.0) + mech.granularity
        threshold = Threshold(stat_name, tau, threshold_delta)

    return Plan(
        query=query,
        resolved=resolved,
        statistics=tuple(statistics),
        aggregates=tuple(plans),
        domains=None if domains is None else tuple(domains),
        threshold=threshold,
        epsilon=query.epsilon,
        delta=query.delta if threshold is not None or query.noise == "gaussian" else 0.0,
        histograms=tuple(histograms),
        relation=relation,
    )
