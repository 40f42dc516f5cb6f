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


def replicate_adult(
    adult: pd.DataFrame, n: int, seed: int, *, harder: bool = False, hardest: bool = False
) -> pd.DataFrame:
    """Adult tiled to ``n`` records, age + U{-2..2} clipped to 17..90; ``harder``: for half the records one
    categorical quasi-identifier (uniformly chosen) redrawn from its marginal in Adult; ``hardest``: the
    harder table with more distinct, skewed values per quasi-identifier (``spread_adult``)."""
    if hardest:
        return spread_adult(replicate_adult(adult, n, seed, harder=True), seed)
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


# ``spread_adult``: how many variants of each value of a categorical quasi-identifier (issue 40)
SPREAD = {
    "workclass": 12,
    "education": 12,
    "marital-status": 12,
    "occupation": 12,
    "race": 12,
    "sex": 3,
    "native-country": 12,
}


def spread_adult(big: pd.DataFrame, seed: int, zipf: float = 1.2) -> pd.DataFrame:
    """More distinct values per quasi-identifier, skewed (issue 40's hardest table): age in tenths of a year
    (age + U{0..9}/10, ten times the values), and each value ``v`` of a categorical quasi-identifier ``c``
    split into ``v~1`` .. ``v~m`` (``m = SPREAD[c]``) drawn from a Zipf law (weight ∝ 1/rank^zipf), so a
    column has up to ``m`` times Adult's values, a few common and many rare. Seeded: the same table every
    time."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng([seed, 40])
    n = len(big)
    out = big.copy()
    out["age"] = np.round(big["age"].to_numpy() + rng.integers(0, 10, n) / 10, 1)
    for c, m in SPREAD.items():
        weights = 1.0 / np.arange(1, m + 1) ** zipf
        rank = rng.choice(m, n, p=weights / weights.sum()) + 1
        out[c] = pd.Series(big[c].astype(str).to_numpy(dtype=object) + "~", index=big.index) + pd.Series(
            rank, index=big.index
        ).astype(str)
    return out
