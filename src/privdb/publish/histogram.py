"""DP histograms and marginals over public domains (issue 17): ``privdb publish histogram``.

The owner names the marginals to release (1-, 2- or 3-way: ``[("age",), ("sex", "state")]``) or one numeric
column to release as a hierarchical histogram (Hay et al. 2010: every level of a b-ary tree of bins measured,
then made consistent). Every column needs a public domain: a category's declared ``values`` (values outside it
are counted nowhere), a number's ``lower``/``upper`` cut into ``bins`` equal bins (values outside are clamped
into the end bins; an integer column with at most 1,000 values and no ``bins`` gets one cell per value).
Both are functions of public metadata, so they cost nothing.

One unit (a row, or a privacy unit's rows cut to ``max_contributions`` m, chosen at random) changes each
measurement by at most m in L1 (2m under ``substitute``); ε is split evenly among the measurements
(privdb.publish.marginals). The released counts are consistent and non-negative, each cell with a 95%
interval. One 1-D histogram can instead be bucketed: NoiseFirst (noisy bins merged afterwards) or
StructureFirst (buckets chosen privately on the true counts, then noisy bucket totals). The utility
report's total-variation distances compare with the private data: they are for the owner, not for
publication. docs/proofs/histograms.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import InvalidParameter
from privdb.mechanisms import RandomSource
from privdb.mechanisms.randomness import default_source
from privdb.publish.marginals import Measurement, consistent, measure, mechanisms
from privdb.publish.noisefirst import noise_first
from privdb.publish.structurefirst import check_structure_first, structure_first

__all__ = ["Domain", "HistogramRelease", "domain_of", "release_histograms"]


@dataclass(frozen=True)
class Domain:
    """A column's public cells: labels, and how a value maps to a cell index (−1: counted nowhere). With
    ``null``, the last label is ``None``: a NULL (or NaN) is a value of its own, in that last cell."""

    column: str
    labels: tuple[Any, ...]
    lower: float | None = None  # numeric: equal bins of [lower, upper]
    upper: float | None = None
    null: bool = False

    def index(self, values: pd.Series) -> np.ndarray:
        n = len(self.labels) - self.null
        missing = n if self.null else -1
        if self.lower is not None and self.upper is not None:
            x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
            width = (self.upper - self.lower) / n
            cell = np.floor((np.clip(x, self.lower, self.upper) - self.lower) / width)
            cell = np.clip(np.nan_to_num(cell, nan=-1.0), -1, n - 1)
            if self.null:
                cell[np.asarray(values.isna())] = missing  # NULL: its own cell (else counted nowhere)
            return np.asarray(cell, dtype=np.int64)
        lookup = {label: i for i, label in enumerate(self.labels[:n])}
        nulls = values.isna().to_numpy()
        return np.array(
            [
                missing if isnull else lookup.get(v, -1)
                for v, isnull in zip(values.tolist(), nulls, strict=True)
            ],
            dtype=np.int64,
        )

    def with_null(self) -> Domain:
        """The same cells and one more, last, for NULL."""
        return self if self.null else Domain(self.column, (*self.labels, None), self.lower, self.upper, True)


def domain_of(column: ColumnMeta, bins: int | None = None) -> Domain:
    """The public domain of a column from its metadata, or a clear refusal saying what to declare."""
    if column.values:
        return Domain(column.name, tuple(column.values))
    if column.numeric and column.lower is not None and column.upper is not None:
        count = bins or 10
        if not 1 <= count <= 100_000:
            raise InvalidParameter(f"--bins {column.name}={count}: give between 1 and 100,000 bins")
        if column.type == "int" and bins is None and column.upper - column.lower < 1_000:  # one cell a value
            values = tuple(int(column.lower) + i for i in range(int(column.upper - column.lower) + 1))
            return Domain(column.name, values, column.lower - 0.5, column.upper + 0.5)
        edges = np.linspace(column.lower, column.upper, count + 1)
        ranges = tuple(f"{edges[i]:g}-{edges[i + 1]:g}" for i in range(count))
        return Domain(column.name, ranges, column.lower, column.upper)
    listed = None if column.numeric else column.public_values(100_000)
    if listed:
        return Domain(column.name, tuple(listed))
    raise InvalidParameter(
        f"column {column.name!r} has no public domain: declare its values (category) or lower and upper "
        "(numbers) in the metadata; privdb never takes a domain from the data"
    )


@dataclass
class HistogramRelease:
    """The released marginals: one frame per marginal (cells, count, ci95_low, ci95_high)."""

    marginals: list[tuple[tuple[str, ...], pd.DataFrame]]
    epsilon: float
    delta: float
    noise: str
    sensitivity: int
    hierarchical: dict[str, Any] | None = None
    utility: dict[str, float] = field(default_factory=dict)
    structure: dict[str, Any] | None = None  # StructureFirst: buckets, boundaries, ε₁ and ε₂ (public)

    def to_frame(self) -> pd.DataFrame:
        """Every marginal in one long frame: which marginal, its cells, count and interval."""
        parts = []
        for columns, frame in self.marginals:
            part = frame.copy()
            part.insert(0, "marginal", "|".join(columns))
            parts.append(part)
        return pd.concat(parts, ignore_index=True)


def release_histograms(
    frame: pd.DataFrame,
    table: TableMeta,
    *,
    marginals: Sequence[Sequence[str]] = (),
    hierarchical: str | None = None,
    branching: int = 4,
    bins: dict[str, int] | None = None,
    epsilon: float,
    delta: float = 0.0,
    noise: str = "laplace",
    method: str = "consistent",
    buckets: int | None = None,
    count_bound: int | None = None,
    structure_share: float = 0.5,
    rng: RandomSource | None = None,
) -> HistogramRelease:
    """Release ``marginals`` (or the ``hierarchical`` histogram of one numeric column) of ``frame``.
    ``method``: ``consistent`` (least squares, any marginals), ``noisefirst`` (one 1-D histogram whose
    noisy bins are merged into buckets: Xu et al. 2012, privdb.publish.noisefirst) or ``structurefirst``
    (one numeric column's bins grouped into ``buckets`` chosen privately on the true counts clipped at
    ``count_bound``, then noisy bucket totals: privdb.publish.structurefirst)."""
    if method not in ("consistent", "noisefirst", "structurefirst"):
        raise InvalidParameter(f"--method is consistent, noisefirst or structurefirst, not {method!r}")
    one_d = hierarchical is None and len(marginals) == 1 and len(marginals[0]) == 1
    if method in ("noisefirst", "structurefirst") and not one_d:
        raise InvalidParameter(f"--method {method} releases one 1-D histogram: give one --columns COLUMN")
    if buckets is not None and method != "structurefirst":
        raise InvalidParameter("--buckets is StructureFirst's: add --method structurefirst")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise InvalidParameter(f"--epsilon must be > 0 and finite, got {epsilon:g}")
    if not 0 <= delta < 1:
        raise InvalidParameter(f"--delta must be in [0, 1), got {delta:g}")
    if bool(marginals) == (hierarchical is not None):
        raise InvalidParameter("give the marginals to release (--columns a,b) or one --hierarchical column")
    wanted = [tuple(m) for m in marginals] if marginals else [(str(hierarchical),)]
    for m in wanted:
        if not 1 <= len(m) <= 3 or len(set(m)) != len(m):
            raise InvalidParameter(f"a marginal has 1 to 3 different columns, not {'|'.join(m)!r}")
    names = list(dict.fromkeys(c for m in wanted for c in m))
    domains = {c: domain_of(_column(table, c), (bins or {}).get(c)) for c in names}
    if method == "structurefirst":
        chosen = _column(table, names[0])
        if not chosen.numeric or domains[names[0]].lower is None:
            raise InvalidParameter(
                f"--method structurefirst needs an ordered numeric column with bounds; {chosen.name!r} is a "
                f"{chosen.type}: use --method consistent or noisefirst for it"
            )
        if noise != "laplace":
            raise InvalidParameter("--method structurefirst uses laplace (geometric) noise: drop --noise")
        count_bound = count_bound if count_bound is not None else table.rows
        check_structure_first(len(domains[names[0]].labels), buckets, count_bound, structure_share)
    for c in bins or {}:
        if c not in domains:
            raise InvalidParameter(
                f"--bins names {c!r}, which is not released; bins apply to released columns"
            )
    source = rng or default_source()
    rows, most = _bounded(frame, table, source)
    sensitivity = 2 * most if table.neighbouring == "substitute" else most
    cells = np.stack([domains[c].index(rows[c]) for c in names], axis=1) if len(rows) else np.zeros((0, 0))
    shape = tuple(len(domains[c].labels) for c in names)
    levels: list[int] = []
    if hierarchical is not None:
        if domains[names[0]].lower is None or not 2 <= branching <= 64:
            raise InvalidParameter("--hierarchical needs a numeric column with bounds, and --branching 2..64")
        height = max(1, math.ceil(math.log(shape[0], branching))) if shape[0] > 1 else 1
        shape = (branching**height,)
        levels = [branching**h for h in range(height + 1)]
        measurements = [Measurement((0,), block) for block in levels]
    else:
        measurements = [Measurement(tuple(sorted(names.index(c) for c in m))) for m in wanted]
    table_counts = np.zeros(shape)
    if len(rows):
        keep = (cells >= 0).all(axis=1)
        np.add.at(table_counts, tuple(cells[keep].T), 1.0)
    if method == "structurefirst":
        return _structure_first(table_counts, domains[names[0]], sensitivity, epsilon, delta, buckets,
                                count_bound, structure_share, source)  # fmt: skip
    mechs = mechanisms(len(measurements), epsilon, delta, sensitivity, noise, source)
    measured = measure(table_counts, measurements, mechs)
    if method == "noisefirst":
        (only,) = measured
        merged, _ = noise_first(only.noisy, only.mechanism.variance())
        half = only.mechanism.half_width(0.05)
        answers = [
            (np.maximum(merged, 0.0), np.maximum(only.noisy - half, 0.0), np.maximum(only.noisy + half, 0.0))
        ]
    else:
        answers = consistent(measured, shape)
    out: list[tuple[tuple[str, ...], pd.DataFrame]] = []
    utility: dict[str, float] = {}
    if hierarchical is not None:
        real = len(domains[names[0]].labels)
        point, low, high = answers[0]
        frame_out = pd.DataFrame({names[0]: list(domains[names[0]].labels), "count": point[:real],
                                  "ci95_low": low[:real], "ci95_high": high[:real]})  # fmt: skip
        out.append(((names[0],), frame_out))
        utility[names[0]] = _tv(point[:real], measurements[0].apply(table_counts)[:real])
    else:
        for m, measurement, (point, low, high) in zip(wanted, measurements, answers, strict=True):
            axes = measurement.axes
            order = [names[a] for a in axes]
            index = pd.MultiIndex.from_product([list(domains[c].labels) for c in order], names=order)
            frame_out = index.to_frame(index=False)
            frame_out["count"], frame_out["ci95_low"], frame_out["ci95_high"] = (
                point.reshape(-1), low.reshape(-1), high.reshape(-1),
            )  # fmt: skip
            out.append((tuple(order), frame_out[[*m, "count", "ci95_low", "ci95_high"]]))
            utility["|".join(m)] = _tv(point, measurement.apply(table_counts))
    described = None
    if hierarchical is not None:
        described = {"column": names[0], "branching": branching, "levels": len(levels),
                     "epsilon_per_level": epsilon / len(levels)}  # fmt: skip
    return HistogramRelease(out, epsilon, delta, noise, sensitivity, described, utility)


def _structure_first(
    counts: np.ndarray,
    domain: Domain,
    sensitivity: int,
    epsilon: float,
    delta: float,
    buckets: int | None,
    count_bound: int | None,
    share: float,
    source: RandomSource,
) -> HistogramRelease:
    """A StructureFirst release of one column's bins, as a HistogramRelease with its bucket column."""
    assert buckets is not None and count_bound is not None  # checked by check_structure_first
    done = structure_first(counts, buckets, epsilon=epsilon, count_bound=count_bound, sensitivity=sensitivity,
                           share=share, rng=source)  # fmt: skip
    frame = pd.DataFrame({domain.column: list(domain.labels), "count": done.counts, "ci95_low": done.low,
                          "ci95_high": done.high, "bucket": done.bucket_of_bins()})  # fmt: skip
    structure = {
        "column": domain.column, "buckets": buckets, "bounds": list(done.bounds), "count_bound": count_bound,
        "epsilon_structure": done.epsilon_structure, "epsilon_counts": done.epsilon_counts,
        "score_sensitivity": done.score_sensitivity,
        "interval": "each bin's interval covers its bucket's mean count (noise only, not the averaging bias)",
    }  # fmt: skip
    utility = {domain.column: _tv(done.counts, counts)}
    marginal: list[tuple[tuple[str, ...], pd.DataFrame]] = [((domain.column,), frame)]
    return HistogramRelease(marginal, epsilon, delta, "laplace", sensitivity, None, utility, structure)


def _column(table: TableMeta, name: str) -> ColumnMeta:
    for column in table.columns.values():
        if column.name.lower() == name.lower():
            if column.identifier or column.private_id:
                raise InvalidParameter(f"column {column.name!r} is an identifier: it is never released")
            return column
    raise InvalidParameter(f"no column {name!r} in {table.name!r}; its columns: {', '.join(table.columns)}")


def _bounded(frame: pd.DataFrame, table: TableMeta, source: RandomSource) -> tuple[pd.DataFrame, int]:
    """Each privacy unit's rows cut to m = max_contributions, chosen uniformly (secure randomness)."""
    if table.privacy_unit is None:
        return frame, 1
    m = int(table.max_contributions)
    keys = np.asarray(source.words(len(frame)), dtype=np.uint64)
    ranked = frame.assign(__key=keys).sort_values("__key")
    kept = ranked.groupby(table.privacy_unit, sort=False, dropna=False).head(m)
    return kept.drop(columns="__key"), m


def _tv(released: np.ndarray, truth: np.ndarray) -> float:
    """Total-variation distance between the two marginals as distributions (owner's utility report)."""
    p = np.asarray(released, dtype=np.float64).reshape(-1)
    q = np.asarray(truth, dtype=np.float64).reshape(-1)
    if p.sum() <= 0 or q.sum() <= 0:
        return 1.0 if p.sum() != q.sum() else 0.0
    return float(0.5 * np.abs(p / p.sum() - q / q.sum()).sum())
