"""``privdb log``: the query log, embedded (--db) or over a server (--url/--token), paged and filtered.

The owner sees everyone's entries and may pick one analyst's; an analyst (a token of theirs) sees only their
own, and naming anyone else is refused. Filters and paging run in SQL in the catalog.
"""

from __future__ import annotations

import json
import re
import sys
import time
from datetime import datetime
from typing import Annotated, Any, Literal

import typer
from rich.table import Table
from rich.text import Text

from privdb.cli.core import app, console, friendly
from privdb.cli.options import FormatOption, LedgerOption, MaybeDb, TokenOption, UrlOption, open_connection
from privdb.errors import InvalidParameter

__all__ = ["parse_since"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)


def parse_since(text: str, now: float | None = None) -> float:
    """``--since``: an ISO 8601 date or time (local time unless it names a zone), or an age such as
    ``30m``, ``2h``, ``7d``; returns Unix seconds."""
    ago = _AGO.match(text)
    if ago:
        return (time.time() if now is None else now) - float(ago[1]) * _UNITS[ago[2].lower()]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise InvalidParameter(
            f"--since {text!r} is neither a date nor an age: write e.g. 2025-05-01, 2025-05-01T14:30, "
            "90m, 12h or 7d"
        ) from None


@app.command()
@friendly
def log(
    db: MaybeDb = None,
    url: UrlOption = None,
    token: TokenOption = None,
    ledger: LedgerOption = None,
    analyst: Annotated[
        str | None, typer.Option(help="only this analyst's entries (an analyst's token: only their own)")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="at most N entries")] = None,
    offset: Annotated[int, typer.Option(min=0, help="skip the first N entries (paging)")] = 0,
    table: Annotated[str | None, typer.Option(help="only queries that name this table")] = None,
    since: Annotated[
        str | None, typer.Option(help="only entries from then on: 2025-05-01, 2025-05-01T14:30, 90m, 12h, 7d")
    ] = None,
    outcome: Annotated[
        Literal["answered", "failed", "refused", "interrupted"] | None,
        typer.Option("--outcome", "--status", help="only entries that ended so"),
    ] = None,
    newest_first: Annotated[
        bool,
        typer.Option(
            "--newest-first/--reverse",
            help="the latest entries first, as `git log` lists them (so --limit 3 shows the last three); "
            "--reverse: the oldest first",
            show_default=False,
        ),
    ] = True,
    output_format: FormatOption = "table",
) -> None:
    """Show the query log, newest first: who asked what, when, what it cost and how it ended (the owner:
    everyone's; an analyst's token: their own)."""
    start = None if since is None else parse_since(since)
    with open_connection(db, url, token, ledger=ledger) as conn:
        entries: list[dict[str, Any]] = conn.log(
            analyst=analyst,
            limit=limit,
            offset=offset,
            table=table,
            since=start,
            outcome=outcome,
            newest_first=newest_first,
        )
    if output_format == "json":
        sys.stdout.write(json.dumps(entries) + "\n")
    elif output_format == "csv":
        import pandas as pd

        columns = ["time", "analyst", "query", "epsilon", "delta", "outcome", "code"]
        sys.stdout.write(pd.DataFrame(entries, columns=columns).to_csv(index=False))
    else:
        console().print(_table(entries, offset, limit))


def _table(entries: list[dict[str, Any]], offset: int, limit: int | None) -> Table:
    more = (
        f"; --offset {offset + len(entries)} for more" if limit is not None and len(entries) == limit else ""
    )
    caption = f"entries {offset + 1}–{offset + len(entries)}{more}" if entries else "no entries"
    table = Table(caption=caption)
    for name in ("time", "analyst", "query", "ε", "δ", "outcome"):
        table.add_column(name, justify="right" if name in ("ε", "δ") else "left")
    for e in entries:
        table.add_row(
            datetime.fromtimestamp(e["time"]).strftime("%Y-%m-%d %H:%M:%S"),
            e["analyst"],
            Text(e["query"]),  # the analyst's text, never read as Rich markup
            f"{e['epsilon']:g}",
            f"{e['delta']:g}",
            e["outcome"] + (f" ({e['code']})" if e["code"] else ""),
        )
    return table
