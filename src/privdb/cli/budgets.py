"""``privdb budgets``: shared budgets — a table's lifetime budget and budget groups (the owner's)."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Annotated

import typer
from rich.table import Table

from privdb.accounting.renewal import RENEWAL_WARNING, parse_period
from privdb.cli.core import app, console, friendly
from privdb.cli.database import OwnerDb, owner_connection
from privdb.cli.options import LedgerOption, TableOrJson, TokenOption, UrlOption
from privdb.errors import InvalidParameter


@app.command()
@friendly
def budgets(
    db: OwnerDb = None,
    url: UrlOption = None,
    token: TokenOption = None,
    ledger: LedgerOption = None,
    table: Annotated[
        str | None, typer.Option(help="set this table's lifetime budget (all analysts draw on it)")
    ] = None,
    group: Annotated[
        str | None, typer.Option(help="set this budget group's budget (its members draw on it)")
    ] = None,
    epsilon: Annotated[float | None, typer.Option(help="the shared budget's total ε")] = None,
    delta: Annotated[float, typer.Option(help="the shared budget's total δ")] = 0.0,
    renew: Annotated[
        str | None,
        typer.Option(
            help="refill it every period (30d, 12h, 1w): a rate, not a lifetime bound; see the warning"
        ),
    ] = None,
    output_format: TableOrJson = "table",
) -> None:
    """Show the shared budgets, or set one: a table's lifetime budget (every analyst's answers about its
    people draw on it, so analysts pooling their answers learn no more than it allows) or a budget group's
    (a team sharing one budget; `privdb grant NAME --group G` adds members)."""
    with owner_connection(db, url, token, ledger) as conn:
        if table is not None or group is not None:
            if epsilon is None:
                raise InvalidParameter("--epsilon: the shared budget's total ε")
            conn.set_shared_budget(table=table, group=group, epsilon=epsilon, delta=delta, renew=renew)
            if parse_period(renew) is not None:
                sys.stderr.write(f"warning: {RENEWAL_WARNING}\n")
        elif epsilon is not None or renew is not None:
            raise InvalidParameter("--epsilon sets a shared budget: say whose with --table T or --group G")
        found = conn.shared_budgets()
        losses = conn.class_losses()
    if output_format == "json":
        sys.stdout.write(json.dumps(found) + "\n")
        return
    out = Table(title="shared budgets")
    for col in ("kind", "name", "ε total", "ε spent", "ε left", "δ left", "renews", "members"):
        out.add_column(col)
    for b in found:
        renews = "never" if not b.get("renew") else f"every {b['renew']}, next {_when(b['refills_at'])}"
        members = ", ".join(b.get("members", []))
        out.add_row(
            b["kind"], b["name"], f"{b['epsilon_total']:g}", f"{b['epsilon_spent']:g}",
            f"{b['epsilon_remaining']:g}", f"{b['delta_remaining']:g}", renews, members,
        )  # fmt: skip
    console().print(out)
    if losses:
        per_class = Table(
            title="personalised tables: ε lost per class of units (each answer: min(ε_class, t))"
        )
        for col in ("table", "class", "ε lost"):
            per_class.add_column(col)
        for c in losses:
            per_class.add_row(c["table"], c["class"], f"{c['epsilon_lost']:g}")
        console().print(per_class)


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M")
