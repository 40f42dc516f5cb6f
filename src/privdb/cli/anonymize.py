"""``privdb anonymize | check | risk``: publish anonymised tables; measure any table's k, l, t and risk."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from privdb.cli.core import app, console, errors, friendly
from privdb.cli.options import TableOrJson
from privdb.errors import InvalidParameter

QiOption = Annotated[str, typer.Option("--qi", help="comma-separated quasi-identifier columns")]
SensitiveOption = Annotated[
    str | None, typer.Option("--sensitive", help="the sensitive column (for l and t)")
]
HierarchiesOption = Annotated[
    Path | None, typer.Option("--hierarchies", help="directory of COLUMN.csv hierarchies (ARX's format)")
]
FixLabelsOption = Annotated[
    bool,
    typer.Option(
        "--fix-labels",
        help="rename a hierarchy's lo-hi labels that exclude their own values to the span of those values "
        "(without it such a hierarchy is refused, its bad rows listed)",
    ),
]
Metric = Literal["loss", "discernibility", "aecs"]


def qi_columns(text: str, option: str = "--qi") -> list[str]:
    """The comma-separated column names of ``option``, at least one."""
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise InvalidParameter(f"{option} needs at least one column, e.g. {option} age,zip,sex")
    return names


def _suffix(path: Path | None, allowed: tuple[str, ...], option: str) -> None:
    if path is not None and path.suffix.lower() not in allowed:
        raise InvalidParameter(f"{option} must end in {' or '.join(allowed)}, got {path.name!r}")
    _writable(path, option)


def _writable(path: Path | None, option: str) -> None:
    """Refuse an output path whose folder does not exist or cannot be written, before any work."""
    if path is None:
        return
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InvalidParameter(
            f"{option} {str(path)!r}: the folder {str(folder)!r} does not exist; create it first"
        )
    if not os.access(folder, os.W_OK) or path.is_dir():
        raise InvalidParameter(f"{option} {str(path)!r} cannot be written here; choose another path")


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
    _suffix(report, (".json",), "--report")
    _suffix(report_html, (".html", ".htm"), "--report-html")
    _suffix(report_png, (".png",), "--report-png")
    if db is None and output.resolve() == source.resolve():
        raise InvalidParameter("-o must name a new file: privdb never overwrites the input table")
    _writable(output, "-o")
    with _Steps(4) as steps:
        steps.next(f"reading {source.name}")
        frame, delimiter = read_table(source) if db is None else _database_table(db, str(source), written)
        _check_written(frame, written, kept, columns, sensitive)
        loaded = _hierarchy_frames(hierarchies, [*columns, *([sensitive] if sensitive else [])], fix_labels)
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
        body = release_report(
            frame,
            result.table,
            columns,
            sensitive=sensitive,
            parameters=parameters,
            seconds=seconds,
            suppression={"records": result.n_suppressed, "reason": result.suppression_reason},
            hierarchies=loaded,
        )
        steps.next(f"writing {output.name}")
        write_table(publishable(result.table, written, _shuffler(seed)), output, delimiter)
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


def _hierarchy_frames(directory: Path | None, columns: list[str], fix_labels: bool) -> dict[str, Any] | None:
    if directory is None:
        return None
    from privdb.anonymize import load_hierarchies

    return dict(load_hierarchies(directory, columns, fix_labels=fix_labels))


class _Steps:
    """A progress bar over a command's steps on stderr, with the step's name and the time elapsed
    (silent when stderr is not a terminal)."""

    def __init__(self, total: int) -> None:
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=errors(),
            transient=True,
        )
        self.task = self.bar.add_task("", total=total)
        self.begun = False

    def __enter__(self) -> _Steps:
        if self.bar.console.is_terminal:
            self.bar.start()
        return self

    def next(self, description: str) -> None:
        """Finish the step under way (if any) and name the next one."""
        self.bar.update(self.task, description=description, advance=1 if self.begun else 0)
        self.begun = True

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()


@app.command()
@friendly
def check(
    source: Annotated[
        Path, typer.Argument(help="any table, e.g. a release someone published (CSV or Parquet)")
    ],
    qi: QiOption,
    sensitive: SensitiveOption = None,
    distance: Annotated[
        str, typer.Option(help="t distance: auto, equal, ordered, hierarchical, variational or kl")
    ] = "auto",
    hierarchies: HierarchiesOption = None,
    original: Annotated[
        Path | None, typer.Option(help="the original table, same rows: check every value is covered")
    ] = None,
    fix_labels: FixLabelsOption = False,
    output_format: TableOrJson = "table",
) -> None:
    """Measure k, l and t (and re-identification risk) of any table."""
    from privdb.anonymize.report import read_table, table_report

    columns = qi_columns(qi)
    with _Steps(2) as steps:
        steps.next(f"reading {source.name}")
        frame, _ = read_table(source)
        loaded = _hierarchy_frames(hierarchies, [*columns, *([sensitive] if sensitive else [])], fix_labels)
        steps.next(f"checking {len(frame):,} records")
        body = table_report(
            frame,
            columns,
            sensitive,
            distance=distance,
            hierarchy=(loaded or {}).get(sensitive) if sensitive else None,
            original=read_table(original)[0] if original is not None else None,
            hierarchies=loaded,
        )
    if output_format == "json":
        sys.stdout.write(json.dumps(body, default=str) + "\n")
        return
    table = Table(title=f"{source.name}: {body['records']:,} records, {body['classes']:,} classes")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows: list[tuple[str, Any]] = [
        ("k", body["achieved"]["k"]),
        ("l (distinct)", body["achieved"]["l"]),
        ("l (entropy)", body["l_entropy"]),
        (f"recursive c for l = {body['recursive']['l']}", body["recursive"]["c"]),
        (f"t ({body['distance']})", body["achieved"]["t"]),
        ("suppressed records", body["suppressed"]),
        ("prosecutor risk, max", body["risk"]["prosecutor_max"]),
        ("prosecutor risk, avg", body["risk"]["prosecutor_avg"]),
        ("sample uniques", body["risk"]["sample_uniques"]),
    ]
    if "coverage" in body:
        rows.append(("values not covering their record", body["coverage"]["violations"]))
    for name, value in rows:
        if value is not None:
            table.add_row(name, f"{value:.4g}" if isinstance(value, float) else str(value))
    console().print(table)
    if body.get("coverage") and not body["coverage"]["ok"]:
        console().print(f"[red]not covered[/red]: {body['coverage']['by_column']}")


@app.command("risk")
@friendly
def risk_command(
    source: Annotated[Path, typer.Argument(help="any table (CSV or Parquet)")],
    qi: QiOption,
    population: Annotated[
        Path | None,
        typer.Option(
            help="a table of the population (raw values, the same columns): journalist and marketer "
            "risk count the population records each class covers"
        ),
    ] = None,
    population_size: Annotated[
        int | None,
        typer.Option(
            help="the population's size N: the table is taken as a uniform sample of it, each "
            "class's population count estimated as its size times N/n"
        ),
    ] = None,
    output_format: TableOrJson = "table",
) -> None:
    """Re-identification risk of a table: prosecutor (max, average), journalist, marketer, sample uniques.

    Journalist and marketer risk need a population model: a population table (--population), a
    population size (--population-size, the sampling-fraction model), or neither (then they equal the
    prosecutor risk: the table is its own population). The output names the model used.
    """
    from privdb.anonymize.report import read_table
    from privdb.anonymize.risk import risk

    columns = qi_columns(qi)
    frame, _ = read_table(source)
    people = read_table(population)[0] if population is not None else None
    body = risk(frame, columns, people, population_size=population_size).to_dict()
    if output_format == "json":
        sys.stdout.write(json.dumps(body) + "\n")
        return
    table = Table(title=f"re-identification risk of {source.name}", caption=f"quasi-identifiers: {qi}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in body.items():
        shown = (
            f"{value:.4g}" if isinstance(value, float) else value if isinstance(value, str) else f"{value:,}"
        )
        table.add_row("population model" if key == "model" else key.replace("_", " "), shown)
    console().print(table)
