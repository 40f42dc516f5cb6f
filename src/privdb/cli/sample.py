"""``privdb sample M --rows N``: rows drawn again from a saved synthesiser (``publish synthetic
--save-model M``). Pure post-processing of a release already paid for: no database, no ledger, no charge.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from privdb.cli.core import app, console, errors, friendly
from privdb.errors import InvalidParameter


@app.command()
@friendly
def sample(
    model: Annotated[
        Path, typer.Argument(metavar="M", help="a folder written by publish synthetic --save-model")
    ],
    rows: Annotated[int, typer.Option(help="how many rows to draw")],
    seed: Annotated[
        int | None, typer.Option(help="a seed, for a reproducible draw (default: the secure random source)")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("-o", "--out", help="the rows, CSV (default: standard output)")
    ] = None,
) -> None:
    """Draw N rows from a saved DP synthesiser: post-processing of its release, so it charges nothing and
    the rows carry the release's (ε, δ) and its ledger entry (shown on stderr)."""
    from privdb.publish.synthmodel import SeededSource, load_model

    if out is not None and not out.parent.is_dir():
        raise InvalidParameter(f"--out {str(out)!r}: folder {str(out.parent)!r} does not exist")
    if seed is not None and seed < 0:
        raise InvalidParameter(f"--seed must be ≥ 0, got {seed}")
    loaded = load_model(model)
    drawn = loaded.sample(rows, None if seed is None else SeededSource(seed))
    if out is None:
        drawn.to_csv(sys.stdout, index=False)
    else:
        drawn.to_csv(out, index=False)
    info, ledger = loaded.info, loaded.info.get("ledger") or {}
    note = (
        f"drew {rows:,} rows from the {info['method']} model of table {info['table']!r} "
        f"(ε {info['epsilon']:g}, δ {info['delta']:g}, "
        f"paid by ledger entry {ledger.get('id')}): nothing charged"
    )
    (errors() if out is None else console()).print(note + (f" · {out}" if out is not None else ""))
