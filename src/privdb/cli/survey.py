"""``privdb survey create | tokens | submit | estimate | list``: the local model from the command line.

The same commands work on a server (``--url`` and a token) and on a database directory (``--db``): both go
through objects with the same methods (:class:`privdb.client.RemoteConnection` and
:class:`privdb.local.store.SurveyStore`). ``submit`` randomises the true answers in this process with the
survey's declared protocol and ε, and sends only the randomised responses: the collector never sees an answer.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.table import Table

from privdb.cli.core import app, console, friendly
from privdb.cli.options import FormatOption, TableOrJson, TokenOption, UrlOption
from privdb.errors import InvalidParameter
from privdb.local.limits import DEFAULT_OPEN_LIMIT

survey_app = typer.Typer(
    name="survey",
    help="The local model: declare a survey, randomise and send answers, read the estimate.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)
app.add_typer(survey_app, name="survey")

Db = Annotated[Path | None, typer.Option("--db", help="a database directory (or --url for a server)")]
Protocol = Literal["coin", "alpha", "flip", "binary", "krr", "oue", "olh"]  # = privdb.local.survey.PROTOCOLS


@contextmanager
def _collector(db: Path | None, url: str | None, token: str | None) -> Iterator[Any]:
    """The server (``--url``, a token) or the database's survey store (``--db``)."""
    if url is not None:
        if db is not None:
            raise InvalidParameter("give --db (a local database) or --url (a server), not both")
        if not token:
            raise InvalidParameter(
                "--url needs --token (or PRIVDB_TOKEN): the owner's, or a survey's collection or "
                "respondent token"
            )
        from privdb.client import RemoteConnection

        with RemoteConnection(url, token) as remote:
            yield remote
        return
    if db is None:
        raise InvalidParameter("give --db DIR (a local database) or --url URL --token T (a server)")
    if not (db / "privdb.sqlite").is_file():
        raise InvalidParameter(f"no privdb database at {str(db)!r}; check --db")
    from privdb.catalog.store import Catalog
    from privdb.local.store import SurveyStore

    catalog = Catalog(db / "privdb.sqlite")
    try:
        yield SurveyStore(catalog)
    finally:
        catalog.close()


@survey_app.command("create")
@friendly
def create(
    name: Annotated[str, typer.Argument(help="the survey's name")],
    protocol: Annotated[Protocol, typer.Option(help="how each person randomises (docs/server.md)")],
    values: Annotated[
        str | None, typer.Option(help="the answers people choose from, comma-separated (binary: no,yes)")
    ] = None,
    epsilon: Annotated[float | None, typer.Option(help="each person's ε")] = None,
    alpha: Annotated[float | None, typer.Option(help="the α protocol's α")] = None,
    p: Annotated[float | None, typer.Option("--p", help="the flip protocol's p")] = None,
    open_survey: Annotated[
        bool,
        typer.Option(
            "--open",
            help="let the collection token send responses too, at most --open-limit in all (default: closed,"
            " respondents send with one-time tokens from `privdb survey tokens`)",
        ),
    ] = False,
    open_limit: Annotated[
        int | None,
        typer.Option(
            help=f"an open survey: responses its collection token may send [default: {DEFAULT_OPEN_LIMIT:,}]"
        ),
    ] = None,
    db: Db = None,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Declare a survey (the owner); prints its collection token, with which respondents read the survey's
    protocol (and, if it is --open, send). Closed surveys take responses from `privdb survey tokens`."""
    domain = None if values is None else [v.strip() for v in values.split(",") if v.strip()]
    if open_limit is not None and not open_survey:
        raise InvalidParameter("--open-limit is for an open survey: add --open")
    limit = (open_limit or DEFAULT_OPEN_LIMIT) if open_survey else None
    with _collector(db, url, token) as collector:
        made = collector.create_survey(
            name, protocol, open_limit=limit, values=domain, epsilon=epsilon, alpha=alpha, p=p
        )
    sys.stdout.write(str(made["collect_token"]) + "\n")


@survey_app.command("tokens")
@friendly
def tokens(
    name: Annotated[str, typer.Argument(help="the survey's name")],
    count: Annotated[int, typer.Option(help="how many respondent tokens to issue")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="write them to this file (default: standard output)")
    ] = None,
    db: Db = None,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Issue one-time respondent tokens (the owner), one per line: each sends exactly one response, once.
    Hand one to each respondent (`privdb survey submit NAME --token T`)."""
    with _collector(db, url, token) as collector:
        issued = collector.issue_survey_tokens(name, count)
    text = "".join(f"{t}\n" for t in issued)
    if output is None:
        sys.stdout.write(text)
        return
    output.write_text(text, encoding="utf-8")
    output.chmod(0o600)  # bearer secrets
    console().print(f"wrote {len(issued):,} respondent tokens for {name} to {output}")


@survey_app.command("submit")
@friendly
def submit(
    name: Annotated[str, typer.Argument(help="the survey's name")],
    answers: Annotated[
        Path | None, typer.Argument(help="true answers, one per line (default: standard input)")
    ] = None,
    db: Db = None,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Randomise true answers here, with the survey's protocol and ε, and send only the randomised responses
    (on a server, with a respondent token: one answer; or an open survey's collection token)."""
    text = sys.stdin.read() if answers is None else answers.read_text(encoding="utf-8")
    from privdb.local.survey import Survey

    with _collector(db, url, token) as collector:
        survey = Survey(collector.survey(name)["spec"])
        sent = collector.add_responses(name, survey.randomize(survey.answers(text.splitlines())))
    console().print(f"sent {sent['added']:,} randomised responses to {name}; it holds {sent['n']:,}")


@survey_app.command("estimate")
@friendly
def estimate(
    name: Annotated[str, typer.Argument(help="the survey's name")],
    db: Db = None,
    url: UrlOption = None,
    token: TokenOption = None,
    output_format: FormatOption = "table",
) -> None:
    """The survey's estimate per answer: count, share, 95% interval (from the randomised responses only)."""
    with _collector(db, url, token) as collector:
        found = collector.survey(name)
    rows = found.get("estimates", [])
    if output_format == "json":
        sys.stdout.write(json.dumps(found) + "\n")
        return
    if output_format == "csv":
        lines = ["value,count,share,std_error,ci95_low,ci95_high"]
        lines += [
            f"{r['value']},{r['count']},{r['share']},{r['std_error']},{r['ci95'][0]},{r['ci95'][1]}"
            for r in rows
        ]
        sys.stdout.write("\n".join(lines) + "\n")
        return
    table = Table(
        title=f"{name}: {found.get('n', 0):,} responses, ε = {found.get('epsilon', 0):g} per person"
    )
    for col in ("answer", "count", "share", "95% interval of the count"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            str(r["value"]),
            f"{r['count']:,.1f}",
            f"{r['share']:.1%}",
            f"[{r['ci95'][0]:,.1f}, {r['ci95'][1]:,.1f}]",
        )
    console().print(table)


@survey_app.command("list")
@friendly
def list_surveys(
    db: Db = None, url: UrlOption = None, token: TokenOption = None, output_format: TableOrJson = "table"
) -> None:
    """The declared surveys: protocol, answers, ε and number of responses."""
    from privdb.local.survey import Survey

    with _collector(db, url, token) as collector:
        found = collector.surveys()
    if output_format == "json":
        sys.stdout.write(json.dumps(found) + "\n")
        return
    table = Table(title="surveys")
    for col in ("name", "protocol", "answers", "ε", "responses"):
        table.add_column(col)
    for s in found:
        spec = s.get("spec", {})
        domain = ", ".join(map(str, spec.get("domain") or []))
        eps = Survey(spec).epsilon
        table.add_row(str(s["name"]), str(spec.get("protocol")), domain, f"{eps:g}", f"{s.get('n', 0):,}")
    console().print(table)
