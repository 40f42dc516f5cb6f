"""``privdb epsilon``: ε from a tolerated disclosure risk, and the risk of an ε (Lee & Clifton 2011)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from privdb.cli.core import app, console, friendly
from privdb.cli.options import TableOrJson
from privdb.errors import InvalidParameter


@app.command()
@friendly
def epsilon(
    risk: Annotated[
        float | None,
        typer.Option(help="the adversary's belief you tolerate (e.g. 0.75): prints the largest ε"),
    ] = None,
    of: Annotated[
        float | None, typer.Option("--of", help="an ε: prints the adversary's belief it allows")
    ] = None,
    worlds: Annotated[int, typer.Option(help="datasets the adversary hesitates between (2: in or out)")] = 2,
    sensitivity: Annotated[float, typer.Option(help="the query's sensitivity Δf")] = 1.0,
    spread: Annotated[
        float | None,
        typer.Option(help="Δv: the largest difference of the query between those worlds (default Δf)"),
    ] = None,
    output_format: TableOrJson = "table",
) -> None:
    """Choose ε by the disclosure it allows: an adversary who knows every record but one, hesitating
    between WORLDS equally likely datasets, believes the true one at most 1/(1+(n−1)e^(−εΔv/Δf)) after a
    Laplace answer (Lee & Clifton, "How much is enough? Choosing ε for differential privacy"). Give --risk
    for the ε, or --of for the risk; the total ε spent about a person is what counts."""
    from privdb.accounting.disclosure import disclosure_risk, epsilon_for_risk

    if (risk is None) == (of is None):
        raise InvalidParameter(
            "give --risk R (for the largest ε) or --of E (for the risk of an ε), one of them"
        )
    if risk is not None:
        found = {
            "risk": risk,
            "epsilon": epsilon_for_risk(risk, worlds=worlds, sensitivity=sensitivity, spread=spread),
        }
    else:
        assert of is not None
        found = {
            "epsilon": of,
            "risk": disclosure_risk(of, worlds=worlds, sensitivity=sensitivity, spread=spread),
        }
    found |= {
        "worlds": worlds,
        "sensitivity": sensitivity,
        "spread": spread if spread is not None else sensitivity,
    }
    if output_format == "json":
        sys.stdout.write(json.dumps(found) + "\n")
        return
    console().print(
        f"ε = {found['epsilon']:.4g} ↔ an adversary's belief of at most {found['risk']:.2%} "
        f"(from {1 / worlds:.2%} before; {worlds} worlds, Δf = {sensitivity:g}, Δv = {found['spread']:g})"
    )
