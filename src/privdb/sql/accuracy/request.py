"""What an ACCURACY clause becomes before anything is read: the query at the smallest ε whose plan reaches
the accuracy (privdb.sql.accuracy.search), or, where an aggregate's interval depends on the data, the
accuracy-first schedule of increasing ε up to MAX (privdb.sql.accuracy.first)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from privdb.errors import UnsupportedQuery
from privdb.sql.accuracy import first as accuracy_first
from privdb.sql.accuracy.search import epsilon_for_accuracy
from privdb.sql.answer.predict import columns_of
from privdb.sql.front.query import DPQuery
from privdb.sql.plan.planner import plan_query
from privdb.sql.plan.types import Plan

__all__ = ["with_chosen_epsilon"]


def with_chosen_epsilon(query: DPQuery, relation: Any, evaluate_domain: Any) -> DPQuery:
    """``query`` with the ε its ACCURACY clause asks for, chosen from plans of ``relation`` (nothing read);
    where an aggregate's interval depends on the data (an average's), the accuracy-first schedule up to MAX
    (privdb.sql.accuracy.first)."""
    assert query.accuracy is not None

    def plan_at(eps: float) -> Plan:
        return plan_query(replace(query, epsilon=eps), relation.meta, evaluate_domain, relation)

    def columns_at(eps: float) -> list[dict[str, Any]]:
        return columns_of(plan_at(eps))

    if accuracy_first.is_data_dependent(columns_at(1.0)):
        if query.noise != "laplace":
            raise UnsupportedQuery(
                "ACCURACY for averages and variances releases correlated Laplace noise (noise reduction); "
                "remove USING GAUSSIAN, or give an ε instead of ACCURACY"
            )
        schedule = accuracy_first.schedule_for(query, plan_at)
        return replace(query, epsilon=schedule[-1], schedule=schedule)
    return replace(query, epsilon=epsilon_for_accuracy(query.accuracy, columns_at))
