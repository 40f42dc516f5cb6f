"""Issue 31: synthetic releases on neighbouring tables (one person in, one out, or a far outlier planted).

What the owner observes besides the noisy values must not depend on the person: the refusals (a column
without bounds and no share for DP bounds, a domain too large for MWEM, a workload naming an unreleased
column) with their code and message, and of a release: the columns, the number of rows, the summary's
fields, how many DP bounds were found, and the saved model's shape (its columns and each one's cell count,
NULL cell included). The noisy values themselves (rows, bounds, chosen marginals) are what is paid for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adversarial.neighbours import ALICE, PEOPLE_META, neighbours
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.publish.service import publish_request, publish_synthetic, table_rows

META: dict[str, Any] = {
    "columns": {**PEOPLE_META["columns"], "income": {"type": "float"}}  # no public bounds
}
BASE = {"epsilon": 2.0, "delta": 1e-9, "rows": 300, "columns": ["age", "visits", "income"]}


def _outcome(db: Database, options: dict[str, Any]) -> tuple[Any, ...]:
    try:
        done = publish_request(db, "synthetic", "people", options)
    except PrivdbError as err:
        return ("error", err.code, err.message)
    summary = done["summary"]
    return ("released", tuple(done["columns"]), len(done["rows"]), tuple(sorted(summary)),
            len(summary["bounds"]))  # fmt: skip


@pytest.mark.parametrize("extra", [ALICE, {**ALICE, "income": 1e12}, {**ALICE, "income": None, "age": None}])
def test_outcomes_alike_on_neighbours(tmp_path: Path, extra: dict[str, Any]) -> None:
    pair = neighbours(tmp_path, extra=extra, meta=META)
    try:
        cases = [
            {**BASE, "method": "mwem"},  # income has no bounds and no share: refused
            {**BASE, "method": "mwem", "bounds_share": 0.05, "bins": {"income": 1_000}},  # too many cells
            {**BASE, "method": "aim", "bounds_share": 0.05, "workload": [["age", "disease"]]},
            {**BASE, "method": "mwem", "bounds_share": 0.05},
            {**BASE, "method": "mwem", "bounds_share": 0.05, "nulls": False, "degree": 2},
        ]
        seen = []
        for options in cases:
            first, second = (_outcome(db, options) for db in pair.both())
            assert first == second, (options, first, second)
            seen.append(first[0])
        assert seen == ["error", "error", "error", "released", "released"]
    finally:
        pair.close()


def test_saved_models_have_one_shape_on_neighbours(tmp_path: Path) -> None:
    pair = neighbours(tmp_path, extra={**ALICE, "income": 1e12}, meta=META)
    try:
        shapes = []
        for k, db in enumerate(pair.both()):
            meta = db.metadata("people")
            options = {**BASE, "method": "mwem", "bounds_share": 0.1}
            released = publish_synthetic(db, table_rows(db, "people"), meta, options, "t", tmp_path / f"m{k}")
            assert released.model is not None
            shapes.append(
                (released.model.columns, [len(d.labels) for d in released.model.domains],
                 [len(t.shape) for t in released.model.tables], len(released.frame))
            )  # fmt: skip
        assert shapes[0] == shapes[1]
    finally:
        pair.close()
