"""``privdb load | infer``: an owner's files into the database (embedded, or over a server), and a metadata
skeleton written from a file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.text import Text

from privdb.catalog.reading import FileFormat, ReadOptions
from privdb.cli.core import app, console, errors, friendly
from privdb.cli.options import LedgerOption, TokenOption, UrlOption
from privdb.errors import InvalidParameter

FileArgument = Annotated[
    Path, typer.Argument(help="CSV (any delimiter; header detected), Parquet, JSON or Excel (.xlsx) file")
]
NoHeader = Annotated[
    bool, typer.Option("--no-header", help="the file's first line is data, not column names (CSV, Excel)")
]
Names = Annotated[
    str | None, typer.Option("--names", help="column names, comma-separated (replace the header, if any)")
]
Delimiter = Annotated[
    str | None,
    typer.Option("--delimiter", help="between values: ';' or '\\t' or ', ' (default: detected)"),
]
Quote = Annotated[str | None, typer.Option("--quote", help="the quoting character (default: detected)")]
Null = Annotated[
    list[str] | None,
    typer.Option("--null", help="a missing-value marker, e.g. '?' or 'NA' (repeat for several)"),
]
SkipBadLines = Annotated[
    bool,
    typer.Option(
        "--skip-bad-lines",
        help="leave out a CSV's malformed lines (too many or too few values, a value not of its column's "
        "type) and say how many; without it such a file is refused, its first bad line named",
    ),
]
Format = Annotated[
    FileFormat | None, typer.Option("--format", help="the file's format (default: from its suffix; else CSV)")
]


def read_options(
    no_header: bool,
    names: str | None,
    delimiter: str | None,
    quote: str | None,
    null: list[str] | None,
    file_format: FileFormat | None,
    skip_bad_lines: bool = False,
) -> ReadOptions:
    """The reading options the commands share, as DuckDB's CSV reader names them."""
    return ReadOptions(
        header=False if no_header else None,
        names=None if names is None else tuple(names.split(",")),
        delimiter=delimiter,
        quote=quote,
        null=tuple(null or ()),
        format=file_format,
        skip_bad_lines=skip_bad_lines,
    )


Append = Annotated[
    bool,
    typer.Option(
        "--append",
        help="add the file's rows to the table (same columns, any order), atomically; the table keeps its "
        "metadata, so give no --metadata",
    ),
]


Engine = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="write the table into this engine instead of the embedded one: spark://local[2] or "
        "spark://HOST:7077 (FILE then is a path Spark reads: Parquet, or CSV with a header)",
    ),
]
Into = Annotated[
    str | None,
    typer.Option(
        "--into",
        help="with --engine: the directory the table's Parquet files go to (default: DIR/spark; on a "
        "cluster, one every worker can read and write)",
    ),
]


@app.command()
@friendly
def load(
    table: Annotated[str, typer.Argument(help="name of the table to create or replace (or add rows to)")],
    file: Annotated[
        str,
        typer.Argument(
            help="CSV (any delimiter; header detected), Parquet, JSON or Excel (.xlsx) file; with --engine, "
            "a path Spark reads (hdfs://…, s3a://…)"
        ),
    ],
    db: Annotated[Path | None, typer.Option("--db", help="database directory (created on first use)")] = None,
    metadata: Annotated[Path | None, typer.Option(help="privacy metadata YAML (docs/metadata.md)")] = None,
    no_header: NoHeader = False,
    names: Names = None,
    delimiter: Delimiter = None,
    quote: Quote = None,
    null: Null = None,
    file_format: Format = None,
    skip_bad_lines: SkipBadLines = False,
    append: Append = False,
    engine: Engine = None,
    into: Into = None,
    url: UrlOption = None,
    token: TokenOption = None,
    ledger: LedgerOption = None,
) -> None:
    """Load a file into the database with its privacy metadata (or with --append add its rows to a table),
    and warn where the data strays from it (values outside a declared domain, the share clipped at each
    bound, the rows max_contributions leaves out): the owner's check, never shown to analysts. With --url
    and the owner's --token, the file is read here, checked by the server before it is sent, and streamed
    with a progress bar."""
    options = read_options(no_header, names, delimiter, quote, null, file_format, skip_bad_lines)
    if append and metadata is not None:
        raise InvalidParameter(
            "--append keeps the table's metadata: leave out --metadata (to change the metadata, load the "
            "whole table again without --append)"
        )
    if url is not None:
        from privdb.cli.options import open_connection

        if engine is not None:
            raise InvalidParameter(
                "--engine loads into another engine from this machine: give --db DIR, not --url"
            )
        with open_connection(db, url, token) as remote, _Sending(Path(file).name) as bar:
            answer = remote.load(table, Path(file), metadata, options, append=append, progress=bar)
        _report(answer["name"], answer.get("rows"), answer, answer.get("conformance", []))
        return
    if db is None:
        raise InvalidParameter("give --db DIR (a local database) or --url URL --token T (a server)")
    from privdb.database import Database

    if engine is not None:
        from privdb.engine_loads import load_engine

        with Database(db, ledger=ledger) as database:
            meta, rows = load_engine(database, table, file, engine, metadata, into=into, append=append)
        _report(meta.name, rows, meta.to_dict(), [])
        return
    if into is not None:
        raise InvalidParameter("--into names where a table goes in another engine: give --engine too")

    with Database(db, ledger=ledger) as database:
        if append:
            meta = database.append(table, Path(file), options)
        else:
            meta = database.load(table, Path(file), metadata, options)
        answer = database.loaded(meta)
        for notice in database.notices:  # what opening the data found a crash had left, put right
            errors().print(f"notice: {notice}", highlight=False)
    _report(meta.name, answer["rows"], answer, answer["conformance"])


class _Sending:
    """A progress bar on stderr while a file streams to a server (none when stderr is not a terminal)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.bar = Progress(
            TextColumn("sending {task.description}", markup=False),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=errors(),
            transient=True,
        )
        self.task: TaskID | None = None

    def __enter__(self) -> _Sending:
        if self.bar.console.is_terminal:
            self.bar.start()
        return self

    def __call__(self, sent: int, total: int) -> None:
        if self.task is None:
            self.task = self.bar.add_task(self.name, total=total)
        self.bar.update(self.task, completed=sent)

    def __exit__(self, *exc: object) -> None:
        if self.bar.live.is_started:  # stopping a bar never started would print an empty line
            self.bar.stop()


def _report(name: str, rows: int | None, meta: dict[str, Any], findings: list[dict[str, Any]]) -> None:
    columns = meta.get("columns", {})
    bounded = [c for c, spec in columns.items() if spec.get("lower") is not None]
    size = f"{rows:,} rows, " if rows is not None else ""
    added = meta.get("appended")
    console().print(
        Text.assemble(
            "loaded " if added is None else f"added {added:,} row{'' if added == 1 else 's'} to ",
            (name, "bold"),
            f": {size}{len(columns)} columns; privacy unit: "
            f"{meta.get('privacy_unit') or 'one row'}; bounded: {', '.join(bounded) or 'none'}",
        )
    )
    skipped = int(meta.get("skipped_lines") or 0)
    if skipped:
        errors().print(
            f"warning: skipped {skipped:,} malformed line{'s' if skipped > 1 else ''} of the file "
            "(too many or too few values, or a value not of its column's type; --skip-bad-lines)",
            highlight=False,
        )
    for mixed in meta.get("mixed_columns", []):
        errors().print(f"warning: {mixed['message']}", highlight=False)
    bound = (meta.get("contributions") or {}).get("message")
    if bound:
        errors().print(f"warning: {bound}", highlight=False)
    for finding in findings:
        errors().print(f"warning: {finding['message']}", highlight=False)
    if findings:
        errors().print(
            "warning: the metadata is what analysts' answers assume; fix the domain or bounds "
            "(docs/metadata.md) and load again, or keep them if they are what you mean to publish",
            highlight=False,
        )


@app.command()
@friendly
def infer(
    table: Annotated[str, typer.Argument(help="the table's name in the skeleton")],
    file: FileArgument,
    no_header: NoHeader = False,
    names: Names = None,
    delimiter: Delimiter = None,
    quote: Quote = None,
    null: Null = None,
    file_format: Format = None,
    skip_bad_lines: SkipBadLines = False,
) -> None:
    """Write a metadata skeleton for FILE to standard output (`privdb infer t f.csv > t.yaml`). Types come
    from the file; bounds and domains are read from the private data and marked for review: replace them
    with public knowledge before loading (docs/metadata.md)."""
    import duckdb

    from privdb.catalog.files import bad_lines, read_relation
    from privdb.catalog.infer import CONTRIBUTIONS_QUANTILE, infer_skeleton
    from privdb.catalog.mixed import mixed_columns

    options = read_options(no_header, names, delimiter, quote, null, file_format, skip_bad_lines)
    con = duckdb.connect()
    try:
        view = read_relation(con, file, options)
        mixed = mixed_columns(con, view, file, options)  # text columns of mostly numbers
        skeleton = infer_skeleton(con, view, table, file.name, mixed=mixed)  # reads every line's columns
        skipped = bad_lines(con, file, options)  # so a bad line anywhere refuses the file (unless skipped)
    finally:
        con.close()
    sys.stdout.write(skeleton.text)
    if skipped:
        errors().print(f"warning: skipped {skipped:,} malformed line{'s' if skipped > 1 else ''} of the file")
    for column in mixed:
        errors().print(
            f"note: {column.column} holds numbers but {column.counted()}: written as {column.kind}, so a "
            "load refuses such lines (mark missing values with --null, or leave them out with "
            "--skip-bad-lines); declare type: text if it is a code",
            highlight=False,
        )
    if skeleton.max_contributions is not None:
        errors().print(
            f"note: {skeleton.unit} repeats: max_contributions: {skeleton.max_contributions} was read from "
            f"the data ({CONTRIBUTIONS_QUANTILE:.0%} of the {skeleton.unit} values have at most that many "
            f"rows); review it (`privdb tune --db DIR {table}` suggests one with DP)",
            highlight=False,
        )
    if skeleton.unit is None:
        errors().print(
            "note: no privacy unit guessed (no column is named like a person's id: id, pid, person_id, "
            "user_id); if a person can have several rows, add privacy_unit: <column> to the table, "
            "otherwise each row is one person",
            highlight=False,
        )
    if skeleton.undomained:
        errors().print(
            "note: no domain written for "
            + ", ".join(skeleton.undomained)
            + " (too many distinct values or long values: free text, never copied into the skeleton); "
            "declare a public list of values (type: category) if the column has one",
            highlight=False,
        )
