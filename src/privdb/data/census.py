"""A census-like table generated on the spot (no download): people with age, sex, state, education,
income, and a few people with several rows (for user-level privacy).

The distributions are loosely shaped like US census microdata (PUMS); the point is realistic sizes and
skew for demos, tests and benchmarks, not realism of any single figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["EDUCATION", "METADATA", "STATES", "generate"]

STATES = [
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS", "KY",
    "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND",
    "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY",
]  # fmt: skip
EDUCATION = ["none", "primary", "secondary", "bachelor", "master", "doctorate"]
_EDU_P = [0.05, 0.15, 0.42, 0.23, 0.12, 0.03]
_EDU_INCOME = [18_000, 24_000, 38_000, 62_000, 78_000, 95_000]

METADATA: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": 1,
    "max_groups": 1,
    "columns": {
        "pid": {"type": "int", "private_id": True},
        "age": {"type": "int", "lower": 0, "upper": 100},
        "income": {"type": "float", "lower": 0, "upper": 500_000},
        "sex": {"type": "category", "values": ["F", "M"]},
        "state": {"type": "category", "values": STATES},
        "education": {"type": "category", "values": EDUCATION},
    },
    "quasi_identifiers": ["age", "sex", "state"],
}


def generate(n: int = 100_000, *, seed: int = 2026, repeat_share: float = 0.0) -> pd.DataFrame:
    """``n`` people; with ``repeat_share`` > 0 that share of them appear in 2–5 rows (same pid)."""
    rng = np.random.default_rng(seed)
    state_w = rng.gamma(2.0, 1.0, len(STATES))
    age = np.clip(rng.normal(42, 18, n), 0, 99).astype(np.int64)
    edu = rng.choice(len(EDUCATION), size=n, p=_EDU_P)
    base = np.array(_EDU_INCOME)[edu] * np.exp(rng.normal(0, 0.6, n))
    income = np.where(age < 16, 0.0, np.round(base * np.clip(age / 45, 0.3, 1.2), 2))
    frame = pd.DataFrame(
        {
            "pid": np.arange(1, n + 1, dtype=np.int64),
            "age": age,
            "income": income,
            "sex": rng.choice(["F", "M"], size=n),
            "state": rng.choice(STATES, size=n, p=state_w / state_w.sum()),
            "education": np.array(EDUCATION)[edu],
        }
    )
    if repeat_share > 0:
        repeaters = frame.sample(frac=repeat_share, random_state=seed)
        extra = repeaters.loc[repeaters.index.repeat(rng.integers(1, 5, len(repeaters)))]
        frame = pd.concat([frame, extra], ignore_index=True)
    return frame
