"""``privdb query | explain | budget``: the analyst's commands (embedded or over a server)."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from privdb.cli.core import app, console, friendly
from privdb.cli.options import (
    FormatOption,
    LedgerOption,
    MaybeDb,
    TableOrJson,
    TokenOption,
    UrlOption,
    open_connection,
)
from privdb.errors import InvalidParameter


@app.command()
@friendly
def query(
    sql: Annotated[str, typer.Argument(help='a DP-SELECT, e.g. "DP-SELECT 0.5 COUNT(*) FROM people"')],
    db: MaybeDb = None,
    analyst: Annotated[str | None, typer.Option(help="the analyst who asks (and pays), with --db")] = None,
    url: UrlOption = None,
    token: TokenOption = None,
    ledger: LedgerOption = None,
    output_format: FormatOption = "table",
    param: Annotated[
        list[str] | None,
        typer.Option(help="a value of the query's @name parameter, as name=value (repeat for each)"),
    ] = None,
) -> None:
    """Answer a DP-SELECT with differential privacy, paid from the analyst's budget."""
    if url is None and analyst is None and token is None:
        raise InvalidParameter("say who asks: --analyst NAME (with --db) or --token T (with --url)")
    parameters = _parameters(param or [])
    with open_connection(db, url, token, analyst, ledger) as conn:
        result = conn.sql(sql, parameters=parameters) if parameters else conn.sql(sql)
    if output_format == "json":
        sys.stdout.write(json.dumps(result.to_dict()) + "\n")
    elif output_format == "csv":
        sys.stdout.write(result.to_csv())
    else:
        console().print(result)


@app.command()
@friendly
def explain(
    sql: Annotated[str, typer.Argument(help="a DP-SELECT")],
    db: MaybeDb = None,
    analyst: Annotated[
        str | None, typer.Option(help="explain as this analyst, with --db: only the tables granted to them")
    ] = None,
    url: UrlOption = None,
    token: TokenOption = None,
    ledger: LedgerOption = None,
    output_format: TableOrJson = "table",
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="also the noisy statistics and the engine SQL")
    ] = False,
) -> None:
    """Show what a DP-SELECT will cost and how accurate each column will be, without reading data or
    spending budget (as the owner by default; as an analyst with --analyst, or with --url and their token)."""
    with open_connection(db, url, token, analyst, ledger) as conn:
        plan = conn.explain(sql)
    if output_format == "json":
        sys.stdout.write(json.dumps(plan) + "\n")
        return
    out = console()

    def line(label: str, text: str) -> None:  # the label in bold, the rest (names from the query) plain
        out.print(Text.assemble((label, "bold"), " ", text), highlight=False)

    line(
        "table",
        f"{plan['table']}  ·  privacy unit: {plan['privacy_unit'] or 'one row'}"
        f"  ·  neighbours: {plan['neighbouring']}  ·  keys: {plan['keys']}",
    )
    line("cost", f"ε = {plan['epsilon']:g}, δ = {plan['delta']:g}")
    if "accuracy_first" in plan:
        steps = ", ".join(f"{e:g}" for e in plan["accuracy_first"]["schedule"])
        line(
            "accuracy first",
            f"ε steps {steps}: charged the first step that meets the accuracy "
            f"(ex post), at worst MAX = {plan['accuracy_first']['max_epsilon']:g}",
        )
    if "covers" in plan:
        line("intervals cover", str(plan["covers"]))
    if "truncation" in plan and "epsilon" in plan["truncation"]:
        cut = plan["truncation"]
        line(
            "truncation",
            "bounding may drop rows; the answer carries a noisy count of the "
            f"{cut['what']}, "
            f"for ε = {cut['epsilon']:g} ({cut['epsilon_share']:.0%} of the query's), "
            f"± {cut['ci95_half_width']:.0f} units at 95%",
        )
    if "disclosure" in plan:
        line(
            "disclosure",
            "an adversary who knows every other record believes a person is in the "
            f"data at most {plan['disclosure']['posterior_bound']:.1%} after this answer (1/2 before; Lee & "
            "Clifton; `privdb epsilon` for other settings)",
        )
    if "personalised" in plan:  # the Sample mechanism (docs/proofs/personalised.md)
        shown = plan["personalised"]
        classes = ", ".join(
            f"{c['class']} ε {c['epsilon']:g}: kept {c['inclusion']:.3g}, loses {c['epsilon_lost']:g}"
            for c in shown["classes"]
        )
        line(
            "personalised",
            f"each person's ε from {shown['column']}; threshold t = {shown['threshold']:g}; {classes}",
        )
    out.print(_columns_table(plan.get("columns", [])))
    if not verbose:
        out.print("--verbose: the noisy statistics behind each column and the engine SQL", style="dim")
        return
    if plan.get("statistics"):
        out.print(_statistics_table(plan["statistics"]))
    if plan.get("order_statistics"):
        out.print(_order_table(plan["order_statistics"]))
    out.print("engine SQL", style="bold")
    out.print(plan["engine_sql"], highlight=False)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _plus_minus(column: dict[str, Any]) -> str:
    """A column's 95% ± in the answer's units, or what stands in for it where it depends on the data."""
    if column.get("role") == "record":
        return "—"
    if column.get("mechanism") == "smooth_sensitivity":
        return "none (smooth sensitivity)"
    if column.get("ci95_half_width") is not None:
        return f"± {_number(column['ci95_half_width'])}"
    if column.get("ci95_half_width_at"):
        return ", ".join(f"± {_number(v)} at n = {int(n):,}" for n, v in column["ci95_half_width_at"].items())
    if column.get("rank_error95") is not None:
        return f"rank ± {_number(column['rank_error95'])}"
    if column.get("count_gap95") is not None:
        return f"count gap {_number(column['count_gap95'])}"
    return "with the answer"


def _columns_table(columns: list[dict[str, Any]]) -> Table:
    table = Table(title="per column")
    for col in ("column", "mechanism", "ε", "share", "95% ±", "note"):
        table.add_column(col, overflow="fold")
    for c in columns:
        table.add_row(
            c["column"],
            c["mechanism"],
            f"{c['epsilon']:.4g}",
            f"{c.get('epsilon_share', 0):.0%}",
            _plus_minus(c),
            c.get("note", ""),
        )
    return table


def _statistics_table(statistics: list[dict[str, Any]]) -> Table:
    table = Table(title="noisy statistics")
    for col in ("statistic", "kind", "column", "sensitivity", "mechanism", "ε", "scale", "95% ±"):
        table.add_column(col)
    for s in statistics:
        table.add_row(
            s["statistic"],
            s["kind"],
            s["column"] or "*",
            f"{s['sensitivity']:g}",
            s["mechanism"],
            f"{s['epsilon']:.4g}",
            f"{s['scale']:.4g}",
            f"{s['ci95_half_width']:.4g}",
        )
    return table


def _order_table(order_statistics: list[dict[str, Any]]) -> Table:
    table = Table(title="order statistics and modes")
    for col in (
        "column",
        "kind",
        "mechanism",
        "ε per group",
        "Δ",
        "candidates",
        "resolution",
        "95% utility loss",
    ):
        table.add_column(col)
    for o in order_statistics:
        table.add_row(
            o["column"],
            o["kind"] + (f" q={o['q']:g}" if o["q"] is not None else ""),
            o["mechanism"].replace("_", " "),
            f"{o['epsilon_per_group']:.4g}",
            "—" if o["sensitivity"] is None else f"{o['sensitivity']:g}",
            f"{o['candidates']:,}",
            "—" if o["resolution"] is None else f"{o['resolution']:.4g}",
            "—" if o["utility_loss95"] is None else f"{o['utility_loss95']:.4g}",
        )
    return table


@app.command()
@friendly
def budget(
    db: MaybeDb = None,
    analyst: Annotated[str | None, typer.Option(help="analyst name")] = None,
    url: UrlOption = None,
    token: TokenOption = None,
    ledger: LedgerOption = None,
    output_format: TableOrJson = "table",
) -> None:
    """Show an analyst's budget: total, spent and remaining (on a server: the token's own)."""
    with open_connection(db, url, token, ledger=ledger) as conn:
        if url is not None and analyst is None:
            info = conn.budget()
        elif analyst is None:
            raise InvalidParameter("--analyst NAME: whose budget to show")
        else:
            info = conn.budget_of(analyst)
    analyst = analyst or str(info.get("analyst", ""))
    if output_format == "json":
        sys.stdout.write(json.dumps(info) + "\n")
        return
    table = Table(title=f"budget of {analyst}")
    for col in ("", "ε", "δ"):
        table.add_column(col)
    for row in ("total", "spent", "remaining"):
        table.add_row(row, f"{info['epsilon_' + row]:g}", f"{info['delta_' + row]:g}")
    console().print(table)


def _parameters(given: list[str]) -> dict[str, Any]:
    """``--param name=value`` options: a value is read as JSON (a number, true, false, null or a quoted
    string), else taken as text."""
    out: dict[str, Any] = {}
    for item in given:
        name, sep, value = item.partition("=")
        if not sep or not name.strip().lstrip("@"):
            raise InvalidParameter(f"--param {item!r}: write --param name=value (e.g. --param lower=0)")
        try:
            out[name.strip().lstrip("@")] = json.loads(value)
        except ValueError:
            out[name.strip().lstrip("@")] = value
    return out
