"""Statistics beyond single aggregates: linear regression with several regressors.

``linear_regression(conn, table, y, xs, epsilon)`` releases the noisy sufficient statistics of ordinary
least squares over the rows where every variable is present — ``n``, ``Σx_i``, ``Σy``, ``Σx_i·x_j``,
``Σx_i·y`` (each value clamped to its declared bounds) — and solves the normal equations from them: the
fit is post-processing. ε is split evenly over the statistics; their sensitivities are DP-SELECT's (counts,
sums, sums of squares, sums of products; docs/proofs/sql.md). The noisy ``XᵀX`` (with the intercept's
row and column) need not be positive definite: its eigenvalues are raised to at least a floor before
solving (documented post-processing; Sheffet 2017 and Wang 2018 discuss such repairs). The answer's
intervals are a parametric bootstrap: the known noise laws simulated around the released statistics and
the fit repeated (approximate).

The whole release is one charged answer, paid from the analyst's budget, stored like any DP-SELECT: the
same regression asked again returns the same coefficients for free.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privdb.api import Connection
from privdb.errors import InvalidParameter
from privdb.result import Result
from privdb.sql.access import authorize
from privdb.sql.answer.noise import NoisyAnswer
from privdb.sql.charge import charged
from privdb.sql.plan.sensitivity import make_statistic
from privdb.sql.plan.types import Plan, Statistic
from privdb.sql.prepare import prepare
from privdb.sql.run.targets import statistics_sql

__all__ = ["Regression", "linear_regression"]

_SIMULATIONS = 2000
_EIGEN_FLOOR = 1e-6  # relative to the largest eigenvalue of the noisy XᵀX


@dataclass(frozen=True)
class Regression:
    """Coefficients (``intercept`` first), their approximate 95% intervals, and what the release cost."""

    coefficients: dict[str, float]
    ci95: dict[str, tuple[float, float]]
    n: float
    epsilon_spent: float
    result: Result
    note: str = (
        "coefficients solve the normal equations of noisy sufficient statistics (post-processing); "
        "intervals simulate the noise around them (approximate); rows lacking a variable are left out"
    )


def _fit(stats: dict[str, float], xs: list[str]) -> NDArray[np.float64]:
    """OLS with intercept from sufficient statistics, after raising XᵀX's eigenvalues to a floor."""
    k = len(xs)
    a = np.empty((k + 1, k + 1))
    b = np.empty(k + 1)
    a[0, 0], b[0] = stats["n"], stats["y"]
    for i, xi in enumerate(xs, start=1):
        a[0, i] = a[i, 0] = stats[f"x:{xi}"]
        b[i] = stats[f"xy:{xi}"]
        for j, xj in enumerate(xs[i - 1 :], start=i):
            a[i, j] = a[j, i] = stats[f"xx:{xi}:{xj}"]
    values, vectors = np.linalg.eigh(a)
    floor = max(float(values.max()), 1.0) * _EIGEN_FLOOR
    repaired = (vectors * np.maximum(values, floor)) @ vectors.T
    coef: NDArray[np.float64] = np.linalg.solve(repaired, b)
    return coef


def linear_regression(conn: Connection, table: str, y: str, xs: list[str], epsilon: float) -> Regression:
    """Regress ``y`` on ``xs`` (with an intercept) with ε-differential privacy, paid from the analyst's
    budget of the embedded connection ``conn`` (``privdb.connect(path, analyst=…)``)."""
    if not isinstance(conn, Connection) or conn.analyst is None:
        raise InvalidParameter(
            "linear_regression needs an analyst's embedded connection: privdb.connect(path, analyst=…)"
        )
    if not xs or len(set(xs)) != len(xs) or y in xs:
        raise InvalidParameter("give one or more distinct regressors xs, none of them the response y")
    db, analyst = conn._db, conn.analyst
    present = " AND ".join(f'"{c}" IS NOT NULL' for c in [y, *xs])
    base, _ = prepare(db, f"DP-SELECT {epsilon!r} COUNT(*) FROM {table} WHERE {present}")
    assert isinstance(base, Plan)
    meta = base.table
    authorize(db, analyst, meta.name)
    columns = {c: meta.column(c) for c in [y, *xs]}
    wanted: list[tuple[str, str, str, str | None]] = [("n", "rows", y, None), ("y", "sum", y, None)]
    for i, xi in enumerate(xs):
        wanted += [(f"x:{xi}", "sum", xi, None), (f"xy:{xi}", "pprod", xi, y)]
        wanted += [
            (f"xx:{xi}:{xj}", "sumsq" if xi == xj else "pprod", xi, None if xi == xj else xj) for xj in xs[i:]
        ]
    share = base.epsilon / len(wanted)
    stats: list[Statistic] = [
        make_statistic(f"s{i}", kind, columns[c] if kind != "rows" else None, share, meta, False,
                       columns[c2] if c2 else None)
        for i, (_, kind, c, c2) in enumerate(wanted)
    ]  # fmt: skip
    roles = {role: stat for (role, *_), stat in zip(wanted, stats, strict=True)}
    plan = dataclasses.replace(base, statistics=tuple(stats), aggregates=(), histograms=())
    backend, _ = db.backend_for(meta.name)
    sql = statistics_sql(db, plan)
    names = ["intercept", *xs]

    def read() -> dict[str, float]:
        frame = backend.fetch(sql, timeout=db.query_timeout)
        return {role: float(frame[stat.name].iloc[0] or 0.0) for role, stat in roles.items()}

    def respond(true: dict[str, float]) -> NoisyAnswer:
        mechs = {role: stat.mechanism(db.noise_source) for role, stat in roles.items()}
        noisy = {role: float(mechs[role].release(np.array([v]))[0]) for role, v in true.items()}
        coef = _fit(noisy, xs)
        draws = np.random.default_rng()  # simulates public noise laws around public values: no secret
        sims = []
        for _ in range(_SIMULATIONS):
            sims.append(_fit({r: v + draws.laplace(0.0, mechs[r].scale) for r, v in noisy.items()}, xs))
        low, high = np.percentile(np.array(sims), [2.5, 97.5], axis=0)
        accuracy: list[dict[str, Any]] = [
            {"column": name, "mechanism": "laplace", "epsilon": base.epsilon, "ci95": [float(lo), float(hi)],
             "method": "OLS on noisy sufficient statistics; interval by simulating the noise (approximate)"}
            for name, lo, hi in zip(names, low, high, strict=True)
        ]  # fmt: skip
        accuracy.append({"column": "n", "noisy_rows": noisy["n"]})
        return NoisyAnswer(names, [[float(c) for c in coef]], accuracy)

    key = f"REGRESSION {base.epsilon!r} {meta.name}: {y} ~ {' + '.join(xs)}"
    result = charged(
        db, analyst, key=key, table=meta.name, epsilon=base.epsilon, delta=0.0, read=read, respond=respond
    )
    coefficients = dict(zip(result.columns, result.rows[0], strict=True))
    intervals = {a["column"]: (a["ci95"][0], a["ci95"][1]) for a in result.accuracy if "ci95" in a}
    n = next((a["noisy_rows"] for a in result.accuracy if "noisy_rows" in a), float("nan"))
    return Regression(coefficients, intervals, n, result.epsilon_spent, result)
