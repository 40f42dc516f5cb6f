"""What a survey's randomiser can output, checked on every response the collector takes in; and how far one
response can move an estimate.

A response is taken only if an honest respondent's device could have sent it (the forms are in
:mod:`privdb.local.survey`): a direct protocol's response is one value of the domain, written as the domain
writes it (``1`` is not ``"1"``, ``1.0`` or ``true``); an OUE response is a list of distinct values of the
domain; an OLH response is three integers ``[a, b, y]`` with ``1 ≤ a < P``, ``0 ≤ b < P`` and ``0 ≤ y < g``.
Every protocol here gives each of those responses a positive probability under every true value (that is
what makes it ε-LDP), so the check is exactly the randomiser's support: nothing an honest device sends is
refused, and nothing else is taken. Refusals count the bad responses and never echo one.

**Influence.** A response adds ``(s − q*)/(p* − q*)`` to a value's count estimate, ``s`` ∈ {0, 1} saying
whether it supports the value (:mod:`privdb.local.estimators`), so any accepted response, honest or
crafted, adds between ``−q*/(p* − q*)`` and ``(1 − q*)/(p* − q*)`` to every count: :func:`influence`.
Crafted responses therefore move estimates by their number, never by their values (docs/security.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from privdb.errors import InvalidParameter
from privdb.local.estimators import SupportEstimator
from privdb.local.local_hashing import HashReports, OLHProtocol
from privdb.local.unary_encoding import UnaryReports

__all__ = ["direct_codes", "hash_reports", "influence", "unary_reports"]

Ints = NDArray[np.int64]


def _label_codes(domain: list[Any]) -> dict[tuple[type, Any], int]:
    """Each label keyed by its exact JSON type and value (so ``true`` is not ``1``, nor ``1.0``)."""
    return {(type(v), v): i for i, v in enumerate(domain)}


def _code(codes: dict[tuple[type, Any], int], value: Any) -> int:
    if not isinstance(value, str | int) or isinstance(value, bool):
        return -1
    return codes.get((type(value), value), -1)


def _refuse(bad: int, total: int, what: str, rule: str) -> InvalidParameter:
    return InvalidParameter(
        f"{bad:,} of {total:,} responses are not {what} (no randomiser of this survey sends them: {rule}); "
        "send the responses exactly as the survey's randomiser returns them"
    )


def direct_codes(domain: list[Any], responses: list[Any]) -> Ints:
    """The codes of a binary or k-RR survey's responses: each one value of the domain."""
    codes = _label_codes(domain)
    found = np.fromiter((_code(codes, r) for r in responses), dtype=np.int64, count=len(responses))
    bad = int((found < 0).sum())
    if bad:
        shown = ", ".join(map(str, domain[:8])) + (", …" if len(domain) > 8 else "")
        raise _refuse(bad, len(responses), "values of the domain", f"each is one of {shown}")
    return found


def unary_reports(domain: list[Any], responses: list[Any]) -> UnaryReports:
    """An OUE survey's responses: each a list of distinct values of the domain (its set bits)."""
    codes = _label_codes(domain)
    sets: list[Ints] = []
    bad = 0
    for r in responses:
        row = [_code(codes, v) for v in r] if isinstance(r, list) and len(r) <= len(domain) else [-1]
        if min(row, default=0) < 0 or len(set(row)) != len(row):
            bad += 1
        sets.append(np.asarray(row, dtype=np.int64))
    if bad:
        raise _refuse(bad, len(responses), "OUE reports", "a list of distinct values of the domain")
    return UnaryReports.from_sets(len(domain), sets)


def hash_reports(protocol: OLHProtocol, responses: list[Any]) -> HashReports:
    """An OLH survey's responses: each ``[a, b, y]``, integers with ``1 ≤ a < P``, ``0 ≤ b < P`` and
    ``0 ≤ y < g`` (checked as Python integers first, so no value overflows an array)."""
    prime, g = protocol.prime, protocol.g
    highs = (prime, prime, g)
    lows = (1, 0, 0)

    def ok(r: Any) -> bool:
        return (
            isinstance(r, list)
            and len(r) == 3
            and all(
                isinstance(x, int) and not isinstance(x, bool) and lo <= x < hi
                for x, lo, hi in zip(r, lows, highs, strict=True)
            )
        )

    bad = sum(1 for r in responses if not ok(r))
    if bad:
        rule = f"[a, b, y] with 1 ≤ a < {prime}, 0 ≤ b < {prime}, 0 ≤ y < {g}"
        raise _refuse(bad, len(responses), "OLH reports", rule)
    a, b, y = np.asarray(responses, dtype=np.int64).T
    return HashReports(prime, g, a.copy(), b.copy(), y.copy())


def influence(estimator: SupportEstimator) -> tuple[float, float]:
    """The least and the most one accepted response adds to any value's count estimate:
    ``(−max q*/(p* − q*), max (1 − q*)/(p* − q*))`` over the values."""
    gap = estimator.p_star - estimator.q_star
    return -float((estimator.q_star / gap).max()), float(((1.0 - estimator.q_star) / gap).max())
