"""Exact budget amounts (rationals stored as text ``"n/d"``) and a budget's totals and spends."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from privdb.mechanisms import _validate

__all__ = ["Budget"]


def _text(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def _frac(s: str) -> Fraction:
    return Fraction(s)


def _amount(name: str, value: float | int | Fraction) -> Fraction:
    if name == "delta":
        _validate.delta(value)
    else:
        _validate.non_negative(name, value)
    return _validate.exact(value)


@dataclass(frozen=True)
class Budget:
    """An analyst's budget on one database: totals, spent (reservations included), remaining."""

    analyst: str
    database: str
    epsilon_total: Fraction
    delta_total: Fraction
    epsilon_spent: Fraction
    delta_spent: Fraction

    @property
    def epsilon_remaining(self) -> Fraction:
        return self.epsilon_total - self.epsilon_spent

    @property
    def delta_remaining(self) -> Fraction:
        return self.delta_total - self.delta_spent

    def to_dict(self) -> dict[str, Any]:
        return {
            "analyst": self.analyst,
            "database": self.database,
            "epsilon_total": float(self.epsilon_total),
            "delta_total": float(self.delta_total),
            "epsilon_spent": float(self.epsilon_spent),
            "delta_spent": float(self.delta_spent),
            "epsilon_remaining": float(self.epsilon_remaining),
            "delta_remaining": float(self.delta_remaining),
        }
