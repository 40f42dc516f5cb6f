"""``privdb publish``: non-interactive releases with a DP guarantee, each charged to the owner's account.

A Typer sub-app: every release method is one command of ``publish_app`` (``safepub`` here; the releases
from noisy marginals, ``histogram`` and ``synthetic``, in privdb.cli.publish_marginals; a new method adds its
own module that registers a command on ``publish_app`` and is listed in privdb.cli.commands). Shared steps
live here: the database whose ledger pays (``--db``), the input (a table of the database or a CSV file) and
the charge, reserved after every check passed and committed before any output is written.

Every release is charged to the owner's publication account in the ledger (``(owner)``, a name no grant can
take: privdb.publish.charge) and draws on the table's lifetime budget (``privdb budgets --table NAME``), which
is what limits publications: a release the table's budget cannot pay is refused before anything is written.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from privdb.cli.core import app, console, friendly
from privdb.cli.table_options import check_output, print_held_out, qi_columns
from privdb.errors import DatabaseInUse, InvalidParameter

if TYPE_CHECKING:  # the engine is imported by the commands that run it, so `privdb --help` starts fast
    import pandas as pd

    from privdb.database import Database

__all__ = ["open_database", "publish_app", "read_input", "served_hint"]

publish_app = typer.Typer(
    name="publish",
    help="Publish a table non-interactively with a differential-privacy guarantee; every release is charged "
    "to the table's lifetime budget and logged as the owner's (`privdb budgets --table T` sets the budget).",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)
app.add_typer(publish_app, name="publish")


def open_database(db: Path | None) -> Database:
    """The database whose ledger pays; refuses a missing ``--db`` or a directory that is no database."""
    from privdb.database import Database

    if db is None:
        raise InvalidParameter(
            "give --db DIR: every release is charged to the owner's account in that database's ledger"
        )
    if not (Path(db) / "privdb.sqlite").is_file():
        raise InvalidParameter(
            f"no privdb database at {str(db)!r}; check --db (the owner creates one with `privdb load` or "
            "`privdb grant`)"
        )
    return Database(db)


F = TypeVar("F", bound=Callable[..., Any])


def served_hint(func: F) -> F:
    """The refusal when a server holds ``--db``'s data file: ``privdb publish`` has no ``--url``, so it names
    what works (stopping the server, or the server's POST /v1/publish from Python) rather than ``--url``."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except DatabaseInUse as err:
            db = kwargs.get("db")
            raise (err if db is None else _publish_in_use(Path(db), err)) from None

    return wrapper  # type: ignore[return-value]


def _publish_in_use(db: Path, err: DatabaseInUse) -> DatabaseInUse:
    from privdb.inuse import running_server

    server = running_server(db)
    if server is None:
        return err
    return DatabaseInUse(
        f"the database {str(db)!r} is in use by a running `privdb serve` (pid {server['pid']}); `privdb "
        "publish` works on a database no server holds: stop the server first, or publish over it from Python "
        f"with the owner's token: privdb.connect({server['url']!r}, token=OWNER).publish('histogram', "
        "TABLE, epsilon=1, columns=[['a']]) (docs/publish.md)",
        err.holder,
    )


def read_input(database: Database, source: str, table: str | None) -> tuple[pd.DataFrame, str]:
    """The rows to publish and the name of the table they are charged to: a table of the database (by
    name), or a CSV/Parquet file (``--table``, default the file's stem)."""
    from privdb.anonymize.tables import read_table
    from privdb.backends.names import check_name
    from privdb.publish.service import table_rows

    names = {n.lower(): n for n in database.table_names()}
    if source.lower() in names and not Path(source).is_file():
        name = names[source.lower()]
        if table is not None and table.lower() != name.lower():
            raise InvalidParameter(f"--table {table!r} differs from the input table {name!r}: drop --table")
        return table_rows(database, name), name
    if not Path(source).is_file():
        known = ", ".join(sorted(names.values())) or "none"
        raise InvalidParameter(
            f"{source!r} is neither a table of the database (tables: {known}) nor a file; check the name"
        )
    name = check_name(table if table is not None else Path(source).stem, "--table")
    frame, _ = read_table(source)
    return frame, name


def node_levels(text: str | None) -> tuple[int, ...] | None:
    """``--node 1,2,0``: the levels as whole numbers (their range is checked against the hierarchies)."""
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise InvalidParameter(
            f"--node takes whole levels separated by commas, e.g. 1,2,0, got {text!r}"
        ) from None


@publish_app.command("safepub")
@friendly
@served_hint
def safepub_command(
    source: Annotated[str, typer.Argument(help="a table of --db, or a CSV/Parquet file", show_default=False)],
    qi: Annotated[str, typer.Option("--qi", help="comma-separated quasi-identifier columns (all released)")],
    output: Annotated[Path, typer.Option("-o", "--output", help="where to write the released CSV")],
    epsilon: Annotated[float, typer.Option("--epsilon", help="total ε charged (ε_anon + ε_search), e.g. 1")],
    delta: Annotated[float, typer.Option("--delta", help="δ charged, in (0, 1), e.g. 1e-5")],
    epsilon_search: Annotated[float, typer.Option(help="the search's share of ε (ARX: 0.1)")] = 0.1,
    hierarchies: Annotated[
        Path | None, typer.Option("--hierarchies", help="directory of public COLUMN.csv hierarchies (ARX)")
    ] = None,
    fix_labels: Annotated[bool, typer.Option(help="rename lo-hi labels that exclude their values")] = False,
    metric: Annotated[
        str | None,
        typer.Option(
            help="the search's score: loss, precision, aecs, discernibility, entropy or classification "
            "(default: classification with --target, else loss)",
            show_default=False,
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(help="classification: the column to predict (not a quasi-identifier; not released)"),
    ] = None,
    steps: Annotated[int | None, typer.Option(help="walk steps (default: the lattice's height)")] = None,
    search: Annotated[
        str,
        typer.Option(
            help="walk (SafePub's), lattice (one draw over every node) or auto: lattice for the "
            "classification score on a lattice of at most 10,000 nodes, else walk"
        ),
    ] = "auto",
    node: Annotated[
        str | None,
        typer.Option(help="a fixed level per quasi-identifier, e.g. 1,2,0: no search, all of ε samples"),
    ] = None,
    db: Annotated[Path | None, typer.Option("--db", help="the database whose ledger pays")] = None,
    table: Annotated[str | None, typer.Option(help="ledger table name for a file input (its stem)")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="write the JSON utility report")] = None,
    png: Annotated[Path | None, typer.Option("--report-png", help="write the report's chart (.png)")] = None,
    utility_target: Annotated[
        str | None,
        typer.Option(
            help="utility report: a quasi-identifier to predict, by a classifier trained on the release and "
            "tested on held-out rows (the release is then made from the other rows only)"
        ),
    ] = None,
    holdout: Annotated[float, typer.Option(help="with --utility-target: the share of rows held out")] = 0.3,
) -> None:
    """SafePub (Bild, Kuhn, Prasser 2018): sample, generalise along public hierarchies, suppress classes
    below k; (ε, δ)-DP. Only the quasi-identifiers of the kept records are written."""
    from privdb.anonymize import load_hierarchies
    from privdb.publish.evaluation import safepub_classifier, split_rows
    from privdb.publish.report import publication_report, report_png
    from privdb.publish.service import SafePubOptions, publish_safepub

    columns = qi_columns(qi)
    node_levels(node)
    check_output(output, (".csv",), "-o")
    check_output(report, (".json",), "--report")
    check_output(png, (".png",), "--report-png")
    _check_utility_target(utility_target, columns, holdout)
    database = open_database(db)
    try:
        whole, name = read_input(database, source, table)
        unit = database.metadata(name).privacy_unit if name in set(database.table_names()) else None
        split = None if utility_target is None else split_rows(whole, holdout, unit=unit)
        frame = whole if split is None else split.train
        given = load_hierarchies(hierarchies, columns, fix_labels=fix_labels) if hierarchies else {}
        options = SafePubOptions(
            qi=tuple(columns), epsilon=epsilon, delta=delta, epsilon_search=epsilon_search, metric=metric,
            steps=steps, target=target, node=node_levels(node), search=search,
        )  # fmt: skip
        note = f"publish safepub {name} ε={epsilon:g} δ={delta:g} → {output.name}"
        published = publish_safepub(database, frame, name, given, options, note)
        published.table.to_csv(output, index=False)
        body = publication_report(frame, published, given) if report or png or split else None
        if split is not None and body is not None and utility_target is not None:
            body["classifier"] = safepub_classifier(published, given, split, utility_target)
        if report is not None and body is not None:
            report.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if png is not None and body is not None:
            report_png(body, png)
        left = _table_left(database, name)
    finally:
        database.close()
    p = published.params
    out = console()
    out.print(
        f"published {len(published.table):,} of {len(frame):,} rows of {name!r} to {output} "
        f"(k = {p.k}, β = {p.beta:.3f}, node {published.node})",
        highlight=False,
    )
    out.print(f"charged ε={epsilon:g}, δ={delta:g} to table {name!r}{left}", highlight=False)
    if split is not None and body is not None:
        print_held_out(split, body["classifier"], "released")
    sys.stdout.flush()


def _check_utility_target(target: str | None, qi: list[str], holdout: float) -> None:
    """--utility-target must be released (SafePub releases the quasi-identifiers only); --holdout a share.
    Checked before anything is read or spent."""
    from privdb.publish.evaluation import check_share
    from privdb.publish.utility import require_classifier

    check_share(holdout)
    if target is None:
        return
    if target not in qi:
        raise InvalidParameter(
            f"--utility-target {target!r} is not released: SafePub releases the quasi-identifiers only "
            f"({', '.join(qi)}); predict one of them (--target is the classification score's column)"
        )
    require_classifier()


def _table_left(database: Database, table: str) -> str:
    """What the table's lifetime budget has left, if it has one (for the closing line)."""
    for kind, cap in database.ledger.caps(database.name):
        if kind == "table" and cap.analyst.lower() == table.lower():
            return (
                f" (its budget has ε={float(cap.epsilon_remaining):g}, δ={float(cap.delta_remaining):g} left)"
            )
    return ""
