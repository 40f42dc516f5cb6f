"""``privdb demo`` and ``privdb audit``."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from privdb.cli.core import app, console, friendly
from privdb.cli.options import TableOrJson

DEMOS = ("sql", "local", "holdout", "linkage")


@app.command()
@friendly
def demo(
    which: Annotated[
        str,
        typer.Argument(help="sql (the main job), local (local vs central, PNG), holdout (PNG) or linkage"),
    ] = "sql",
    out: Annotated[
        Path | None, typer.Option("--out", help="where the local / holdout demo writes its PNG")
    ] = None,
) -> None:
    """Show privdb on the course's worked examples: truth, private answer, accuracy, budget."""
    if which not in DEMOS:
        from privdb.errors import InvalidParameter

        raise InvalidParameter(f"unknown demo {which!r}: choose one of {', '.join(DEMOS)}")
    if which == "local":
        _demo_local(out or Path("local-vs-central.png"))
    elif which == "holdout":
        _demo_holdout(out or Path("holdout.png"))
    elif which == "linkage":
        _demo_linkage()
    else:
        _demo_sql()


def _demo_local(path: Path) -> None:
    from privdb.local.compare import compare_local_central, plot_local_central

    output = console()
    with output.status("local vs central: the notes' average salary, repeated at each n…"):
        result = compare_local_central(epsilon=1.0, repetitions=200)
    table = Table(
        title="Average salary at ε = 1: each person adds noise (local) or the curator does (central)"
    )
    for col in ("n", "local RMSE", "central RMSE", "local ÷ central"):
        table.add_column(col, justify="right")
    for n, lo, ce, ratio in zip(
        result.ns, result.local_rmse, result.central_rmse, result.ratios, strict=True
    ):
        table.add_row(f"{n:,}", f"{lo:,.1f}", f"{ce:,.2f}", f"{ratio:,.0f}×")
    output.print(table)
    output.print(f"The gap grows as √n. Plot: {plot_local_central(result, path)}")


def _demo_linkage() -> None:
    from privdb.anonymize.linkage import course_example

    output = console()
    result = course_example()
    table = Table(title="Linkage attack: the notes' patients joined with a voter list on job, sex and age")
    for col in ("release", "re-identified uniquely", "correctly", "share of the released records"):
        table.add_column(col)
    for when in ("before", "after"):
        r = result[when]
        table.add_row(
            "names removed only" if when == "before" else "generalised (k = 3)",
            str(r["unique"]),
            str(r["correct"]),
            f"{r['share']:.0%}",
        )
    output.print(table)
    output.print(
        "Removing names is not anonymisation: the quasi-identifiers single people out (as with the "
        "Massachusetts governor's record). `privdb anonymize` generalises them until no one is unique."
    )


def _demo_holdout(path: Path) -> None:
    from privdb.holdout.experiment import demo as holdout_demo

    output = console()
    with output.status("the reusable holdout: adaptive feature selection on labels that are pure noise…"):
        written = holdout_demo(path)
    output.print(
        "Standard holdout vs Thresholdout (Dwork et al., Science 2015) on random labels: the standard "
        f"holdout's reported accuracy climbs above 0.5, Thresholdout's stays near it. Plot: {written}"
    )


def _demo_sql() -> None:
    from privdb.demo import (
        DEMO_BUDGET,
        build_demo_database,
        format_number,
        randomized_response_rows,
        sql_rows,
    )

    out = console()
    out.rule(Text.assemble(("privdb demo", "bold"), ": differential privacy on the course's examples"))
    table = Table(title="Randomised response: a simulated class of 1,000 answers 'did you cheat?'")
    for col in ("protocol", "ε", "true share", "estimate", "95% interval", "note"):
        table.add_column(col)
    for row in randomized_response_rows():
        table.add_row(
            row.label,
            format_number(row.epsilon),
            f"{row.true_value:.3f}",
            "—" if row.noisy_value is None else f"{row.noisy_value:.3f}",
            "—" if row.ci95 is None else f"[{row.ci95[0]:.3f}, {row.ci95[1]:.3f}]",
            row.note,
        )
    out.print(table)

    with tempfile.TemporaryDirectory() as tmp:
        with out.status("building the demo database: tax_office and a census of 100,000 people…"):
            db = build_demo_database(Path(tmp) / "demo")
        try:
            rows, refusal = sql_rows(db)
        finally:
            db.close()
    table = Table(title=f"DP-SELECT on DuckDB: the analyst's budget is ε = {DEMO_BUDGET:g}")
    for col in ("query", "ε", "owner's true answer", "private answer", "95% interval", "budget"):
        table.add_column(col)
    for row in rows:
        assert row.noisy_value is not None and row.ci95 is not None
        table.add_row(
            row.label,
            format_number(row.epsilon),
            format_number(row.true_value),
            format_number(row.noisy_value),
            f"[{format_number(row.ci95[0])}, {format_number(row.ci95[1])}]",
            row.note,
        )
    out.print(table)
    if refusal:
        out.print(refusal, style="yellow", highlight=False)
    out.print(
        "Sums and averages clamp incomes to the declared bounds [0, 500000]; each person counts once. "
        "Noise is exact discrete Laplace on a power-of-two grid from a ChaCha20 CSPRNG; each spend was "
        "committed to the SQLite ledger before its answer was shown. The tiny tax_office table shows how "
        "wide an honest interval is when one person could move the answer a lot."
    )


@app.command()
@friendly
def audit(
    names: Annotated[list[str] | None, typer.Argument(help="mechanisms to audit (default: all)")] = None,
    samples: Annotated[int, typer.Option(help="outputs drawn per neighbouring input")] = 100_000,
    confidence: Annotated[
        float,
        typer.Option(
            help="confidence of the whole run's bounds (split across the mechanisms audited); the default "
            "raises a false alarm on correct mechanisms at most once in a million runs"
        ),
    ] = 1 - 1e-6,
    output_format: TableOrJson = "table",
) -> None:
    """Audit mechanisms empirically: the claimed ε beside a Clopper–Pearson lower bound on the true ε.
    Exits 3 when a lower bound exceeds its claim (a mechanism violates its guarantee)."""
    from privdb import audit as auditing
    from privdb.errors import InvalidParameter

    known = auditing.CORRECT + auditing.BROKEN
    for name in names or []:
        if name not in known:
            raise InvalidParameter(f"unknown mechanism {name!r}; choose from {', '.join(known)}")
    if not 0.5 <= confidence < 1:
        raise InvalidParameter(f"--confidence must be in [0.5, 1), got {confidence:g}")
    results = auditing.run(names or None, samples=samples, confidence=confidence)
    if output_format == "json":
        payload = [
            {k: r.to_dict()[k] for k in ("name", "epsilon", "delta", "epsilon_lower_bound", "samples")}
            | {"event": r.event, "passed": r.passed}
            for r in results
        ]
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    else:
        _audit_table(results, samples, confidence)
    if not all(r.passed for r in results):
        raise typer.Exit(AUDIT_VIOLATION)


AUDIT_VIOLATION = 3  # the exit status of an audit that found a lower bound above its claim


def _audit_table(results: list[Any], samples: int, confidence: float) -> None:
    out = console()
    level = f"confidence 1 − {1 - confidence:.3g} for all rows"
    title = f"Empirical ε audit ({samples:,} samples per input, {level})"
    table = Table(title=title)
    for col in ("mechanism", "claimed ε", "δ", "ε lower bound", "verdict", "event"):
        table.add_column(col)
    for r in results:
        verdict = Text("consistent", "green") if r.passed else Text("VIOLATES CLAIM", "red")
        table.add_row(
            r.name,
            f"{r.epsilon:.4g}",
            f"{r.delta:g}",
            f"{r.epsilon_lower_bound:.4g}",
            verdict,
            r.event,
        )
    out.print(table)
