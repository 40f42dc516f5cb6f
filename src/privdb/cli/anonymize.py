"""``privdb anonymize``: publish an anonymised table (k-anonymous, l-diverse, t-close), with its report. The
commands that measure any table (``check``, ``risk``) are privdb.cli.measure; the options they share,
privdb.cli.table_options."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from privdb.cli.core import app, console, friendly
from privdb.cli.table_options import (
    FixLabelsOption,
    HierarchiesOption,
    QiOption,
    SensitiveOption,
    Steps,
    check_output,
    hierarchy_frames,
    qi_columns,
    writable,
)
from privdb.errors import InvalidParameter

Metric = Literal["loss", "discernibility", "aecs"]


@app.command()
@friendly
def anonymize(
    source: Annotated[
        Path, typer.Argument(help="the table to publish (CSV or Parquet; with --db, a table's name)")
    ],
    qi: QiOption,
    output: Annotated[Path, typer.Option("-o", "--output", help="where to write the anonymised CSV")],
    k: Annotated[int, typer.Option("--k", help="every record hides among at least k")] = 5,
    l_div: Annotated[float | None, typer.Option("--l", help="l-diversity of --sensitive")] = None,
    t: Annotated[float | None, typer.Option("--t", help="t-closeness of --sensitive")] = None,
    sensitive: SensitiveOption = None,
    diversity: Annotated[str, typer.Option(help="distinct, entropy or recursive (with --c)")] = "distinct",
    c: Annotated[float | None, typer.Option("--c", help="c of recursive (c, l)-diversity")] = None,
    algorithm: Annotated[
        Literal["mondrian", "lattice"], typer.Option(help="Mondrian, or lattice (optimal full-domain)")
    ] = "mondrian",
    hierarchies: HierarchiesOption = None,
    hierarchy_fallback: Annotated[
        bool, typer.Option(help="give values a hierarchy misses their own branch instead of failing")
    ] = False,
    fix_labels: FixLabelsOption = False,
    metric: Annotated[
        Metric | None,
        typer.Option(
            help="what the lattice search minimises: loss (ARX's information loss, the default), "
            "discernibility (sum of squared class sizes, n per suppressed record) or aecs (records per class)"
        ),
    ] = None,
    suppression_limit: Annotated[float, typer.Option(help="largest share of records suppressed")] = 0.05,
    keep: Annotated[
        str | None,
        typer.Option(
            "--keep",
            help="comma-separated columns written unchanged besides the quasi-identifiers and --sensitive; "
            "every other column is left out (an attribute nobody classified is taken as identifying)",
        ),
    ] = None,
    db: Annotated[
        Path | None,
        typer.Option(
            "--db",
            help="read SOURCE as a table of this database: columns its metadata marks identifier, "
            "private_id or the privacy unit are never written",
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="shuffle the rows reproducibly (tests; default: the CSPRNG)"),
    ] = None,
    report: Annotated[Path | None, typer.Option("--report", help="write the JSON report here")] = None,
    report_html: Annotated[Path | None, typer.Option(help="write the report as a page (.html)")] = None,
    report_png: Annotated[Path | None, typer.Option(help="write the class-size histogram (.png)")] = None,
) -> None:
    """Generalise and suppress until the table is k-anonymous (and l-diverse, t-close); write it, report.

    The file holds only the quasi-identifiers, the sensitive column and the --keep columns, its rows
    shuffled."""
    from privdb.anonymize import anonymize as run
    from privdb.anonymize.release import publishable
    from privdb.anonymize.report import (
        histogram_png,
        read_table,
        release_report,
        render_html,
        render_png,
        write_table,
    )

    columns = qi_columns(qi)
    kept = qi_columns(keep, "--keep") if keep is not None else []
    written = [*columns, *([sensitive] if sensitive else []), *kept]
    if metric is not None and algorithm != "lattice":
        raise InvalidParameter("--metric chooses the lattice search's optimum: add --algorithm lattice")
    check_output(report, (".json",), "--report")
    check_output(report_html, (".html", ".htm"), "--report-html")
    check_output(report_png, (".png",), "--report-png")
    if db is None and output.resolve() == source.resolve():
        raise InvalidParameter("-o must name a new file: privdb never overwrites the input table")
    writable(output, "-o")
    with Steps(4) as steps:
        steps.next(f"reading {source.name}")
        frame, delimiter = read_table(source) if db is None else _database_table(db, str(source), written)
        _check_written(frame, written, kept, columns, sensitive)
        loaded = hierarchy_frames(hierarchies, [*columns, *([sensitive] if sensitive else [])], fix_labels)
        steps.next(f"anonymising {len(frame):,} records ({algorithm}, k = {k})")
        started = time.perf_counter()
        result = run(
            frame,
            columns,
            k=k,
            l=l_div,
            t=t,
            sensitive=sensitive,
            diversity=diversity,
            c=c,
            algorithm=algorithm,
            hierarchies={name: h for name, h in loaded.items() if name in columns} if loaded else None,
            hierarchy_fallback=hierarchy_fallback,
            suppression_limit=suppression_limit,
            metric=metric or "loss",
        )
        seconds = time.perf_counter() - started
        parameters: dict[str, Any] = {
            "k": k, "l": l_div, "t": t, "sensitive": sensitive, "diversity": diversity, "c": c,
            "algorithm": algorithm, "qi": columns, "suppression_limit": suppression_limit,
            "hierarchies": str(hierarchies) if hierarchies else None,
        }  # fmt: skip
        parameters["written"] = [c for c in frame.columns if c in set(written)]
        if hierarchies:
            parameters["fix_labels"] = fix_labels
        if result.node is not None:
            parameters["metric"] = metric or "loss"
            parameters["lattice_node"] = result.node
        steps.next("measuring the release")
        coded = result.coded_table()  # the same values, as the codes the algorithm released
        body = release_report(
            frame,
            coded,
            columns,
            sensitive=sensitive,
            parameters=parameters,
            seconds=seconds,
            suppression={"records": result.n_suppressed, "reason": result.suppression_reason},
            hierarchies=loaded,
        )
        steps.next(f"writing {output.name}")
        write_table(publishable(coded, written, _shuffler(seed)), output, delimiter)
        if report is not None:
            report.write_text(json.dumps(body, indent=2, default=str) + "\n", encoding="utf-8")
        image = histogram_png(body) if report_html is not None or report_png is not None else None
        if report_html is not None:
            render_html(body, report_html, image)
        if report_png is not None:
            render_png(body, report_png, image)
    achieved, util, risk = body["achieved"], body["utility"], body["risk"]
    console().print(
        f"wrote {output} ({len(result.table):,} records): k = {achieved['k']}"
        + (f", l = {achieved['l']}" if achieved.get("l") is not None else "")
        + (f", t = {achieved['t']:.4g}" if achieved.get("t") is not None else "")
        + f"; NCP {util['ncp']:.2%}, {util['suppressed']:,} suppressed"
        + (f" ({result.suppression_reason})" if result.n_suppressed else "")
        + f"; prosecutor risk max {risk['prosecutor_max']:.3g}, avg {risk['prosecutor_avg']:.3g}"
        + f"; {seconds:.2f} s"
    )


def _database_table(db: Path, table: str, written: list[str]) -> tuple[Any, str]:
    """A database's table as a frame (privdb's hidden columns left out), after refusing to write any column
    its metadata marks as identifying: identifier, private_id, the privacy unit."""
    from privdb.backends.names import quote
    from privdb.database import Database

    with Database(db) as database:
        meta = database.metadata(table)
        marked = {c for c, col in meta.columns.items() if col.identifier or col.private_id}
        marked |= {meta.privacy_unit} if meta.privacy_unit else set()
        named = [c for c in written if c in marked]
        if named:
            raise InvalidParameter(
                f"column {named[0]!r} of {meta.name!r} identifies people (its metadata marks it identifier, "
                "private_id or the privacy unit) and is never published: leave it out of --qi, --sensitive "
                "and --keep"
            )
        listed = ", ".join(quote(c) for c in database.backend.columns(meta.name))
        frame = database.backend.raw(f"SELECT {listed} FROM {quote(meta.name)}")
    return frame, ","


def _check_written(
    frame: Any, written: list[str], kept: list[str], qi: list[str], sensitive: str | None
) -> None:
    """Refuse --keep columns the table lacks or that already have a role."""
    have = [str(c) for c in frame.columns]
    for name in kept:
        if name not in have:
            raise InvalidParameter(f"--keep names {name!r}, not a column of the table ({', '.join(have)})")
        if name in qi or name == sensitive:
            raise InvalidParameter(f"--keep names {name!r}, already a quasi-identifier or --sensitive")
    if len(set(kept)) != len(kept):
        raise InvalidParameter("--keep lists a column twice: list each once")


def _shuffler(seed: int | None) -> Any:
    """The release's row order: the CSPRNG, or a seeded source when the owner asked for one (tests)."""
    if seed is None:
        return None
    import warnings

    from privdb.mechanisms.randomness import InsecureRandomWarning, SeededRandom

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomWarning)
        return SeededRandom(seed)
