"""``privdb epsilon``: choosing ε by the disclosure it allows (Lee & Clifton 2011), by a study's economics
(Hsu et al. 2014) or by the accuracy of an adversary's interval estimate (Naldi & D'Acquisto 2015)."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Literal

import typer

from privdb.cli.core import app, console, friendly
from privdb.cli.options import TableOrJson
from privdb.errors import InvalidParameter

Method = Literal["lee", "hsu", "naldi"]
_ONLY = {
    "lee": ("risk", "worlds", "spread"),
    "hsu": ("alpha", "beta", "participants", "base_cost", "budget"),
    "naldi": ("accuracy", "confidence"),
}
_FLAG = {"base_cost": "--base-cost"}


def _refuse_foreign(method: str, given: dict[str, Any]) -> None:
    """An option of another method is a mistake worth naming, not something to ignore."""
    for other, names in _ONLY.items():
        if other == method:
            continue
        for name in names:
            if given[name] is not None:
                flag = _FLAG.get(name, f"--{name}")
                raise InvalidParameter(f"{flag} belongs to --method {other}, not --method {method}")


def _need(method: str, **values: Any) -> None:
    missing = [_FLAG.get(k, f"--{k}") for k, v in values.items() if v is None]
    if missing:
        raise InvalidParameter(f"--method {method} needs {', '.join(missing)}")


def _lee(
    risk: float | None, of: float | None, worlds: int, sensitivity: float, spread: float | None
) -> dict[str, Any]:
    from privdb.accounting.disclosure import disclosure_risk, epsilon_for_risk

    if (risk is None) == (of is None):
        raise InvalidParameter(
            "give --risk R (for the largest ε) or --of E (for the risk of an ε), one of them"
        )
    if risk is not None:
        found: dict[str, Any] = {
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
    found["explanation"] = (
        f"ε = {found['epsilon']:.4g} ↔ an adversary's belief of at most {found['risk']:.2%} "
        f"(from {1 / worlds:.2%} before; {worlds} worlds, Δf = {sensitivity:g}, Δv = {found['spread']:g})"
    )
    return found


def _naldi(
    accuracy: float | None, confidence: float | None, of: float | None, sensitivity: float
) -> dict[str, Any]:
    from privdb.accounting.choose_epsilon import estimation_confidence, estimation_epsilon

    if accuracy is None:
        raise InvalidParameter("--method naldi needs --accuracy A (the ± an adversary must not reach)")
    if (confidence is None) == (of is None):
        raise InvalidParameter(
            "give --confidence C (for the largest ε) or --of E (for the adversary's confidence at ε), "
            "one of them"
        )
    if confidence is not None:
        epsilon = estimation_epsilon(accuracy, confidence, sensitivity=sensitivity)
    else:
        assert of is not None
        epsilon, confidence = of, estimation_confidence(of, accuracy, sensitivity=sensitivity)
    return {
        "epsilon": epsilon,
        "accuracy": accuracy,
        "confidence": confidence,
        "sensitivity": sensitivity,
        "explanation": (
            f"ε = {epsilon:.4g}: from a Laplace answer (Δf = {sensitivity:g}), an adversary's interval "
            f"answer ± {accuracy:g} holds the true value with probability {confidence:.2%} "
            f"(1 − e^(−ε·a/Δf)); a larger ε would let them be surer (Naldi & D'Acquisto 2015)"
        ),
    }


def _hsu(alpha: float, beta: float, participants: int, base_cost: float, budget: float) -> dict[str, Any]:
    from privdb.accounting.choose_epsilon import economic_epsilon

    choice = economic_epsilon(alpha, beta, participants=participants, base_cost=base_cost, budget=budget)
    found = choice.to_dict() | {
        "alpha": alpha,
        "beta": beta,
        "participants": participants,
        "base_cost": base_cost,
        "budget": budget,
    }
    need = (
        f"the analyst's ±{alpha:g} at {1 - beta:.0%} over {participants} participants needs "
        f"ε ≥ {choice.epsilon_accuracy:.4g}; a budget of {budget:g} compensates each participant's "
        f"(e^ε − 1)·{base_cost:g} up to ε ≤ {choice.epsilon_budget:.4g}"
    )
    if choice.feasible:
        assert choice.compensation is not None and choice.cost is not None
        found["explanation"] = (
            f"ε = {choice.epsilon:.4g}: {need}. Each participant's expected cost may grow by the harm factor "
            f"e^ε = {choice.harm_factor:.4g}; paying each {choice.compensation:.4g} costs {choice.cost:.4g} "
            f"in all (Hsu et al. 2014)"
        )
    else:
        more = (
            f"{choice.participants_needed} participants would make it affordable"
            if choice.participants_needed is not None
            else "no number of participants makes it affordable: raise the budget above "
            "ln(1/β)/α·E, or relax alpha or beta"
        )
        found["explanation"] = f"no ε serves both: {need}. {more} (Hsu et al. 2014)"
    return found


@app.command()
@friendly
def epsilon(
    method: Annotated[
        str, typer.Option(help="lee (disclosure), hsu (a study's economics) or naldi (estimation)")
    ] = "lee",
    risk: Annotated[
        float | None, typer.Option(help="lee: the adversary's belief you tolerate (e.g. 0.75)")
    ] = None,
    of: Annotated[
        float | None,
        typer.Option("--of", help="lee, naldi: an ε, to print the belief or confidence it allows"),
    ] = None,
    worlds: Annotated[
        int | None, typer.Option(help="lee: datasets the adversary hesitates between (2)")
    ] = None,
    sensitivity: Annotated[float, typer.Option(help="lee, naldi: the query's sensitivity Δf")] = 1.0,
    spread: Annotated[
        float | None, typer.Option(help="lee: Δv, the largest difference between worlds")
    ] = None,
    alpha: Annotated[float | None, typer.Option(help="hsu: the error tolerated, a share of [0, 1]")] = None,
    beta: Annotated[float | None, typer.Option(help="hsu: the chance of missing by more than alpha")] = None,
    participants: Annotated[int | None, typer.Option(help="hsu: N, the study's participants")] = None,
    base_cost: Annotated[
        float | None, typer.Option("--base-cost", help="hsu: E, a participant's expected cost either way")
    ] = None,
    budget: Annotated[float | None, typer.Option(help="hsu: B, the total for compensating them")] = None,
    accuracy: Annotated[
        float | None, typer.Option(help="naldi: the ± an adversary's estimate must not reach")
    ] = None,
    confidence: Annotated[float | None, typer.Option(help="naldi: with at most this confidence")] = None,
    output_format: TableOrJson = "table",
) -> None:
    """Choose ε. --method lee (default): an adversary who knows every record but one, hesitating between
    WORLDS equally likely datasets, believes the true one at most 1/(1+(n−1)e^(−εΔv/Δf)) after a Laplace
    answer; give --risk for the ε, or --of for the risk. --method hsu: the ε between what the analyst's
    (--alpha, --beta) accuracy over --participants needs and what --budget compensates at --base-cost each.
    --method naldi: the largest ε at which an adversary's interval answer ± --accuracy holds the true value
    with at most --confidence (or --of an ε for that confidence). The total ε spent about a person counts."""
    if method not in _ONLY:
        raise InvalidParameter(f"--method must be lee, hsu or naldi, got {method!r}")
    given = {
        "risk": risk, "worlds": worlds, "spread": spread, "alpha": alpha, "beta": beta,
        "participants": participants, "base_cost": base_cost, "budget": budget,
        "accuracy": accuracy, "confidence": confidence,
    }  # fmt: skip
    _refuse_foreign(method, given)
    if method == "lee":
        found = _lee(risk, of, 2 if worlds is None else worlds, sensitivity, spread)
    elif method == "naldi":
        found = _naldi(accuracy, confidence, of, sensitivity)
    else:
        if of is not None:
            raise InvalidParameter("--of belongs to --method lee or naldi, not --method hsu")
        _need("hsu", alpha=alpha, beta=beta, participants=participants, base_cost=base_cost, budget=budget)
        assert alpha is not None and beta is not None and participants is not None
        assert base_cost is not None and budget is not None
        found = _hsu(alpha, beta, participants, base_cost, budget)
    found = {"method": method} | found
    if output_format == "json":
        sys.stdout.write(json.dumps(found) + "\n")
        return
    console().print(found["explanation"])
