"""What a grouped answer over public key domains does not show, said from public information (issue 26).

*Keys outside the declared domain*: GROUP BY over a public domain releases exactly the declared values, so
rows whose key is NULL or a value not declared are in no row of the answer (21% of a survey without a race
vanished silently). The answer says so in ``extra["outside_domain"]``: a public note, free (whether any row
is outside is the data's business; a noisy count of them would cost ε).

*Rows that are noise only by construction*: every declared value gets a row, also those the WHERE excludes
(``WHERE sex = 'F' GROUP BY sex`` still answers an 'M' row, pure noise, since dropping it would need no data
but keeping it is the plan). Which rows those are follows from the query text and the domain alone: a
top-level WHERE conjunct that reads only plain key columns and literals, evaluated in SQL's three-valued
logic on the row's key values, can never be TRUE. ``extra["noise_only_rows"]`` lists their indices in
``rows``. Anything not decidable that way (other columns, functions, types that do not match) counts as
possibly TRUE, so a row is marked only when it is certain.
"""

from __future__ import annotations

from typing import Any

from privdb.sql.front.expr.types import Expr
from privdb.sql.plan.types import Plan

__all__ = ["noise_only", "outside_domain"]

_ANY = frozenset({True, False, None})  # SQL's TRUE, FALSE and NULL
_UNKNOWN = object()


def outside_domain(plan: Plan) -> dict[str, Any] | None:
    """The public note for an answer grouped over declared key domains (None: no such keys)."""
    if plan.domains is None or not plan.resolved.keys:
        return None
    names = ", ".join(k.output for k in plan.resolved.keys)
    nulls = any(None not in domain for domain in plan.domains)
    return {
        "released": False,
        "keys": [k.output for k in plan.resolved.keys],
        "note": f"rows whose key ({names}) is outside its declared domain"
        + (" (including NULL)" if nulls else "")
        + " are in no row of this answer; the domain is the metadata's values",
    }


def _value(e: Expr, keys: dict[str, Any]) -> Any:
    if e.op == "literal":
        return e.value
    if e.op == "column":
        return keys.get(e.value.name.lower(), _UNKNOWN)
    return _UNKNOWN


def _equal(a: Any, b: Any) -> frozenset[bool | None]:
    if a is _UNKNOWN or b is _UNKNOWN:
        return _ANY
    if a is None or b is None:
        return frozenset({None})
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (a, b))
    if numbers or (isinstance(a, str) and isinstance(b, str)) or all(isinstance(v, bool) for v in (a, b)):
        return frozenset({a == b})
    return _ANY  # types that do not match: the engine's conversion decides


def _and(x: bool | None, y: bool | None) -> bool | None:
    if x is False or y is False:
        return False
    return None if x is None or y is None else True


def _or(x: bool | None, y: bool | None) -> bool | None:
    if x is True or y is True:
        return True
    return None if x is None or y is None else False


def _outcomes(e: Expr, keys: dict[str, Any]) -> frozenset[bool | None]:
    """The truth values ``e`` can take on a row with these key values (SQL's three-valued logic)."""
    if e.op in ("and", "or"):
        combine = _and if e.op == "and" else _or
        out = _outcomes(e.args[0], keys)
        for arg in e.args[1:]:
            other = _outcomes(arg, keys)
            out = frozenset(combine(x, y) for x in out for y in other)
        return out
    if e.op == "not":
        return frozenset(None if x is None else not x for x in _outcomes(e.args[0], keys))
    if e.op in ("eq", "neq"):
        out = _equal(_value(e.args[0], keys), _value(e.args[1], keys))
        return out if e.op == "eq" else frozenset(None if x is None else not x for x in out)
    if e.op == "in":
        left = _value(e.args[0], keys)
        out = frozenset({False})
        for arg in e.args[1:]:
            other = _equal(left, _value(arg, keys))
            out = frozenset(_or(x, y) for x in out for y in other)
        return out
    if e.op == "is_null":
        value = _value(e.args[0], keys)
        return _ANY if value is _UNKNOWN else frozenset({value is None})
    return _ANY


def noise_only(plan: Plan, groups: list[tuple[Any, ...]]) -> list[int]:
    """Indices of ``groups`` (the answer's rows' keys, in order) whose rows no WHERE-kept row can reach."""
    where = plan.resolved.where
    if where is None or plan.domains is None or not getattr(plan.relation, "plain", True):  # not a join
        return []
    plain = {
        i: k.expr.value.name.lower()
        for i, k in enumerate(plan.resolved.keys)
        if k.expr is not None and k.expr.op == "column"
    }
    if not plain:
        return []
    out = []
    for r, group in enumerate(groups):
        keys = {name: group[i] for i, name in plain.items()}
        if True not in _outcomes(where, keys):
            out.append(r)
    return out
