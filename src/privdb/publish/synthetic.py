"""DP synthetic data from noisy marginals (issue 17): ``privdb publish synthetic``.

Every released column needs a public domain (privdb.publish.histogram.domain_of): a category's declared
values; a number's bounds, cut into cells — an integer column whose bounds are at most 100 apart gets one cell
per value (ages, years: the synthetic values are real values), any other number ``SYNTHETIC_BINS`` = 16 equal
bins of its bounds (``bins`` overrides), its synthetic values drawn uniformly within the bin (rounded down for
integers). Values outside the domain are handled as the histograms do: numbers are clamped into the end cells,
a category outside its declared values (or a NULL) puts its row nowhere — the row is left out of every
measurement, which is a function of that row alone, so one unit still moves each marginal by at most its
contribution bound.

The measurements (MST, privdb.publish.mst, the default; or AIM, privdb.publish.aim) use privdb's exact
samplers at ρ from (ε, δ) (privdb.accounting.zcdp); ``mbi`` (private-pgm, the ``synthetic`` extra) fits the
graphical model to the noisy marginals and samples rows from it — post-processing. docs/proofs/synthetic.md.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.accounting import zcdp
from privdb.catalog.metadata import TableMeta
from privdb.errors import InvalidParameter, install_hint
from privdb.mechanisms import RandomSource
from privdb.mechanisms.randomness import default_source
from privdb.publish.aim import aim
from privdb.publish.histogram import Domain, _bounded, _column, domain_of
from privdb.publish.mst import fit_model, mst_measurements

__all__ = [
    "METHODS",
    "SYNTHETIC_BINS",
    "SyntheticRelease",
    "check_synthetic",
    "encode",
    "load_mbi",
    "release_synthetic",
]

SYNTHETIC_BINS = 16
METHODS = ("mst", "aim")  # McKenna et al. 2021 (the default) and 2022
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


@dataclass
class SyntheticRelease:
    """The synthetic rows, their encoding (cell indices per column), and what was measured."""

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


def domains_for(table: TableMeta, columns: Sequence[str] | None, bins: dict[str, int] | None) -> list[Domain]:
    """The public domain of each released column (all non-identifier columns when ``columns`` is empty)."""
    bins = dict(bins or {})
    names = list(columns) if columns else [
        c.name for c in table.columns.values() if not (c.identifier or c.private_id)
    ]  # fmt: skip
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
        wide = meta.numeric and not meta.values and not (
            meta.type == "int" and meta.lower is not None and meta.upper is not None
            and meta.upper - meta.lower <= 100
        )  # fmt: skip
        out.append(domain_of(meta, count if count is not None else (SYNTHETIC_BINS if wide else None)))
    if len(out) < 1:
        raise InvalidParameter("no column to release: name them with --columns a,b,c")
    return out


def encode(frame: pd.DataFrame, domains: Sequence[Domain]) -> NDArray[np.int64]:
    """One row per row of ``frame`` whose every value has a cell (the others are counted nowhere)."""
    if not len(frame):
        return np.zeros((0, len(domains)), dtype=np.int64)
    codes = np.stack([d.index(frame[d.column]) for d in domains], axis=1)
    return np.asarray(codes[(codes >= 0).all(axis=1)], dtype=np.int64)


def decode(codes: NDArray[np.int64], domains: Sequence[Domain], table: TableMeta, seed: int) -> pd.DataFrame:
    """Synthetic cells back to values: labels, or a uniform value inside a number's bin (post-processing)."""
    draws = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for k, d in enumerate(domains):
        cells = codes[:, k]
        binned = d.lower is not None and d.upper is not None and isinstance(d.labels[0], str)
        if not binned:
            out[d.column] = np.asarray(d.labels, dtype=object)[cells] if len(cells) else []
            continue
        assert d.lower is not None and d.upper is not None
        width = (d.upper - d.lower) / len(d.labels)
        values = d.lower + (cells + draws.random(len(cells))) * width
        integer = _column(table, d.column).type == "int"
        out[d.column] = np.clip(np.floor(values), d.lower, d.upper).astype(np.int64) if integer else values
    return pd.DataFrame(out)


def check_synthetic(
    table: TableMeta,
    *,
    epsilon: float,
    delta: float,
    rows: int,
    method: str = "mst",
    columns: Sequence[str] | None = None,
    bins: dict[str, int] | None = None,
) -> list[Domain]:
    """Every check on the parameters and the public domains, and that ``mbi`` is there: all before any
    data is read (a refusal spends nothing). The released columns' domains."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise InvalidParameter(f"--epsilon must be > 0 and finite, got {epsilon:g}")
    if not 0 < delta < 1:
        raise InvalidParameter(f"--delta must be in (0, 1) (zCDP measurements), e.g. 1e-9; got {delta:g}")
    if not 1 <= rows <= MAX_ROWS:
        raise InvalidParameter(f"--rows must be between 1 and {MAX_ROWS:,}, got {rows:,}")
    if method not in METHODS:
        raise InvalidParameter(f"--method must be one of {', '.join(METHODS)}, not {method!r}")
    domains = domains_for(table, columns, bins)
    load_mbi()
    return domains


def release_synthetic(
    frame: pd.DataFrame,
    table: TableMeta,
    *,
    epsilon: float,
    delta: float,
    rows: int,
    method: str = "mst",
    columns: Sequence[str] | None = None,
    bins: dict[str, int] | None = None,
    rng: RandomSource | None = None,
    iterations: int = _ITERATIONS,
) -> SyntheticRelease:
    """``rows`` synthetic rows of ``frame`` at (ε, δ)-DP (ρ-zCDP measurements, ρ from (ε, δ))."""
    domains = check_synthetic(
        table, epsilon=epsilon, delta=delta, rows=rows, method=method, columns=columns, bins=bins
    )
    mbi = load_mbi()
    names = [d.column for d in domains]
    sizes = [len(d.labels) for d in domains]
    source = rng or default_source()
    bounded, most = _bounded(frame, table, source)
    sensitivity = 2 * most if table.neighbouring == "substitute" else most
    codes = encode(bounded, domains)
    rho = zcdp.rho_from_epsilon(epsilon, delta)
    rounds = 0
    if method == "aim":
        measured, model, rounds = aim(mbi, codes, names, sizes, rho, sensitivity, delta, source, iterations)
    else:
        measured = mst_measurements(codes, names, sizes, rho, sensitivity, delta, source)
        model = fit_model(mbi, mbi.Domain(tuple(names), tuple(sizes)), measured, iterations)
    seed = int(source.words(1)[0] % (2**32))  # sampling is post-processing: its randomness is not secret
    state = np.random.get_state()
    try:
        np.random.seed(seed)
        sampled = model.synthetic_data(rows)
    finally:
        np.random.set_state(state)
    synthetic = np.stack([np.asarray(sampled.data[n], dtype=np.int64) for n in names], axis=1)
    out = decode(synthetic, domains, table, seed)
    cliques = [clique for clique, _, _ in measured]
    return SyntheticRelease(
        out, synthetic, names, domains, method, epsilon, delta, rho, sensitivity, cliques, rounds
    )
