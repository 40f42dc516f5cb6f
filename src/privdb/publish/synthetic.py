"""DP synthetic data from noisy marginals (issue 17): ``privdb publish synthetic``.

Every released column needs a public domain (privdb.publish.histogram.domain_of): a category's declared
values; a number's bounds, cut into cells — an integer column whose bounds are at most 100 apart gets one cell
per value (ages, years: the synthetic values are real values), any other number ``SYNTHETIC_BINS`` = 16 equal
bins of its bounds (``bins`` overrides), its synthetic values drawn uniformly within the bin (rounded down for
integers). Values outside the domain are handled as the histograms do: numbers are clamped into the end cells,
a category outside its declared values (or a NULL) puts its row nowhere — the row is left out of every
measurement, which is a function of that row alone, so one unit still moves each marginal by at most its
contribution bound.

Issue 31: a NULL is a value of its own (one more cell per column, ``nulls``); a numeric column without
bounds gets DP bounds from ``bounds_share`` of ρ (privdb.publish.dpbounds), always cut into bins; the fitted
model can be saved and sampled again for free (privdb.publish.synthmodel).

The measurements (MST, privdb.publish.mst, the default, with its domain compression; AIM,
privdb.publish.aim, with an optional workload; or MWEM for small domains, privdb.publish.mwem) use privdb's
exact samplers at ρ from (ε, δ) (privdb.accounting.zcdp); ``mbi`` (private-pgm, the ``synthetic`` extra) fits
the graphical model to MST's and AIM's noisy marginals and samples rows from it — post-processing.
docs/proofs/synthetic.md.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.accounting import zcdp
from privdb.catalog.metadata import TableMeta
from privdb.errors import InvalidParameter, install_hint
from privdb.mechanisms import RandomSource
from privdb.mechanisms.randomness import default_source
from privdb.publish.aim import aim, plan
from privdb.publish.dpbounds import check_bounds_share, dp_bounds, unbounded
from privdb.publish.histogram import Domain, _bounded, _column, domain_of
from privdb.publish.mst import fit_model, mst
from privdb.publish.mwem import check_mwem, mwem
from privdb.publish.synthmodel import SyntheticModel, decode

__all__ = [
    "METHODS",
    "SYNTHETIC_BINS",
    "SyntheticOptions",
    "SyntheticRelease",
    "check_synthetic",
    "encode",
    "load_mbi",
    "options_of",
    "release_synthetic",
]

SYNTHETIC_BINS = 16
METHODS = ("mst", "aim", "mwem")  # McKenna et al. 2021 (the default) and 2022; Hardt et al. 2012
MAX_ROWS = 100_000_000
_ITERATIONS = 1_000


def load_mbi() -> Any:
    """The ``mbi`` package (private-pgm), imported on first use, in float64 (its advice for large tables)."""
    if _missing("jax") or _missing("mbi"):
        raise InvalidParameter(
            f"synthetic data needs the mbi package (private-pgm): {install_hint('synthetic')} "
            "(nothing was spent)"
        )
    import jax

    config: Any = jax.config
    config.update("jax_enable_x64", True)
    config.update("jax_enable_compilation_cache", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mbi
    return mbi


def _missing(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None


@dataclass(frozen=True)
class SyntheticOptions:
    """The choices of one release beyond (ε, δ, rows): all public."""

    method: str = "mst"
    columns: tuple[str, ...] | None = None
    bins: tuple[tuple[str, int], ...] = ()
    nulls: bool = True  # a NULL is a value of its own (else its row is counted nowhere)
    bounds_share: float = 0.0  # of ρ, for DP bounds of numeric columns without declared ones
    workload: tuple[tuple[str, ...], ...] = ()  # AIM / MWEM: the marginals of interest
    degree: int = 3  # AIM / MWEM: every degree-way marginal, when no workload is listed
    compress: bool = True  # MST: merge each column's rare cells (noisy count < 3σ)


@dataclass
class SyntheticRelease:
    """The synthetic rows, their encoding (cell indices per column), what was measured, and the model."""

    frame: pd.DataFrame
    codes: NDArray[np.int64]
    columns: list[str]
    domains: list[Domain]
    method: str
    epsilon: float
    delta: float
    rho: float
    sensitivity: int
    cliques: list[tuple[str, ...]] = field(default_factory=list)
    rounds: int = 0  # AIM: the rounds after the 1-way measurements
    model: SyntheticModel | None = None
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)  # DP bounds found (released)


def domains_for(
    table: TableMeta, columns: Sequence[str] | None, bins: dict[str, int] | None,
    found: dict[str, tuple[float, float]] | None = None, nulls: bool = False,
) -> list[Domain]:  # fmt: skip
    """The public domain of each released column (all non-identifier columns when ``columns`` is empty);
    ``found``: DP bounds of columns that declare none (always cut into bins: their cell count is public)."""
    bins = dict(bins or {})
    found = found or {}
    names = _released(table, columns)
    if len({n.lower() for n in names}) != len(names):
        raise InvalidParameter("--columns names a column twice")
    metas = [_column(table, n) for n in names]
    for name in bins:
        if name.lower() not in {m.name.lower() for m in metas}:
            raise InvalidParameter(
                f"--bins names {name!r}, which is not released; bins apply to released columns"
            )
    out = []
    for meta in metas:
        count = next((v for k, v in bins.items() if k.lower() == meta.name.lower()), None)
        if meta.name in found:
            meta = replace(meta, lower=found[meta.name][0], upper=found[meta.name][1])
            count = count or SYNTHETIC_BINS
        wide = meta.numeric and not meta.values and not (
            meta.type == "int" and meta.lower is not None and meta.upper is not None
            and meta.upper - meta.lower <= 100
        )  # fmt: skip
        domain = domain_of(meta, count if count is not None else (SYNTHETIC_BINS if wide else None))
        out.append(domain.with_null() if nulls else domain)
    if len(out) < 1:
        raise InvalidParameter("no column to release: name them with --columns a,b,c")
    return out


def _released(table: TableMeta, columns: Sequence[str] | None) -> list[str]:
    """The columns named, or every column but identifiers and the privacy unit."""
    if columns:
        return list(columns)
    return [c.name for c in table.columns.values() if not (c.identifier or c.private_id)]


def encode(frame: pd.DataFrame, domains: Sequence[Domain]) -> NDArray[np.int64]:
    """One row per row of ``frame`` whose every value has a cell (the others are counted nowhere)."""
    if not len(frame):
        return np.zeros((0, len(domains)), dtype=np.int64)
    codes = np.stack([d.index(frame[d.column]) for d in domains], axis=1)
    return np.asarray(codes[(codes >= 0).all(axis=1)], dtype=np.int64)


def check_synthetic(
    table: TableMeta, *, epsilon: float, delta: float, rows: int, options: SyntheticOptions | None = None,
) -> list[Domain]:  # fmt: skip
    """Every check on the parameters and the public domains, and that ``mbi`` is there: all before any
    data is read (a refusal spends nothing). The released columns' domains (a column whose bounds are to be
    found has placeholder bounds here: its cell count is already the final one)."""
    o = options or SyntheticOptions()
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise InvalidParameter(f"--epsilon must be > 0 and finite, got {epsilon:g}")
    if not 0 < delta < 1:
        raise InvalidParameter(f"--delta must be in (0, 1) (zCDP measurements), e.g. 1e-9; got {delta:g}")
    if not 1 <= rows <= MAX_ROWS:
        raise InvalidParameter(f"--rows must be between 1 and {MAX_ROWS:,}, got {rows:,}")
    if o.method not in METHODS:
        raise InvalidParameter(f"--method must be one of {', '.join(METHODS)}, not {o.method!r}")
    if (o.workload or o.degree != 3) and o.method == "mst":
        raise InvalidParameter("--workload and --degree are AIM's and MWEM's: add --method aim or mwem")
    if not 1 <= o.degree <= 4:
        raise InvalidParameter(f"--degree must be 1 to 4, got {o.degree}")
    missing = [c.name for c in unbounded([_column(table, n) for n in _released(table, o.columns)])]
    check_bounds_share(o.bounds_share, missing)
    domains = domains_for(table, o.columns, dict(o.bins), dict.fromkeys(missing, (0.0, 1.0)), o.nulls)
    names = [d.column for d in domains]
    for marginal in o.workload:
        for name in marginal:
            if name not in names:
                raise InvalidParameter(
                    f"--workload names {name!r}, which is not released: {', '.join(names)}"
                )
        if not 1 <= len(set(marginal)) <= 4:
            raise InvalidParameter("--workload: each marginal has 1 to 4 columns, e.g. --workload 'a,b;c,d'")
    if o.method == "mwem":
        check_mwem([len(d.labels) for d in domains])
    else:
        load_mbi()
    return domains


def release_synthetic(
    frame: pd.DataFrame,
    table: TableMeta,
    *,
    epsilon: float,
    delta: float,
    rows: int,
    options: SyntheticOptions | None = None,
    rng: RandomSource | None = None,
    iterations: int = _ITERATIONS,
    **given: Any,
) -> SyntheticRelease:
    """``rows`` synthetic rows of ``frame`` at (ε, δ)-DP (ρ-zCDP measurements, ρ from (ε, δ)); ``given``:
    SyntheticOptions' fields by name (``method="aim"``, ``columns=[…]``, …)."""
    o = options or options_of(given)
    check_synthetic(table, epsilon=epsilon, delta=delta, rows=rows, options=o)
    source = rng or default_source()
    bounded, most = _bounded(frame, table, source)
    sensitivity = 2 * most if table.neighbouring == "substitute" else most
    rho_all = zcdp.rho_from_epsilon(epsilon, delta)
    missing = unbounded([_column(table, n) for n in _released(table, o.columns)])
    found = (
        dp_bounds(bounded, missing, o.bounds_share * rho_all, sensitivity, delta, source) if missing else {}
    )
    rho = rho_all * (1 - o.bounds_share) if missing else rho_all
    domains = domains_for(table, o.columns, dict(o.bins), found, o.nulls)
    names = [d.column for d in domains]
    sizes = [len(d.labels) for d in domains]
    types = [_column(table, n).type for n in names]
    codes = encode(bounded, domains)
    workload = [tuple(sorted(names.index(a) for a in set(m))) for m in o.workload] or None
    rounds = 0
    if o.method == "mwem":
        candidates = plan(len(names), rho, workload, o.degree).candidates
        measured, table_p = mwem(codes, names, sizes, rho, sensitivity, delta, source, candidates)
        model = SyntheticModel(
            domains, types, [tuple(names)], [table_p], [[[c] for c in range(s)] for s in sizes]
        )
        synthetic = model.sample_codes(rows, source)
    else:
        mbi = load_mbi()
        groups = [[[c] for c in range(s)] for s in sizes]
        if o.method == "aim":
            measured, fitted, rounds = aim(
                mbi, codes, names, sizes, rho, sensitivity, delta, source, iterations, workload, o.degree
            )
        else:
            measured, groups = mst(codes, names, sizes, rho, sensitivity, delta, source, o.compress)
            small = tuple(len(g) for g in groups)
            fitted = fit_model(mbi, mbi.Domain(tuple(names), small), measured, iterations)
        cliques, tables = _tree_tables(mbi, fitted)
        model = SyntheticModel(domains, types, cliques, tables, groups)
        synthetic = model._expand(_rounded(fitted, names, rows, source), source)
    model.info = {"method": o.method, "epsilon": epsilon, "delta": delta, "rho": rho_all, "table": table.name,
                  "measured": [list(c) for c, _, _ in measured], "bounds": found, "ledger": None,
                  "created": None}  # fmt: skip
    out = decode(synthetic, domains, types, source)
    cliques_measured = [clique for clique, _, _ in measured]
    return SyntheticRelease(
        out,
        synthetic,
        names,
        domains,
        o.method,
        epsilon,
        delta,
        rho_all,
        sensitivity,
        cliques_measured,
        rounds,
        model,
        found,
    )


def options_of(given: dict[str, Any]) -> SyntheticOptions:
    """SyntheticOptions from keyword values (lists accepted where tuples are kept)."""
    known = {f.name for f in fields(SyntheticOptions)}
    for name in given:
        if name not in known:
            raise InvalidParameter(f"unknown synthetic option {name!r}; known: {', '.join(sorted(known))}")
    values = dict(given)
    if values.get("columns") is not None:
        values["columns"] = tuple(values["columns"])
    values["bins"] = tuple(dict(values.get("bins") or {}).items())
    values["workload"] = tuple(tuple(m) for m in values.get("workload") or ())
    return SyntheticOptions(**values)


def _rounded(fitted: Any, names: Sequence[str], rows: int, source: RandomSource) -> NDArray[np.int64]:
    """mbi's randomised rounding of its model to ``rows`` rows, NumPy seeded from ``source`` (post-processing:
    the seed is not secret)."""
    seed = int(source.words(1)[0] % (2**32))
    state = np.random.get_state()
    try:
        np.random.seed(seed)
        sampled = fitted.synthetic_data(rows)
    finally:
        np.random.set_state(state)
    return np.stack([np.asarray(sampled.data[n], dtype=np.int64) for n in names], axis=1)


def _tree_tables(mbi: Any, fitted: Any) -> tuple[list[tuple[str, ...]], list[NDArray[np.float64]]]:
    """The fitted model as its junction tree's clique marginals (probabilities), in breadth-first order of
    each component: every clique's already-visited columns lie in its parent (post-processing)."""
    tree, _ = mbi.junction_tree.make_junction_tree(fitted.domain, fitted.cliques)
    tops = list(tree.nodes)
    calibrated = mbi.marginal_oracles.message_passing_stable(fitted.potentials.expand(tops), 1.0)
    order: list[tuple[str, ...]] = []
    for root in tops:
        if root in order:
            continue
        queue = [root]
        order.append(root)
        while queue:
            node = queue.pop(0)
            for child in sorted(tree.neighbors(node)):
                if child not in order:
                    order.append(child)
                    queue.append(child)
    tables = []
    for clique in order:
        table = np.maximum(np.asarray(calibrated[clique].datavector(flatten=False), dtype=np.float64), 0.0)
        tables.append(table / table.sum() if table.sum() > 0 else np.full(table.shape, 1.0 / table.size))
    return [tuple(str(a) for a in c) for c in order], tables
