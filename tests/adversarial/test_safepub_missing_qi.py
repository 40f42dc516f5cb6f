"""SafePub on two neighbours that differ by one record whose quasi-identifier is missing (NULL or NaN).

A missing value is generalised like a value the public hierarchy does not list: ``*`` at every level. The
release must run on both neighbours with the same outcome (no error, the same columns; through the owner's
JSON request the same spend), and the missing record, when kept, may only appear as ``*`` — never as a
made-up value (the lattice once gave it the column's last distinct value) and never as an error that says
the private table holds a missing value (the lattice's refusal for ``privdb anonymize``, which ran after
the charge was reserved)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privdb
from conftest import seeded
from privdb.anonymize import IntervalHierarchy, TaxonomyHierarchy
from privdb.anonymize.hierarchy import Hierarchy
from privdb.publish import safepub
from publishfixtures import spent

JOBS = [["engineer", "professional", "*"], ["lawyer", "professional", "*"],
        ["writer", "artist", "*"], ["dancer", "artist", "*"]]  # fmt: skip
HIER: dict[str, Hierarchy] = {
    "job": TaxonomyHierarchy("job", JOBS),
    "age": IntervalHierarchy("age", [10, 20], origin=20),
}
PUBLIC = {  # every label the public hierarchies can give, '*' included
    "job": {v for row in JOBS for v in row},
    "age": {lab for lv in range(4) for lab in HIER["age"].labels(np.arange(20, 80), lv)},
}


def _neighbours(column: str, missing: object) -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: 1,000 records, 200 of them with a job the hierarchy does not list (so '*' forms a large class);
    D′ = D plus one record whose ``column`` is missing."""
    rng = np.random.default_rng(5)
    jobs = [j for j in ("engineer", "lawyer", "writer", "dancer", "unlisted") for _ in range(200)]
    d = pd.DataFrame({"job": jobs, "age": rng.integers(20, 80, len(jobs)).astype(np.float64)})
    extra = {"job": "engineer", "age": 40.0, column: missing}
    return d, pd.concat([d, pd.DataFrame([extra])], ignore_index=True)


@pytest.mark.parametrize(("column", "missing"), [("job", None), ("job", np.nan), ("age", np.nan)])
@pytest.mark.parametrize(
    "how",
    [{"search": "walk"}, {"search": "lattice"}, {"node": (0, 0)}, {"node": (0, 3)}, {"node": (2, 3)}],
    ids=str,
)
def test_a_missing_quasi_identifier_is_released_as_star_on_either_neighbour(
    column: str, missing: object, how: dict[str, object]
) -> None:
    d, d2 = _neighbours(column, missing)
    kept_missing = 0
    for seed in range(6):
        outs = [
            safepub(df, ["job", "age"], HIER, epsilon=2.0, delta=1e-5, rng=seeded(seed), **how)  # type: ignore[arg-type]
            for df in (d, d2)
        ]
        assert [list(o.table.columns) for o in outs] == [["job", "age"]] * 2
        for o in outs:  # nothing outside the public hierarchies' labels
            for c in ("job", "age"):
                assert set(o.table[c]) <= PUBLIC[c], (c, set(o.table[c]) - PUBLIC[c])
        if outs[1].kept[-1]:  # the table holds the kept records in input order: the missing one is last
            kept_missing += 1
            assert outs[1].table[column].iloc[-1] == "*"
    if how.get("node") in ((0, 3), (2, 3)):  # its class there is large: the record is kept sometimes
        assert kept_missing > 0


def test_the_owner_json_request_on_neighbours_has_one_outcome(tmp_path: Path) -> None:
    """Through the owner's JSON request on two real databases: both releases succeed, charge the same ε,
    and release only public labels."""
    d, d2 = _neighbours("job", None)
    hierarchies = {"job": JOBS, "age": [[str(a), f"{a // 10 * 10}s", "*"] for a in range(20, 80)]}
    outcomes = []
    for name, df in (("without", d), ("with", d2)):
        path = tmp_path / name
        df.assign(age=df["age"].astype(int)).to_csv(tmp_path / f"{name}.csv", index=False)
        with privdb.connect(path) as owner:
            owner.load("people", tmp_path / f"{name}.csv")
            out = owner.publish("safepub", "people", qi=["job", "age"], hierarchies=hierarchies,
                                epsilon=1.0, delta=1e-5, search="lattice")  # fmt: skip
            assert {r[0] for r in out["rows"]} <= PUBLIC["job"]
            outcomes.append((out["columns"], sorted(out["summary"])))
        outcomes.append(spent(path))
    assert outcomes[:2] == outcomes[2:]
