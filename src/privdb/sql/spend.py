"""What a prepared DP-SELECT is charged, decided from its plan alone: ε and δ, the Gaussian part accounted
in zCDP, every table read (each table's lifetime budget is drawn on), the ledger's note, and on a table
with personalised ε the ε each class of units loses."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from privdb.accounting.composition import GaussianCost
from privdb.catalog.metadata import TableMeta
from privdb.mechanisms._validate import exact
from privdb.sql.plan.gaussian import zcdp_cost
from privdb.sql.plan.personal import losses_note, summary
from privdb.sql.plan.types import Plan
from privdb.sql.release.plan import RELEASE_GUARANTEE, ReleasePlan

__all__ = ["Spend", "base_table", "spend_of"]


@dataclass(frozen=True)
class Spend:
    """The arguments of privdb.sql.charge.charged that say what is charged and logged."""

    key: str
    table: str
    epsilon: float
    delta: float
    note: str
    tables: tuple[str, ...]
    gaussian: GaussianCost | None = None
    classes: tuple[tuple[str, str, Fraction], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


def base_table(plan: Plan | ReleasePlan) -> str:
    """The table whose engine a plan runs on (a relation's base table, or the one table)."""
    if isinstance(plan, Plan) and plan.relation is not None:
        return str(plan.relation.base)
    return plan.table.name


def spend_of(plan: Plan | ReleasePlan, personal: TableMeta | None) -> Spend:
    """The spend of ``plan`` (``personal``: the table with personalised ε it reads, if any)."""
    base = base_table(plan)
    extra: dict[str, Any] = {"guarantee": RELEASE_GUARANTEE} if isinstance(plan, ReleasePlan) else {}
    note = " ".join(plan.query.text.split())
    classes: tuple[tuple[str, str, Fraction], ...] = ()
    if personal is not None:  # the answer and the ledger's note tell each class's loss
        described = summary(personal, plan.epsilon)
        extra["personalised"] = described
        suffix = losses_note(personal, plan.epsilon)
        note = note[: 500 - len(suffix)] + suffix
        classes = tuple(
            (personal.name, str(c["class"]), exact(c["epsilon_lost"])) for c in described["classes"]
        )
    tables = tuple(plan.relation.tables) if isinstance(plan, Plan) and plan.relation is not None else (base,)
    gaussian = None
    if isinstance(plan, Plan) and (cost := zcdp_cost(plan)) is not None:
        rho, eps_g, delta_g = cost
        gaussian = GaussianCost(rho=rho, delta=exact(delta_g), epsilon=min(exact(eps_g), exact(plan.epsilon)))
    return Spend(
        key=plan.query.normalized, table=base, epsilon=plan.epsilon, delta=plan.delta, note=note,
        tables=tables, gaussian=gaussian, classes=classes, extra=extra,
    )  # fmt: skip
