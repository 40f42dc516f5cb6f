"""Build the run's privdb database: the census-like ``people`` table the tests use (privdb.data.census),
with its privacy metadata. Run with privdb's Python (the project's .venv), not Superset's; prints the
owner's true counts per education and sex as JSON, which the run compares the DP answers with."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from privdb.data.census import METADATA, generate
from privdb.database import Database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("db", type=Path, help="database directory (created)")
    parser.add_argument("--people", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    frame = generate(args.people, seed=args.seed)
    with Database(args.db) as db:
        db.backend.load_frame("people", frame)
        db.set_metadata("people", METADATA)
    truth = {
        "rows": len(frame),
        "education": {str(k): int(v) for k, v in frame["education"].value_counts().items()},
        "sex": {str(k): int(v) for k, v in frame["sex"].value_counts().items()},
    }
    print(json.dumps(truth))


if __name__ == "__main__":
    main()
