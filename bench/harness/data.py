"""The benchmarks' data, written once: the census table in one privdb database per privacy setting, the
row-level variant of its metadata, and UCI Adult (shipped in data/adult) tiled to any size."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.harness import ROOT
from bench.harness.query import ANALYST

if TYPE_CHECKING:
    import pandas as pd

ADULT = ROOT / "data" / "adult"
QI = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]
SETTINGS = {"row": "row-level", "user": "user-level (pid, ≤ 1)"}  # privacy settings of the census table


def row_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    """``METADATA`` without a privacy unit: every row is one person."""
    out = copy.deepcopy(meta)
    out.pop("privacy_unit", None)
    out["columns"]["pid"].pop("private_id", None)
    return out


def census_metadata() -> dict[str, dict[str, Any]]:
    """The census table's metadata per privacy setting: row-level, and user-level (pid, at most one row)."""
    from privdb.data.census import METADATA

    return {"row": row_metadata(METADATA), "user": copy.deepcopy(METADATA)}


def setting_databases(
    work: Path,
    tables: dict[str, pd.DataFrame],
    metadata: dict[str, dict[str, Any]],
    *,
    epsilon: float = 1e6,
) -> dict[str, str]:
    """One database directory ``work/<setting>`` per privacy setting (stored answers cannot cross over),
    each with ``tables`` under that setting's metadata and the analyst granted ``epsilon`` (δ 1e-3); closed
    again. Returns the analyst's token per setting."""
    from privdb.database import Database

    tokens = {}
    for setting, meta in metadata.items():
        with Database(work / setting) as db:
            for name, frame in tables.items():
                db.backend.load_frame(name, frame)
                db.set_metadata(name, meta)
            tokens[setting] = db.grant(ANALYST, epsilon=epsilon, delta=1e-3)
    return tokens


def load_adult(directory: Path = ADULT) -> pd.DataFrame:
    """UCI Adult (30,162 records, ``;``-separated)."""
    import pandas as pd

    return pd.read_csv(directory / "adult.csv", sep=";")


def replicate_adult(adult: pd.DataFrame, n: int, seed: int, *, harder: bool = False) -> pd.DataFrame:
    """Adult tiled to ``n`` records, age + U{-2..2} clipped to 17..90; ``harder``: for half the records one
    categorical quasi-identifier (uniformly chosen) redrawn from its marginal in Adult."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    big = adult.iloc[np.resize(np.arange(len(adult)), n)].reset_index(drop=True)
    big["age"] = np.clip(big["age"].to_numpy() + rng.integers(-2, 3, n), 17, 90)
    if harder:
        cats = [c for c in QI if c != "age"]
        rows = rng.choice(n, n // 2, replace=False)
        which = rng.integers(0, len(cats), len(rows))
        for j, c in enumerate(cats):
            picked = rows[which == j]
            values = big[c].to_numpy(dtype=object).copy()
            values[picked] = adult[c].to_numpy(dtype=object)[rng.integers(0, len(adult), len(picked))]
            big[c] = pd.Series(values, index=big.index).astype(adult[c].dtype)
    return big
