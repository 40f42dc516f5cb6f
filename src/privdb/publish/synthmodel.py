"""A released synthesiser, saved and sampled again (issue 31): ``--save-model M`` and ``privdb sample M``.

The model is what the release already made public, nothing more: the public domains (possibly with the DP
bounds found and the MST compression's merged cells), and the distribution fitted to the noisy measurements
as the marginals of a junction tree's cliques (MST, AIM) or as one table over the whole domain (MWEM). Rows
drawn from it are post-processing of the release: they cost nothing and carry the release's guarantee.

**The file** M is a folder of two files (docs/publish.md, "Saved models"):

- ``model.json``: ``format`` ("privdb-synthetic-model"), ``version`` (1), ``method``, ``epsilon``,
  ``delta``, ``rho``, ``table``, ``ledger`` ({"id", "time"} of the charge that paid), ``created``,
  ``bounds`` (the DP bounds found, {column: [lower, upper]}),
  ``columns`` (in order: ``name``, ``type``, ``labels``, ``lower``, ``upper``, ``null``, ``groups``: the
  original cells of each compressed cell), ``cliques`` (column names, in sampling order) and ``measured``
  (the cliques measured, for the record). Any other or missing field, and anything inconsistent, is
  refused (privdb.publish.modelfile).
- ``arrays.npz``: ``clique_0`` … one probability table per clique (axes in the clique's order, sizes the
  compressed cells); loaded with ``allow_pickle=False``.

Sampling: the cliques are visited in an order where each one's columns already drawn (its separator) lie
in one earlier clique (a junction tree's breadth-first order), so drawing each clique's new columns from
its table conditioned on the separator draws exactly from the model; uniforms come from privdb's CSPRNG
(privdb.mechanisms.randomness) unless a seed is given (reproducible; the seed is not secret either).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.errors import InvalidParameter
from privdb.mechanisms import RandomSource
from privdb.mechanisms.randomness import default_source
from privdb.private_files import open_private, private_dir
from privdb.publish.histogram import Domain
from privdb.publish.modelfile import FORMAT, VERSION, read_model

__all__ = ["FORMAT", "SeededSource", "SyntheticModel", "check_model_path", "decode", "load_model", "uniforms"]

MAX_SAMPLE = 100_000_000


class SeededSource:
    """Reproducible uniform words from a seed (``privdb sample --seed``): sampling a model is
    post-processing, so its randomness need not be secret, only independent of the data."""

    def __init__(self, seed: int) -> None:
        self._gen = np.random.Generator(np.random.PCG64(seed))

    def words(self, n: int) -> NDArray[np.uint64]:
        return self._gen.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)


def uniforms(rng: RandomSource, n: int) -> NDArray[np.float64]:
    """``n`` uniforms in [0, 1) on a 2⁻⁵³ grid, from 64-bit words."""
    return (np.asarray(rng.words(n), dtype=np.uint64) >> np.uint64(11)).astype(np.float64) * 2.0**-53


@dataclass
class SyntheticModel:
    """A fitted synthesiser over public domains (module doc)."""

    domains: list[Domain]
    types: list[str]
    cliques: list[tuple[str, ...]]
    tables: list[NDArray[np.float64]]
    groups: list[list[list[int]]]  # per column, the original cells of each (compressed) cell
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        return [d.column for d in self.domains]

    def sample_codes(self, rows: int, rng: RandomSource) -> NDArray[np.int64]:
        """``rows`` rows of original cell indices, drawn i.i.d. from the model."""
        where = {c: k for k, c in enumerate(self.columns)}
        codes = np.zeros((rows, len(self.columns)), dtype=np.int64)
        drawn: set[str] = set()
        for clique, table in zip(self.cliques, self.tables, strict=True):
            sep = [a for a in clique if a in drawn]
            new = [a for a in clique if a not in drawn]
            if not new:
                continue
            order = [clique.index(a) for a in sep + new]
            p = np.transpose(table, order).reshape(math.prod(table.shape[clique.index(a)] for a in sep), -1)
            new_shape = tuple(table.shape[clique.index(a)] for a in new)
            sep_shape = tuple(table.shape[clique.index(a)] for a in sep)
            keys = (
                np.ravel_multi_index(tuple(codes[:, where[a]] for a in sep), sep_shape)
                if sep
                else np.zeros(rows, dtype=np.int64)
            )
            flat = np.zeros(rows, dtype=np.int64)
            u = uniforms(rng, rows)
            for key in np.unique(keys):
                rowsel = keys == key
                weights = np.maximum(p[key], 0.0)
                total = weights.sum()
                cdf = np.cumsum(weights / total if total > 0 else np.full(len(weights), 1 / len(weights)))
                flat[rowsel] = np.minimum(np.searchsorted(cdf, u[rowsel], side="right"), len(weights) - 1)
            for a, cells in zip(new, np.unravel_index(flat, new_shape), strict=True):
                codes[:, where[a]] = cells
            drawn.update(new)
        return self._expand(codes, rng)

    def _expand(self, codes: NDArray[np.int64], rng: RandomSource) -> NDArray[np.int64]:
        """Compressed cells back to original ones: uniformly among a merged cell's members."""
        out = codes.copy()
        for k, groups in enumerate(self.groups):
            if all(len(g) == 1 for g in groups):
                out[:, k] = np.asarray([g[0] for g in groups], dtype=np.int64)[codes[:, k]]
                continue
            u = uniforms(rng, len(codes))
            for cell, members in enumerate(groups):
                sel = codes[:, k] == cell
                pick = np.minimum((u[sel] * len(members)).astype(np.int64), len(members) - 1)
                out[sel, k] = np.asarray(members, dtype=np.int64)[pick]
        return out

    def sample(self, rows: int, rng: RandomSource | None = None) -> pd.DataFrame:
        """``rows`` synthetic rows (post-processing: no charge). CSPRNG unless ``rng`` is given."""
        if not 1 <= rows <= MAX_SAMPLE:
            raise InvalidParameter(f"--rows must be between 1 and {MAX_SAMPLE:,}, got {rows:,}")
        source = rng or default_source()
        return decode(self.sample_codes(rows, source), self.domains, self.types, source)

    def save(self, path: Path) -> None:
        """Write the folder ``path`` (model.json and arrays.npz; module doc), owner-only: a new folder 0700,
        its files 0600 (privdb.private_files)."""
        private_dir(path)
        columns = [
            {"name": d.column, "type": t, "labels": list(d.labels), "lower": d.lower, "upper": d.upper,
             "null": d.null, "groups": g}
            for d, t, g in zip(self.domains, self.types, self.groups, strict=True)
        ]  # fmt: skip
        body = {**self.info, "format": FORMAT, "version": VERSION, "columns": columns,
                "cliques": [list(c) for c in self.cliques]}  # fmt: skip
        with open_private(path / "model.json", encoding="utf-8") as out:
            out.write(json.dumps(body, indent=1, default=_plain) + "\n")
        arrays: dict[str, Any] = {f"clique_{i}": t for i, t in enumerate(self.tables)}
        with open_private(path / "arrays.npz", "wb") as binary:
            np.savez_compressed(binary, **arrays)


def check_model_path(path: Path) -> None:
    """Refuse, before anything is spent, a model folder that cannot be written or would overwrite a file."""
    if not path.parent.is_dir():
        raise InvalidParameter(f"--save-model {str(path)!r}: folder {str(path.parent)!r} does not exist")
    if path.exists() and not path.is_dir():
        raise InvalidParameter(f"--save-model {str(path)!r} is a file; give a new folder name")
    if path.is_dir() and any(path.iterdir()) and not (path / "model.json").is_file():
        raise InvalidParameter(
            f"--save-model {str(path)!r} is a folder of other files; give a new folder name"
        )


def _plain(value: Any) -> Any:
    if isinstance(value, np.integer | np.floating | np.bool_):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")


def load_model(path: str | Path) -> SyntheticModel:
    """The model saved at ``path``, checked field by field: anything unknown, missing or inconsistent is
    refused with the field's name and its column or clique (privdb.publish.modelfile; never unpickled: JSON
    and plain arrays only)."""
    parts = read_model(Path(path))
    return SyntheticModel(parts.domains, parts.types, parts.cliques, parts.tables, parts.groups, parts.info)


def decode(
    codes: NDArray[np.int64], domains: Sequence[Domain], types: Sequence[str], rng: RandomSource
) -> pd.DataFrame:
    """Cells back to values: a label, NULL, or a uniform value inside a number's bin (rounded down for an
    integer column). Post-processing."""
    out: dict[str, Any] = {}
    for k, d in enumerate(domains):
        cells = codes[:, k]
        real = len(d.labels) - d.null
        binned = d.lower is not None and d.upper is not None and isinstance(d.labels[0], str)
        if not binned:
            out[d.column] = np.asarray(d.labels, dtype=object)[cells] if len(cells) else []
            continue
        assert d.lower is not None and d.upper is not None
        width = (d.upper - d.lower) / real
        values = d.lower + (np.minimum(cells, real - 1) + uniforms(rng, len(cells))) * width
        column: Any = np.clip(np.floor(values), d.lower, d.upper) if types[k] == "int" else values
        if d.null and (cells == real).any():
            column = pd.array(column.astype(np.int64) if types[k] == "int" else column,
                              dtype="Int64" if types[k] == "int" else "Float64")  # fmt: skip
            column[cells == real] = pd.NA
        elif types[k] == "int":
            column = column.astype(np.int64)
        out[d.column] = column
    return pd.DataFrame(out)
